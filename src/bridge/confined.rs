//! What the bridge puts in front of every command it starts for a phone when the applied
//! configuration's sandbox profile is `workspace` (SPEC §15; decision 0071): the words that run
//! it through `collie __sandbox` under the applied policy. Hosted panes (starters, rows, one-shot
//! commands, a shell or command line from the phone) and the tools' `exec_command` and
//! `start_process` all take them; nothing Collie starts for a phone runs without them.

use anyhow::{Context, Result};

use crate::applied::Snapshot;

/// The prefix for the applied policy, or `None` with the profile `off` (or no configuration).
pub(super) fn prefix(applied: Option<&Snapshot>) -> Result<Option<Vec<String>>> {
    let Some(policy) = policy(applied) else {
        return Ok(None);
    };
    let exe = std::env::current_exe().context("finding this program for the sandbox")?;
    Ok(Some(collie_sandbox::launch::prefix(&exe, policy)?))
}

fn policy(applied: Option<&Snapshot>) -> Option<&collie_sandbox::Policy> {
    applied
        .and_then(|s| s.resolved.sandbox.as_ref())
        .map(|s| &s.policy)
}
