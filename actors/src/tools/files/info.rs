//! `get_file_info`: what a file or folder is, without its content — size, kind, times,
//! permissions, and the line count of a text file small enough to read.

use std::os::unix::fs::MetadataExt;
use std::time::SystemTime;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::list::EntryKind;
use super::open::{open_regular, read_capped};
use super::{count_lines, is_binary, shown, READ_CAP};
use crate::tools::workspace::Workspaces;
use crate::tools::{Done, ToolError};

/// `get_file_info`'s arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetFileInfoArgs {
    /// The file or folder: absolute, `~/…`, or relative to the first workspace folder.
    pub path: String,
}

/// What `get_file_info` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileInfo {
    /// The path, resolved (a symlink's target).
    pub path: String,
    /// What it is.
    pub kind: EntryKind,
    /// Its size in bytes.
    pub size: u64,
    /// When it was created (RFC 3339), where the file system records it.
    pub created: Option<String>,
    /// When it was last modified (RFC 3339).
    pub modified: Option<String>,
    /// When it was last read (RFC 3339).
    pub accessed: Option<String>,
    /// Its permission bits, in octal (`0644`).
    pub permissions: String,
    /// Its line count, for a text file of at most 16 MiB.
    pub lines: Option<u64>,
}

/// Describes a file or folder.
pub fn get_file_info(ws: &Workspaces, a: GetFileInfoArgs) -> Result<Done<FileInfo>, ToolError> {
    let resolved = ws.resolve(&a.path)?;
    let meta = ws.metadata(&resolved)?;
    let kind = if meta.is_dir() {
        EntryKind::Dir
    } else if meta.is_file() {
        EntryKind::File
    } else {
        EntryKind::Other
    };
    let lines = if kind == EntryKind::File && meta.len() <= READ_CAP {
        line_count(ws, &resolved)
    } else {
        None
    };
    let path = shown(&resolved);
    let info = FileInfo {
        path: path.clone(),
        kind,
        size: meta.len(),
        created: when(meta.created()),
        modified: when(meta.modified()),
        accessed: when(meta.accessed()),
        permissions: format!("{:04o}", meta.mode() & 0o7777),
        lines,
    };
    let size = info.size;
    Ok(Done::new(info).with("path", path).with("size", size))
}

/// A text file's line count; `None` for a binary file or one that cannot be read.
fn line_count(ws: &Workspaces, path: &std::path::Path) -> Option<u64> {
    let (mut file, meta) = open_regular(ws, path).ok()?;
    let bytes = read_capped(&mut file, &meta, READ_CAP, "read size").ok()?;
    (!is_binary(&bytes)).then(|| count_lines(&bytes))
}

/// A file time as RFC 3339, when the filesystem keeps it.
fn when(t: std::io::Result<SystemTime>) -> Option<String> {
    crate::rfc3339::format(OffsetDateTime::from(t.ok()?))
}
