//! Feed handling above the codec: which packets arrived, which are missing, which came twice.

mod sequence;

pub use sequence::{SeqCounters, SeqOutcome, SequenceTracker};
