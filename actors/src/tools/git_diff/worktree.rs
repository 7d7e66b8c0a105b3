//! Which files of the working tree differ from HEAD — found by reading the files, never by asking
//! git (which would run the repository's filters and fsmonitor).
//!
//! A tracked file is unchanged when the index's stat data still matches it (the index's object
//! is HEAD's and the file's size, times and inode are the ones git recorded, and not "racily" as
//! new as the index itself), else when its size and then its blob id equal HEAD's. Untracked
//! files come from `ignore`'s walker, which honours `.gitignore`, `.git/info/exclude` and the
//! user's global excludes as git does. Every path is offered to the caller's `allowed` first; a
//! refused path is not read, not listed, and (for a folder) not entered. Files are stat'ed and read
//! only through [`Beneath`], never by a path that could pass through a symlink.
//!
//! This runs on a blocking thread: it is file I/O and hashing.

use std::collections::{BTreeMap, HashSet};
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::beneath::{unsafe_path, Beneath, Kind, Stat};
use super::git::TreeEntry;
use super::index::Index;
use super::text::{BlobHasher, ObjectFormat};

/// The caller's check on every path read or listed.
pub(super) type Allowed = Arc<dyn Fn(&Path) -> bool + Send + Sync>;

/// How a file differs from HEAD.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Status {
    /// Staged (in the index) but not in HEAD.
    Added,
    /// In HEAD, different now (content, or a file turned symlink or back).
    Modified,
    /// In HEAD, gone from the working tree.
    Deleted,
    /// Neither in HEAD nor staged, and not ignored.
    Untracked,
}

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Change {
    /// From the repository's top.
    pub(super) path: Vec<u8>,
    /// How it changed.
    pub(super) status: Status,
    /// HEAD's blob, when HEAD has the file.
    pub(super) old: Option<TreeEntry>,
    /// The working tree's file, unless deleted.
    pub(super) new: Option<Kind>,
}

/// The changes found, in path order.
#[derive(Debug, Default)]
pub(super) struct Scan {
    /// At most `max_files` of them.
    pub(super) changes: Vec<Change>,
    /// More changes exist than were kept, or the deadline cut the scan short.
    pub(super) truncated: bool,
}

/// What the scan works from.
pub(super) struct Input {
    /// The working tree's top.
    pub(super) root: PathBuf,
    /// Only paths under this one (from the top; empty: all) are looked at.
    pub(super) scope: Vec<u8>,
    /// HEAD's files (empty before the first commit).
    pub(super) tree: Vec<TreeEntry>,
    /// The index's entries and the index file's mtime, when it could be read.
    pub(super) index: Option<(Index, (i64, i64))>,
    /// The repository's object format.
    pub(super) format: ObjectFormat,
    /// The caller's path check.
    pub(super) allowed: Allowed,
    /// Changes kept at most.
    pub(super) max_files: usize,
    /// When to stop looking.
    pub(super) deadline: Instant,
}

/// Whether repository path `path` lies under `scope`.
pub(super) fn in_scope(scope: &[u8], path: &[u8]) -> bool {
    scope.is_empty()
        || (path.starts_with(scope) && (path.len() == scope.len() || path[scope.len()] == b'/'))
}

fn abs(root: &Path, path: &[u8]) -> PathBuf {
    root.join(OsStr::from_bytes(path))
}

/// Whether the index's stat data vouches that the file is still the index's object.
fn stat_clean(e: &super::index::Entry, st: &Stat, index_mtime: (i64, i64)) -> bool {
    let Kind::File(size) = st.kind else {
        return false;
    };
    // Git truncates these to 32 bits; compare the same way.
    let same = e.ctime == (st.ctime.0 as u32, st.ctime.1 as u32)
        && e.mtime == (st.mtime.0 as u32, st.mtime.1 as u32)
        && e.ino == st.ino as u32
        && e.size == size as u32;
    // A file changed in the same instant the index was written can keep identical stat data
    // (git's "racy clean"): trust only entries strictly older than the index file.
    let racy = (i64::from(e.mtime.0), i64::from(e.mtime.1)) >= index_mtime;
    same && !racy
}

/// What hashing the working file gave.
enum Hashed {
    /// Its blob id.
    Id(String),
    /// It could not be read whole (gone, grown, unreadable): not HEAD's blob.
    Unreadable,
    /// The deadline passed while reading.
    OutOfTime,
}

/// The blob id of the file or link at `rel` as it is now.
fn blob_id_now(
    tree: &mut Beneath,
    rel: &[u8],
    kind: Kind,
    format: ObjectFormat,
    deadline: Instant,
) -> Hashed {
    match kind {
        Kind::Link => match tree.read_link(rel) {
            Some(target) => Hashed::Id(super::text::blob_id(format, &target)),
            None => Hashed::Unreadable,
        },
        Kind::File(len) => {
            let Some(f) = tree.open(rel) else {
                return Hashed::Unreadable;
            };
            let mut h = BlobHasher::new(format, len);
            let mut buf = vec![0u8; 64 << 10];
            let mut left = len;
            let mut r = f.take(len + 1);
            loop {
                if Instant::now() > deadline {
                    return Hashed::OutOfTime;
                }
                let n = match r.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(_) => return Hashed::Unreadable,
                };
                h.update(&buf[..n]);
                // Grown since the stat: not HEAD's blob either way.
                let Some(l) = left.checked_sub(n as u64) else {
                    return Hashed::Unreadable;
                };
                left = l;
            }
            if left == 0 {
                Hashed::Id(h.hex())
            } else {
                Hashed::Unreadable
            }
        }
    }
}

/// Finds the changes.
pub(super) fn scan(input: Input) -> Scan {
    let Input {
        root,
        scope,
        tree,
        index,
        format,
        allowed,
        max_files,
        deadline,
    } = input;
    let mut found: BTreeMap<Vec<u8>, Change> = BTreeMap::new();
    let mut truncated = false;
    let mut tracked: HashSet<Vec<u8>> = HashSet::new();
    let full = |found: &BTreeMap<Vec<u8>, Change>| found.len() >= max_files;
    let Some(mut files) = Beneath::new(&root) else {
        return Scan {
            changes: Vec::new(),
            truncated: true,
        };
    };

    for entry in tree {
        tracked.insert(entry.path.clone());
        // A submodule is another repository: its changes are its own. A path git would never
        // check out (`.git/config` in a crafted tree) is not looked at.
        if entry.mode == 0o160000 || unsafe_path(&entry.path) || !in_scope(&scope, &entry.path) {
            continue;
        }
        if truncated {
            continue;
        }
        if Instant::now() > deadline || full(&found) {
            truncated = true;
            continue;
        }
        let path = abs(&root, &entry.path);
        if !allowed(&path) {
            continue;
        }
        let staged = index
            .as_ref()
            .and_then(|(ix, mtime)| ix.get(&entry.path).map(|e| (e, *mtime)));
        if staged.is_some_and(|(e, _)| e.skip_worktree) {
            continue; // sparse checkout: absent on purpose
        }
        let Some(st) = files.stat(&entry.path) else {
            found.insert(
                entry.path.clone(),
                Change {
                    path: entry.path.clone(),
                    status: Status::Deleted,
                    old: Some(entry),
                    new: None,
                },
            );
            continue;
        };
        let was_link = entry.mode == 0o120000;
        let kind = st.kind;
        let changed = match kind {
            Kind::Link if !was_link => true,
            Kind::File(_) if was_link => true,
            Kind::File(len) if entry.size.is_some_and(|s| s != len) => true,
            _ => {
                let clean = staged.is_some_and(|(e, index_mtime)| {
                    e.stage == 0
                        && hex::encode(&e.oid) == entry.oid
                        && e.mode & 0o170000 == entry.mode & 0o170000
                        && stat_clean(e, &st, index_mtime)
                });
                if clean {
                    false
                } else {
                    match blob_id_now(&mut files, &entry.path, kind, format, deadline) {
                        Hashed::Id(id) => id != entry.oid,
                        Hashed::Unreadable => true,
                        Hashed::OutOfTime => {
                            truncated = true;
                            continue;
                        }
                    }
                }
            }
        };
        if changed {
            found.insert(
                entry.path.clone(),
                Change {
                    path: entry.path.clone(),
                    status: Status::Modified,
                    old: Some(entry),
                    new: Some(kind),
                },
            );
        }
    }

    // Staged files HEAD does not have.
    if let Some((ix, _)) = &index {
        let mut staged: Vec<&Vec<u8>> = ix
            .iter()
            .filter(|(p, e)| e.mode != 0o160000 && !tracked.contains(*p))
            .map(|(p, _)| p)
            .collect();
        staged.sort();
        for p in staged {
            tracked.insert(p.clone());
            if truncated || unsafe_path(p) || !in_scope(&scope, p) {
                continue;
            }
            if Instant::now() > deadline || full(&found) {
                truncated = true;
                continue;
            }
            let path = abs(&root, p);
            if !allowed(&path) {
                continue;
            }
            // Staged then removed again: nothing differs from HEAD.
            if let Some(Stat { kind, .. }) = files.stat(p) {
                found.insert(
                    p.clone(),
                    Change {
                        path: p.clone(),
                        status: Status::Added,
                        old: None,
                        new: Some(kind),
                    },
                );
            }
        }
    }

    if !truncated {
        let walk = Walk {
            root: &root,
            scope: &scope,
            tracked: &tracked,
            allowed: &allowed,
            max_files,
            deadline,
        };
        truncated = walk_untracked(walk, &mut files, &mut found);
    }
    Scan {
        changes: found.into_values().collect(),
        truncated,
    }
}

/// What the untracked walk works from.
struct Walk<'a> {
    root: &'a Path,
    scope: &'a [u8],
    tracked: &'a HashSet<Vec<u8>>,
    allowed: &'a Allowed,
    max_files: usize,
    deadline: Instant,
}

/// Adds the untracked files under the scope; answers whether it had to stop early.
fn walk_untracked(
    walk: Walk<'_>,
    files: &mut Beneath,
    found: &mut BTreeMap<Vec<u8>, Change>,
) -> bool {
    let Walk {
        root,
        scope,
        tracked,
        allowed,
        max_files,
        deadline,
    } = walk;
    let start = abs(root, scope);
    // The walker opens every `.gitignore` on its way (and those of the folders above the scope,
    // and `.git/info/exclude`): one that is a FIFO would block it for good, one that leads to a
    // device or a huge file would be read without end. Such a folder is left out, and the answer
    // says it is incomplete.
    let mut above = vec![root.join(".git/info/exclude")];
    let mut dir = start.clone();
    while dir.starts_with(root) {
        above.push(dir.join(".gitignore"));
        if !dir.pop() {
            break;
        }
    }
    if !above.iter().all(|p| ignore_file_sane(p)) {
        return true;
    }
    let skipped = Arc::new(AtomicBool::new(false));
    let skipped_in_filter = Arc::clone(&skipped);
    let filter_allowed = Arc::clone(allowed);
    let walker = ignore::WalkBuilder::new(&start)
        .hidden(false) // git lists untracked dot files
        .ignore(false) // `.ignore` files are ripgrep's, not git's
        .parents(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(true)
        .require_git(true)
        .follow_links(false)
        .filter_entry(move |e| {
            if e.file_name().as_bytes().eq_ignore_ascii_case(b".git") {
                return false;
            }
            let is_dir = e.file_type().is_some_and(|t| t.is_dir());
            // A nested repository is its own: git shows it as one untracked folder, we leave it
            // to a `git_diff` of its own.
            if is_dir && e.depth() > 0 && e.path().join(".git").exists() {
                return false;
            }
            if is_dir && !ignore_file_sane(&e.path().join(".gitignore")) {
                skipped_in_filter.store(true, Ordering::Relaxed);
                return false;
            }
            filter_allowed(e.path())
        })
        .build();
    for entry in walker {
        let Ok(entry) = entry else { continue };
        if Instant::now() > deadline {
            return true;
        }
        let is_file_or_link = entry
            .file_type()
            .is_some_and(|t| t.is_file() || t.is_symlink());
        if !is_file_or_link {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let rel = rel.as_os_str().as_bytes().to_vec();
        if tracked.contains(&rel) || found.contains_key(&rel) {
            continue;
        }
        let Some(Stat { kind, .. }) = files.stat(&rel) else {
            continue;
        };
        if found.len() >= max_files {
            return true;
        }
        found.insert(
            rel.clone(),
            Change {
                path: rel,
                status: Status::Untracked,
                old: None,
                new: Some(kind),
            },
        );
    }
    skipped.load(Ordering::Relaxed)
}

/// The most bytes of one ignore file the walker is let read.
const MAX_IGNORE_FILE: u64 = 1 << 20;

/// Whether the walker may open the ignore file at `path`: absent, or (after links) a regular file
/// of at most [`MAX_IGNORE_FILE`] bytes. Any other failure to stat means the walker's open fails
/// too, without waiting.
fn ignore_file_sane(path: &Path) -> bool {
    match std::fs::metadata(path) {
        Ok(m) => m.is_file() && m.len() <= MAX_IGNORE_FILE,
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_is_a_path_prefix_not_a_string_prefix() {
        assert!(in_scope(b"", b"a/b"));
        assert!(in_scope(b"src", b"src/main.rs"));
        assert!(in_scope(b"src", b"src"));
        assert!(!in_scope(b"src", b"src2/x"));
        assert!(!in_scope(b"src/a", b"src"));
    }
}
