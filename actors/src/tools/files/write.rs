//! `write_file`: write (or append to) a file atomically.
//!
//! `rewrite` puts the content in a temp file in the same folder and renames it over the path: a
//! reader sees the old file or the new one, never a mix. `append` does the same with the old bytes
//! followed by the new ones (copy, append, rename), and checks before the rename that the old file
//! did not change meanwhile (else `conflict`). An existing file keeps its permissions; a new file
//! is 0644 less the umask (decision 0030). The folder must exist (`create_directory` makes it).

use rustix::fs::FileType;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::atomic::{replace, Replace};
use super::gate::writable;
use super::open::{open_regular_in, read_capped, sha256, stat_in, Stamp};
use super::{shown, WRITE_CAP};
use crate::tools::workspace::{Last, Workspaces};
use crate::tools::{Done, ToolError};

/// How `write_file` treats an existing file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WriteMode {
    /// Replace the whole file (the default).
    #[default]
    Rewrite,
    /// Add the content at the end.
    Append,
}

/// `write_file`'s arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileArgs {
    /// The file: absolute, `~/…`, or relative to the first workspace folder. Its folder must exist.
    pub path: String,
    /// The text to write (at most 16 MiB, and the file at most 16 MiB after an append).
    pub content: String,
    /// `rewrite` (default) or `append`.
    #[serde(default)]
    pub mode: WriteMode,
}

/// What `write_file` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WriteFileAnswer {
    /// The file, resolved.
    pub path: String,
    /// The mode used.
    pub mode: WriteMode,
    /// Whether the file was new.
    pub created: bool,
    /// The file's size in bytes now.
    pub size: u64,
    /// The new content's fingerprint (hex SHA-256).
    pub fingerprint: String,
}

/// Writes or appends to a file, atomically.
pub fn write_file(ws: &Workspaces, a: WriteFileArgs) -> Result<Done<WriteFileAnswer>, ToolError> {
    write_file_with(ws, a, &mut || {})
}

/// [`write_file`] with a hook run just before the final check (tests change the file there).
pub(super) fn write_file_with(
    ws: &Workspaces,
    a: WriteFileArgs,
    before_commit: &mut dyn FnMut(),
) -> Result<Done<WriteFileAnswer>, ToolError> {
    if a.content.len() as u64 > WRITE_CAP {
        return Err(ToolError::ResourceLimit("write size"));
    }
    let r = writable(ws, &a.path, Last::Follow)?;
    if a.path.ends_with('/') || a.path.ends_with("/.") {
        return Err(ToolError::WrongKind("a folder, not a file".to_owned()));
    }
    if r.missing > 1 {
        return Err(ToolError::NoSuchFile);
    }
    let created = r.missing == 1;
    let path = r.path;
    // The target's folder, opened beneath the root: everything below happens relative to it.
    let target = ws.parent(&path)?;
    let (bytes, stamp) = if created {
        (a.content.into_bytes(), None)
    } else {
        match a.mode {
            WriteMode::Rewrite => {
                let st = stat_in(&target)?;
                match FileType::from_raw_mode(st.st_mode) {
                    FileType::RegularFile => {}
                    FileType::Directory => {
                        return Err(ToolError::WrongKind("a folder, not a file".to_owned()))
                    }
                    _ => return Err(ToolError::WrongKind("not a regular file".to_owned())),
                }
                let keep = Stamp {
                    size: u64::try_from(st.st_size).unwrap_or(0),
                    modified: None,
                    sha256: [0; 32],
                    mode: st.st_mode & 0o7777,
                    uid: st.st_uid,
                    gid: st.st_gid,
                };
                (a.content.into_bytes(), Some((keep, false)))
            }
            WriteMode::Append => {
                let (mut file, meta) = open_regular_in(&target)?;
                let room = WRITE_CAP - a.content.len() as u64;
                let mut old = read_capped(&mut file, &meta, room, "write size")?;
                let stamp = Stamp::of(&meta, &old);
                old.extend_from_slice(a.content.as_bytes());
                (old, Some((stamp, true)))
            }
        }
    };
    replace(
        Replace {
            target: &target,
            bytes: &bytes,
            expect: stamp.as_ref().filter(|(_, check)| *check).map(|(s, _)| s),
            keep: stamp.as_ref().map(|(s, _)| s),
        },
        before_commit,
    )?;
    let shown_path = shown(&path);
    let size = bytes.len() as u64;
    Ok(Done::new(WriteFileAnswer {
        path: shown_path.clone(),
        mode: a.mode,
        created,
        size,
        fingerprint: hex::encode(sha256(&bytes)),
    })
    .with("path", shown_path)
    .with(
        "mode",
        if a.mode == WriteMode::Append {
            "append"
        } else {
            "rewrite"
        },
    )
    .with("created", created)
    .with("size", size))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::workspace::Guarded;

    /// An append whose file changes between the copy and the rename is a conflict: the other
    /// writer's line stays and no temp file is left.
    #[test]
    fn an_append_racing_a_writer_is_a_conflict() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ws =
            Workspaces::new(vec![dir.path().to_path_buf()], Guarded::default()).expect("workspace");
        let f = dir.path().join("log.txt");
        std::fs::write(&f, "a\n").expect("write");
        let r = write_file_with(
            &ws,
            WriteFileArgs {
                path: "log.txt".to_owned(),
                content: "b\n".to_owned(),
                mode: WriteMode::Append,
            },
            &mut || std::fs::write(&f, "a\nother\n").expect("write meanwhile"),
        );
        assert_eq!(r.map(|_| ()), Err(ToolError::Conflict));
        assert_eq!(std::fs::read_to_string(&f).expect("read"), "a\nother\n");
        assert_eq!(std::fs::read_dir(dir.path()).expect("ls").count(), 1);
    }

    /// The rename itself fails (a folder with an entry took the file's place after the temp file
    /// was written): the error is answered and the temp file is gone.
    #[test]
    fn a_failed_rename_leaves_no_temp_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ws =
            Workspaces::new(vec![dir.path().to_path_buf()], Guarded::default()).expect("workspace");
        let f = dir.path().join("f.txt");
        std::fs::write(&f, "old\n").expect("write");
        let r = write_file_with(
            &ws,
            WriteFileArgs {
                path: "f.txt".to_owned(),
                content: "new\n".to_owned(),
                mode: WriteMode::Rewrite,
            },
            &mut || {
                std::fs::remove_file(&f).expect("rm");
                std::fs::create_dir(&f).expect("mkdir");
                std::fs::write(f.join("inside"), "x").expect("write inside");
            },
        );
        assert!(matches!(r, Err(ToolError::WrongKind(_))), "{r:?}");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("ls")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, ["f.txt"]);
        assert!(f.join("inside").exists());
    }
}
