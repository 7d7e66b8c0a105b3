//! `edit_block`: replace a piece of text that occurs exactly once — or exactly
//! `expected_replacements` times — without overwriting anyone else's change.
//!
//! The file is read and fingerprinted; if the caller passes the fingerprint `read_file` gave it
//! and the file differs, the edit is a conflict before anything is written. The replacement is made
//! in memory and written atomically (`atomic`), and just before the rename the file is checked
//! again against the first read (size, modification time, SHA-256): changed meanwhile is a
//! conflict too, the temp file is removed and the file is untouched. The file keeps its
//! permissions. The audit metadata holds the path, the count and the sizes — never the strings.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::atomic::{replace, Replace};
use super::open::{open_regular_in, read_capped, sha256, Stamp};
use super::{shown, WRITE_CAP};
use crate::tools::workspace::Workspaces;
use crate::tools::{Done, ToolError};

/// `edit_block`'s arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditBlockArgs {
    /// The file to edit: absolute, `~/…`, or relative to the first workspace folder.
    pub file_path: String,
    /// The exact text to replace (not empty).
    pub old_string: String,
    /// The text to put in its place.
    pub new_string: String,
    /// How many times `old_string` must occur (default 1); all of them are replaced.
    #[serde(default)]
    pub expected_replacements: Option<u64>,
    /// The `fingerprint` a `read_file` answered: when the file differs from it, the edit is a
    /// conflict.
    #[serde(default)]
    pub fingerprint: Option<String>,
}

/// What `edit_block` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EditBlockAnswer {
    /// The file, resolved.
    pub path: String,
    /// How many times the text was replaced.
    pub replacements: u64,
    /// The file's new size in bytes.
    pub size: u64,
    /// The new content's fingerprint (hex SHA-256).
    pub fingerprint: String,
}

/// Replaces `old_string` with `new_string` in a file.
pub fn edit_block(ws: &Workspaces, a: EditBlockArgs) -> Result<Done<EditBlockAnswer>, ToolError> {
    edit_block_with(ws, a, &mut || {})
}

/// [`edit_block`] with a hook run just before the final check (tests change the file there).
pub(super) fn edit_block_with(
    ws: &Workspaces,
    a: EditBlockArgs,
    before_commit: &mut dyn FnMut(),
) -> Result<Done<EditBlockAnswer>, ToolError> {
    if a.old_string.is_empty() {
        return Err(ToolError::BadArgument(
            "`old_string` must not be empty".to_owned(),
        ));
    }
    let expected = a.expected_replacements.unwrap_or(1);
    if expected == 0 {
        return Err(ToolError::BadArgument(
            "`expected_replacements` must be at least 1".to_owned(),
        ));
    }
    let path = ws.resolve(&a.file_path)?;
    if !ws.allows_write(&path) {
        return Err(ToolError::PathNotAllowed);
    }
    // The file's folder, opened beneath the root: the read, the temp file and the rename all
    // happen relative to it.
    let target = ws.parent(&path)?;
    let (mut file, meta) = open_regular_in(&target)?;
    let bytes = read_capped(&mut file, &meta, WRITE_CAP, "read size")?;
    drop(file);
    let stamp = Stamp::of(&meta, &bytes);
    if let Some(fp) = &a.fingerprint {
        if !fp.eq_ignore_ascii_case(&stamp.fingerprint()) {
            return Err(ToolError::Conflict);
        }
    }
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| ToolError::BadArgument("`file_path`: not UTF-8 text".to_owned()))?;
    let found = text.matches(a.old_string.as_str()).count() as u64;
    if found != expected {
        return Err(ToolError::BadArgument(match found {
            0 => "old_string not found".to_owned(),
            1 => format!("old_string occurs once, not {expected} times"),
            n => format!(
                "old_string occurs {n} times, not {expected} (set expected_replacements to {n} to replace all)"
            ),
        }));
    }
    let new_len = (text.len() as u64)
        .saturating_sub(found * a.old_string.len() as u64)
        .saturating_add(found * a.new_string.len() as u64);
    if new_len > WRITE_CAP {
        return Err(ToolError::ResourceLimit("write size"));
    }
    let edited = text.replace(a.old_string.as_str(), &a.new_string);
    replace(
        Replace {
            target: &target,
            bytes: edited.as_bytes(),
            expect: Some(&stamp),
            keep: Some(&stamp),
        },
        before_commit,
    )?;
    let shown_path = shown(&path);
    let size = edited.len() as u64;
    Ok(Done::new(EditBlockAnswer {
        path: shown_path.clone(),
        replacements: found,
        size,
        fingerprint: hex::encode(sha256(edited.as_bytes())),
    })
    .with("path", shown_path)
    .with("replacements", found)
    .with("old_size", stamp.size)
    .with("size", size))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::tools::workspace::Guarded;

    fn setup() -> (tempfile::TempDir, Workspaces) {
        let dir = tempfile::tempdir().expect("temp dir");
        let ws =
            Workspaces::new(vec![dir.path().to_path_buf()], Guarded::default()).expect("workspace");
        (dir, ws)
    }

    fn args(path: &str) -> EditBlockArgs {
        EditBlockArgs {
            file_path: path.to_owned(),
            old_string: "two".to_owned(),
            new_string: "2".to_owned(),
            expected_replacements: None,
            fingerprint: None,
        }
    }

    fn names(dir: &std::path::Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .expect("read dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    /// Another writer changes the file after it was read and before the rename: the edit is a
    /// conflict, the other writer's content stays, and no temp file is left.
    #[test]
    fn a_change_meanwhile_is_a_conflict_and_leaves_no_temp() {
        let (dir, ws) = setup();
        let f = dir.path().join("a.txt");
        std::fs::write(&f, "one two three\n").expect("write");
        let r = edit_block_with(&ws, args("a.txt"), &mut || {
            std::fs::write(&f, "one two three!\n").expect("write meanwhile");
        });
        assert_eq!(r.map(|_| ()), Err(ToolError::Conflict));
        assert_eq!(
            std::fs::read_to_string(&f).expect("read"),
            "one two three!\n"
        );
        assert_eq!(names(dir.path()), ["a.txt"]);
    }

    /// A same-size change with the old modification time put back: only the hash can tell, and
    /// it does.
    #[test]
    fn a_same_size_change_with_the_old_mtime_is_caught_by_the_hash() {
        let (dir, ws) = setup();
        let f = dir.path().join("a.txt");
        std::fs::write(&f, "one two three\n").expect("write");
        let mtime = std::fs::metadata(&f)
            .expect("stat")
            .modified()
            .expect("mtime");
        let r = edit_block_with(&ws, args("a.txt"), &mut || {
            std::fs::write(&f, "one two threE\n").expect("write meanwhile");
            let h = std::fs::File::options().write(true).open(&f).expect("open");
            h.set_modified(mtime).expect("set mtime");
        });
        assert_eq!(r.map(|_| ()), Err(ToolError::Conflict));
        assert_eq!(
            std::fs::read_to_string(&f).expect("read"),
            "one two threE\n"
        );
        assert_eq!(names(dir.path()), ["a.txt"]);
    }

    /// The file replaced by a folder meanwhile: a conflict, the folder stays.
    #[test]
    fn a_file_turned_folder_meanwhile_is_a_conflict() {
        let (dir, ws) = setup();
        let f = dir.path().join("a.txt");
        std::fs::write(&f, "one two three\n").expect("write");
        let r = edit_block_with(&ws, args("a.txt"), &mut || {
            std::fs::remove_file(&f).expect("rm");
            std::fs::create_dir(&f).expect("mkdir");
        });
        assert_eq!(r.map(|_| ()), Err(ToolError::Conflict));
        assert!(f.is_dir());
        assert_eq!(names(dir.path()), ["a.txt"]);
    }

    #[test]
    fn permissions_are_kept() {
        let (dir, ws) = setup();
        let f = dir.path().join("run.sh");
        std::fs::write(&f, "echo two\n").expect("write");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o751)).expect("chmod");
        let done = edit_block(&ws, args("run.sh")).expect("edit");
        assert_eq!(done.answer.replacements, 1);
        let mode = std::fs::metadata(&f).expect("stat").permissions().mode() & 0o7777;
        assert_eq!(mode, 0o751);
        assert_eq!(std::fs::read_to_string(&f).expect("read"), "echo 2\n");
    }
}
