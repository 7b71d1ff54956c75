//! Feed handling above the codec: the feed configuration (channels, their lines A and B and
//! snapshot line, framing, profile), which packets arrived, which are missing, which came
//! twice, and A/B line arbitration (the first copy of each packet wins).

mod arbiter;
pub mod config;
mod recorded;
mod sequence;

pub use arbiter::{Arbiter, ArbiterStats, Arbitration, Line, LineStats};
pub use config::{ChannelConfig, ConfigError, FeedConfig, LineConfig};
pub use recorded::recorded_config;
pub use sequence::{SeqCounters, SeqOutcome, SequenceTracker};
