//! The durable-agent wire, version 1 (SPEC §10.3; written down for agent authors in
//! `docs/DURABLE.md`): what the bridge sends and what it reads, as typed structs.
//!
//! **Raw and untrusted.** These are the shapes an agent's reply is parsed into, before anything
//! reads them: every string here is still the agent's own and passes [`super::sanitize`] (through
//! [`super::view::View::from_wire`]) before it reaches a card, a log line or a phone. Unknown
//! fields are ignored so an agent may say more than this version reads; a field of the wrong type
//! fails the whole reply (the last good state is kept and the error names what was wrong).

use serde::{Deserialize, Serialize};

/// The header that carries the wire version, on every request and every answer.
pub const HEADER: &str = "collie-wire";
/// This build's wire version.
pub const VERSION: &str = "1";
/// The one read.
pub const STATE_PATH: &str = "/v1/state";
/// The header naming the request (the agent may use it to drop a repeated write).
pub const REQUEST_HEADER: &str = "collie-request";
/// Most bytes of an agent's reply that are read; a longer one is an error, not an allocation.
pub const MAX_REPLY: usize = 8 * 1024 * 1024;

/// `GET /v1/state`: every conversation the agent has, and the starters it offers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// The conversations, in the agent's order.
    #[serde(default)]
    pub conversations: Vec<Conversation>,
    /// Buttons on the phone's New page that start a conversation.
    #[serde(default)]
    pub starters: Vec<Button>,
}

/// One conversation (a session of the agent).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conversation {
    /// Its id (never sanitized: 1–128 bytes without controls, whitespace, `/`, `?`, `#`).
    pub id: String,
    /// Its title; shown as its id when empty.
    #[serde(default)]
    pub title: String,
    /// `working`, `idle` or `closed` (anything else reads as `idle`).
    #[serde(default)]
    pub state: String,
    /// When it last changed, Unix milliseconds.
    #[serde(default)]
    pub updated: Option<u64>,
    /// Its turns, oldest first.
    #[serde(default)]
    pub items: Vec<Item>,
    /// Questions waiting for a person.
    #[serde(default)]
    pub questions: Vec<Question>,
    /// Buttons the agent offers in this conversation (`action`).
    #[serde(default)]
    pub actions: Vec<Button>,
}

/// One turn or piece of a turn.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Item {
    /// Its id.
    pub id: String,
    /// `text`, `markdown`, `code`, `diff`, `link` or `tool` (anything else is shown as `text`).
    #[serde(default)]
    pub kind: String,
    /// `user`, `agent` or `tool` (anything else reads as `agent`).
    #[serde(default)]
    pub role: String,
    /// The text (text, markdown, code, diff).
    #[serde(default)]
    pub text: String,
    /// A link's address (`https://` only).
    #[serde(default)]
    pub url: String,
    /// A tool call's summary (may hold lines).
    #[serde(default)]
    pub summary: String,
    /// A tool call's output.
    #[serde(default)]
    pub output: String,
    /// When, Unix milliseconds.
    #[serde(default)]
    pub at: Option<u64>,
}

/// A question waiting for a person: it becomes a card.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Question {
    /// Its id.
    pub id: String,
    /// The question, one line.
    #[serde(default)]
    pub title: String,
    /// Why it is asked (multi-line).
    #[serde(default)]
    pub reason: String,
    /// What is being decided (a command, a diff, a link).
    #[serde(default)]
    pub items: Vec<Item>,
    /// The answers offered.
    #[serde(default)]
    pub options: Vec<Button>,
}

/// An option, an action button or a starter.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Button {
    /// What the bridge sends back.
    pub id: String,
    /// What the button says.
    #[serde(default)]
    pub label: String,
}

/// A write: `POST /v1/conversations/{conversation}/{verb}` (or `POST /v1/starters/{starter}`)
/// with the body below. The agent answers 2xx when it took it; 403 (`caller-refused`), 404 (no
/// such conversation, question or starter) and 409 (already answered) are refusals the phone
/// is told about; anything else is an error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verb", rename_all = "lowercase")]
pub enum Write {
    /// Answer a question with one of its options.
    Answer {
        /// The question's id.
        question: String,
        /// The option's id.
        option: String,
    },
    /// Send text into the conversation.
    Send {
        /// The text (at most [`MAX_SEND`] bytes).
        text: String,
    },
    /// Stop the current turn.
    Abort,
    /// Tap one of the conversation's action buttons.
    Action {
        /// The button's id.
        action: String,
    },
    /// Give the conversation a new title.
    Rename {
        /// The title (at most [`MAX_RENAME`] bytes).
        title: String,
    },
    /// Close the conversation.
    Close,
    /// Open a closed conversation again.
    Reopen,
    /// Start a new conversation from a starter.
    Starter {
        /// The starter's id.
        starter: String,
    },
}

/// Longest text a phone may send.
pub const MAX_SEND: usize = 64 * 1024;
/// Longest title a phone may give.
pub const MAX_RENAME: usize = 256;

impl Write {
    /// The verb, as in the path and in the audit kind `durable.<verb>`.
    pub fn verb(&self) -> &'static str {
        match self {
            Write::Answer { .. } => "answer",
            Write::Send { .. } => "send",
            Write::Abort => "abort",
            Write::Action { .. } => "action",
            Write::Rename { .. } => "rename",
            Write::Close => "close",
            Write::Reopen => "reopen",
            Write::Starter { .. } => "starter",
        }
    }

    /// The request path for conversation `conversation` (ignored by a starter).
    pub fn path(&self, conversation: &str) -> String {
        match self {
            Write::Starter { starter } => format!("/v1/starters/{}", segment(starter)),
            other => format!(
                "/v1/conversations/{}/{}",
                segment(conversation),
                other.verb()
            ),
        }
    }

    /// The request body: the fields of the write, without the verb (`{}` for one without).
    pub fn body(&self) -> serde_json::Value {
        let mut value = serde_json::to_value(self).unwrap_or_default();
        if let Some(map) = value.as_object_mut() {
            map.remove("verb");
        }
        value
    }
}

/// What a starter's write answers: the conversation it made.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Started {
    /// The new conversation's id.
    #[serde(default)]
    pub conversation: Option<String>,
}

/// `id` as one path segment: every byte but ASCII letters, digits and `-._~` percent-encoded (an
/// id may hold `%`, `&` or any non-ASCII character; none of them may change the path).
pub fn segment(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for b in id.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
