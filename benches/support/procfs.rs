//! Readings of a running process from `/proc/<pid>`: the memory figures are resident memory as
//! the kernel counts it, not what an allocator believes it holds.

use std::time::{Duration, Instant};

/// A field of `/proc/<pid>/status` in its own unit (kB for memory).
pub(crate) fn status_field(pid: u32, name: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// VmRSS in bytes.
pub(crate) fn rss_bytes(pid: u32) -> u64 {
    status_field(pid, "VmRSS").expect("the bridge's /proc status has VmRSS") * 1024
}

/// Samples RSS every 250 ms until the last 8 samples (2 s) lie within 256 KiB; at most 60 s.
/// Memory settles a while after the work that grew it (allocator caches, lazily freed buffers),
/// so a single reading right after it would depend on timing.
pub(crate) fn wait_rss_stable(pid: u32) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut samples: Vec<u64> = Vec::new();
    loop {
        samples.push(rss_bytes(pid));
        let tail = &samples[samples.len().saturating_sub(8)..];
        let lo = tail.iter().min().copied().unwrap_or(0);
        let hi = tail.iter().max().copied().unwrap_or(0);
        if tail.len() == 8 && hi - lo <= 256 * 1024 {
            return *tail.last().unwrap_or(&hi);
        }
        if Instant::now() >= deadline {
            eprintln!(
                "note: RSS still moving after 60 s ({lo}..{hi} bytes); using the last sample"
            );
            return *tail.last().unwrap_or(&hi);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}
