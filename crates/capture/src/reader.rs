//! Reading pcap and pcapng files held in memory: container blocks -> link frames -> IPv4 UDP
//! datagrams (fragmented ones put back together).

use std::borrow::Cow;
use std::net::{Ipv4Addr, SocketAddrV4};

use etherparse::{IpNumber, NetSlice, SlicedPacket, TransportSlice, UdpHeader, UdpSlice};
use pcap_parser::data::{get_packetdata, PacketData, ETHERTYPE_IPV4};
use pcap_parser::pcapng::Block;
use pcap_parser::pcapng::{parse_block_be, parse_block_le};
use pcap_parser::{
    parse_pcap_frame, parse_pcap_frame_be, parse_pcap_frame_modified, parse_pcap_header,
    LegacyPcapBlock, Linktype, PcapBlockOwned, PcapError,
};

use crate::defrag::{Fed, FragmentOf, Reassembly};
use crate::CaptureError;

/// The container format of a capture file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Classic libpcap (microsecond or nanosecond timestamps, either byte order).
    Pcap,
    /// pcapng (per-interface timestamp resolution).
    PcapNg,
}

impl Format {
    /// The format `data` starts with, by magic number.
    pub fn detect(data: &[u8]) -> Option<Format> {
        let magic: [u8; 4] = data.get(..4)?.try_into().ok()?;
        match u32::from_le_bytes(magic) {
            0xa1b2_c3d4 | 0xd4c3_b2a1 | 0xa1b2_3c4d | 0x4d3c_b2a1 => Some(Format::Pcap),
            0x0a0d_0d0a => Some(Format::PcapNg),
            _ => None,
        }
    }
}

/// One UDP datagram of a capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Datagram<'a> {
    /// Capture time in nanoseconds since the Unix epoch (of its last fragment, if it came in
    /// several).
    pub ts_ns: u64,
    /// Source address and port.
    pub src: SocketAddrV4,
    /// Destination address (the multicast group) and port.
    pub dst: SocketAddrV4,
    /// The UDP payload: borrowed from the capture, or put together from IP fragments.
    pub payload: Cow<'a, [u8]>,
    /// The frame that carried it (its last fragment, if it came in several).
    frame: &'a [u8],
}

impl Datagram<'_> {
    /// Where it lies in `data`, the bytes it was read from: the payload's offset, or for a
    /// datagram put together from fragments, the offset of its last fragment's frame.
    pub fn offset_in(&self, data: &[u8]) -> usize {
        let at = match &self.payload {
            Cow::Borrowed(p) => p.as_ptr(),
            Cow::Owned(_) => self.frame.as_ptr(),
        };
        (at as usize).saturating_sub(data.as_ptr() as usize)
    }

    /// Whether it came in IP fragments, put together here.
    pub fn is_reassembled(&self) -> bool {
        matches!(self.payload, Cow::Owned(_))
    }
}

/// What a pass over a capture found. Every frame lands in exactly one of a whole datagram
/// (`datagrams` less `reassembled`), `truncated`, `fragments`, `not_udp`, `bad_frames` or
/// `unsupported_link`; and every fragment, once the capture has ended, in a `reassembled`
/// datagram or in `fragments_lost`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CaptureStats {
    /// Packet records (frames) in the file.
    pub frames: u64,
    /// IPv4 UDP datagrams handed out, whole or reassembled.
    pub datagrams: u64,
    /// Frames cut short by the capture's snap length (captured length < length on the wire).
    pub truncated: u64,
    /// Frames holding an IPv4 fragment of a UDP datagram.
    pub fragments: u64,
    /// Datagrams put together from fragments (counted in `datagrams` too).
    pub reassembled: u64,
    /// Fragment frames of datagrams never completed: a fragment missing (or cut short),
    /// overlapping or conflicting fragments, given up after 30 s of capture time or when 64
    /// others were being gathered, or still incomplete at the end of the capture.
    pub fragments_lost: u64,
    /// Frames of other protocols (IPv6, TCP, ARP, ...).
    pub not_udp: u64,
    /// Frames whose link, IP or UDP headers do not parse (too short, wrong lengths).
    pub bad_frames: u64,
    /// Frames of a link type this reader does not know.
    pub unsupported_link: u64,
    /// Non-packet blocks (pcapng statistics, name resolution, ...).
    pub other_blocks: u64,
    /// Byte offset where the container itself was found damaged; nothing after it is read.
    pub damaged_at: Option<usize>,
}

/// A capture file held in memory.
pub struct Capture<'a> {
    data: &'a [u8],
    format: Format,
}

impl<'a> Capture<'a> {
    /// Checks the header of `data`.
    pub fn open(data: &'a [u8]) -> Result<Capture<'a>, CaptureError> {
        let format = Format::detect(data).ok_or_else(|| {
            CaptureError::NotACapture(data.iter().take(4).copied().collect::<Vec<u8>>())
        })?;
        let bad = |reason: String| CaptureError::BadHeader { format, reason };
        match format {
            Format::Pcap => {
                parse_pcap_header(data).map_err(|e| bad(e.to_string()))?;
            }
            Format::PcapNg => {
                pcap_parser::parse_sectionheaderblock(data).map_err(|e| bad(e.to_string()))?;
            }
        }
        Ok(Capture { data, format })
    }

    /// The container format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The IPv4 UDP datagrams, in file order (one that came in fragments where its last
    /// fragment is). Fragments of datagrams not completed by the end are counted lost.
    pub fn datagrams(&self) -> Datagrams<'a> {
        let mut d = self.datagrams_resuming(Reassembly::default());
        d.last_run = true;
        d
    }

    /// As [`datagrams`](Capture::datagrams), for one run of a longer capture: fragments
    /// gathered by the previous run's [`Datagrams::into_reassembly`] are completed here, and
    /// those still incomplete at the end are kept, not counted lost.
    pub fn datagrams_resuming(&self, reassembly: Reassembly) -> Datagrams<'a> {
        let inner = match self.format {
            Format::Pcap => {
                let (rem, h) = parse_pcap_header(self.data).expect("checked by open");
                // pcap-parser's own slice iterator reads every record little-endian; the
                // record parser is chosen here from the header's byte order instead.
                let parse: FrameParser = if h.is_modified_format() {
                    parse_pcap_frame_modified
                } else if h.is_bigendian() {
                    parse_pcap_frame_be
                } else {
                    parse_pcap_frame
                };
                Inner::Pcap {
                    rem,
                    parse,
                    link: h.network,
                    nanos: h.is_nanosecond_precision(),
                }
            }
            Format::PcapNg => Inner::PcapNg {
                rem: self.data,
                big_endian: false,
                interfaces: Vec::new(),
            },
        };
        Datagrams {
            inner,
            total: self.data.len(),
            stats: CaptureStats::default(),
            reassembly,
            last_run: false,
        }
    }
}

/// One pcapng interface: its link type and timestamp units.
struct Interface {
    link: Linktype,
    /// Timestamp units per second.
    resolution: u64,
    offset_s: i64,
}

type FrameParser =
    for<'b> fn(
        &'b [u8],
    )
        -> pcap_parser::nom::IResult<&'b [u8], LegacyPcapBlock<'b>, PcapError<&'b [u8]>>;

enum Inner<'a> {
    Pcap {
        rem: &'a [u8],
        parse: FrameParser,
        link: Linktype,
        nanos: bool,
    },
    PcapNg {
        rem: &'a [u8],
        /// Byte order of the current section (pcapng sections say their own).
        big_endian: bool,
        interfaces: Vec<Interface>,
    },
    Done,
}

/// Iterator over a capture's datagrams; [`Datagrams::stats`] tells what else it met.
pub struct Datagrams<'a> {
    inner: Inner<'a>,
    total: usize,
    stats: CaptureStats,
    reassembly: Reassembly,
    /// Whether the capture ends with this data (so what is still gathered is lost).
    last_run: bool,
}

/// A data frame out of the container: link type, time, bytes, whether it was cut short.
struct Frame<'a> {
    link: Linktype,
    ts_ns: u64,
    data: &'a [u8],
    truncated: bool,
}

impl<'a> Datagrams<'a> {
    /// Counts so far (all of them once the iterator is exhausted).
    pub fn stats(&self) -> CaptureStats {
        self.stats
    }

    /// The datagrams still being gathered from fragments, for the next run of the capture.
    pub fn into_reassembly(self) -> Reassembly {
        self.reassembly
    }

    /// Bytes not yet parsed.
    fn remaining(&self) -> usize {
        match &self.inner {
            Inner::Pcap { rem, .. } => rem.len(),
            Inner::PcapNg { rem, .. } => rem.len(),
            Inner::Done => 0,
        }
    }

    /// The next data frame, or `None` at the end or at damage.
    fn next_frame(&mut self) -> Option<Frame<'a>> {
        loop {
            let block = match &mut self.inner {
                Inner::Done => return None,
                Inner::Pcap { rem, parse, .. } => (!rem.is_empty()).then(|| {
                    parse(rem)
                        .map(|(next, b)| {
                            *rem = next;
                            PcapBlockOwned::from(b)
                        })
                        .map_err(|_| ())
                }),
                Inner::PcapNg {
                    rem, big_endian, ..
                } => (!rem.is_empty()).then(|| {
                    if shorter_than_a_block(rem, *big_endian) {
                        return Err(());
                    }
                    let parse = if *big_endian {
                        parse_block_be
                    } else {
                        parse_block_le
                    };
                    parse(rem)
                        .map(|(next, b)| {
                            *rem = next;
                            if let Block::SectionHeader(shb) = &b {
                                *big_endian = shb.big_endian();
                            }
                            PcapBlockOwned::from(b)
                        })
                        .map_err(|_| ())
                }),
            };
            let block = match block {
                None => {
                    self.inner = Inner::Done;
                    return None;
                }
                Some(Err(_)) => {
                    // The next block cannot be located past one that does not parse: stop
                    // here, saying where.
                    self.stats.damaged_at = Some(self.total - self.remaining());
                    self.inner = Inner::Done;
                    return None;
                }
                Some(Ok(b)) => b,
            };
            match (&mut self.inner, block) {
                (Inner::Pcap { link, nanos, .. }, PcapBlockOwned::Legacy(b)) => {
                    let frac = if *nanos {
                        b.ts_usec as u64
                    } else {
                        b.ts_usec as u64 * 1_000
                    };
                    return Some(Frame {
                        link: *link,
                        ts_ns: b.ts_sec as u64 * 1_000_000_000 + frac,
                        data: b.data,
                        truncated: b.caplen < b.origlen,
                    });
                }
                (Inner::PcapNg { interfaces, .. }, PcapBlockOwned::NG(b)) => match b {
                    Block::SectionHeader(_) => interfaces.clear(),
                    Block::InterfaceDescription(idb) => interfaces.push(Interface {
                        link: idb.linktype,
                        resolution: idb.ts_resolution().unwrap_or(1_000_000).max(1),
                        offset_s: idb.ts_offset(),
                    }),
                    Block::EnhancedPacket(epb) => {
                        let Some(ifc) = interfaces.get(epb.if_id as usize) else {
                            self.stats.frames += 1;
                            self.stats.unsupported_link += 1;
                            continue;
                        };
                        let units = ((epb.ts_high as u64) << 32) | epb.ts_low as u64;
                        let ns = units as u128 * 1_000_000_000 / ifc.resolution as u128;
                        let ns = (ns as i128 + ifc.offset_s as i128 * 1_000_000_000)
                            .clamp(0, u64::MAX as i128) as u64;
                        return Some(Frame {
                            link: ifc.link,
                            ts_ns: ns,
                            data: epb.data,
                            truncated: epb.caplen < epb.origlen,
                        });
                    }
                    Block::SimplePacket(spb) => {
                        let Some(ifc) = interfaces.first() else {
                            self.stats.frames += 1;
                            self.stats.unsupported_link += 1;
                            continue;
                        };
                        return Some(Frame {
                            link: ifc.link,
                            ts_ns: 0,
                            data: spb.data,
                            truncated: (spb.data.len() as u64) < spb.origlen as u64,
                        });
                    }
                    _ => self.stats.other_blocks += 1,
                },
                _ => self.stats.other_blocks += 1,
            }
        }
    }
}

impl<'a> Iterator for Datagrams<'a> {
    type Item = Datagram<'a>;

    fn next(&mut self) -> Option<Datagram<'a>> {
        loop {
            let Some(f) = self.next_frame() else {
                if self.last_run {
                    self.stats.fragments_lost += self.reassembly.finish();
                }
                return None;
            };
            self.stats.frames += 1;
            if f.truncated {
                self.stats.truncated += 1;
                continue;
            }
            match udp_of(&f) {
                Ok(Layer::Whole(d)) => {
                    self.stats.datagrams += 1;
                    return Some(d);
                }
                Ok(Layer::Fragment {
                    of,
                    offset,
                    more,
                    payload,
                }) => {
                    self.stats.fragments += 1;
                    let (done, lost) = match self.reassembly.add(of, f.ts_ns, offset, more, payload)
                    {
                        Fed::Pending { lost } => (None, lost),
                        Fed::Complete {
                            payload,
                            frames,
                            lost,
                        } => (Some((payload, frames)), lost),
                    };
                    self.stats.fragments_lost += lost;
                    let Some((ip_payload, frames)) = done else {
                        continue;
                    };
                    match reassembled(&f, of, ip_payload) {
                        Some(d) => {
                            self.stats.datagrams += 1;
                            self.stats.reassembled += 1;
                            return Some(d);
                        }
                        // Whole, but no UDP datagram: its length field says more than came.
                        None => self.stats.fragments_lost += frames,
                    }
                }
                Err(Skip::NotUdp) => self.stats.not_udp += 1,
                Err(Skip::Bad) => self.stats.bad_frames += 1,
                Err(Skip::Link) => self.stats.unsupported_link += 1,
            }
        }
    }
}

/// Whether the pcapng block at the start of `rem` says it is shorter than the 12 bytes every
/// block has (type, length, length again). pcap-parser 0.16 subtracts 12 from the length of
/// some block types (a Process Information Block) without checking it: an overflow that
/// panics where overflow checks are on (found by fuzzing). A Section Header Block is left to
/// its own parser, which checks its length, and which may change the byte order.
fn shorter_than_a_block(rem: &[u8], big_endian: bool) -> bool {
    const SECTION_HEADER: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];
    let (Some(kind), Some(len)) = (rem.get(..4), rem.get(4..8)) else {
        return false;
    };
    let len: [u8; 4] = len.try_into().expect("4 bytes");
    let len = if big_endian {
        u32::from_be_bytes(len)
    } else {
        u32::from_le_bytes(len)
    };
    kind != SECTION_HEADER && len < 12
}

enum Skip {
    NotUdp,
    Bad,
    Link,
}

/// What a frame holds: a whole UDP datagram, or a fragment of one.
enum Layer<'a> {
    Whole(Datagram<'a>),
    Fragment {
        of: FragmentOf,
        offset: etherparse::IpFragOffset,
        more: bool,
        payload: &'a [u8],
    },
}

fn udp_of<'a>(f: &Frame<'a>) -> Result<Layer<'a>, Skip> {
    // pcap-parser 0.16 panics on a Wireshark upper-PDU frame whose protocol number is not 4
    // bytes long (found by fuzzing); what it gives for such frames is never a UDP datagram.
    if f.link == Linktype::WIRESHARK_UPPER_PDU {
        return Err(Skip::Link);
    }
    let sliced = match get_packetdata(f.data, f.link, f.data.len()) {
        Some(PacketData::L2(eth)) => SlicedPacket::from_ethernet(eth),
        Some(PacketData::L3(ETHERTYPE_IPV4, ip)) => SlicedPacket::from_ip(ip),
        Some(PacketData::L3(..)) => return Err(Skip::NotUdp),
        Some(PacketData::L4(..)) | Some(PacketData::Unsupported(_)) | None => {
            return Err(Skip::Link)
        }
    }
    .map_err(|_| Skip::Bad)?;
    let Some(NetSlice::Ipv4(ip)) = &sliced.net else {
        return Err(Skip::NotUdp);
    };
    let h = ip.header();
    if ip.is_payload_fragmented() {
        if h.protocol() != IpNumber::UDP {
            return Err(Skip::NotUdp);
        }
        return Ok(Layer::Fragment {
            of: FragmentOf {
                src: h.source_addr(),
                dst: h.destination_addr(),
                id: h.identification(),
                protocol: h.protocol(),
            },
            offset: h.fragments_offset(),
            more: h.more_fragments(),
            payload: ip.payload().payload,
        });
    }
    let Some(TransportSlice::Udp(udp)) = &sliced.transport else {
        return Err(Skip::NotUdp);
    };
    let addr = |a: Ipv4Addr, port| SocketAddrV4::new(a, port);
    Ok(Layer::Whole(Datagram {
        ts_ns: f.ts_ns,
        src: addr(h.source_addr(), udp.source_port()),
        dst: addr(h.destination_addr(), udp.destination_port()),
        payload: Cow::Borrowed(udp.payload()),
        frame: f.data,
    }))
}

/// The datagram whose fragments made `ip_payload` (its UDP header first), handed out with
/// the last fragment's frame and time; None if its UDP length does not fit what came.
fn reassembled<'a>(f: &Frame<'a>, of: FragmentOf, mut ip_payload: Vec<u8>) -> Option<Datagram<'a>> {
    let udp = UdpSlice::from_slice(&ip_payload).ok()?;
    let (sport, dport, len) = (
        udp.source_port(),
        udp.destination_port(),
        udp.payload().len(),
    );
    ip_payload.drain(..UdpHeader::LEN);
    ip_payload.truncate(len);
    Some(Datagram {
        ts_ns: f.ts_ns,
        src: SocketAddrV4::new(of.src, sport),
        dst: SocketAddrV4::new(of.dst, dport),
        payload: Cow::Owned(ip_payload),
        frame: f.data,
    })
}
