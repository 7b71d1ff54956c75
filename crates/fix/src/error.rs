//! What can go wrong between FAST messages and FIX tag=value. Positions are byte offsets
//! into the FIX message text.

/// A conversion error; never a panic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FixError {
    // Templates that cannot be written as FIX.
    #[error("template {template}: field {field} has no id, so no FIX tag (--skip-untagged leaves such fields out)")]
    Untagged { template: String, field: String },
    #[error("template {template}: field {field} has id {id:?}, which is not a FIX tag number")]
    BadTagId {
        template: String,
        field: String,
        id: String,
    },
    #[error("template {template}: field {field} uses tag {tag}, which the converter computes")]
    ReservedTag {
        template: String,
        field: String,
        tag: u32,
    },
    #[error("template {template}: field {field} is a dynamic template reference, which FIX cannot carry (--skip-untagged leaves it out)")]
    DynamicRef { template: String, field: String },
    #[error("field {field} ({tag}): its value holds a separator or SOH byte, which FIX tag=value cannot carry")]
    SeparatorInValue { field: String, tag: String },

    // FIX text that cannot be read.
    #[error("at byte {at}: a FIX message starts with 8=BeginString")]
    NoBeginString { at: usize },
    #[error("at byte {at}: the message ends early{}", if *.needed > 0 { format!(" ({} more bytes needed)", .needed) } else { String::new() })]
    Truncated { at: usize, needed: usize },
    #[error("at byte {at}: 9=BodyLength is missing or not a number")]
    NoBodyLength { at: usize },
    #[error("at byte {at}: BodyLength (9) says {declared} bytes, the body has {actual}")]
    BodyLength {
        at: usize,
        declared: usize,
        actual: usize,
    },
    #[error("at byte {at}: CheckSum (10) says {declared}, the message sums to {computed:03}")]
    CheckSum {
        at: usize,
        declared: String,
        computed: u8,
    },
    #[error("at byte {at}: expected tag=value, found {found:?}")]
    BadField { at: usize, found: String },
    #[error("at byte {at}: the body does not start with 35=MsgType")]
    NoMsgType { at: usize },
    #[error("at byte {at}: no template for MsgType (35) {msg_type:?} (--msg-type TEMPLATE=VALUE maps one)")]
    UnknownMsgType { at: usize, msg_type: String },
    #[error("at byte {at}: tag {tag} belongs to no field of template {template} here")]
    UnexpectedTag {
        at: usize,
        tag: u32,
        template: String,
    },
    #[error("at byte {at}: tag {tag} ({field}): {why}")]
    BadValue {
        at: usize,
        tag: u32,
        field: String,
        why: String,
    },
    #[error("at byte {at}: {field} ({tag}) counts {declared} entries, found {found}")]
    Count {
        at: usize,
        tag: u32,
        field: String,
        declared: u32,
        found: u32,
    },
    #[error("at byte {at}: template {template} needs field {field} ({tag}), which is missing")]
    Missing {
        at: usize,
        template: String,
        field: String,
        tag: String,
    },
}
