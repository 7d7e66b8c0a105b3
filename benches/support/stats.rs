//! Latency statistics and the units the benches print, so every table computes and shows a
//! percentile or a size the same way.

use std::time::Duration;

pub(crate) const MIB: f64 = 1024.0 * 1024.0;

/// Latency figures of one kind of request.
pub(crate) struct Stats {
    pub(crate) n: usize,
    pub(crate) p50: Duration,
    pub(crate) p99: Duration,
    pub(crate) max: Duration,
}

impl Stats {
    /// The figures of `times` (at least one).
    pub(crate) fn of(mut times: Vec<Duration>) -> Stats {
        assert!(!times.is_empty(), "no measurements");
        times.sort_unstable();
        let n = times.len();
        // Nearest rank: the smallest value with at least p·n values at or below it.
        let rank = |p: f64| times[((p * n as f64).ceil() as usize).clamp(1, n) - 1];
        Stats {
            n,
            p50: rank(0.50),
            p99: rank(0.99),
            max: times[n - 1],
        }
    }
}

/// Bytes in MiB with two decimals.
pub(crate) fn mib(bytes: u64) -> String {
    format!("{:.2} MiB", bytes as f64 / MIB)
}

/// A goal's verdict as the tables print it.
pub(crate) fn met(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "MISSED"
    }
}
