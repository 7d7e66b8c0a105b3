//! `list_processes` (SPEC §11, seed 003 §8.12): the machine's processes read from `/proc` — pid,
//! parent, user, command line, CPU time and resident memory — at most [`MAX_PROCESSES`] of them,
//! each command line cut at [`MAX_COMMAND_LINE`] bytes. Command lines can hold passwords and
//! tokens: the application layer masks every string of the answer before it leaves the machine.

use std::collections::HashMap;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{Done, ToolError};
use crate::cut::cut;

/// The most processes an answer lists.
pub const MAX_PROCESSES: usize = 500;
/// The most bytes of a command line an answer shows.
pub const MAX_COMMAND_LINE: usize = 1024;
/// Clock ticks per second in `/proc/<pid>/stat` (`USER_HZ`, 100 on every Linux ABI).
const USER_HZ: u64 = 100;

/// `list_processes` takes no arguments.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListProcessesArgs {}

/// One process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ProcessInfo {
    /// Its pid.
    pub pid: i32,
    /// Its parent's pid.
    pub ppid: i32,
    /// The user it runs as (its real uid's name, or the number).
    pub user: String,
    /// Its command line, arguments joined by spaces, cut at 1 KiB (`[name]` for a kernel thread).
    pub command: String,
    /// CPU time used so far (user and system), in milliseconds.
    pub cpu_ms: u64,
    /// Resident memory in KiB.
    pub rss_kib: u64,
}

/// `list_processes`' answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ProcessList {
    /// The processes by pid, the first [`MAX_PROCESSES`].
    pub processes: Vec<ProcessInfo>,
    /// Whether more processes were running than listed.
    pub truncated: bool,
}

/// Lists the machine's processes.
pub fn list_processes(_a: ListProcessesArgs) -> Result<Done<ProcessList>, ToolError> {
    list_in(Path::new("/proc"))
}

fn list_in(proc: &Path) -> Result<Done<ProcessList>, ToolError> {
    let dir =
        std::fs::read_dir(proc).map_err(|e| ToolError::Internal(format!("read /proc: {e}")))?;
    let mut pids: Vec<i32> = dir
        .filter_map(|d| d.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    pids.sort_unstable();
    let mut users = HashMap::new();
    let mut processes = Vec::new();
    let mut truncated = false;
    for pid in pids {
        if processes.len() == MAX_PROCESSES {
            truncated = true;
            break;
        }
        // A process that ended since the listing is skipped.
        if let Some(p) = one(proc, pid, &mut users) {
            processes.push(p);
        }
    }
    let n = processes.len();
    Ok(Done::new(ProcessList {
        processes,
        truncated,
    })
    .with("count", n)
    .with("truncated", truncated))
}

/// One process's entry, or `None` when it is gone.
fn one(proc: &Path, pid: i32, users: &mut HashMap<u32, String>) -> Option<ProcessInfo> {
    let dir = proc.join(pid.to_string());
    let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
    let (name, ppid, ticks) = parse_stat(&stat)?;
    let status = std::fs::read_to_string(dir.join("status")).ok()?;
    let rss_kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0);
    let uid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .or_else(|| std::fs::metadata(&dir).ok().map(|m| m.uid()))?;
    let user = users
        .entry(uid)
        .or_insert_with(|| {
            nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
                .ok()
                .flatten()
                .map_or_else(|| uid.to_string(), |u| u.name)
        })
        .clone();
    let command = command_line(&dir).unwrap_or_default();
    let command = if command.is_empty() {
        format!("[{name}]")
    } else {
        command
    };
    Some(ProcessInfo {
        pid,
        ppid,
        user,
        command,
        cpu_ms: ticks * (1000 / USER_HZ),
        rss_kib,
    })
}

/// The first 1 KiB of `/proc/<pid>/cmdline`, NULs as spaces (read no further than needed).
fn command_line(dir: &Path) -> Option<String> {
    let mut raw = Vec::new();
    std::fs::File::open(dir.join("cmdline"))
        .ok()?
        .take(MAX_COMMAND_LINE as u64 + 4)
        .read_to_end(&mut raw)
        .ok()?;
    while raw.last() == Some(&0) {
        raw.pop();
    }
    let text = String::from_utf8_lossy(&raw).replace('\0', " ");
    Some(cut(&text, MAX_COMMAND_LINE).to_owned())
}

/// `(name, ppid, utime + stime)` from `/proc/<pid>/stat`. The name sits in parentheses and may
/// hold spaces and parentheses itself, so fields are counted from the last `)`.
fn parse_stat(stat: &str) -> Option<(String, i32, u64)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name = stat.get(open + 1..close)?.to_owned();
    let rest: Vec<&str> = stat.get(close + 1..)?.split_whitespace().collect();
    // rest[0] is field 3 (state): ppid is field 4, utime 14, stime 15.
    let ppid = rest.get(1)?.parse().ok()?;
    let utime: u64 = rest.get(11)?.parse().ok()?;
    let stime: u64 = rest.get(12)?.parse().ok()?;
    Some((name, ppid, utime + stime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_names_with_spaces_and_parentheses_parse() {
        let stat = "42 (a (b) c) S 7 42 42 0 -1 4194560 100 0 0 0 30 12 0 0 20 0 1 0 5 1000 50";
        assert_eq!(parse_stat(stat), Some(("a (b) c".to_owned(), 7, 42)));
        assert_eq!(parse_stat("42 (x"), None);
    }

    #[test]
    fn this_process_reads_with_its_parent() {
        let me = i32::try_from(std::process::id()).expect("pid fits");
        let entry = one(Path::new("/proc"), me, &mut HashMap::new()).expect("this process");
        assert_eq!(entry.ppid, nix::unistd::getppid().as_raw());
        assert!(entry.rss_kib > 0);
        assert!(!entry.command.is_empty());
    }

    /// A fake `/proc` with more processes than an answer lists, and one very long command line.
    #[test]
    fn the_answer_is_bounded() {
        let dir = tempfile::tempdir().expect("temp dir");
        for pid in 1..=(MAX_PROCESSES as i32 + 5) {
            let p = dir.path().join(pid.to_string());
            std::fs::create_dir(&p).expect("mkdir");
            let stat = format!("{pid} (x) S 1 1 1 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 5 1000 50");
            std::fs::write(p.join("stat"), stat).expect("stat");
            std::fs::write(p.join("status"), "Uid:\t0\t0\t0\t0\nVmRSS:\t  12 kB\n")
                .expect("status");
            let cmdline = format!("prog\0--token\0{}\0", "é".repeat(2000));
            std::fs::write(p.join("cmdline"), cmdline).expect("cmdline");
        }
        std::fs::create_dir(dir.path().join("self")).expect("a non-pid entry");
        let done = list_in(dir.path()).expect("list");
        let l = done.answer;
        assert_eq!(l.processes.len(), MAX_PROCESSES);
        assert!(l.truncated);
        assert_eq!(l.processes[0].pid, 1);
        assert_eq!((l.processes[0].cpu_ms, l.processes[0].rss_kib), (70, 12));
        assert!(l.processes[0].command.starts_with("prog --token é"));
        assert!(l
            .processes
            .iter()
            .all(|p| p.command.len() <= MAX_COMMAND_LINE));
        assert_eq!(
            done.meta.get("count"),
            Some(&serde_json::json!(MAX_PROCESSES))
        );
    }
}
