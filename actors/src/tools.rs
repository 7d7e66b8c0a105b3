//! Tools and files under tiers (SPEC §11): what a paired device — through the phone API, the crew
//! relay or an MCP client — may do to this machine's files and processes.
//!
//! The pieces, one concept per file:
//!
//! - [`registry`]: every tool's name, required tier and read-only flag, fixed in code. Nothing at
//!   run time changes a tool's tier and no request field grants one.
//! - [`workspace`]: the folders a file tool may touch, and the paths no tool may touch (Collie's own
//!   state and config, files named like a Collie state file, the agents' hook settings).
//! - [`files`]: the read and write tools on files and folders (`read_file`, `edit_block`, …).
//! - [`search`]: `start_search` and its pages, on ripgrep's own libraries, bounded and cancellable.
//! - [`sessions`], [`exec`] and [`processes`]: the `full` tools on processes.
//! - [`error`]: how a tool fails, in the words the adapters answer with.
//!
//! The application layer (`App::call_tool` in the binary) is the one caller: it authorizes the
//! device against the registry, strips the optional `machine`, audits `tool.<name>` with the
//! [`Meta`] a tool returns (paths, sizes, exit codes — never contents, stdin or output), masks every
//! string of the answer, and relays to a member when the call names one.

pub mod error;
pub mod exec;
pub mod files;
pub mod git_diff;
pub mod processes;
pub mod registry;
pub mod search;
pub mod sessions;
pub mod toolbox;
pub mod workspace;

pub use self::error::ToolError;
pub use self::registry::{ToolName, ToolSpec};

/// What a tool's audit line says about a call: paths, sizes, counts, exit codes, session and
/// search ids. Never file contents, stdin, command output or typed text.
pub type Meta = serde_json::Map<String, serde_json::Value>;

/// A tool's answer and what its audit line records.
#[derive(Debug, Clone, PartialEq)]
pub struct Done<T> {
    /// The answer (serialized to a JSON object by the caller).
    pub answer: T,
    /// The audit line's metadata.
    pub meta: Meta,
}

impl<T> Done<T> {
    /// `answer` with no metadata.
    pub fn new(answer: T) -> Self {
        Self {
            answer,
            meta: Meta::new(),
        }
    }

    /// Adds `key: value` to the audit metadata.
    pub fn with(mut self, key: &str, value: impl Into<serde_json::Value>) -> Self {
        self.meta.insert(key.to_owned(), value.into());
        self
    }
}
