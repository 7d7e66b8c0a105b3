//! `<state>/applied.json`: the one snapshot `collie apply` writes (write, fsync, rename, 0600 —
//! a reader sees the old snapshot or the new one, never half of one) and the bridge reads.

use std::io::Read;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::resolve::Resolved;

/// The snapshot's file name in the state dir.
pub const APPLIED_FILE: &str = collie_actors::state_files::APPLIED;

/// The largest snapshot read (64 starters and workspaces are a few tens of KiB).
pub const MAX_SNAPSHOT_BYTES: u64 = 4 * 1024 * 1024;

/// How the person confirmed the change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Confirmed {
    /// Answered `y` at the prompt.
    Interactive,
    /// Passed `--yes`.
    Yes,
}

impl Confirmed {
    /// `interactive` or `yes`.
    pub fn as_str(self) -> &'static str {
        match self {
            Confirmed::Interactive => "interactive",
            Confirmed::Yes => "yes",
        }
    }
}

/// What `apply` wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Snapshot {
    /// The schema of `config.toml` applied (1).
    pub schema_version: u32,
    /// The resolution applied.
    pub resolved: Resolved,
    /// When (RFC 3339).
    pub applied_at: String,
    /// How it was confirmed.
    pub confirmed: Confirmed,
}

/// Why the snapshot cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What failed.
        source: std::io::Error,
    },
    /// The file is not a snapshot this version wrote (edited, truncated, or too large).
    #[error("{path} is not a snapshot `collie apply` wrote ({why})")]
    Corrupt {
        /// The file.
        path: String,
        /// What is wrong with it.
        why: String,
    },
}

impl Snapshot {
    /// Reads the snapshot at `path`; `None` when there is none.
    pub fn read(path: &Path) -> Result<Option<Snapshot>, SnapshotError> {
        let io = |source| SnapshotError::Io {
            path: path.display().to_string(),
            source,
        };
        let file = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io(e)),
        };
        let mut bytes = Vec::new();
        file.take(MAX_SNAPSHOT_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(io)?;
        let corrupt = |why: String| SnapshotError::Corrupt {
            path: path.display().to_string(),
            why,
        };
        if bytes.len() as u64 > MAX_SNAPSHOT_BYTES {
            return Err(corrupt(format!("larger than {MAX_SNAPSHOT_BYTES} bytes")));
        }
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| corrupt(e.to_string()))
    }

    /// Replaces the snapshot at `path` whole. `before_rename` runs once the new bytes are durable
    /// in their temp file and before they take the snapshot's name (the moment a crash test
    /// interrupts).
    pub fn write(&self, path: &Path, before_rename: impl FnOnce()) -> Result<(), SnapshotError> {
        let mut bytes = serde_json::to_vec_pretty(self).map_err(|e| SnapshotError::Corrupt {
            path: path.display().to_string(),
            why: e.to_string(),
        })?;
        bytes.push(b'\n');
        collie_actors::private_file::write_atomic_then(path, &bytes, before_rename).map_err(
            |source| SnapshotError::Io {
                path: path.display().to_string(),
                source,
            },
        )
    }
}
