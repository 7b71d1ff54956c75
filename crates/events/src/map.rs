//! Tag resolution, done once per template: which role each instruction plays, by the FIX tag
//! number in its `id` attribute, so decoding callbacks only index small tables.

use fastfeed_codec::template::{FieldType, Initial, Instr, Kind, Segment};
use fastfeed_codec::Template;

use crate::event::MsgKind;
use crate::profile::Profile;

/// Role of a top-level instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Top {
    Skip,
    MsgSeqNum,
    SendingTime,
    SecurityId,
    Symbol,
    /// TradingSessionID: with a symbol, part of an instrument's name.
    Session,
    RptSeq,
    LastMsgSeqNumProcessed,
    TotNumReports,
    /// LastFragment (893) and RouteFirst (7944): a snapshot sent in several messages.
    LastFragment,
    RouteFirst,
    NewSeqNo,
    TradingStatus,
    SessionStatus,
    MarketDepth,
    MinPriceIncrement,
    /// A sequence, with its index into [`TemplateMap::seqs`].
    Seq(u8),
}

/// Role of an instruction inside a sequence element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Elem {
    Skip,
    Action,
    EntryType,
    SecurityId,
    /// Symbol and TradingSessionID: the instrument, where no SecurityID names it.
    Symbol,
    Session,
    RptSeq,
    Price,
    Size,
    Level,
    Depth,
    EntryId,
    Orders,
    Aggressor,
}

/// One template, resolved.
#[derive(Debug, Clone)]
pub(crate) struct TemplateMap {
    pub kind: MsgKind,
    /// The template has no numeric SecurityID (48), at its top or in its sequences' elements:
    /// its instruments are named by Symbol and TradingSessionID. Where it has one, those
    /// fields name nothing (a FORTS entry whose SecurityID is null stays without one).
    pub symbol_keyed: bool,
    /// The template has RouteFirst (7944) or LastFragment (893) at its top.
    pub fragment_flags: bool,
    pub top: Vec<Top>,
    /// Per top-level sequence: element roles, and whether it holds the MD entries.
    pub seqs: Vec<(Vec<Elem>, bool)>,
}

fn tag(i: &Instr) -> Option<u32> {
    i.id.as_deref()?.trim().parse().ok()
}

fn top_role(t: u32) -> Top {
    match t {
        34 => Top::MsgSeqNum,
        52 => Top::SendingTime,
        48 => Top::SecurityId,
        55 => Top::Symbol,
        336 => Top::Session,
        83 => Top::RptSeq,
        369 => Top::LastMsgSeqNumProcessed,
        911 => Top::TotNumReports,
        893 => Top::LastFragment,
        7944 => Top::RouteFirst,
        36 => Top::NewSeqNo,
        326 => Top::TradingStatus,
        340 => Top::SessionStatus,
        264 => Top::MarketDepth,
        969 => Top::MinPriceIncrement,
        _ => Top::Skip,
    }
}

fn elem_role(t: u32) -> Elem {
    match t {
        279 => Elem::Action,
        269 => Elem::EntryType,
        48 => Elem::SecurityId,
        55 => Elem::Symbol,
        336 => Elem::Session,
        83 => Elem::RptSeq,
        270 => Elem::Price,
        271 => Elem::Size,
        1023 => Elem::Level,
        264 => Elem::Depth,
        278 => Elem::EntryId,
        346 => Elem::Orders,
        5797 => Elem::Aggressor,
        _ => Elem::Skip,
    }
}

fn roles(seg: &Segment) -> Vec<Elem> {
    seg.instrs
        .iter()
        .map(|i| match i.kind {
            Kind::Scalar(_) | Kind::SplitDecimal { .. } => tag(i).map_or(Elem::Skip, elem_role),
            _ => Elem::Skip,
        })
        .collect()
}

/// The value of a MsgType (35) constant, if the template has one.
fn msg_type(t: &Template) -> Option<&[u8]> {
    t.body.instrs.iter().find_map(|i| match &i.kind {
        Kind::Scalar(s) if tag(i) == Some(35) => match &s.initial {
            Some(Initial::Bytes(b)) if s.op == fastfeed_codec::template::Op::Constant => {
                Some(&b[..])
            }
            _ => None,
        },
        _ => None,
    })
}

impl TemplateMap {
    pub fn new(t: &Template, profile: &Profile) -> TemplateMap {
        let numeric_security = |i: &Instr| {
            tag(i) == Some(48)
                && matches!(&i.kind, Kind::Scalar(s) if matches!(s.ty, FieldType::Int(_)))
        };
        let symbol_keyed = !t.body.instrs.iter().any(|i| {
            numeric_security(i)
                || matches!(&i.kind, Kind::Sequence { body, .. } if body.instrs.iter().any(numeric_security))
        });
        let mut seqs = Vec::new();
        let top: Vec<Top> = t
            .body
            .instrs
            .iter()
            .map(|i| match &i.kind {
                Kind::Sequence { body, .. } if seqs.len() < u8::MAX as usize => {
                    let mut elems = roles(body);
                    if !symbol_keyed {
                        for e in &mut elems {
                            if matches!(e, Elem::Symbol | Elem::Session) {
                                *e = Elem::Skip;
                            }
                        }
                    }
                    let md = elems.contains(&Elem::EntryType) || elems.contains(&Elem::Action);
                    seqs.push((elems, md));
                    Top::Seq(seqs.len() as u8 - 1)
                }
                Kind::Scalar(_) | Kind::SplitDecimal { .. } => match tag(i).map(top_role) {
                    // A session names nothing where a SecurityID names the instrument.
                    Some(Top::Session) if !symbol_keyed => Top::Skip,
                    role => role.unwrap_or(Top::Skip),
                },
                _ => Top::Skip,
            })
            .collect();
        let kind = profile
            .template_kinds
            .get(&t.id)
            .copied()
            .or_else(|| msg_type(t).and_then(|m| profile.msg_kind(m)))
            .unwrap_or_else(|| structural_kind(t, &top, &seqs));
        // The MD entries of a message that keeps none are not looked at.
        if !matches!(kind, MsgKind::Incremental | MsgKind::Snapshot) {
            for s in &mut seqs {
                s.1 = false;
            }
        }
        TemplateMap {
            kind,
            symbol_keyed,
            fragment_flags: top
                .iter()
                .any(|r| matches!(r, Top::RouteFirst | Top::LastFragment)),
            top,
            seqs,
        }
    }

    /// Whether the message's entries sequence is the sequence `k`.
    #[inline]
    pub fn is_entries(&self, k: u8) -> bool {
        self.seqs.get(k as usize).is_some_and(|s| s.1)
    }
}

/// A template without a MsgType constant, known by what it carries: a resetting template
/// with no fields is a FAST Reset; MD entries with actions make an incremental, MD entries
/// with RptSeq or LastMsgSeqNumProcessed at the top a snapshot; NewSeqNo a sequence reset.
fn structural_kind(t: &Template, top: &[Top], seqs: &[(Vec<Elem>, bool)]) -> MsgKind {
    if t.body.instrs.is_empty() && t.reset {
        return MsgKind::Reset;
    }
    let has = |r: Top| top.contains(&r);
    let md = seqs.iter().find(|s| s.1);
    match md {
        Some((elems, _)) if elems.contains(&Elem::Action) => MsgKind::Incremental,
        Some(_) if has(Top::RptSeq) || has(Top::LastMsgSeqNumProcessed) => MsgKind::Snapshot,
        _ if has(Top::NewSeqNo) => MsgKind::SequenceReset,
        _ => MsgKind::Other,
    }
}
