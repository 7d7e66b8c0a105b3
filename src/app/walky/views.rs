//! What walky answers, as typed structs: the CLI reads them back through the control socket, the
//! phone as JSON, and a member's card crosses the relay in the same shape.

use collie_actors::walky::log::Kind;
use serde::{Deserialize, Serialize};

/// `collie walky send`: where the message went and how it went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sent {
    /// The message id (32 hex digits).
    pub id: String,
    /// The address it was sent to.
    pub to: String,
    /// `delivered`, `sent` (not waited for) or `rejected: why`.
    pub outcome: String,
}

/// One delivered message in `collie walky inbox`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InboxItem {
    /// The message id.
    pub id: String,
    /// The sender's address.
    pub from: String,
    /// The sender's pane name (inert).
    pub name: String,
    /// The receiving pane's address.
    pub to: String,
    /// RFC 3339.
    pub received_at: Option<String>,
}

/// `collie walky inbox`: newest last.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inbox {
    /// The messages.
    pub messages: Vec<InboxItem>,
}

/// `collie walky inbox ID`: one message with its body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InboxMessage {
    /// What the list shows.
    #[serde(flatten)]
    pub item: InboxItem,
    /// The body as sent.
    pub body: String,
    /// The body framed as a peer's words, for an agent to read.
    pub text: String,
}

/// One addressable pane of `collie walky who`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WhoEntry {
    /// `machine/pane#token`.
    pub address: String,
    /// Its machine.
    pub machine: String,
    /// Its pane id.
    pub pane: String,
    /// Its name.
    pub name: String,
    /// At a shell prompt: messages to it are refused.
    pub at_shell: bool,
}

/// `collie walky who`: agents first, then the members that did not answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Who {
    /// The panes.
    pub panes: Vec<WhoEntry>,
    /// Machines that did not answer.
    pub unreachable: Vec<String>,
}

/// One line of `collie walky log` (the body left out).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogLine {
    /// The message id.
    pub id: String,
    /// RFC 3339.
    pub logged_at: Option<String>,
    /// What happened on this machine.
    pub kind: Kind,
    /// The sender's address (empty on a result line).
    pub from: String,
    /// The sender's pane name.
    pub name: String,
    /// The receiver's address (empty on a result line).
    pub to: String,
    /// `delivered` or `rejected: why`, when known.
    pub outcome: Option<String>,
}

/// The results a lead keeps for 10 minutes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Records {
    /// Kept now.
    pub kept: usize,
    /// Dropped because the cap was reached.
    pub dropped: u64,
    /// The cap.
    pub cap: usize,
}

/// `collie walky log`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Log {
    /// Every line, oldest first.
    pub entries: Vec<LogLine>,
    /// The lead's kept results.
    pub records: Records,
}

/// A walky message as the phone shows it (`GET /api/walky`), name and body masked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Card {
    /// The message id.
    pub id: String,
    /// What happened on the machine whose log this is.
    pub kind: Kind,
    /// The sender's address.
    pub from: String,
    /// The sender's pane name, masked.
    pub name: String,
    /// The receiver's address.
    pub to: String,
    /// RFC 3339, the sender's clock.
    pub sent_at: Option<String>,
    /// RFC 3339, this machine's clock.
    pub logged_at: Option<String>,
    /// The body, masked (none on a rejection line).
    pub body: Option<String>,
    /// `delivered` or `rejected: why`, when known.
    pub outcome: Option<String>,
}

/// `GET /api/walky`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cards {
    /// Every message of this machine's log.
    pub messages: Vec<Card>,
}

impl Sent {
    /// Why the message was refused, or `None` when it was delivered or left without waiting.
    pub fn refusal(&self) -> Option<&str> {
        match self.outcome.as_str() {
            "delivered" | "sent" => None,
            other => Some(other),
        }
    }
}

/// `id  received_at  from address "name"`: how the CLI and the MCP tools list a message.
impl std::fmt::Display for InboxItem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}  {}  from {} \"{}\"",
            self.id,
            self.received_at.as_deref().unwrap_or(""),
            self.from,
            self.name
        )
    }
}

/// `logged_at  kind  id  from → to  outcome`: one line of `collie walky log`.
impl std::fmt::Display for LogLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}  {:<9} {}",
            self.logged_at.as_deref().unwrap_or(""),
            self.kind.as_str(),
            self.id
        )?;
        if !self.from.is_empty() {
            write!(f, "  {} → {}", self.from, self.to)?;
        }
        if let Some(outcome) = self.outcome.as_deref().filter(|o| !o.is_empty()) {
            write!(f, "  {outcome}")?;
        }
        Ok(())
    }
}
