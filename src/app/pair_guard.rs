//! `collie pair` asked by an agent is refused (SPEC §4.6): an agent in a pane that may run shell
//! commands could otherwise ask its own bridge for a pairing code, claim it over loopback and tap
//! its own cards — the one decision Collie leaves to a person. The control socket tells the bridge
//! the asking process (`SO_PEERCRED`, which the client cannot forge); its parent chain is read from
//! `/proc` as the hooks' placement reads it, and a chain that holds Claude Code or Codex is refused
//! and audited (`security.denied`).
//!
//! This is a tripwire, not a wall: a process of the same user can leave its parent chain (a double
//! fork, `tmux run-shell`) or read what the user can. docs/SECURITY.md says so; the announcement of
//! every new pairing on the other devices is the second line.

use collie_actors::chat::agent::agent_named;
use collie_actors::chat::Agent;
use collie_actors::panes::foreground::ancestry;

/// The agent on `pid`'s parent chain (`pid` included), read from `/proc` now; `None` when there is
/// none or nothing can be read. The caller holds the process alive (a connected socket peer), so
/// its pid is not reused while this reads.
pub(super) fn agent_on_chain(pid: u32) -> Option<Agent> {
    first_agent(ancestry(pid).into_iter().map(names_of))
}

/// The names a process goes by: its `comm` (what the kernel shows, which a program may set) and the
/// file name of its first argument (what it was started as).
fn names_of(pid: u32) -> [String; 2] {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|c| c.trim_end_matches('\n').to_owned())
        .unwrap_or_default();
    let argv0 = std::fs::read(format!("/proc/{pid}/cmdline"))
        .ok()
        .and_then(|raw| {
            let first = raw.split(|b| *b == 0).next()?.to_vec();
            let first = String::from_utf8(first).ok()?;
            first.rsplit('/').next().map(str::to_owned)
        })
        .unwrap_or_default();
    [comm, argv0]
}

/// The first agent among the names of a chain's processes.
fn first_agent(chain: impl IntoIterator<Item = [String; 2]>) -> Option<Agent> {
    chain
        .into_iter()
        .find_map(|names| names.iter().find_map(|n| agent_named(n)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(comm: &str, argv0: &str) -> [String; 2] {
        [comm.to_owned(), argv0.to_owned()]
    }

    #[test]
    fn an_agent_anywhere_on_the_chain_is_found() {
        let chain = [
            p("collie", "collie"),
            p("bash", "bash"),
            p("claude", "claude"),
        ];
        assert_eq!(first_agent(chain), Some(Agent::Claude));
        // Started by its path, the kernel showing another name.
        let chain = [p("collie", "collie"), p("node", "codex")];
        assert_eq!(first_agent(chain), Some(Agent::Codex));
    }

    #[test]
    fn a_person_s_terminal_has_none() {
        let chain = [p("collie", "collie"), p("zsh", "-zsh"), p("sshd", "sshd")];
        assert_eq!(first_agent(chain), None);
        assert_eq!(first_agent(Vec::new()), None);
    }
}
