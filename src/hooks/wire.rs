//! What `collie hook …` and the bridge say on `<state>/hooks.sock`: one JSON line each way.
//!
//! The hook sends a [`HookRequest`] and keeps its end open while it waits: the bridge reads the
//! end of the stream as the hook's process going away (the dialog was answered at the machine).
//! The bridge answers one [`HookReply`] line when a device decided, or closes without a line when
//! nothing was decided (the deadline, a refusal, the bridge stopping) — and then the hook prints
//! nothing, so the agent shows its own dialog.

use serde::{Deserialize, Serialize};

/// Most bytes of a request line (the hook's stdin is read up to this before anything is sent).
pub const MAX_REQUEST: usize = 1024 * 1024;
/// Most bytes of a reply line.
pub const MAX_REPLY: usize = 256 * 1024;

pub use crate::app::permission::Agent;

/// The hook's request: its agent and the hook input exactly as the agent wrote it on stdin.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookRequest {
    /// The agent.
    pub agent: Agent,
    /// The agent's hook input (a JSON object).
    pub input: serde_json::Value,
}

/// The bridge's reply: the JSON object the hook prints on stdout for its agent.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookReply {
    /// What to print.
    pub print: serde_json::Value,
}
