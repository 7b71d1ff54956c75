//! fastfeed-handler: one channel's feed handler. Lines A and B are arbitrated (the first
//! copy of each packet wins), decoded into normalized events, checked for gaps in the
//! channel's packet sequence and in each instrument's RptSeq, and applied to books; an
//! instrument whose update was lost on both lines goes stale, queues its updates, takes its
//! book from the snapshot line and applies the queued updates after it. The state machine
//! ([`Channel`]) takes packets and the time as arguments, so it runs the same on sockets,
//! on captures and in tests.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod bench;
mod channel;
mod fragments;
mod instruments;
mod latency;
pub mod live;
mod output;
pub mod publish;
pub mod replay;
mod settings;
pub mod setup;
mod silence;
pub mod source;
mod stats;
pub mod stream;

pub use channel::Channel;
pub use latency::WireLatency;
pub use output::{BookState, BookView, Output};
pub use settings::{ChannelSettings, LineId};
pub use setup::{setup, ChannelSetup, SetupError};
pub use stats::{ChannelStats, StalePeriod};
