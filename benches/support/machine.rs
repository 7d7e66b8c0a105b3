//! A description of the machine a bench ran on, printed with its figures: they mean little
//! without the CPU and the load beside them.

/// CPUs this process may use (0 if unknown).
pub(crate) fn cpus() -> usize {
    std::thread::available_parallelism().map_or(0, |n| n.get())
}

/// The CPU's model name from `/proc/cpuinfo`.
pub(crate) fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find_map(|l| l.strip_prefix("model name")?.split_once(':'))
                .map(|(_, m)| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned())
}

/// The machine's memory in KiB, from `/proc/meminfo` (0 if unknown).
pub(crate) fn mem_total_kib() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// The 1, 5 and 15 minute load averages, as `/proc/loadavg` writes them.
pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}
