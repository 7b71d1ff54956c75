//! Deterministic sender-side fault injection: drop, duplicate, reorder, corrupt.

use crate::NetError;

/// Probabilities in [0, 1], applied independently to every input packet, and how a packet
/// is corrupted.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FaultConfig {
    /// The packet is not sent at all.
    pub drop: f64,
    /// The packet is sent twice in a row.
    pub duplicate: f64,
    /// The packet is held back and sent after the next emitted packet.
    pub reorder: f64,
    /// The packet is damaged as `corruption` says.
    pub corrupt: f64,
    pub corruption: Corruption,
}

/// How a corrupted packet is damaged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Corruption {
    /// Zeroed from a random offset, at or after its first `keep` bytes, to its end: a torn
    /// packet. FAST carries no checksum, so this is the damage a receiver always detects:
    /// zero bytes carry no stop bit, so the field spanning the offset runs off the end of
    /// the packet and the decoder reports it truncated (unless a length-prefixed byte
    /// vector covers the rest of the packet). `keep` spares the sequence header, so the
    /// receiver still knows which packet it lost.
    Tear { keep: usize },
    /// One random byte XORed with a random non-zero value. FAST often decodes this into
    /// silently wrong values, so a receiver cannot count these.
    Flip,
}

impl Default for Corruption {
    /// A tear that keeps a 4-byte header: the packet sequence number of fastfeed's packets.
    fn default() -> Self {
        Corruption::Tear { keep: 4 }
    }
}

/// What the injector did to one input packet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fate {
    /// Not sent at all; nothing else applies.
    pub dropped: bool,
    /// Sent damaged (both copies, if duplicated). A packet too short to damage (no bytes
    /// past a tear's `keep`) is sent intact.
    pub corrupted: bool,
    /// Sent twice in a row.
    pub duplicated: bool,
    /// Sent after a later packet.
    pub reordered: bool,
}

/// What the injector did so far, summed over the packets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultCounts {
    pub dropped: u64,
    pub duplicated: u64,
    /// Packets that were emitted after a later packet.
    pub reordered: u64,
    pub corrupted: u64,
}

/// Maps a sequence of input packets to the sequence of datagrams to send.
///
/// Per input packet, in this order: drop? (then nothing else happens); corrupt?
/// (the possible duplicate carries the same corruption); reorder? (only if no
/// packet is already held: hold it); otherwise emit it, duplicate?, then release
/// the held packet, if any. Same seed and config give the same output, and
/// [`FaultInjector::fates`] says what happened to each input packet.
#[derive(Debug, Clone)]
pub struct FaultInjector {
    config: FaultConfig,
    rng: fastrand::Rng,
    /// The packet held back to be reordered, with its index in `fates`.
    held: Option<(usize, Vec<u8>)>,
    fates: Vec<Fate>,
}

impl FaultInjector {
    pub fn new(config: FaultConfig, seed: u64) -> Result<Self, NetError> {
        for (name, value) in [
            ("drop", config.drop),
            ("duplicate", config.duplicate),
            ("reorder", config.reorder),
            ("corrupt", config.corrupt),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return Err(NetError::InvalidRate { name, value });
            }
        }
        Ok(FaultInjector {
            config,
            rng: fastrand::Rng::with_seed(seed),
            held: None,
            fates: Vec::new(),
        })
    }

    /// `p > 0` guard keeps rate 0 from consuming randomness (and from ever firing).
    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.rng.f64() < p
    }

    /// Feeds one packet; appends the datagrams to send now to `out`.
    pub fn process(&mut self, packet: &[u8], out: &mut Vec<Vec<u8>>) {
        let index = self.fates.len();
        let mut fate = Fate::default();
        if self.chance(self.config.drop) {
            fate.dropped = true;
            self.fates.push(fate);
            return;
        }
        let mut packet = packet.to_vec();
        fate.corrupted = self.corrupt(&mut packet);
        if self.held.is_none() && self.chance(self.config.reorder) {
            self.fates.push(fate);
            self.held = Some((index, packet));
            return;
        }
        fate.duplicated = self.chance(self.config.duplicate);
        self.fates.push(fate);
        if fate.duplicated {
            out.push(packet.clone());
        }
        out.push(packet);
        if let Some((held_index, held)) = self.held.take() {
            out.push(held);
            self.fates[held_index].reordered = true;
        }
    }

    /// Damages `packet` with the configured chance; returns whether it did.
    fn corrupt(&mut self, packet: &mut [u8]) -> bool {
        match self.config.corruption {
            Corruption::Tear { keep } => {
                if packet.len() <= keep || !self.chance(self.config.corrupt) {
                    return false;
                }
                let from = self.rng.usize(keep..packet.len());
                packet[from..].fill(0);
            }
            Corruption::Flip => {
                if packet.is_empty() || !self.chance(self.config.corrupt) {
                    return false;
                }
                let i = self.rng.usize(..packet.len());
                packet[i] ^= self.rng.u8(1..); // non-zero xor: the byte always changes
            }
        }
        true
    }

    /// Emits a packet still held back (at end of stream; it is then not reordered).
    pub fn flush(&mut self, out: &mut Vec<Vec<u8>>) {
        out.extend(self.held.take().map(|(_, p)| p));
    }

    /// Processes a whole sequence, including the final flush.
    pub fn apply<'a>(&mut self, packets: impl IntoIterator<Item = &'a [u8]>) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for p in packets {
            self.process(p, &mut out);
        }
        self.flush(&mut out);
        out
    }

    /// What happened to each input packet so far, in input order. A packet still held
    /// back shows as not reordered until a later packet is emitted before it.
    pub fn fates(&self) -> &[Fate] {
        &self.fates
    }

    pub fn counts(&self) -> FaultCounts {
        let mut c = FaultCounts::default();
        for f in &self.fates {
            c.dropped += f.dropped as u64;
            c.duplicated += f.duplicated as u64;
            c.reordered += f.reordered as u64;
            c.corrupted += f.corrupted as u64;
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: u32 = 1000;
    const KEEP: usize = 4;

    /// Packet `i`: its index as a 4-byte little-endian header, then 12 non-zero bytes (as
    /// FAST data ends in a stop bit, so a tear always changes something).
    fn packet(i: u32) -> Vec<u8> {
        let mut p = i.to_le_bytes().to_vec();
        p.extend((0..12u8).map(|b| 0x80 | b));
        p
    }

    fn packets() -> Vec<Vec<u8>> {
        (0..N).map(packet).collect()
    }

    fn index(p: &[u8]) -> u32 {
        u32::from_le_bytes(p[..4].try_into().unwrap())
    }

    fn run(config: FaultConfig, seed: u64) -> (Vec<Vec<u8>>, FaultInjector) {
        let input = packets();
        let mut inj = FaultInjector::new(config, seed).unwrap();
        let out = inj.apply(input.iter().map(|p| p.as_slice()));
        (out, inj)
    }

    const ALL: FaultConfig = FaultConfig {
        drop: 0.05,
        duplicate: 0.05,
        reorder: 0.05,
        corrupt: 0.05,
        corruption: Corruption::Tear { keep: KEEP },
    };

    fn only_corrupt(rate: f64, corruption: Corruption) -> FaultConfig {
        FaultConfig {
            corrupt: rate,
            corruption,
            ..FaultConfig::default()
        }
    }

    #[test]
    fn zero_rates_are_identity() {
        let (out, inj) = run(FaultConfig::default(), 1);
        assert_eq!(out, packets());
        assert_eq!(inj.counts(), FaultCounts::default());
        assert!(inj.fates().iter().all(|f| *f == Fate::default()));
    }

    #[test]
    fn same_seed_same_output() {
        let fates = |seed| {
            let (out, inj) = run(ALL, seed);
            (out, inj.fates().to_vec())
        };
        assert_eq!(fates(42), fates(42));
        assert_ne!(fates(42).0, fates(43).0);
    }

    #[test]
    fn rejects_bad_rates() {
        let bad = FaultConfig {
            drop: 1.5,
            ..FaultConfig::default()
        };
        assert!(FaultInjector::new(bad, 0).is_err());
    }

    /// Each fate, read back from the datagrams: how often each packet went out, whether it
    /// came right after a later one, whether its bytes changed.
    #[test]
    fn fates_match_the_datagrams() {
        let (out, inj) = run(ALL, 7);
        let fates = inj.fates();
        assert_eq!(fates.len(), N as usize);
        let c = inj.counts();
        assert!(c.dropped > 0 && c.duplicated > 0 && c.reordered > 0 && c.corrupted > 0);
        assert_eq!(out.len() as u64, N as u64 - c.dropped + c.duplicated);
        let mut sent = vec![0u32; N as usize];
        for d in &out {
            sent[index(d) as usize] += 1;
        }
        let mut after_later = vec![false; N as usize];
        for w in out.windows(2) {
            if index(&w[1]) < index(&w[0]) {
                after_later[index(&w[1]) as usize] = true;
            }
        }
        for (i, f) in fates.iter().enumerate() {
            let copies = if f.dropped {
                0
            } else {
                1 + f.duplicated as u32
            };
            assert_eq!(sent[i], copies, "packet {i}: {f:?}");
            assert_eq!(after_later[i], f.reordered, "packet {i}: {f:?}");
            assert!(!(f.dropped && (f.corrupted || f.duplicated || f.reordered)));
        }
        for d in &out {
            let i = index(d);
            assert_eq!(*d != packet(i), fates[i as usize].corrupted, "packet {i}");
        }
    }

    #[test]
    fn a_tear_zeroes_the_tail_after_the_header() {
        let (out, inj) = run(only_corrupt(0.2, Corruption::Tear { keep: KEEP }), 9);
        assert_eq!(out.len(), N as usize);
        assert!(inj.counts().corrupted > 100);
        for ((o, i), f) in out.iter().zip(packets()).zip(inj.fates()) {
            let from = o.iter().zip(&i).position(|(a, b)| a != b);
            assert_eq!(from.is_some(), f.corrupted);
            if let Some(from) = from {
                assert!(from >= KEEP, "the header survives");
                assert!(o[from..].iter().all(|&b| b == 0), "zero to the end");
            }
        }
    }

    #[test]
    fn a_packet_no_longer_than_the_header_is_not_torn() {
        let mut inj = FaultInjector::new(only_corrupt(1.0, Corruption::Tear { keep: 4 }), 1)
            .expect("valid rates");
        let out = inj.apply([&[1u8, 2, 3, 4][..], &[1, 2, 3, 4, 5][..]]);
        assert_eq!(out, [vec![1, 2, 3, 4], vec![1, 2, 3, 4, 0]]);
        assert_eq!(inj.counts().corrupted, 1);
    }

    #[test]
    fn a_flip_changes_one_byte() {
        let (out, inj) = run(only_corrupt(0.1, Corruption::Flip), 9);
        assert_eq!(out.len(), N as usize);
        assert!(inj.counts().corrupted > 50);
        for ((o, i), f) in out.iter().zip(packets()).zip(inj.fates()) {
            let diff = o.iter().zip(&i).filter(|(a, b)| a != b).count();
            assert_eq!(diff, f.corrupted as usize);
        }
    }

    #[test]
    fn a_packet_held_at_the_end_is_not_reordered() {
        let config = FaultConfig {
            reorder: 1.0,
            ..FaultConfig::default()
        };
        let mut inj = FaultInjector::new(config, 1).unwrap();
        let out = inj.apply([&[1u8][..], &[2][..], &[3][..]]);
        // 1 held, 2 sent then 1 released; 3 held and flushed last.
        assert_eq!(out, [vec![2], vec![1], vec![3]]);
        let reordered: Vec<bool> = inj.fates().iter().map(|f| f.reordered).collect();
        assert_eq!(reordered, [true, false, false]);
    }

    #[test]
    fn drop_all() {
        let config = FaultConfig { drop: 1.0, ..ALL };
        let (out, inj) = run(config, 3);
        assert!(out.is_empty());
        assert_eq!(inj.counts().dropped, N as u64);
    }
}
