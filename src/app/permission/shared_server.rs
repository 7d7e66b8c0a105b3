//! Hooks run by an agent's shared background server cannot be placed in a pane.
//!
//! Codex 0.171.0 by default runs its agent in one background server per user (`codex app-server
//! --managed-daemon`): the first Codex started launches it as its own child, every later Codex
//! joins it, and the hooks of every Codex run inside it. Such a hook's parent chain reaches the
//! *first* Codex's pane, whichever Codex asked — a card placed by that chain would name the wrong
//! pane, and a tap would answer a question the person did not see there. So a hook with that
//! server on its chain is not answered (the agent asks in its terminal), and the log says why.
//! Seen with the real Codex; see docs/guide/hooks.md ("Start Codex in a pane with `codex
//! --no-daemon`").

/// Whether `argv` is an agent's shared background server: Codex's `app-server` started with
/// `--managed-daemon`.
pub fn is_shared_server<S: AsRef<str>>(argv: &[S]) -> bool {
    let mut args = argv.iter().map(AsRef::as_ref);
    let runs_app_server = args.clone().any(|a| a == "app-server");
    runs_app_server && args.any(|a| a == "--managed-daemon")
}

/// Whether any process of `chain` (a hook and its parents) is a shared background server, read
/// from `/proc/<pid>/cmdline` now. A process that cannot be read is not one.
pub fn on_chain(chain: &[u32]) -> bool {
    chain.iter().any(|pid| {
        std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|raw| {
            let argv: Vec<String> = raw
                .split(|b| *b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            is_shared_server(&argv)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_s_managed_daemon_is_a_shared_server() {
        assert!(is_shared_server(&[
            "/usr/lib/node_modules/@openai/codex/vendor/codex",
            "app-server",
            "--managed-daemon"
        ]));
        assert!(!is_shared_server(&["codex", "--no-daemon"]));
        assert!(!is_shared_server(&["codex", "app-server"]));
        assert!(!is_shared_server(&["bash", "-c", "echo --managed-daemon"]));
    }

    #[test]
    fn a_chain_of_this_test_s_own_processes_has_none() {
        assert!(!on_chain(&[std::process::id()]));
        assert!(!on_chain(&[u32::MAX]), "an unreadable process is not one");
    }
}
