//! Lines A and B watched for silence. A line that dies while the other carries the channel
//! loses nothing, so no gap or stale book would show it until the other line lost a packet
//! too, and then the channel has no second copy. A line is silent when it has taken no
//! packet for the channel's `line_silence_ms` while the other line took packets; it is back
//! at its next packet. Measured against the other line, so a quiet market (neither line
//! sending) is no alarm.

/// Both incremental lines' silence.
#[derive(Debug, Clone)]
pub(crate) struct Silence {
    /// 0: not watched (a channel with one line, or turned off).
    after_ns: u64,
    /// The channel's first packet.
    start: Option<u64>,
    /// Each line's last packet.
    last: [Option<u64>; 2],
    /// For each line, the other line's first packet since this line's last one.
    since: [Option<u64>; 2],
    silent: [bool; 2],
    /// Times each line fell silent.
    pub silences: [u64; 2],
    /// Time silent, ns: from the line's last packet (or the channel's first) to its next
    /// (or to the end).
    pub silent_ns: [u64; 2],
}

impl Silence {
    pub fn new(after_ns: u64) -> Silence {
        Silence {
            after_ns,
            start: None,
            last: [None; 2],
            since: [None; 2],
            silent: [false; 2],
            silences: [0; 2],
            silent_ns: [0; 2],
        }
    }

    /// A packet on line `line` (0: A, 1: B) at `now_ns`.
    pub fn packet(&mut self, line: usize, now_ns: u64) {
        if self.after_ns == 0 {
            return;
        }
        let start = *self.start.get_or_insert(now_ns);
        if self.silent[line] {
            self.silent[line] = false;
            let last = self.last[line].unwrap_or(start);
            self.silent_ns[line] += now_ns.saturating_sub(last);
        }
        self.last[line] = Some(now_ns);
        self.since[line] = None;
        let other = 1 - line;
        let since = *self.since[other].get_or_insert(now_ns);
        if !self.silent[other] && now_ns.saturating_sub(since) >= self.after_ns {
            self.silent[other] = true;
            self.silences[other] += 1;
        }
    }

    /// Which lines are silent now.
    pub fn silent(&self) -> [bool; 2] {
        self.silent
    }

    /// The input ended at `now_ns`: a line still silent counts its time up to then.
    pub fn finish(&mut self, now_ns: u64) {
        let start = self.start.unwrap_or(now_ns);
        for l in 0..2 {
            if self.silent[l] {
                let last = self.last[l].unwrap_or(start);
                self.silent_ns[l] += now_ns.saturating_sub(last);
                self.last[l] = Some(now_ns.max(last));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn a_line_is_silent_only_while_the_other_takes_packets() {
        let mut s = Silence::new(S);
        // Both lines every 100 ms for 2 s, then A alone for 3 s, then both again.
        for t in (0..2 * S).step_by(100_000_000) {
            s.packet(0, t);
            s.packet(1, t);
        }
        assert_eq!(s.silent(), [false, false]);
        let mut t = 2 * S;
        while t < 5 * S {
            s.packet(0, t);
            t += 100_000_000;
        }
        assert_eq!((s.silent(), s.silences), ([false, true], [0, 1]));
        s.packet(1, 5 * S);
        assert_eq!(s.silent(), [false, false]);
        // From B's last packet (1.9 s) to its next (5 s).
        assert_eq!(s.silent_ns, [0, 3_100_000_000]);
        // A quiet market: neither line for 10 s, then both.
        s.packet(0, 15 * S);
        s.packet(1, 15 * S);
        assert_eq!((s.silent(), s.silences), ([false, false], [0, 1]));
    }

    #[test]
    fn a_line_that_never_delivers_is_silent_and_counted_to_the_end() {
        let mut s = Silence::new(S);
        for t in (0..3 * S).step_by(10_000_000) {
            s.packet(1, t);
        }
        assert_eq!((s.silent(), s.silences), ([true, false], [1, 0]));
        s.finish(4 * S);
        assert_eq!(s.silent_ns, [4 * S, 0]);
        let mut off = Silence::new(0);
        off.packet(1, 0);
        off.packet(1, 10 * S);
        assert_eq!((off.silent(), off.silences), ([false, false], [0, 0]));
    }
}
