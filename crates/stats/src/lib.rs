//! Per-stage timing: count, sum, mean and standard deviation (the columns of the seed paper's
//! report) plus percentiles from an HdrHistogram, in nanoseconds, reported in microseconds.

use std::fmt::Write as _;
use std::io::{self, Write};

use hdrhistogram::Histogram;

mod plot;
pub use plot::plot_png;

/// This thread's CPU time in seconds: what a benchmark pass cost its core, without the time
/// other processes held it (these machines are shared).
pub fn thread_cpu_seconds() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// Timings of one pipeline stage.
#[derive(Clone)]
pub struct Stage {
    pub name: String,
    hist: Histogram<u64>,
    sum: f64,
    sum_sq: f64,
}

impl Stage {
    pub fn new(name: impl Into<String>) -> Stage {
        // Three significant digits from 1 ns to an hour; auto-resize covers the rest.
        let mut hist = Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds");
        hist.auto(true);
        Stage {
            name: name.into(),
            hist,
            sum: 0.0,
            sum_sq: 0.0,
        }
    }

    /// Records one duration in nanoseconds.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        let ns = ns.max(1);
        // Cannot fail with auto-resize on.
        let _ = self.hist.record(ns);
        let x = ns as f64;
        self.sum += x;
        self.sum_sq += x * x;
    }

    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    pub fn mean_ns(&self) -> f64 {
        if self.count() == 0 {
            0.0
        } else {
            self.sum / self.count() as f64
        }
    }

    pub fn std_dev_ns(&self) -> f64 {
        let n = self.count() as f64;
        if n < 2.0 {
            return 0.0;
        }
        let mean = self.sum / n;
        (self.sum_sq / n - mean * mean).max(0.0).sqrt()
    }

    /// The value at a percentile (0-100), in nanoseconds.
    pub fn percentile_ns(&self, p: f64) -> u64 {
        self.hist.value_at_percentile(p)
    }

    pub fn max_ns(&self) -> u64 {
        self.hist.max()
    }

    pub fn merge(&mut self, other: &Stage) {
        let _ = self.hist.add(&other.hist);
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
    }

    /// Writes the percentile distribution in HdrHistogram's text form (value in
    /// microseconds, percentile, total count, 1/(1-percentile)), ready for its plotters.
    pub fn write_percentiles(&self, mut out: impl Write) -> io::Result<()> {
        writeln!(out, "# {}", self.name)?;
        writeln!(
            out,
            "{:>12} {:>14} {:>10} {:>14}",
            "Value(us)", "Percentile", "TotalCount", "1/(1-Percentile)"
        )?;
        for v in self.hist.iter_quantiles(2) {
            let q = v.quantile_iterated_to();
            let inv = if q < 1.0 {
                format!("{:.2}", 1.0 / (1.0 - q))
            } else {
                "inf".into()
            };
            writeln!(
                out,
                "{:>12.3} {:>14.12} {:>10} {:>14}",
                v.value_iterated_to() as f64 / 1e3,
                q,
                v.count_since_last_iteration(),
                inv
            )?;
        }
        writeln!(
            out,
            "#[Mean = {:.3}, StdDeviation = {:.3}]",
            self.mean_ns() / 1e3,
            self.std_dev_ns() / 1e3
        )?;
        writeln!(
            out,
            "#[Max = {:.3}, Total count = {}]",
            self.max_ns() as f64 / 1e3,
            self.count()
        )?;
        Ok(())
    }
}

/// The report table: one row per stage, times in microseconds.
pub fn table(stages: &[&Stage]) -> String {
    let width = stages
        .iter()
        .map(|s| s.name.len())
        .max()
        .unwrap_or(4)
        .max(5);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<width$} {:>8} {:>12} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "name", "count", "sum", "mean", "std_dev", "p50", "p90", "p99", "p99.9", "max"
    );
    for st in stages {
        let us = |ns: f64| ns / 1e3;
        let _ = writeln!(
            s,
            "{:<width$} {:>8} {:>12.0} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
            st.name,
            st.count(),
            us(st.sum),
            us(st.mean_ns()),
            us(st.std_dev_ns()),
            us(st.percentile_ns(50.0) as f64),
            us(st.percentile_ns(90.0) as f64),
            us(st.percentile_ns(99.0) as f64),
            us(st.percentile_ns(99.9) as f64),
            us(st.max_ns() as f64),
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moments_and_percentiles() {
        let mut s = Stage::new("x");
        for v in 1..=1000u64 {
            s.record(v * 1000);
        }
        assert_eq!(s.count(), 1000);
        assert!((s.mean_ns() - 500_500.0).abs() < 1e-6);
        assert!((s.std_dev_ns() - 288_674.9).abs() < 1.0);
        let p50 = s.percentile_ns(50.0) as f64;
        assert!((p50 - 500_000.0).abs() / 500_000.0 < 0.002, "{p50}");
        assert!(s.max_ns() >= 1_000_000);
        let t = table(&[&s]);
        assert!(t.lines().nth(1).unwrap().starts_with("x "), "{t}");
        let mut out = Vec::new();
        s.write_percentiles(&mut out).unwrap();
        assert!(String::from_utf8(out)
            .unwrap()
            .contains("Total count = 1000"));
    }
}
