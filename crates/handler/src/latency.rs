//! How long the live handler takes a datagram from the wire to the books: from the kernel's
//! receive timestamp (SO_TIMESTAMPNS, CLOCK_REALTIME) to the datagram read, and to the packet
//! handled (arbitrated, decoded, books changed, outputs handed on). The wait in the socket is
//! apart so that a slow reader and slow handling tell themselves apart.

use fastfeed_stats::Stage;

/// Wire-to-book latency of one channel's datagrams.
#[derive(Clone)]
pub struct WireLatency {
    /// Kernel receipt -> the datagram read: its wait in the socket's queue.
    pub in_socket: Stage,
    /// Kernel receipt -> the packet handled.
    pub to_book: Stage,
    /// Datagrams without a usable timestamp: none from the kernel (timestamps refused), or
    /// one later than the clock read after it (the clock stepped back).
    pub unstamped: u64,
}

impl Default for WireLatency {
    fn default() -> Self {
        WireLatency {
            in_socket: Stage::new("in socket"),
            to_book: Stage::new("wire to book"),
            unstamped: 0,
        }
    }
}

/// The percentiles reported, with their names in reports.
const POINTS: [(&str, f64); 4] = [("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p99_9", 99.9)];

impl WireLatency {
    /// One datagram: the kernel's `stamp`, the clock when it was read and when it was handled
    /// (all ns on CLOCK_REALTIME).
    #[inline]
    pub fn record(&mut self, stamp: Option<u64>, read_ns: u64, done_ns: u64) {
        match stamp {
            Some(at) if at <= read_ns && read_ns <= done_ns => {
                self.in_socket.record(read_ns - at);
                self.to_book.record(done_ns - at);
            }
            _ => self.unstamped += 1,
        }
    }

    /// Datagrams timed.
    pub fn count(&self) -> u64 {
        self.to_book.count()
    }

    /// Every figure by name, ns (`wire_to_book_p50_ns`, ..., `in_socket_max_ns`,
    /// `wire_unstamped`), for the handler's JSON report.
    pub fn fields(&self) -> Vec<(String, u64)> {
        let mut v = vec![
            ("wire_timed".to_string(), self.count()),
            ("wire_unstamped".to_string(), self.unstamped),
        ];
        for (name, s) in [
            ("wire_to_book", &self.to_book),
            ("in_socket", &self.in_socket),
        ] {
            for (p, at) in POINTS {
                v.push((format!("{name}_{p}_ns"), s.percentile_ns(at)));
            }
            v.push((format!("{name}_max_ns"), s.max_ns()));
        }
        v
    }

    /// One line for people: `wire to book p50 12.1 p99 40.3 p99.9 88.0 max 120.5 us (of which
    /// in the socket p50 ... ), 8101 datagrams`.
    pub fn summary(&self) -> String {
        if self.count() == 0 {
            return format!(
                "wire to book: no datagram timed ({} unstamped)",
                self.unstamped
            );
        }
        let us = |s: &Stage| {
            let mut t = String::new();
            for (p, at) in [("p50", 50.0), ("p99", 99.0), ("p99.9", 99.9)] {
                t.push_str(&format!("{p} {:.1} ", s.percentile_ns(at) as f64 / 1e3));
            }
            t + &format!("max {:.1} us", s.max_ns() as f64 / 1e3)
        };
        let unstamped = match self.unstamped {
            0 => String::new(),
            n => format!(", {n} unstamped"),
        };
        format!(
            "wire to book {} (in the socket {}), {} datagrams timed{unstamped}",
            us(&self.to_book),
            us(&self.in_socket),
            self.count()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timed_from_the_kernels_stamp() {
        let mut w = WireLatency::default();
        // Under 2,048 ns the histogram is exact.
        w.record(Some(1_000), 1_500, 2_800);
        w.record(Some(2_000), 2_200, 3_000);
        w.record(None, 3_000, 5_000);
        // The clock stepped back between the stamp and the read.
        w.record(Some(9_000), 3_000, 5_000);
        assert_eq!((w.count(), w.unstamped), (2, 2));
        assert_eq!(w.to_book.max_ns(), 1_800);
        assert_eq!(w.in_socket.max_ns(), 500);
        let f: std::collections::HashMap<_, _> = w.fields().into_iter().collect();
        assert_eq!(f["wire_timed"], 2);
        assert_eq!(f["wire_unstamped"], 2);
        assert_eq!(f["wire_to_book_p50_ns"], 1_000);
        assert_eq!(f["in_socket_p50_ns"], 200);
        assert_eq!(f["wire_to_book_max_ns"], 1_800);
        assert!(
            w.summary().contains("2 datagrams timed, 2 unstamped"),
            "{}",
            w.summary()
        );
    }
}
