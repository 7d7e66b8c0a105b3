//! Reading `/proc` in tests — the one reader every test uses: which processes are alive in a
//! process group or with a given command line, which tool guards a process started, and how much
//! memory a process holds. Zombies are dead (only not yet reaped) and are left out.
#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

/// A process as `/proc/<pid>/stat` shows it.
#[derive(Debug, Clone)]
pub struct Proc {
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    pub state: char,
    pub comm: String,
}

/// Every process now.
pub fn all() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|d| {
        let pid: i32 = d.ok()?.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let open = stat.find('(')?;
        let close = stat.rfind(')')?;
        let rest: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        Some(Proc {
            pid,
            comm: stat[open + 1..close].to_owned(),
            state: rest.first()?.chars().next()?,
            ppid: rest.get(1)?.parse().ok()?,
            pgrp: rest.get(2)?.parse().ok()?,
        })
    })
    .collect()
}

/// The live (not zombie) processes of group `pgrp`.
pub fn live_in_group(pgrp: i32) -> Vec<Proc> {
    all()
        .into_iter()
        .filter(|p| p.pgrp == pgrp && p.state != 'Z')
        .collect()
}

/// A process's command line, arguments joined by spaces.
pub fn cmdline(pid: i32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .unwrap_or_default()
}

/// The live processes whose command line (arguments joined by spaces) starts with `prefix`.
pub fn live_starting_with(prefix: &str) -> Vec<i32> {
    all()
        .into_iter()
        .filter(|p| p.state != 'Z' && cmdline(p.pid).starts_with(prefix))
        .map(|p| p.pid)
        .collect()
}

/// A process's resident memory in KiB (`VmRSS` of `/proc/<pid>/status`), `None` once it is gone.
pub fn rss_kib(pid: i32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// The live tool guards whose parent is `parent`.
pub fn guards_of(parent: i32) -> Vec<i32> {
    all()
        .into_iter()
        .filter(|p| p.ppid == parent && p.state != 'Z' && cmdline(p.pid).contains("__tool-guard"))
        .map(|p| p.pid)
        .collect()
}

/// This test process's pid.
pub fn me() -> i32 {
    i32::try_from(std::process::id()).expect("a pid fits in i32")
}

/// How long a test waits for processes to start or die; generous because CI shares 2 cores.
pub const DEADLINE: Duration = Duration::from_secs(20);
