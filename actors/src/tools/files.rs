//! The file tools (SPEC §11): `read_file`, `read_multiple_files`, `list_directory`,
//! `get_file_info` (tier `read`) and `edit_block`, `write_file`, `create_directory`, `move_file`
//! (tier `files`).
//!
//! Each tool is an argument struct (Desktop Commander's parameter names, `deny_unknown_fields` so
//! `{"risk":"high"}` is refused by name — see [`args`]), an answer struct, and a blocking function
//! the application layer runs in `spawn_blocking`. Every path goes through
//! [`Workspaces`](super::workspace::Workspaces) first; the answer's
//! [`Done::meta`](super::Done::meta) carries what the audit line records — resolved paths, sizes, counts
//! — and never a file's content or the text an edit replaces.
//!
//! Writes never leave a half-written file where a reader can see it: the new bytes go to a temp
//! file in the same folder, which is synced and then renamed over the target (`atomic`).
//! `edit_block` and append check, just before that rename, that the file is still the one they
//! read (size, modification time and SHA-256); a file changed meanwhile is a
//! [`ToolError::Conflict`] and stays untouched.
//!
//! Failures answer in [`ToolError`]'s words: no OS message reaches a caller (it goes into
//! `Internal`'s detail, for the bridge's log).

mod atomic;
mod dirs;
mod edit;
mod gate;
mod info;
mod list;
mod open;
mod read;
mod write;

use serde::de::DeserializeOwned;

pub use self::dirs::{
    create_directory, move_file, CreateDirectoryAnswer, CreateDirectoryArgs, MoveFileAnswer,
    MoveFileArgs,
};
pub use self::edit::{edit_block, EditBlockAnswer, EditBlockArgs};
pub use self::gate::check_write;
pub use self::info::{get_file_info, FileInfo, GetFileInfoArgs};
pub use self::list::{
    list_directory, EntryKind, ListDirectoryAnswer, ListDirectoryArgs, ListEntry, DEFAULT_DEPTH,
    MAX_DEPTH, MAX_ENTRIES,
};
pub use self::read::{
    read_file, read_multiple_files, FileRead, ReadFileAnswer, ReadFileArgs,
    ReadMultipleFilesAnswer, ReadMultipleFilesArgs, MAX_PATHS,
};
pub use self::write::{write_file, WriteFileAnswer, WriteFileArgs, WriteMode};
use super::ToolError;

/// The most bytes one call reads from one file, and the most `read_multiple_files` reads in all.
pub const READ_CAP: u64 = 16 * 1024 * 1024;
/// The largest file a write produces (`write_file`'s content, an append's result, an edit's
/// result).
pub const WRITE_CAP: u64 = 16 * 1024 * 1024;
/// How much of a file's start is looked at for a NUL byte, which makes it binary.
pub const BINARY_PROBE: usize = 8 * 1024;

/// Decodes a tool's JSON arguments into `T`, with an error that names the field and what it
/// expects — and nothing else of the decoder's text (no echo of the value sent).
pub fn args<T: DeserializeOwned>(v: serde_json::Value) -> Result<T, ToolError> {
    if !v.is_object() {
        return Err(ToolError::BadArgument(
            "arguments must be a JSON object".to_owned(),
        ));
    }
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        ToolError::BadArgument(describe(&path, &e.into_inner().to_string()))
    })
}

/// The longest field name an error repeats.
const MAX_NAME_IN_ERROR: usize = 64;

/// A short message from serde's: `unknown field `risk``, `missing field `path``,
/// `` `offset`: expected an integer ``.
fn describe(path: &str, msg: &str) -> String {
    let quoted = |prefix: &str| -> Option<String> {
        let rest = msg.strip_prefix(prefix)?;
        let name: String = rest
            .split('`')
            .next()
            .unwrap_or_default()
            .chars()
            .take(MAX_NAME_IN_ERROR)
            .collect();
        Some(format!("{prefix}{name}`"))
    };
    if let Some(m) = quoted("unknown field `").or_else(|| quoted("missing field `")) {
        return m;
    }
    let field = if path.is_empty() || path == "." {
        "arguments".to_owned()
    } else {
        format!(
            "`{}`",
            path.chars().take(MAX_NAME_IN_ERROR).collect::<String>()
        )
    };
    match msg.find(", expected ") {
        Some(i) => {
            let expected = &msg[i + ", expected ".len()..];
            let expected = match expected {
                "i64" | "u64" | "u32" | "usize" | "i32" => "an integer",
                "a boolean" | "bool" => "true or false",
                other => other,
            };
            format!("{field}: expected {expected}")
        }
        None => format!("{field}: invalid value"),
    }
}

/// A path for an answer or an audit line.
fn shown(p: &std::path::Path) -> String {
    p.to_string_lossy().into_owned()
}

/// Lines in `text`: the count of `\n`, plus one for a last line without one.
pub(crate) fn count_lines(text: &[u8]) -> u64 {
    let newlines = text.iter().filter(|b| **b == b'\n').count() as u64;
    match text.last() {
        None | Some(b'\n') => newlines,
        Some(_) => newlines + 1,
    }
}

/// Whether `bytes` look binary: a NUL in the first [`BINARY_PROBE`] bytes.
pub(crate) fn is_binary(bytes: &[u8]) -> bool {
    bytes.iter().take(BINARY_PROBE).any(|b| *b == 0)
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct A {
        path: String,
        offset: Option<i64>,
        mode: Option<WriteMode>,
    }

    fn err(v: serde_json::Value) -> String {
        match args::<A>(v) {
            Err(ToolError::BadArgument(m)) => m,
            other => panic!("not a bad argument: {other:?}"),
        }
    }

    #[test]
    fn errors_name_the_field_and_never_echo_the_value() {
        assert_eq!(
            err(serde_json::json!({"path": "a", "risk": "high"})),
            "unknown field `risk`"
        );
        assert_eq!(
            err(serde_json::json!({"path": "a", "machine": "web-1"})),
            "unknown field `machine`"
        );
        assert_eq!(err(serde_json::json!({})), "missing field `path`");
        let m = err(serde_json::json!({"path": "a", "offset": "secret-value"}));
        assert_eq!(m, "`offset`: expected an integer");
        let m = err(serde_json::json!({"path": "a", "mode": "secret-value"}));
        assert!(m.starts_with("`mode`: expected"), "{m}");
        assert!(!m.contains("secret-value"), "{m}");
        assert_eq!(
            err(serde_json::json!(["a"])),
            "arguments must be a JSON object"
        );
        let long = "x".repeat(10_000);
        let m = err(serde_json::json!({"path": "a", long.clone(): 1}));
        assert!(m.len() < 100, "{m}");
    }

    #[test]
    fn lines_are_counted_like_an_editor() {
        assert_eq!(count_lines(b""), 0);
        assert_eq!(count_lines(b"a"), 1);
        assert_eq!(count_lines(b"a\n"), 1);
        assert_eq!(count_lines(b"a\nb"), 2);
        assert_eq!(count_lines(b"\n\n"), 2);
    }
}
