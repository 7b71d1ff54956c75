//! From decoder callbacks to records. Field names are resolved once, at construction, into
//! per-template tables indexed by instruction position; the callbacks then only count
//! positions and dispatch on small enums.

use fastfeed_codec::template::Instr;
use fastfeed_codec::{CodecError, Decoder, FieldValue, Handler, Template, Templates};

use crate::map::{bytes, dec, md_field, rs_field, uint, Map, Target, Top, NO_FIELD};
use crate::option::{OptionQuote, OptionTrade};
use crate::records::*;

/// Counters over the converter's life.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConvertStats {
    pub messages: u64,
    pub records: u64,
    /// Messages of templates the converter does not know; they yield no record.
    pub unknown: u64,
    /// Strings cut to fit a record's fixed array.
    pub truncated: u64,
    /// Extra records made because a security had more entries than one record holds.
    pub extra_parts: u64,
}

/// A [`Handler`] that turns decoded messages into [`Record`]s, reusing its buffers so that
/// steady-state conversion does not allocate.
pub struct Converter {
    maps: Vec<Map>,
    /// Template id -> index into `maps` (ids are small in practice).
    by_id: Vec<u16>,
    cur: Option<usize>,
    pos: usize,
    in_entries: bool,
    elem_pos: usize,
    /// Depth inside groups, nested sequences or template references that no record takes.
    skip: u32,
    simple: Remove,
    volume: u32,
    price: u32,
    md: MarketData,
    qr: QuoteRequest,
    /// The option message being decoded: an OptionQuote's fields, and an OptionTrade's
    /// header (sequence, time, participant, series), which `finish` copies into `ot`.
    oq: OptionQuote,
    ot: OptionTrade,
    /// What the next option records carry as `channel` ([`Converter::set_channel`]).
    channel: u32,
    md_entries: Vec<MdEntry>,
    rs_entries: Vec<RelatedSym>,
    securities: Vec<u32>,
    records: Vec<Record>,
    done: bool,
    stats: ConvertStats,
}

const NO_MAP: u16 = u16::MAX;
const DENSE_LIMIT: u32 = 4096;

impl Converter {
    /// Recognizes templates by name: Quote, New, Change, Remove, MarketData, QuoteRequest,
    /// the OPRA-like OptionQuote and OptionTrade, and Done (or id 99). Others decode to no
    /// record and are counted in [`ConvertStats::unknown`]: among them the OPRA-like
    /// OpenInterest, SeriesStatus and Heartbeat, which no record type carries.
    pub fn new(templates: &Templates) -> Self {
        let mut maps = Vec::new();
        let mut by_id = Vec::new();
        for t in templates.iter().filter(|t| t.id < DENSE_LIMIT) {
            if let Some(m) = Map::new(t) {
                if by_id.len() <= t.id as usize {
                    by_id.resize(t.id as usize + 1, NO_MAP);
                }
                by_id[t.id as usize] = maps.len() as u16;
                maps.push(m);
            }
        }
        Converter {
            maps,
            by_id,
            cur: None,
            pos: 0,
            in_entries: false,
            elem_pos: 0,
            skip: 0,
            simple: Remove::default(),
            volume: 0,
            price: 0,
            md: MarketData::default(),
            qr: QuoteRequest::default(),
            oq: OptionQuote::default(),
            ot: OptionTrade::default(),
            channel: 0,
            // Room for typical messages up front; larger ones grow the buffers once.
            md_entries: Vec::with_capacity(64),
            rs_entries: Vec::with_capacity(16),
            securities: Vec::with_capacity(64),
            records: Vec::with_capacity(64),
            done: false,
            stats: ConvertStats::default(),
        }
    }

    /// Decodes one message from `buf` into `out` (cleared first). Returns the bytes used.
    /// `out`'s buffer is swapped in and out, so neither it nor the converter reallocates.
    pub fn decode(
        &mut self,
        decoder: &mut Decoder,
        buf: &[u8],
        out: &mut Vec<Record>,
    ) -> Result<usize, CodecError> {
        out.clear();
        std::mem::swap(&mut self.records, out);
        let r = decoder.decode(buf, self);
        std::mem::swap(&mut self.records, out);
        if r.is_err() {
            out.clear();
        }
        r
    }

    /// The records of the last message, when the converter is handed to a decoder directly.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// The channel number the following option records carry (0 until set): the OPRA-like
    /// feed's channels are separate packet streams, so the caller sets it per packet from the
    /// packet's header.
    pub fn set_channel(&mut self, channel: u32) {
        self.channel = channel;
    }

    /// Whether a Done message has been seen.
    pub fn done(&self) -> bool {
        self.done
    }

    pub fn stats(&self) -> ConvertStats {
        self.stats
    }

    fn top_value(&mut self, slot: Top, v: FieldValue<'_>) {
        let s = &mut self.simple;
        match slot {
            Top::Skip | Top::Entries => {}
            Top::MessageType => s.message_type = uint(v) as u16,
            Top::SequenceNumber => s.sequence_number = uint(v) as u32,
            Top::Timestamp => s.timestamp = uint(v) as u32,
            Top::OrderId => s.order_id = uint(v) as u32,
            Top::Volume => self.volume = uint(v) as u32,
            Top::Price => self.price = uint(v) as u32,
            Top::ExchangeId => s.exchange_id = uint(v) as u8,
            Top::SecurityId => s.security_id = uint(v) as u16,
            Top::SecurityType => s.security_type = uint(v) as u8,
            Top::SessionId => s.session_id = uint(v) as u8,
            Top::Side => s.side = uint(v) as u8,
            Top::MsgSeqNum => {
                self.md.msg_seq_num = uint(v) as u32;
                self.qr.msg_seq_num = self.md.msg_seq_num;
            }
            Top::SendingTime => {
                self.md.sending_time = uint(v) as u32;
                self.qr.sending_time = self.md.sending_time;
            }
            Top::TradeDate => self.md.trade_date = uint(v) as u32,
            Top::QuoteReqId => {
                if !self.qr.quote_req_id.set(bytes(&v)) {
                    self.stats.truncated += 1;
                }
            }
            Top::OptSeqNum => self.oq.msg_seq_num = uint(v) as u32,
            Top::OptTime => self.oq.time = uint(v) as u32,
            Top::Participant => self.oq.participant = uint(v) as u32,
            Top::SeriesId => self.oq.series_id = uint(v) as u32,
            Top::BidPrice => self.oq.bid = dec(v),
            Top::BidSize => self.oq.bid_size = uint(v) as u32,
            Top::AskPrice => self.oq.ask = dec(v),
            Top::AskSize => self.oq.ask_size = uint(v) as u32,
            Top::TradePrice => self.ot.price = dec(v),
            Top::TradeVolume => self.ot.volume = uint(v) as u32,
            Top::TradeCondition => {
                self.ot.condition = uint(v) as u32;
                self.ot.present |= OptionTrade::CONDITION;
            }
        }
    }

    fn entry_value(&mut self, target: Target, field: u8, v: FieldValue<'_>) {
        if field == NO_FIELD {
            return;
        }
        let ok = match target {
            Target::MarketData => match self.md_entries.last_mut() {
                Some(e) => md_field(e, field, v),
                None => true,
            },
            _ => match self.rs_entries.last_mut() {
                Some(e) => rs_field(e, field, v),
                None => true,
            },
        };
        if !ok {
            self.stats.truncated += 1;
        }
    }

    fn finish(&mut self, target: Target) {
        let s = self.simple;
        let (volume, price) = (self.volume, self.price);
        let (seq, ts, oid) = (s.sequence_number, s.timestamp, s.order_id);
        let (mt, sec, ex, st, ses) = (
            s.message_type,
            s.security_id,
            s.exchange_id,
            s.security_type,
            s.session_id,
        );
        macro_rules! simple {
            ($ty:ident { $($f:ident: $v:expr),* }) => {
                Record::$ty($ty {
                    sequence_number: seq, timestamp: ts, order_id: oid, message_type: mt,
                    security_id: sec, exchange_id: ex, security_type: st, session_id: ses,
                    $($f: $v),*
                })
            };
        }
        let r = match target {
            Target::Quote => simple!(Quote {
                volume: volume,
                price: price,
                _pad: 0
            }),
            Target::New => simple!(New {
                volume: volume,
                price: price,
                side: s.side
            }),
            Target::Change => simple!(Change {
                volume: volume,
                price: price,
                side: s.side
            }),
            Target::Remove => Record::Remove(s),
            Target::Done => {
                self.done = true;
                Record::Done
            }
            Target::OptionQuote => Record::OptionQuote(OptionQuote {
                channel: self.channel,
                ..self.oq
            }),
            Target::OptionTrade => {
                let h = &self.oq;
                Record::OptionTrade(OptionTrade {
                    series_id: h.series_id,
                    msg_seq_num: h.msg_seq_num,
                    time: h.time,
                    participant: h.participant,
                    channel: self.channel,
                    ..self.ot
                })
            }
            Target::MarketData => return self.split_market_data(),
            Target::QuoteRequest => return self.split_quote_request(),
        };
        self.records.push(r);
    }

    /// One record per security in order of first appearance, entries in message order.
    fn split_market_data(&mut self) {
        distinct(
            &mut self.securities,
            self.md_entries.iter().map(|e| e.security_id),
        );
        for &sid in &self.securities {
            let n = self
                .md_entries
                .iter()
                .filter(|e| e.security_id == sid)
                .count();
            let parts = n.div_ceil(MD_MAX_ENTRIES);
            self.stats.extra_parts += parts as u64 - 1;
            let mut rec = self.md;
            rec.security_id = sid;
            rec.parts = parts as u16;
            let mut picked = self.md_entries.iter().filter(|e| e.security_id == sid);
            for part in 0..parts {
                rec.part = part as u16;
                rec.entry_count = 0;
                for (slot, e) in rec.entries.iter_mut().zip(picked.by_ref()) {
                    *slot = *e;
                    rec.entry_count += 1;
                }
                // A last part with fewer entries: the slots past them are zero, not the
                // previous part's (byte wires leave zeros out, see `Record::wire_len`).
                rec.entries[rec.entry_count as usize..].fill(Default::default());
                self.records.push(Record::MarketData(rec));
            }
        }
    }

    fn split_quote_request(&mut self) {
        distinct(
            &mut self.securities,
            self.rs_entries.iter().map(|e| e.security_id),
        );
        for &sid in &self.securities {
            let n = self
                .rs_entries
                .iter()
                .filter(|e| e.security_id == sid)
                .count();
            let parts = n.div_ceil(QR_MAX_ENTRIES);
            self.stats.extra_parts += parts as u64 - 1;
            let mut rec = self.qr;
            rec.security_id = sid;
            rec.parts = parts as u16;
            let mut picked = self.rs_entries.iter().filter(|e| e.security_id == sid);
            for part in 0..parts {
                rec.part = part as u16;
                rec.entry_count = 0;
                for (slot, e) in rec.entries.iter_mut().zip(picked.by_ref()) {
                    *slot = *e;
                    rec.entry_count += 1;
                }
                // A last part with fewer entries: the slots past them are zero, not the
                // previous part's (byte wires leave zeros out, see `Record::wire_len`).
                rec.entries[rec.entry_count as usize..].fill(Default::default());
                self.records.push(Record::QuoteRequest(rec));
            }
        }
    }
}

/// Fills `out` with the distinct ids in order of first appearance (few per message, so a
/// linear scan beats hashing).
fn distinct(out: &mut Vec<u32>, ids: impl Iterator<Item = u32>) {
    out.clear();
    for id in ids {
        if !out.contains(&id) {
            out.push(id);
        }
    }
}

impl Handler for Converter {
    fn begin_message(&mut self, template: &Template) {
        self.records.clear();
        self.stats.messages += 1;
        self.cur = self
            .by_id
            .get(template.id as usize)
            .filter(|&&i| i != NO_MAP)
            .map(|&i| i as usize);
        if self.cur.is_none() {
            self.stats.unknown += 1;
        }
        self.pos = 0;
        self.in_entries = false;
        self.skip = 0;
        self.simple = Remove::default();
        (self.volume, self.price) = (0, 0);
        self.md = MarketData::default();
        self.qr = QuoteRequest::default();
        self.oq = OptionQuote::default();
        self.ot = OptionTrade::default();
        self.md_entries.clear();
        self.rs_entries.clear();
    }

    fn end_message(&mut self) {
        if let Some(m) = self.cur.take() {
            let target = self.maps[m].target;
            self.finish(target);
            self.stats.records += self.records.len() as u64;
        }
    }

    fn value(&mut self, _: &Instr, v: FieldValue<'_>) {
        let Some(m) = self.cur else { return };
        if self.skip > 0 {
            return;
        }
        let map = &self.maps[m];
        if self.in_entries {
            let (target, field) = (map.target, map.elem.get(self.elem_pos).copied());
            self.elem_pos += 1;
            self.entry_value(target, field.unwrap_or(NO_FIELD), v);
        } else {
            let slot = map.top.get(self.pos).copied().unwrap_or(Top::Skip);
            self.pos += 1;
            self.top_value(slot, v);
        }
    }

    fn absent(&mut self, _: &Instr) {
        if self.skip == 0 {
            self.advance();
        }
    }

    fn begin_sequence(&mut self, _: &Instr, _: u32) {
        let Some(m) = self.cur else { return };
        let entries = self.maps[m].top.get(self.pos) == Some(&Top::Entries);
        if self.skip == 0 && !self.in_entries && entries {
            self.in_entries = true;
        } else {
            self.skip += 1;
        }
    }

    fn begin_element(&mut self, _: u32) {
        let Some(m) = self.cur else { return };
        if self.skip > 0 || !self.in_entries {
            return;
        }
        self.elem_pos = 0;
        match self.maps[m].target {
            Target::MarketData => self.md_entries.push(MdEntry::default()),
            _ => self.rs_entries.push(RelatedSym::default()),
        }
    }

    fn end_sequence(&mut self) {
        if self.skip == 0 && self.in_entries {
            self.in_entries = false;
            self.pos += 1;
        } else {
            self.end_nested();
        }
    }

    fn begin_group(&mut self, _: &Instr) {
        self.skip += 1;
    }

    fn end_group(&mut self) {
        self.end_nested();
    }

    fn begin_template_ref(&mut self, _: &Template) {
        self.skip += 1;
    }

    fn end_template_ref(&mut self) {
        self.end_nested();
    }
}

impl Converter {
    /// Moves past one instruction of the current segment.
    fn advance(&mut self) {
        if self.in_entries {
            self.elem_pos += 1;
        } else {
            self.pos += 1;
        }
    }

    /// Leaves a skipped nesting; closing the outermost one completes an instruction.
    fn end_nested(&mut self) {
        if self.skip > 0 {
            self.skip -= 1;
            if self.skip == 0 {
                self.advance();
            }
        }
    }
}
