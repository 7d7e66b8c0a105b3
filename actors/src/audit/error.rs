//! Errors of the audit log.

use std::{io, path::PathBuf};

/// What can go wrong while writing, resuming or reading the audit log.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuditError {
    /// The sink refused the line; nothing was committed and the write it records must be refused
    /// (`503 audit unavailable`).
    #[error("cannot append to the audit log: {0}")]
    Append(#[source] io::Error),
    /// The log file is not the length this bridge left it with: it was cut, grown or replaced
    /// while the bridge ran. Nothing is appended until the break is recorded.
    #[error("audit log changed under the bridge: it was {expected} bytes, it is {found}")]
    Changed {
        /// The length after this bridge's last append.
        expected: u64,
        /// The length found.
        found: u64,
    },
    /// The store that vouches for the log's end could not be read or written.
    #[error("audit store unavailable: {0}")]
    Store(String),
    /// No recorded break has this `seq`.
    #[error("no recorded break at seq {0}")]
    NoSuchBreak(u64),
    /// A rendered line is longer than a verifier accepts, so it is not written.
    #[error("audit line of {len} bytes is over the {limit}-byte limit")]
    LineTooLong {
        /// Length of the rendered line.
        len: usize,
        /// [`MAX_LINE_BYTES`](super::MAX_LINE_BYTES).
        limit: usize,
    },
    /// Reading the log failed.
    #[error("cannot read audit log {path}: {source}")]
    Read {
        /// The log's path.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The last complete line of the log is not an audit record, so the chain cannot continue.
    #[error("last line of audit log {path} is unreadable: {reason}")]
    UnreadableTail {
        /// The log's path.
        path: PathBuf,
        /// What is wrong with the line.
        reason: String,
    },
    /// `COLLIE_AUDIT_CONTENT` holds something other than `preview` or `none`.
    #[error("unknown audit content mode {0:?}: use preview or none")]
    UnknownContentMode(String),
    /// A string that is not one of the audit event names.
    #[error("unknown audit event {0:?}")]
    UnknownEvent(String),
}

impl AuditError {
    /// The same error again, for each writer of a batch that failed as a whole (`io::Error` is
    /// not `Clone`; its kind and message are kept).
    pub(crate) fn duplicate(&self) -> Self {
        let io = |e: &io::Error| io::Error::new(e.kind(), e.to_string());
        match self {
            Self::Append(e) => Self::Append(io(e)),
            Self::Changed { expected, found } => Self::Changed {
                expected: *expected,
                found: *found,
            },
            Self::Store(s) => Self::Store(s.clone()),
            Self::NoSuchBreak(seq) => Self::NoSuchBreak(*seq),
            Self::LineTooLong { len, limit } => Self::LineTooLong {
                len: *len,
                limit: *limit,
            },
            Self::Read { path, source } => Self::Read {
                path: path.clone(),
                source: io(source),
            },
            Self::UnreadableTail { path, reason } => Self::UnreadableTail {
                path: path.clone(),
                reason: reason.clone(),
            },
            Self::UnknownContentMode(s) => Self::UnknownContentMode(s.clone()),
            Self::UnknownEvent(s) => Self::UnknownEvent(s.clone()),
        }
    }

    pub(crate) fn read(path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Read {
            path: path.into(),
            source,
        }
    }
}
