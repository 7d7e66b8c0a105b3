//! The sent log and the recent one-shot commands (SPEC §11, seed 002): which lines are kept, what
//! "a line" is when a device sends text and keys, and the two files that keep them.
//!
//! Every machine keeps the shell lines its devices send through Collie in `<state>/sent.jsonl`
//! (0600), so the phone can find a line again and re-send it, and the last twelve one-shot
//! commands in `<state>/commands-recent.json` (0600). Both are a convenience, not a record: the
//! audit log is the record. So the rules here err towards keeping nothing — a line that might
//! hold a secret ([`rules::check`]) leaves no entry, no count and no log line with its text.
//!
//! The pure parts are [`rules`], [`lines`], [`entry`] and [`recent`]; [`mod@file`] reads and writes
//! the two files (created 0600, tightened when wider, rewritten atomically). The binary's
//! application layer owns the custody (one writer at a time) and the audit lines.

pub mod entry;
pub mod file;
pub mod lines;
pub mod recent;
pub mod rules;

#[cfg(test)]
mod proptests;

use std::path::PathBuf;

/// The sent log's file name in the state dir.
pub const SENT_FILE: &str = crate::state_files::SENT;

/// The recent one-shot commands' file name in the state dir.
pub const RECENT_FILE: &str = crate::state_files::COMMANDS_RECENT;

/// What `pane` holds for a one-shot command's entry (it ran in a fresh shell, not a chosen pane).
pub const COMMAND_PANE: &str = "command";

/// Why reading or writing one of the files failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SentError {
    /// The file could not be read or written.
    #[error("{path}: {reason}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        reason: String,
    },
    /// The file is not what Collie writes there.
    #[error("{path}: not a list of commands")]
    Unreadable {
        /// The file.
        path: PathBuf,
    },
}
