//! The chat view of a Claude Code or Codex pane (SPEC §3.3, §5): the agent's turns read from the
//! session transcript the agent itself writes on this machine, masked (SPEC §6).
//!
//! Nothing here is an actor: a read is a few bounded file reads, done on a blocking thread by the
//! application layer, which asks the Panes actor only for the pane's first process. The pieces,
//! one concept per file:
//!
//! - [`agent`]: which agent runs in a pane's foreground, its working folder, its home, and when
//!   it started — read from `/proc`.
//! - [`folder`]: reaching a file inside an agent's folder without following a symlink, and only
//!   a regular file owned by this user with a single link.
//! - [`transcript`]: which file is the pane's session (an open descriptor of the agent, else the
//!   newest file written since it started in the folder its working folder names).
//! - [`tail`]: the bounded read of a transcript's last complete lines.
//! - [`claude`] and [`codex`]: one transcript line into turns.
//!
//! The program in a pane controls its own environment and working folder, so everything read
//! from `/proc` about it is a claim: it only chooses *which* folder is looked in, and what is read
//! there is held to [`folder`]'s rules.

pub mod agent;
pub mod claude;
pub mod codex;
pub mod folder;
pub mod tail;
pub mod transcript;

use serde::{Deserialize, Serialize};

use crate::redact::Masker;

/// The most turns one answer carries (the newest).
pub const MAX_TURNS: usize = 200;
/// The most bytes of turn text one answer carries (after masking; the newest turns are kept).
pub const MAX_ANSWER_BYTES: usize = 256 * 1024;
/// The most characters of a tool call's summary.
pub const MAX_CALL_CHARS: usize = 300;
/// The most characters of a tool's result.
pub const MAX_RESULT_CHARS: usize = 2000;
/// The most characters of one text turn.
pub const MAX_TEXT_CHARS: usize = 32 * 1024;

/// The agents whose transcripts are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Agent {
    /// Claude Code (`~/.claude/projects/<folder>/<session>.jsonl`).
    Claude,
    /// Codex (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`).
    Codex,
}

/// Who a turn is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The person at the agent's prompt.
    User,
    /// The agent.
    Assistant,
    /// A tool the agent ran (its result).
    Tool,
}

/// What a turn holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Prose (markdown as the agent wrote it).
    Text,
    /// A tool call: the tool's name and a short summary of its input.
    ToolCall,
    /// A tool's result, cut short.
    ToolResult,
}

/// One turn of the conversation, masked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    /// Stable within a session: the byte offset of its line, and its place in the line.
    pub id: String,
    /// Who it is from.
    pub role: Role,
    /// What it holds.
    pub kind: Kind,
    /// The text, masked.
    pub text: String,
    /// When the agent wrote it (RFC 3339, as the transcript says), if it says.
    pub at: Option<String>,
}

/// A pane's chat: its agent, the session, the newest turns, and where to go on from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chat {
    /// The agent in the pane's foreground; `None`: no Claude Code or Codex there (or it cannot
    /// be read), so the pane has no chat. Not an error: the phone asks of every pane it shows,
    /// again and again, and a browser logs every 404 it gets.
    pub agent: Option<Agent>,
    /// The session (the transcript's file name without `.jsonl`); `None` before the agent wrote
    /// one.
    pub session: Option<String>,
    /// The turns after the cursor asked for (or the newest), oldest first.
    pub turns: Vec<Turn>,
    /// Pass back as `after` to get only newer turns: `<session>:<byte offset>`.
    pub cursor: String,
}

/// Why a chat cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChatError {
    /// The `after` cursor is not one this module hands out.
    #[error("bad cursor")]
    BadCursor,
}

/// The longest cursor accepted.
const MAX_CURSOR: usize = 512;

/// `after` split into the session and the byte offset it names.
pub fn parse_cursor(after: &str) -> Result<Option<(&str, u64)>, ChatError> {
    if after.is_empty() {
        return Ok(None);
    }
    if after.len() > MAX_CURSOR {
        return Err(ChatError::BadCursor);
    }
    let (session, offset) = after.rsplit_once(':').ok_or(ChatError::BadCursor)?;
    let offset = offset.parse().map_err(|_| ChatError::BadCursor)?;
    Ok(Some((session, offset)))
}

/// The chat of the pane whose first process is `pane_pid`, after the cursor `after` (empty: the
/// newest turns), every text masked by `masker`.
pub fn read(pane_pid: u32, after: &str, masker: &Masker) -> Result<Chat, ChatError> {
    let cursor = parse_cursor(after)?;
    let Some(found) = agent::in_pane(pane_pid) else {
        return Ok(Chat::none(None));
    };
    let Some(file) = transcript::find(&found) else {
        return Ok(Chat::none(Some(found.agent)));
    };
    let from = cursor
        .filter(|(session, _)| *session == file.session)
        .map(|(_, offset)| offset);
    let lines = tail::read(file.file, from);
    let mut turns = Vec::new();
    for line in &lines.lines {
        let Ok(value) = serde_json::from_slice::<serde_json::Value>(&line.bytes) else {
            continue;
        };
        let parsed = match found.agent {
            Agent::Claude => claude::turns(&value),
            Agent::Codex => codex::turns(&value),
        };
        for (i, raw) in parsed.into_iter().enumerate() {
            turns.push(raw.finish(format!("{}.{i}", line.offset), masker));
        }
    }
    Ok(Chat {
        agent: Some(found.agent),
        cursor: format!("{}:{}", file.session, lines.end),
        session: Some(file.session),
        turns: newest_within_bounds(turns),
    })
}

impl Chat {
    /// No turns: no agent, or an agent that has not written its transcript yet.
    pub fn none(agent: Option<Agent>) -> Chat {
        Chat {
            agent,
            session: None,
            turns: Vec::new(),
            cursor: String::new(),
        }
    }
}

/// The newest turns that fit [`MAX_TURNS`] and [`MAX_ANSWER_BYTES`].
fn newest_within_bounds(mut turns: Vec<Turn>) -> Vec<Turn> {
    if turns.len() > MAX_TURNS {
        turns.drain(..turns.len() - MAX_TURNS);
    }
    let mut total = 0usize;
    let mut keep = turns.len();
    for turn in turns.iter().rev() {
        total += turn.text.len();
        if total > MAX_ANSWER_BYTES {
            break;
        }
        keep -= 1;
    }
    turns.drain(..keep);
    turns
}

/// A turn as a parser reads it, before it is masked and cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawTurn {
    /// Who it is from.
    pub role: Role,
    /// What it holds.
    pub kind: Kind,
    /// The text as the transcript has it.
    pub text: String,
    /// When, as the transcript says.
    pub at: Option<String>,
}

impl RawTurn {
    /// The turn masked, then cut to its kind's bound (masking first: a secret cut in half would
    /// no longer match its shape).
    pub fn finish(self, id: String, masker: &Masker) -> Turn {
        let limit = match self.kind {
            Kind::Text => MAX_TEXT_CHARS,
            Kind::ToolCall => MAX_CALL_CHARS,
            Kind::ToolResult => MAX_RESULT_CHARS,
        };
        let text = cut(&masker.mask_string(self.text), limit);
        Turn {
            id,
            role: self.role,
            kind: self.kind,
            text,
            at: self.at.map(|a| cut(&masker.mask_string(a), 64)),
        }
    }
}

/// `text` cut to `limit` characters, with `…` when something was cut.
pub fn cut(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// A one-line summary of a tool's input: the field that says what it does (a command, a path,
/// a pattern), else the input as compact JSON.
pub fn summarize(name: &str, input: &serde_json::Value) -> String {
    const TELLING: &[&str] = &[
        "command",
        "cmd",
        "file_path",
        "path",
        "pattern",
        "url",
        "query",
        "prompt",
        "description",
    ];
    let detail = TELLING
        .iter()
        .find_map(|k| match &input[*k] {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Array(parts) => Some(
                parts
                    .iter()
                    .map(|p| p.as_str().map_or_else(|| p.to_string(), str::to_owned))
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            _ => None,
        })
        .unwrap_or_else(|| match input {
            serde_json::Value::Null => String::new(),
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        });
    let detail = cut(&detail.replace('\n', " ⏎ "), MAX_CALL_CHARS);
    if detail.is_empty() {
        name.to_owned()
    } else {
        format!("{name}: {detail}")
    }
}

#[cfg(test)]
mod tests;
