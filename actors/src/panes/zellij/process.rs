//! Which process runs in a zellij pane (decision 0083): `list-panes` does not say, so it is read
//! from `/proc`. A session's server runs as `zellij --server <socket folder>/<contract>/<session>`,
//! and the first process of each of its panes is its child, started with `ZELLIJ_SESSION_NAME`
//! and `ZELLIJ_PANE_ID` in its environment. With that pid a zellij pane is placed like a tmux
//! pane: whether it is at a shell prompt, and which pane a hook or a walky sender runs in.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use super::super::foreground::parse_stat;

/// Bytes of a process's command line or environment read, at most.
const MAX_READ: u64 = 64 * 1024;

/// The first process of each pane of session `session`, by pane number: the children of the
/// session's server whose environment names this session and a pane. When `socket_dir` is known,
/// only a server whose socket lies in it counts (another folder may hold a session of the same
/// name).
pub(super) fn pane_pids(session: &str, socket_dir: Option<&Path>) -> HashMap<u32, u32> {
    let pids = all_pids();
    let servers = servers(&pids, session, socket_dir);
    if servers.is_empty() {
        return HashMap::new();
    }
    let mut out = HashMap::new();
    for pid in pids {
        let Some(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|l| parse_stat(&l))
        else {
            continue;
        };
        if !servers.contains(&stat.ppid) {
            continue;
        }
        if let Some(pane) =
            read(&format!("/proc/{pid}/environ")).and_then(|env| pane_of(&env, session))
        {
            out.insert(pane, pid);
        }
    }
    out
}

/// The server of session `session` as one process instance: its pid and start time (the
/// session's pane tokens hash them, so they stay across bridge restarts and change when a session
/// of the same name is started again). `None` when it cannot be read.
pub(super) fn server_of(session: &str, socket_dir: Option<&Path>) -> Option<(u32, u64)> {
    let pid = *servers(&all_pids(), session, socket_dir).first()?;
    let stat = parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)?;
    Some((pid, stat.start_time))
}

/// Every pid in `/proc` now.
fn all_pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .map(|dir| {
            dir.flatten()
                .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
                .collect()
        })
        .unwrap_or_default()
}

/// The pids among `pids` that serve session `session` (in `socket_dir`, when known).
fn servers(pids: &[u32], session: &str, socket_dir: Option<&Path>) -> Vec<u32> {
    pids.iter()
        .copied()
        .filter(|pid| {
            read(&format!("/proc/{pid}/cmdline"))
                .is_some_and(|argv| serves(&argv, session, socket_dir))
        })
        .collect()
}

/// Whether `argv` (NUL-separated) is the server of `session`: `--server <path>` whose last part is
/// the session's name, inside `socket_dir` when given.
fn serves(argv: &[u8], session: &str, socket_dir: Option<&Path>) -> bool {
    let mut args = argv.split(|b| *b == 0);
    while let Some(arg) = args.next() {
        if arg == b"--server" {
            let Some(path) = args.next().and_then(|p| std::str::from_utf8(p).ok()) else {
                return false;
            };
            let path = Path::new(path);
            return path.file_name().is_some_and(|n| n == session)
                && socket_dir.is_none_or(|d| path.starts_with(d));
        }
    }
    false
}

/// The pane number in an environment (NUL-separated `KEY=value`) that names `session`.
fn pane_of(env: &[u8], session: &str) -> Option<u32> {
    let mut pane = None;
    let mut ours = false;
    for var in env.split(|b| *b == 0) {
        if let Some(v) = var.strip_prefix(b"ZELLIJ_PANE_ID=") {
            pane = std::str::from_utf8(v).ok().and_then(|v| v.parse().ok());
        } else if let Some(v) = var.strip_prefix(b"ZELLIJ_SESSION_NAME=") {
            ours = v == session.as_bytes();
        }
    }
    pane.filter(|_| ours)
}

/// A `/proc` file, at most [`MAX_READ`] bytes of it.
fn read(path: &str) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(MAX_READ)
        .read_to_end(&mut buf)
        .ok()?;
    Some(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_is_known_by_its_socket() {
        let argv = b"/usr/bin/zellij\0--server\0/run/zellij/contract_version_1/work\0";
        assert!(serves(argv, "work", None));
        assert!(serves(argv, "work", Some(Path::new("/run/zellij"))));
        assert!(!serves(argv, "work", Some(Path::new("/tmp/other"))));
        assert!(!serves(argv, "wor", None));
        assert!(!serves(b"/usr/bin/zellij\0attach\0work\0", "work", None));
        assert!(!serves(b"zellij\0--server\0", "work", None));
    }

    #[test]
    fn a_pane_is_known_by_its_environment() {
        let env = b"HOME=/h\0ZELLIJ_PANE_ID=3\0ZELLIJ_SESSION_NAME=work\0ZELLIJ=0\0";
        assert_eq!(pane_of(env, "work"), Some(3));
        assert_eq!(pane_of(env, "other"), None);
        assert_eq!(pane_of(b"ZELLIJ_SESSION_NAME=work\0", "work"), None);
        assert_eq!(
            pane_of(b"ZELLIJ_PANE_ID=x\0ZELLIJ_SESSION_NAME=work\0", "work"),
            None
        );
    }
}
