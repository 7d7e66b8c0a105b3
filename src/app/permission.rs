//! Held permissions (SPEC §10.2): an agent's `PermissionRequest` hook held as a card until a
//! paired device decides, the deadline passes, or the hook goes away — every rule of it here; the
//! hook socket's adapter (`crate::hooks`) only accepts, reads one size-capped line and writes the
//! answer.
//!
//! The rules: at most [`MAX_HELD`] hooks are held at once; a hook run by an agent's shared
//! background server is not answered ([`shared_server`]); a hook outside any pane is not
//! answered; [`ask`] turns the hook input into a card and a decision into the exact JSON the agent
//! reads, "Always allow" applying only the suggestions the card shows (`always`), a deny
//! saying `Denied from <device> via Collie`. Every refusal is silence: the hook prints nothing and
//! the agent asks in its own terminal.

mod always;
pub mod ask;
pub mod shared_server;

use std::future::Future;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use self::ask::Ask;
use super::App;

/// Most hooks held at once; past it a new hook is let go at once (its agent asks in the
/// terminal). Above the cards' own cap, so that cap is the one that speaks.
pub const MAX_HELD: usize = 4_096;

/// Which agent's hook asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Agent {
    /// Claude Code.
    Claude,
    /// Codex.
    Codex,
}

impl App {
    /// Whether one more hook may be held while `held` are (see [`MAX_HELD`]).
    pub fn may_hold_another(&self, held: usize) -> bool {
        held < MAX_HELD
    }

    /// Holds the permission request `input` of `agent`'s hook, run by process `pid`, until a
    /// device decides: the JSON the hook prints for the agent, or `None` when nothing was
    /// decided (a refusal, the deadline, the hook's process ending — `gone` — or the bridge
    /// stopping), and then the hook prints nothing.
    pub async fn ask_permission(
        &self,
        pid: u32,
        agent: Agent,
        input: &Value,
        gone: impl Future<Output = ()>,
    ) -> Option<Value> {
        let ask = match Ask::parse(agent, input) {
            Ok(ask) => ask,
            Err(e) => {
                tracing::debug!(error = %e, "hook request refused");
                return None;
            }
        };
        if shared_server::on_chain(&collie_actors::panes::foreground::ancestry(pid)) {
            // A warning: the user's setup keeps every such question off the phone until changed.
            tracing::warn!(
                pid,
                "a hook run by an agent's shared background server asked; not answered (start \
                 Codex with --no-daemon)"
            );
            return None;
        }
        let held = match self
            .hold_permission(pid, |machine, pane| ask.card(machine, pane))
            .await
        {
            Ok(Some(held)) => held,
            Ok(None) => {
                tracing::info!(pid, "a hook outside any pane asked; not answered");
                return None;
            }
            Err(e) => {
                tracing::warn!(error = %e, "a hook's card could not be opened");
                return None;
            }
        };
        let decision = held.decision(gone).await?;
        Some(ask.output(&decision))
    }
}
