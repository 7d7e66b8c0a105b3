//! A durable agent's state as the rest of Collie reads it: every string sanitized (SPEC §10.3,
//! [`super::sanitize`]), every id checked, every count bounded. Nothing outside
//! `actors/src/durable/` ever sees a [`super::wire`] value.
//!
//! The conversion ([`View::from_wire`]) is pure; it reports what it dropped as [`Dropped`] lines
//! (at most one per conversation and kind) so the shell can log them without logging agent text.

use serde::{Deserialize, Serialize};

/// Most conversations kept of one agent (the newest by `updated`; the rest are dropped with one
/// log line).
pub const MAX_CONVERSATIONS: usize = 500;
/// Most items kept of one conversation (the last ones).
pub const MAX_ITEMS: usize = 200;
/// Most questions of one conversation.
pub const MAX_QUESTIONS: usize = 8;
/// Most items of one question.
pub const MAX_QUESTION_ITEMS: usize = 16;
/// Most options of one question (the cards' own bound).
pub const MAX_OPTIONS: usize = crate::cards::card::MAX_OPTIONS;
/// Most action buttons of one conversation.
pub const MAX_ACTIONS: usize = 8;
/// Most starters of one agent.
pub const MAX_STARTERS: usize = 32;

/// Byte limits of each field (the `…` appended to a shortened string counts).
pub mod limits {
    /// A conversation's title.
    pub const TITLE: usize = 256;
    /// An item's text, a tool call's output.
    pub const TEXT: usize = 16 * 1024;
    /// A tool call's summary.
    pub const SUMMARY: usize = 1024;
    /// A question's title (the cards' own bound).
    pub const QUESTION: usize = crate::cards::card::MAX_TITLE;
    /// A question's reason.
    pub const REASON: usize = 4096;
    /// A button's label (option, action, starter).
    pub const LABEL: usize = 64;
    /// A link's address, in characters (longer links are dropped, never shortened).
    pub const LINK_CHARS: usize = 2048;
    /// An id, in bytes (longer ids drop their object).
    pub const ID: usize = 128;
}

/// One agent's sanitized state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct View {
    /// The conversations, newest `updated` first.
    pub conversations: Vec<ConversationView>,
    /// The starters.
    pub starters: Vec<ButtonView>,
}

/// `working`, `idle` or `closed`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConversationState {
    /// A turn is running (`abort` stops it).
    Working,
    /// Waiting for the person (or anything the agent did not name).
    #[default]
    Idle,
    /// Closed (`reopen` opens it again).
    Closed,
}

/// One conversation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConversationView {
    /// Its id, exactly as the agent gave it.
    pub id: String,
    /// Its title (its id when the agent's was empty after sanitizing).
    pub title: String,
    /// Where it is.
    pub state: ConversationState,
    /// When it last changed, Unix milliseconds (0 when the agent did not say).
    pub updated: u64,
    /// Its last [`MAX_ITEMS`] items, oldest first.
    pub items: Vec<ItemView>,
    /// Its open questions (each is also a card).
    pub questions: Vec<QuestionView>,
    /// Its action buttons.
    pub actions: Vec<ButtonView>,
}

/// What an item is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ItemKind {
    /// Plain text (also any kind this version does not know).
    #[default]
    Text,
    /// Markdown, shown as text (no HTML is ever rendered).
    Markdown,
    /// Code, monospaced.
    Code,
    /// A unified diff.
    Diff,
    /// A link: `url` holds a checked `https://` address.
    Link,
    /// A tool call: `summary` and `output`.
    Tool,
}

/// Who said it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The person.
    User,
    /// The agent (also any role this version does not know).
    #[default]
    Agent,
    /// A tool.
    Tool,
}

/// One item.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemView {
    /// Its id.
    pub id: String,
    /// What it is.
    pub kind: ItemKind,
    /// Who said it.
    pub role: Role,
    /// Its text (empty for a link).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// A link's address.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub url: String,
    /// A tool call's summary.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub summary: String,
    /// A tool call's output.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub output: String,
    /// When, Unix milliseconds (0 when the agent did not say).
    pub at: u64,
}

/// An open question.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionView {
    /// Its id.
    pub id: String,
    /// The question (its id when empty after sanitizing).
    pub title: String,
    /// Why it is asked.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// What is being decided.
    pub items: Vec<ItemView>,
    /// The answers offered (at least one: a question left without options is dropped).
    pub options: Vec<ButtonView>,
    /// The sanitizer changed its title or reason: the card says `Text shortened`.
    pub shortened: bool,
    /// The card that asks it on the phone (set by the agent's actor once the card is open).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card: Option<String>,
}

/// An option, an action or a starter.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ButtonView {
    /// Its id.
    pub id: String,
    /// Its label (never empty: a button whose label sanitized to nothing is dropped).
    pub label: String,
}

/// Something [`View::from_wire`] left out, for one log line (never with the agent's text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dropped {
    /// Objects whose id was empty, too long, or held a control, whitespace, `/`, `?` or `#`.
    BadIds {
        /// How many.
        count: usize,
    },
    /// Link items of one conversation whose address was refused.
    Links {
        /// The conversation.
        conversation: String,
        /// How many.
        count: usize,
    },
    /// Conversations over [`MAX_CONVERSATIONS`] (the oldest).
    Conversations {
        /// How many.
        count: usize,
    },
    /// Questions left without a single option, or over [`MAX_QUESTIONS`].
    Questions {
        /// The conversation.
        conversation: String,
        /// How many.
        count: usize,
    },
}

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dropped::BadIds { count } => write!(f, "dropped {count} objects with a bad id"),
            Dropped::Links {
                conversation,
                count,
            } => write!(f, "dropped {count} links of conversation {conversation}"),
            Dropped::Conversations { count } => {
                write!(f, "dropped the {count} oldest conversations")
            }
            Dropped::Questions {
                conversation,
                count,
            } => write!(
                f,
                "dropped {count} questions of conversation {conversation}"
            ),
        }
    }
}
