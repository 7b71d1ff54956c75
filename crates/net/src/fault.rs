//! Deterministic sender-side fault injection: drop, duplicate, reorder, corrupt.

use crate::NetError;

/// Probabilities in [0, 1], applied independently to every input packet.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FaultConfig {
    /// The packet is not sent at all.
    pub drop: f64,
    /// The packet is sent twice in a row.
    pub duplicate: f64,
    /// The packet is held back and sent after the next emitted packet.
    pub reorder: f64,
    /// One random byte of the packet is changed.
    pub corrupt: f64,
}

/// What the injector did so far.
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
/// the held packet, if any. Same seed and config give the same output.
#[derive(Debug, Clone)]
pub struct FaultInjector {
    config: FaultConfig,
    rng: fastrand::Rng,
    held: Option<Vec<u8>>,
    counts: FaultCounts,
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
            counts: FaultCounts::default(),
        })
    }

    /// `p > 0` guard keeps rate 0 from consuming randomness (and from ever firing).
    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.rng.f64() < p
    }

    /// Feeds one packet; appends the datagrams to send now to `out`.
    pub fn process(&mut self, packet: &[u8], out: &mut Vec<Vec<u8>>) {
        if self.chance(self.config.drop) {
            self.counts.dropped += 1;
            return;
        }
        let mut packet = packet.to_vec();
        if !packet.is_empty() && self.chance(self.config.corrupt) {
            let i = self.rng.usize(..packet.len());
            packet[i] ^= self.rng.u8(1..); // non-zero xor: the byte always changes
            self.counts.corrupted += 1;
        }
        if self.held.is_none() && self.chance(self.config.reorder) {
            self.held = Some(packet);
            return;
        }
        if self.chance(self.config.duplicate) {
            out.push(packet.clone());
            self.counts.duplicated += 1;
        }
        out.push(packet);
        if let Some(held) = self.held.take() {
            out.push(held);
            self.counts.reordered += 1;
        }
    }

    /// Emits a packet still held back (at end of stream; it is then not reordered).
    pub fn flush(&mut self, out: &mut Vec<Vec<u8>>) {
        out.extend(self.held.take());
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

    pub fn counts(&self) -> FaultCounts {
        self.counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1,000 packets of 8 bytes: the big-endian index.
    fn packets() -> Vec<Vec<u8>> {
        (0u64..1000).map(|i| i.to_be_bytes().to_vec()).collect()
    }

    fn run(config: FaultConfig, seed: u64) -> (Vec<Vec<u8>>, FaultCounts) {
        let input = packets();
        let mut inj = FaultInjector::new(config, seed).unwrap();
        let out = inj.apply(input.iter().map(|p| p.as_slice()));
        (out, inj.counts())
    }

    const ALL: FaultConfig = FaultConfig {
        drop: 0.05,
        duplicate: 0.05,
        reorder: 0.05,
        corrupt: 0.05,
    };

    #[test]
    fn zero_rates_are_identity() {
        let (out, counts) = run(FaultConfig::default(), 1);
        assert_eq!(out, packets());
        assert_eq!(counts, FaultCounts::default());
    }

    #[test]
    fn same_seed_same_output() {
        assert_eq!(run(ALL, 42), run(ALL, 42));
        assert_ne!(run(ALL, 42).0, run(ALL, 43).0);
    }

    #[test]
    fn rejects_bad_rates() {
        let bad = FaultConfig {
            drop: 1.5,
            ..FaultConfig::default()
        };
        assert!(FaultInjector::new(bad, 0).is_err());
    }

    #[test]
    fn counts_match_output_without_corruption() {
        let config = FaultConfig {
            corrupt: 0.0,
            ..ALL
        };
        let (out, c) = run(config, 7);
        assert!(c.dropped > 0 && c.duplicated > 0 && c.reordered > 0);
        let idx: Vec<u64> = out
            .iter()
            .map(|p| u64::from_be_bytes(p.as_slice().try_into().unwrap()))
            .collect();
        assert_eq!(idx.len() as u64, 1000 - c.dropped + c.duplicated);
        let mut distinct = idx.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len() as u64, 1000 - c.dropped);
        let dups = idx.windows(2).filter(|w| w[0] == w[1]).count() as u64;
        assert_eq!(dups, c.duplicated);
        // A released packet directly follows a later one: one descent per reorder.
        let descents = idx.windows(2).filter(|w| w[1] < w[0]).count() as u64;
        assert_eq!(descents, c.reordered);
    }

    #[test]
    fn corruption_counts_match() {
        let config = FaultConfig {
            corrupt: 0.1,
            ..FaultConfig::default()
        };
        let (out, c) = run(config, 9);
        assert_eq!(out.len(), 1000);
        let changed = out.iter().zip(packets()).filter(|(o, i)| **o != *i).count() as u64;
        assert!(c.corrupted > 50);
        assert_eq!(changed, c.corrupted);
        for (o, i) in out.iter().zip(packets()) {
            let diff = o.iter().zip(&i).filter(|(a, b)| a != b).count();
            assert!(diff <= 1);
        }
    }

    #[test]
    fn drop_all() {
        let config = FaultConfig { drop: 1.0, ..ALL };
        let (out, c) = run(config, 3);
        assert!(out.is_empty());
        assert_eq!(c.dropped, 1000);
    }
}
