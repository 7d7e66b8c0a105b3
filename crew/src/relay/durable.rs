//! A member's durable agents as the relay carries them (SPEC §10.3): the answer to
//! [`super::RelayKind::Durable`] and the write of [`super::RelayKind::DurableWrite`], typed rather
//! than JSON text (see [`super::cards`] for why, and for why these enums do not end in `Unknown`).
//! Everything here was sanitized by the member; the lead masks the texts again and names the
//! agents by the member's crew name (not sent).

use serde::{Deserialize, Serialize};

/// A member's agents and the receipts of the writes made to them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DurableList {
    /// The agents, by name.
    pub agents: Vec<DurableAgent>,
    /// Newest first.
    pub receipts: Vec<DurableReceipt>,
}

/// One agent and its last good state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DurableAgent {
    /// Its attached name.
    pub name: String,
    /// `socket` or `https`.
    pub transport: String,
    /// How it is doing.
    pub status: AgentStatus,
    /// What went wrong last.
    pub error: Option<String>,
    /// When it was last read successfully, Unix ms.
    pub polled: Option<u64>,
    /// The conversations, newest first.
    pub conversations: Vec<Conversation>,
    /// The starters.
    pub starters: Vec<Button>,
}

/// How an agent is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AgentStatus {
    /// Not read yet.
    New,
    /// The last read worked.
    Up,
    /// The last read failed.
    Down,
    /// The agent refused the token.
    Refused,
    /// The socket's path is not private.
    Private,
    /// Nothing at the socket's path.
    Missing,
}

/// One conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conversation {
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Where it is.
    pub state: ConversationState,
    /// When it last changed, Unix ms.
    pub updated: u64,
    /// Its last items, oldest first.
    pub items: Vec<DurableItem>,
    /// Its open questions.
    pub questions: Vec<Question>,
    /// Its action buttons.
    pub actions: Vec<Button>,
}

/// Where a conversation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConversationState {
    /// A turn is running.
    Working,
    /// Waiting for the person.
    Idle,
    /// Closed.
    Closed,
}

/// One item of a conversation or a question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DurableItem {
    /// Its id.
    pub id: String,
    /// What it is.
    pub kind: ItemKind,
    /// Who said it.
    pub role: ItemRole,
    /// Its text.
    pub text: String,
    /// A link's address.
    pub url: String,
    /// A tool call's summary.
    pub summary: String,
    /// A tool call's output.
    pub output: String,
    /// When, Unix ms.
    pub at: u64,
}

/// What an item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ItemKind {
    /// Plain text.
    Text,
    /// Markdown, shown as text.
    Markdown,
    /// Code.
    Code,
    /// A unified diff.
    Diff,
    /// A link.
    Link,
    /// A tool call.
    Tool,
}

/// Who said an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ItemRole {
    /// The person.
    User,
    /// The agent.
    Agent,
    /// A tool.
    Tool,
}

/// An open question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Question {
    /// Its id.
    pub id: String,
    /// The question.
    pub title: String,
    /// Why it is asked.
    pub reason: String,
    /// What is being decided.
    pub items: Vec<DurableItem>,
    /// The answers offered.
    pub options: Vec<Button>,
    /// Its title or reason was shortened.
    pub shortened: bool,
    /// The card that asks it on the member.
    pub card: Option<String>,
}

/// An option, an action or a starter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Button {
    /// Its id.
    pub id: String,
    /// Its label.
    pub label: String,
}

/// One write made to an agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DurableReceipt {
    /// When, Unix ms.
    pub at: u64,
    /// The agent.
    pub agent: String,
    /// The conversation.
    pub conversation: String,
    /// The verb.
    pub verb: String,
    /// The option, action or starter chosen, when the verb has one.
    pub choice: Option<String>,
    /// The device's label.
    pub device: String,
    /// The request's id.
    pub request_id: String,
}

/// A device's write to a member's agent (the durable wire's verbs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum DurableWrite {
    /// Answer a question with one of its options.
    Answer {
        /// The question's id.
        question: String,
        /// The option's id.
        option: String,
    },
    /// Send text into the conversation.
    Send {
        /// The text.
        text: String,
    },
    /// Stop the current turn.
    Abort,
    /// Tap an action button.
    Action {
        /// The button's id.
        action: String,
    },
    /// Give the conversation a new title.
    Rename {
        /// The title.
        title: String,
    },
    /// Close the conversation.
    Close,
    /// Open it again.
    Reopen,
    /// Start a new conversation from a starter.
    Starter {
        /// The starter's id.
        starter: String,
    },
}
