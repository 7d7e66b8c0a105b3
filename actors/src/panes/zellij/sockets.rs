//! Where zellij keeps its sessions' sockets, and a cheap look at whether that changed (decision
//! 0083): every running session is a socket `<root>/contract_version_<n>/<session>`, so the manager
//! asks `zellij list-sessions` (a process) only when the folder's entries changed, and once in a
//! while anyway ([`RECHECK`]) for a server that died and left its socket behind. A bridge on a
//! machine where zellij is installed but not running spends a directory read per poll, not a
//! process.

use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How often the sessions are asked for even when the socket folder looks unchanged.
pub(super) const RECHECK: Duration = Duration::from_secs(30);

/// The folder zellij puts its contract folders in, as zellij 0.44–0.45 choose it: `socket_dir`
/// (`ZELLIJ_SOCKET_DIR`) when set, else `$XDG_RUNTIME_DIR/zellij`, else `<temp>/zellij-<uid>`.
/// A wrong guess costs only promptness: [`RECHECK`] still finds the sessions.
pub(super) fn root(socket_dir: Option<PathBuf>, runtime_dir: Option<OsString>) -> PathBuf {
    if let Some(dir) = socket_dir {
        return dir;
    }
    match runtime_dir.filter(|d| !d.is_empty()) {
        Some(run) => PathBuf::from(run).join("zellij"),
        None => std::env::temp_dir().join(format!("zellij-{}", nix::unistd::getuid())),
    }
}

/// What the socket folder holds now: each contract folder's entries by name, inode and change
/// time, sorted. Equal fingerprints mean no session came or went (a missing folder is empty).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct Fingerprint(Vec<(OsString, OsString, u64, i64, i64)>);

/// Reads the fingerprint of `root` (a few directory reads; blocking).
pub(super) fn fingerprint(root: &Path) -> Fingerprint {
    let mut out = Vec::new();
    let Ok(contracts) = std::fs::read_dir(root) else {
        return Fingerprint(out);
    };
    for contract in contracts.flatten() {
        let name = contract.file_name();
        if !name.to_string_lossy().starts_with("contract_version_") {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(contract.path()) else {
            continue;
        };
        for e in entries.flatten() {
            if let Ok(m) = e.metadata() {
                out.push((
                    name.clone(),
                    e.file_name(),
                    m.ino(),
                    m.ctime(),
                    m.ctime_nsec(),
                ));
            }
        }
    }
    out.sort();
    Fingerprint(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folder_is_zellij_s_own_choice() {
        let set = PathBuf::from("/run/zs");
        assert_eq!(root(Some(set.clone()), Some("/run/user/7".into())), set);
        assert_eq!(
            root(None, Some("/run/user/7".into())),
            PathBuf::from("/run/user/7/zellij")
        );
        let tmp = root(None, Some(OsString::new()));
        assert!(tmp.starts_with(std::env::temp_dir()), "{tmp:?}");
        assert!(tmp.to_string_lossy().contains("zellij-"), "{tmp:?}");
    }

    #[test]
    fn a_session_coming_or_going_changes_the_fingerprint() {
        let dir = tempfile::tempdir().expect("tempdir");
        let empty = fingerprint(dir.path());
        assert_eq!(empty, Fingerprint::default(), "no contract folder yet");
        let contract = dir.path().join("contract_version_1");
        std::fs::create_dir(&contract).expect("contract");
        // Something else in the root is not a session.
        std::fs::write(dir.path().join("zellij-log"), "").expect("log");
        assert_eq!(fingerprint(dir.path()), empty);

        let socket = contract.join("work");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).expect("socket");
        let one = fingerprint(dir.path());
        assert_ne!(one, empty, "a new session");
        assert_eq!(fingerprint(dir.path()), one, "nothing changed");

        std::fs::remove_file(&socket).expect("unlink");
        assert_eq!(fingerprint(dir.path()), empty, "the session gone");
    }
}
