//! `read_file` and `read_multiple_files`: a text file's lines, or a slice of them.
//!
//! Lines are counted from 0 as Desktop Commander does: `offset` skips that many lines, a negative
//! `offset` starts that many lines before the end (the tail), `length` caps the lines returned
//! (all of them when absent). The whole file is read either way — its [`ReadFileAnswer::fingerprint`]
//! is the SHA-256 of all its bytes, which `edit_block` can be given to refuse an edit of a file
//! that changed since — so the cap ([`READ_CAP`]) applies to the file, not to the slice.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::open::{open_regular, read_capped, Stamp};
use super::{count_lines, is_binary, shown, READ_CAP};
use crate::tools::workspace::Workspaces;
use crate::tools::{Done, ToolError};

/// The most paths one `read_multiple_files` call takes.
pub const MAX_PATHS: usize = 32;

/// `read_file`'s arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileArgs {
    /// The file: absolute, `~/…`, or relative to the first workspace folder.
    pub path: String,
    /// Lines to skip from the start; negative: start this many lines before the end.
    #[serde(default)]
    pub offset: i64,
    /// The most lines to return (default: to the end).
    #[serde(default)]
    pub length: Option<u64>,
}

/// What `read_file` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReadFileAnswer {
    /// The file, resolved.
    pub path: String,
    /// The lines read, line endings kept; absent for a binary file.
    pub content: Option<String>,
    /// Whether the file is binary (a NUL byte in its first 8 KiB); then there is no content.
    pub binary: bool,
    /// The first line returned, counted from 0.
    pub offset: u64,
    /// How many lines were returned.
    pub lines: u64,
    /// The file's line count (absent for a binary file).
    pub total_lines: Option<u64>,
    /// Whether the content is less than the whole file.
    pub truncated: bool,
    /// The file's size in bytes.
    pub size: u64,
    /// The hex SHA-256 of the whole file's bytes (for `edit_block`'s `fingerprint`).
    pub fingerprint: String,
}

/// `read_multiple_files`' arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadMultipleFilesArgs {
    /// The files (at most 32), each as in `read_file`.
    pub paths: Vec<String>,
}

/// One file of a `read_multiple_files` answer: read, or refused with the reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileRead {
    /// The path as asked.
    pub path: String,
    /// The file, when it was read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<ReadFileAnswer>,
    /// Why it was not (a tool error's string).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What `read_multiple_files` answers, in the order asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReadMultipleFilesAnswer {
    /// Each file, read or refused.
    pub files: Vec<FileRead>,
}

/// Reads a text file, or a slice of its lines.
pub fn read_file(ws: &Workspaces, a: ReadFileArgs) -> Result<Done<ReadFileAnswer>, ToolError> {
    let answer = read_one(ws, &a.path, a.offset, a.length, READ_CAP)?;
    let (path, size, lines, binary) = (
        answer.path.clone(),
        answer.size,
        answer.lines,
        answer.binary,
    );
    Ok(Done::new(answer)
        .with("path", path)
        .with("size", size)
        .with("lines", lines)
        .with("binary", binary))
}

/// Reads several files, each answered or refused on its own, within one total cap: a file that
/// would take the total past [`READ_CAP`] is refused `resource limit`.
pub fn read_multiple_files(
    ws: &Workspaces,
    a: ReadMultipleFilesArgs,
) -> Result<Done<ReadMultipleFilesAnswer>, ToolError> {
    if a.paths.is_empty() {
        return Err(ToolError::BadArgument("`paths`: no path given".to_owned()));
    }
    if a.paths.len() > MAX_PATHS {
        return Err(ToolError::BadArgument(format!(
            "`paths`: at most {MAX_PATHS} paths"
        )));
    }
    let mut left = READ_CAP;
    let mut files = Vec::with_capacity(a.paths.len());
    let mut read_paths = Vec::new();
    let mut denied = Vec::new();
    let mut total = 0u64;
    for path in a.paths {
        match read_one(ws, &path, 0, None, left) {
            Ok(f) => {
                left = left.saturating_sub(f.size);
                total += f.size;
                read_paths.push(serde_json::Value::from(f.path.clone()));
                files.push(FileRead {
                    path,
                    file: Some(f),
                    error: None,
                });
            }
            Err(e) => {
                if matches!(e, ToolError::OutsideWorkspace | ToolError::PathNotAllowed) {
                    denied.push(serde_json::Value::from(path.clone()));
                }
                if let ToolError::Internal(detail) = &e {
                    tracing::warn!(%detail, "read_multiple_files");
                }
                files.push(FileRead {
                    path,
                    file: None,
                    error: Some(e.to_string()),
                });
            }
        }
    }
    let count = files.len();
    Ok(Done::new(ReadMultipleFilesAnswer { files })
        .with("paths", read_paths)
        .with("denied", denied)
        .with("count", count)
        .with("size", total))
}

/// Reads the file at `path` within `cap` bytes.
fn read_one(
    ws: &Workspaces,
    path: &str,
    offset: i64,
    length: Option<u64>,
    cap: u64,
) -> Result<ReadFileAnswer, ToolError> {
    let resolved = ws.resolve(path)?;
    let (mut file, meta) = open_regular(ws, &resolved)?;
    let bytes = read_capped(&mut file, &meta, cap, "read size")?;
    let stamp = Stamp::of(&meta, &bytes);
    let size = bytes.len() as u64;
    let path = shown(&resolved);
    if is_binary(&bytes) {
        return Ok(ReadFileAnswer {
            path,
            content: None,
            binary: true,
            offset: 0,
            lines: 0,
            total_lines: None,
            truncated: size > 0,
            size,
            fingerprint: stamp.fingerprint(),
        });
    }
    let s = slice_lines(&bytes, offset, length);
    // Cut the buffer down to the slice in place: a whole UTF-8 file becomes the answer's string
    // without a copy.
    let mut bytes = bytes;
    bytes.truncate(s.end);
    bytes.drain(..s.start);
    let content = String::from_utf8(bytes)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    Ok(ReadFileAnswer {
        path,
        content: Some(content),
        binary: false,
        offset: s.first,
        lines: s.lines,
        total_lines: Some(s.total),
        truncated: s.lines < s.total,
        size,
        fingerprint: stamp.fingerprint(),
    })
}

/// Which bytes of a text hold the lines asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Slice {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) first: u64,
    pub(super) lines: u64,
    pub(super) total: u64,
}

/// The lines `offset` / `length` select in `text` (see the module doc).
pub(super) fn slice_lines(text: &[u8], offset: i64, length: Option<u64>) -> Slice {
    let total = count_lines(text);
    let first = if offset >= 0 {
        offset.unsigned_abs().min(total)
    } else {
        total.saturating_sub(offset.unsigned_abs())
    };
    let lines = length.unwrap_or(u64::MAX).min(total - first);
    let start = line_start(text, first);
    let end = line_start(text, first + lines);
    Slice {
        start,
        end,
        first,
        lines,
        total,
    }
}

/// The byte where line `n` (from 0) starts; the text's end past the last line.
fn line_start(text: &[u8], n: u64) -> usize {
    if n == 0 {
        return 0;
    }
    let mut seen = 0u64;
    for (i, b) in text.iter().enumerate() {
        if *b == b'\n' {
            seen += 1;
            if seen == n {
                return i + 1;
            }
        }
    }
    text.len()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn take(text: &str, offset: i64, length: Option<u64>) -> (String, u64, u64) {
        let s = slice_lines(text.as_bytes(), offset, length);
        (text[s.start..s.end].to_owned(), s.first, s.lines)
    }

    #[test]
    fn offsets_and_tails() {
        let t = "a\nb\nc\nd";
        assert_eq!(take(t, 0, None), ("a\nb\nc\nd".into(), 0, 4));
        assert_eq!(take(t, 1, Some(2)), ("b\nc\n".into(), 1, 2));
        assert_eq!(take(t, -2, None), ("c\nd".into(), 2, 2));
        assert_eq!(take(t, -2, Some(1)), ("c\n".into(), 2, 1));
        assert_eq!(take(t, -10, None), (t.into(), 0, 4));
        assert_eq!(take(t, 10, None), ("".into(), 4, 0));
        assert_eq!(take(t, i64::MIN, Some(0)), ("".into(), 0, 0));
        assert_eq!(take("", 0, None), ("".into(), 0, 0));
        assert_eq!(take("x\n", -1, None), ("x\n".into(), 0, 1));
    }

    proptest! {
        /// Reading every line one at a time gives back the whole text.
        #[test]
        fn slices_cover_the_text(text in "[ab\n]{0,40}", offset in -50i64..50, length in proptest::option::of(0u64..50)) {
            let s = slice_lines(text.as_bytes(), offset, length);
            prop_assert!(s.start <= s.end && s.end <= text.len());
            prop_assert_eq!(count_lines(&text.as_bytes()[s.start..s.end]), s.lines);
            let mut joined = String::new();
            for i in 0..s.total {
                let one = slice_lines(text.as_bytes(), i as i64, Some(1));
                joined.push_str(&text[one.start..one.end]);
            }
            prop_assert_eq!(joined, text);
        }
    }
}
