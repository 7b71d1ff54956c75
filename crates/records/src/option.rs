//! The OPRA-like feed's records (`crates/sim/templates/opra.xml`): one record per OptionQuote
//! or OptionTrade message, keyed by the option series. The 4-byte fields come first and the
//! decimals (8-byte aligned) after them, so no padding falls between fields.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::records::{Dec, RecordType};

/// An OptionQuote message (template 1 of the OPRA-like set): both sides of one series.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Default, IntoBytes, FromBytes, Immutable, KnownLayout,
)]
pub struct OptionQuote {
    pub series_id: u32,
    pub msg_seq_num: u32,
    /// Milliseconds since midnight.
    pub time: u32,
    pub participant: u32,
    pub bid_size: u32,
    pub ask_size: u32,
    /// The channel whose packet carried the message ([`crate::Converter::set_channel`]).
    pub channel: u32,
    /// Zero; keeps `bid` on its 8-byte boundary without an implicit hole.
    pub _pad: u32,
    pub bid: Dec,
    pub ask: Dec,
}

/// An OptionTrade message (template 2 of the OPRA-like set).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Default, IntoBytes, FromBytes, Immutable, KnownLayout,
)]
pub struct OptionTrade {
    pub series_id: u32,
    pub msg_seq_num: u32,
    /// Milliseconds since midnight.
    pub time: u32,
    pub participant: u32,
    pub volume: u32,
    /// TradeCondition; 0 when the message had none (see `present`).
    pub condition: u32,
    /// The channel whose packet carried the message ([`crate::Converter::set_channel`]).
    pub channel: u32,
    /// Bit [`OptionTrade::CONDITION`]: TradeCondition was present.
    pub present: u32,
    pub price: Dec,
}

impl OptionTrade {
    /// `present` bit: the optional TradeCondition was in the message.
    pub const CONDITION: u32 = 1;

    /// Whether the field with bit `bit` was present.
    pub fn has(&self, bit: u32) -> bool {
        self.present & bit != 0
    }
}

impl RecordType for OptionQuote {
    const TYPE_NAME: &'static str = "optionquote";
    const LAYOUT_VERSION: u16 = 1;
    /// The series: subscribers filter on it as on a security.
    fn security_id(&self) -> u32 {
        self.series_id
    }
}

impl RecordType for OptionTrade {
    const TYPE_NAME: &'static str = "optiontrade";
    const LAYOUT_VERSION: u16 = 1;
    /// The series: subscribers filter on it as on a security.
    fn security_id(&self) -> u32 {
        self.series_id
    }
}
