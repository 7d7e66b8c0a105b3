//! `git_diff` (SPEC §11): the uncommitted changes of the git repository a workspace folder is in,
//! for the phone's Changes view — each changed file's status, line counts and unified hunks
//! against HEAD, untracked files included.
//!
//! A `read` device may call this, and a repository is whatever its author made it: its
//! `.git/config` can name programs that `git status` and `git diff` run (`core.fsmonitor`,
//! clean/smudge filters, textconv drivers, an external diff). So git itself never looks at the
//! working tree here. `git.rs` runs only `rev-parse`, `ls-tree` and `cat-file --batch` (objects and
//! refs, no filters); `index.rs` reads the index file in Rust; `worktree.rs` finds the changed files
//! by reading them (stat data, size, then git's blob id), each reached through `beneath.rs`
//! (one folder at a time from the top, never through a symlink); `text.rs` computes the diff with the
//! `similar` crate. Decision 0034 has the reasoning and the limits.
//!
//! Only the folder asked for is looked at (a subfolder of a repository gives that subfolder's
//! changes, paths still named from the repository's top), so a workspace inside a larger
//! repository never shows files outside the workspace. Every path read or listed is first offered
//! to the caller's `allowed`; a refused one is left out entirely.
//!
//! Bounds: [`MAX_FILES`] changed files, [`MAX_FILE_BYTES`] per side of a file's diff,
//! [`MAX_DIFF_BYTES`] of hunk text in all, [`MAX_TIME`] for the whole call (git calls have their
//! own limit and are killed on timeout). Past a bound the answer says `truncated`. The answer's
//! strings are masked by the caller; the audit metadata holds the root, the scope and counts.

mod beneath;
mod git;
mod index;
mod text;
mod worktree;

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use self::beneath::Kind;
use self::git::{Blobs, GitError};
use self::worktree::{Change, Status};
use super::{Done, ToolError};

/// At most this many changed files are listed.
pub const MAX_FILES: usize = 1_000;
/// A file larger than this (in HEAD or now) is listed as `too_large`, without a diff.
pub const MAX_FILE_BYTES: u64 = 4 << 20;
/// At most this much hunk text in one answer; whole hunks only.
pub const MAX_DIFF_BYTES: usize = 1 << 20;
/// The whole call's time limit.
pub const MAX_TIME: Duration = Duration::from_secs(20);
/// Context lines around each change, unless the call asks otherwise.
pub const DEFAULT_CONTEXT: u32 = 3;
/// The most context lines a call may ask for.
pub const MAX_CONTEXT: u32 = 50;
/// How long past [`MAX_TIME`] a scan stuck in one read is waited for.
const SCAN_GRACE: Duration = Duration::from_secs(5);
/// The largest index file read (its stat data only saves work; a larger one is done without).
const MAX_INDEX_BYTES: u64 = 64 << 20;

/// `git_diff`'s arguments.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GitDiffArgs {
    /// A folder inside a git repository (the workspace when omitted). Only changes under it are
    /// shown. The caller resolves it into the `dir` it passes; this function does not read it.
    pub path: Option<String>,
    /// Unchanged lines shown around each change (default 3, at most 50).
    pub context_lines: Option<u32>,
}

/// How a file differs from HEAD.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileStatus {
    /// Staged but not in HEAD.
    Added,
    /// Changed since HEAD.
    Modified,
    /// In HEAD, gone now.
    Deleted,
    /// Not in HEAD, not staged, not ignored.
    Untracked,
}

/// Whether a file's diff could be shown as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Content {
    /// Text: `diff` holds its hunks.
    Text,
    /// Binary (a NUL byte in its first 8,000 bytes, git's rule): no text diff.
    Binary,
    /// Larger than [`MAX_FILE_BYTES`]: not read, no diff, no counts.
    TooLarge,
}

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileDiff {
    /// From the repository's top, `/`-separated (a name that is not UTF-8 is shown lossily).
    pub path: String,
    /// How it changed.
    pub status: FileStatus,
    /// Whether it was diffed as text.
    pub content: Content,
    /// Lines added (text only).
    pub added: u64,
    /// Lines removed (text only).
    pub removed: u64,
    /// The unified hunks (`@@ -a,b +c,d @@` and the lines), without `---`/`+++` headers.
    pub diff: String,
    /// Some or all of this file's hunks were left out (answer budget or time limit).
    pub truncated: bool,
}

/// `git_diff`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GitDiffAnswer {
    /// The repository's top folder.
    pub root: String,
    /// The folder looked at, from the top (`""`: the whole repository).
    pub scope: String,
    /// HEAD's commit id; `None` before the first commit (every file is then new).
    pub head: Option<String>,
    /// The changed files, in path order.
    pub files: Vec<FileDiff>,
    /// Lines added over all files.
    pub added: u64,
    /// Lines removed over all files.
    pub removed: u64,
    /// A bound was reached: files or hunks are missing from this answer.
    pub truncated: bool,
}

fn internal(e: GitError) -> ToolError {
    match e {
        GitError::Timeout => ToolError::ResourceLimit("git_diff time"),
        GitError::TooLarge => ToolError::ResourceLimit("git_diff tree size"),
        e => ToolError::Internal(e.to_string()),
    }
}

/// The changes under `dir` (already resolved inside a workspace by the caller). `allowed` is
/// asked about every absolute path read or listed; a path it refuses is left out entirely.
pub async fn git_diff(
    dir: PathBuf,
    allowed: Arc<dyn Fn(&Path) -> bool + Send + Sync>,
    a: GitDiffArgs,
) -> Result<Done<GitDiffAnswer>, ToolError> {
    let context = a.context_lines.unwrap_or(DEFAULT_CONTEXT);
    if context > MAX_CONTEXT {
        return Err(ToolError::BadArgument(format!(
            "context_lines must be at most {MAX_CONTEXT}"
        )));
    }
    let deadline = tokio::time::Instant::now() + MAX_TIME;
    let dir = tokio::fs::canonicalize(&dir)
        .await
        .map_err(|e| ToolError::io("git_diff folder", &e))?;
    if !tokio::fs::metadata(&dir)
        .await
        .map_err(|e| ToolError::io("git_diff folder", &e))?
        .is_dir()
    {
        return Err(ToolError::WrongKind("path is not a folder".into()));
    }
    let repo = git::discover(&dir)
        .await
        .map_err(internal)?
        .ok_or_else(|| ToolError::BadArgument("not a git repository".into()))?;
    let root = tokio::fs::canonicalize(&repo.root)
        .await
        .map_err(|e| ToolError::io("git_diff root", &e))?;
    let scope = dir
        .strip_prefix(&root)
        .map_err(|_| ToolError::Internal("folder not under its repository's top".into()))?
        .as_os_str()
        .as_bytes()
        .to_vec();
    let head = git::head(&root).await.map_err(internal)?;
    let tree = match &head {
        Some(commit) => git::tree(&root, commit).await.map_err(internal)?,
        None => Vec::new(),
    };

    let std_deadline = deadline.into_std();
    let mut input = worktree::Input {
        index: None,
        root: root.clone(),
        scope: scope.clone(),
        tree,
        format: repo.format,
        allowed,
        max_files: MAX_FILES,
        deadline: std_deadline,
    };
    let index_file = repo.git_dir.join("index");
    let oid_len = repo.format.raw_len();
    let scan = tokio::task::spawn_blocking(move || {
        input.index = read_index(&index_file, oid_len);
        worktree::scan(input)
    });
    // The scan stops itself at the deadline; this bound is for a read the scan cannot interrupt
    // (a file on a hung network mount): the caller gets its answer, the thread finishes later.
    let scan = tokio::time::timeout_at(deadline + SCAN_GRACE, scan)
        .await
        .map_err(|_| ToolError::ResourceLimit("git_diff time"))?
        .map_err(|e| ToolError::Internal(format!("git_diff scan: {e}")))?;

    let mut answer = GitDiffAnswer {
        root: root.to_string_lossy().into_owned(),
        scope: String::from_utf8_lossy(&scope).into_owned(),
        head,
        files: Vec::with_capacity(scan.changes.len()),
        added: 0,
        removed: 0,
        truncated: scan.truncated,
    };
    let mut blobs: Option<Blobs> = None;
    let mut budget = MAX_DIFF_BYTES;
    for change in scan.changes {
        let file = diff_one(&root, &change, &mut blobs, deadline, context, &mut budget).await;
        answer.truncated |= file.truncated;
        answer.added += file.added;
        answer.removed += file.removed;
        answer.files.push(file);
    }
    let meta_files = answer.files.len();
    let (added, removed, truncated) = (answer.added, answer.removed, answer.truncated);
    Ok(Done::new(answer)
        .with("root", root.to_string_lossy().into_owned())
        .with("scope", String::from_utf8_lossy(&scope).into_owned())
        .with("files", meta_files)
        .with("added", added)
        .with("removed", removed)
        .with("truncated", truncated))
}

/// The index and its file's mtime, or `None` when absent, too large or not readable by
/// [`index::parse`] (the scan then reads every tracked file of the same size as HEAD's).
fn read_index(path: &Path, oid_len: usize) -> Option<(index::Index, (i64, i64))> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_INDEX_BYTES {
        return None;
    }
    let bytes = std::fs::read(path).ok()?;
    let mtime = (meta.mtime(), meta.mtime_nsec());
    match index::parse(&bytes, oid_len) {
        Ok(ix) => Some((ix, mtime)),
        Err(e) => {
            tracing::debug!("git_diff: index not used: {e}");
            None
        }
    }
}

/// The working tree's side of a change: its bytes, or why there are none to diff.
enum Side {
    Bytes(Vec<u8>),
    TooLarge,
    /// Could not be read (gone meanwhile, or git failed): shown without a diff.
    Unread,
}

async fn new_side(root: &Path, change: &Change) -> Side {
    let Some(kind) = change.new else {
        return Side::Bytes(Vec::new());
    };
    if matches!(kind, Kind::File(len) if len > MAX_FILE_BYTES) {
        return Side::TooLarge;
    }
    let (root, rel) = (root.to_path_buf(), change.path.clone());
    let read = tokio::task::spawn_blocking(move || {
        use std::io::Read;
        let mut files = beneath::Beneath::new(&root)?;
        match kind {
            Kind::Link => files.read_link(&rel),
            Kind::File(_) => {
                let mut bytes = Vec::new();
                // The size was checked from the stat; `take` holds the cap if it grew since.
                files
                    .open(&rel)?
                    .take(MAX_FILE_BYTES + 1)
                    .read_to_end(&mut bytes)
                    .ok()?;
                Some(bytes)
            }
        }
    })
    .await;
    match read {
        Ok(Some(b)) if b.len() as u64 > MAX_FILE_BYTES => Side::TooLarge,
        Ok(Some(b)) => Side::Bytes(b),
        _ => Side::Unread,
    }
}

async fn old_side(
    root: &Path,
    change: &Change,
    blobs: &mut Option<Blobs>,
    deadline: tokio::time::Instant,
) -> Side {
    let Some(old) = &change.old else {
        return Side::Bytes(Vec::new());
    };
    if old.size.is_none_or(|s| s > MAX_FILE_BYTES) {
        return Side::TooLarge;
    }
    if blobs.is_none() {
        match Blobs::start(root, deadline) {
            Ok(b) => *blobs = Some(b),
            Err(e) => {
                tracing::warn!("git_diff: {e}");
                return Side::Unread;
            }
        }
    }
    let Some(b) = blobs.as_mut() else {
        return Side::Unread;
    };
    match b.read(&old.oid, MAX_FILE_BYTES).await {
        Ok(bytes) => Side::Bytes(bytes),
        Err(e) => {
            // The process may be out of step now: the next blob gets a fresh one.
            tracing::debug!("git_diff: blob not read: {e}");
            *blobs = None;
            Side::Unread
        }
    }
}

async fn diff_one(
    root: &Path,
    change: &Change,
    blobs: &mut Option<Blobs>,
    deadline: tokio::time::Instant,
    context: u32,
    budget: &mut usize,
) -> FileDiff {
    let mut file = FileDiff {
        path: String::from_utf8_lossy(&change.path).into_owned(),
        status: match change.status {
            Status::Added => FileStatus::Added,
            Status::Modified => FileStatus::Modified,
            Status::Deleted => FileStatus::Deleted,
            Status::Untracked => FileStatus::Untracked,
        },
        content: Content::Text,
        added: 0,
        removed: 0,
        diff: String::new(),
        truncated: false,
    };
    if tokio::time::Instant::now() >= deadline {
        file.truncated = true;
        return file;
    }
    let new = new_side(root, change).await;
    let old = if matches!(new, Side::TooLarge) {
        Side::TooLarge // no need to fetch HEAD's side
    } else {
        old_side(root, change, blobs, deadline).await
    };
    let (old, new) = match (old, new) {
        (Side::TooLarge, _) | (_, Side::TooLarge) => {
            file.content = Content::TooLarge;
            return file;
        }
        (Side::Bytes(o), Side::Bytes(n)) => (o, n),
        _ => {
            file.truncated = true;
            return file;
        }
    };
    if text::is_binary(&old) || text::is_binary(&new) {
        file.content = Content::Binary;
        return file;
    }
    let old = String::from_utf8_lossy(&old);
    let new = String::from_utf8_lossy(&new);
    let hunks = text::hunks(&old, &new, context as usize, *budget, deadline.into_std());
    *budget -= hunks.text.len();
    file.added = hunks.added;
    file.removed = hunks.removed;
    file.diff = hunks.text;
    file.truncated = hunks.cut;
    file
}
