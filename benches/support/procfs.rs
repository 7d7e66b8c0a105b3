//! Readings of a running process from `/proc/<pid>`: the memory figures are resident memory as
//! the kernel counts it, not what an allocator believes it holds.

use std::collections::BTreeMap;
use std::path::Path;
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

/// Resident bytes by kind of mapping, from `/proc/<pid>/smaps`: the binary itself, shared
/// libraries, the `[heap]`, anonymous mappings (allocator arenas, thread stacks) and the rest.
pub(crate) fn smaps_breakdown(pid: u32) -> BTreeMap<&'static str, u64> {
    let mut out = BTreeMap::new();
    let Ok(smaps) = std::fs::read_to_string(format!("/proc/{pid}/smaps")) else {
        return out;
    };
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
    let mut kind = "other";
    for line in smaps.lines() {
        let mut parts = line.split_whitespace();
        let first = parts.next().unwrap_or("");
        if first.contains('-') && first.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            // A mapping header: range perms offset dev inode [path].
            let path = parts.nth(4).unwrap_or("");
            kind = match path {
                "" => "anonymous",
                "[heap]" => "heap",
                "[stack]" => "main stack",
                p if exe == Path::new(p) => "binary",
                p if p.starts_with('/') => "libraries",
                _ => "other",
            };
        } else if first == "Rss:" {
            let kb: u64 = parts.next().and_then(|v| v.parse().ok()).unwrap_or(0);
            *out.entry(kind).or_insert(0) += kb * 1024;
        }
    }
    out
}
