//! A pane's chat as the relay carries it (SPEC §3.3, §5): the answer to [`super::RelayKind::Chat`],
//! typed rather than JSON text (see [`super::cards`] for why, and for why these enums do not end
//! in `Unknown`). Masked by the member; the lead bounds and masks it again.

use serde::{Deserialize, Serialize};

/// A pane's chat: its agent, the session, the turns after the cursor asked for, and the next
/// cursor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chat {
    /// The agent in the pane's foreground; `None` when the pane has no chat.
    pub agent: Option<ChatAgent>,
    /// The session, once the agent wrote one.
    pub session: Option<String>,
    /// The turns, oldest first.
    pub turns: Vec<Turn>,
    /// Pass back to get only newer turns.
    pub cursor: String,
}

/// The agents whose transcripts are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChatAgent {
    /// Claude Code.
    Claude,
    /// Codex.
    Codex,
}

/// One turn of the conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    /// Stable within a session.
    pub id: String,
    /// Who it is from.
    pub role: TurnRole,
    /// What it holds.
    pub kind: TurnKind,
    /// The text, masked.
    pub text: String,
    /// When the agent wrote it (RFC 3339), if it says.
    pub at: Option<String>,
}

/// Who a turn is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TurnRole {
    /// The person at the agent's prompt.
    User,
    /// The agent.
    Assistant,
    /// A tool the agent ran.
    Tool,
}

/// What a turn holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TurnKind {
    /// Prose.
    Text,
    /// A tool call.
    ToolCall,
    /// A tool's result.
    ToolResult,
}
