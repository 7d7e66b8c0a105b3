//! The only git commands `git_diff` runs, and how: commands that read objects and refs and never
//! start a program the repository configures.
//!
//! A repository's own `.git/config` can make `git status` or `git diff` run commands
//! (`core.fsmonitor`, `filter.<driver>.clean`/`process` named by `.gitattributes`,
//! `diff.<driver>.textconv`, `diff.external`). So git is asked only for `rev-parse` (where the
//! repository is, whether it has a commit), `ls-tree` (HEAD's files and their blob ids) and
//! `cat-file --batch` without `--filters` or `--textconv` (a blob's stored bytes). None of these
//! loads the index or the working tree; `core.fsmonitor=false` on the command line is there in
//! case a later git does. Every call has the environment pinned (no system config, no prompt, no
//! pager, no optional locks, no `GIT_*` variable from the bridge's own environment), stdin closed,
//! a time limit and an output cap, and is killed when dropped.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::time::{timeout_at, Instant};

use super::text::ObjectFormat;

/// How long one `rev-parse` or `ls-tree` may take.
pub(super) const CALL_TIME: Duration = Duration::from_secs(10);

/// The most `ls-tree` output read (about 300,000 files' worth): a larger tree is refused rather
/// than held in memory.
pub(super) const TREE_CAP: usize = 32 << 20;

/// How a git call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(super) enum GitError {
    /// `git` could not be started or talked to.
    #[error("git: {0}")]
    Io(String),
    /// The call took longer than its limit (and was killed).
    #[error("git took too long")]
    Timeout,
    /// The output passed its cap.
    #[error("git output too large")]
    TooLarge,
    /// Git's output was not what the command prints.
    #[error("git answered unexpectedly: {0}")]
    Unexpected(String),
}

fn io(e: std::io::Error) -> GitError {
    GitError::Io(e.to_string())
}

/// `git` with the pinned environment and options, run in `cwd`.
fn git(cwd: &Path) -> Command {
    let mut c = Command::new("git");
    // A bridge started from inside a repository, or a test harness, may carry `GIT_DIR`,
    // `GIT_WORK_TREE`, `GIT_INDEX_FILE`, `GIT_CONFIG_PARAMETERS`…: none of them is the caller's.
    for (key, _) in std::env::vars_os() {
        if key.as_bytes().starts_with(b"GIT_") {
            c.env_remove(key);
        }
    }
    c.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_PAGER", "cat")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_NO_REPLACE_OBJECTS", "1")
        .args([
            "--no-pager",
            "-c",
            "core.fsmonitor=false",
            "-c",
            "safe.bareRepository=explicit",
        ])
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    c
}

/// Runs `git args` in `cwd`: its exit success and at most `cap` bytes of stdout (more is
/// `TooLarge`), within [`CALL_TIME`].
async fn run(cwd: &Path, args: &[&str], cap: usize) -> Result<(bool, Vec<u8>), GitError> {
    let mut child = git(cwd).args(args).spawn().map_err(io)?;
    let deadline = Instant::now() + CALL_TIME;
    let mut stdout = child
        .stdout
        .take()
        .ok_or_else(|| GitError::Io("no stdout".into()))?;
    let mut out = Vec::new();
    let mut capped = (&mut stdout).take(cap as u64 + 1);
    timeout_at(deadline, capped.read_to_end(&mut out))
        .await
        .map_err(|_| GitError::Timeout)?
        .map_err(io)?;
    if out.len() > cap {
        return Err(GitError::TooLarge);
    }
    drop(stdout);
    let status = timeout_at(deadline, child.wait())
        .await
        .map_err(|_| GitError::Timeout)?
        .map_err(io)?;
    Ok((status.success(), out))
}

/// Where a repository is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Repo {
    /// The working tree's top folder.
    pub(super) root: PathBuf,
    /// The git folder (for a linked worktree, its own one, which holds its index).
    pub(super) git_dir: PathBuf,
    /// How it names objects.
    pub(super) format: ObjectFormat,
}

/// The repository `dir` is in, or `None` when it is in none (or only in a bare one, or inside a
/// `.git` folder: no working tree to diff).
pub(super) async fn discover(dir: &Path) -> Result<Option<Repo>, GitError> {
    let (ok, out) = run(
        dir,
        &[
            "rev-parse",
            "--path-format=absolute",
            "--show-toplevel",
            "--git-dir",
            "--show-object-format",
        ],
        64 << 10,
    )
    .await?;
    if !ok {
        return Ok(None);
    }
    let mut lines = out.split(|&b| b == b'\n');
    let mut next = || lines.next().filter(|l| !l.is_empty());
    let (Some(root), Some(git_dir), Some(format)) = (next(), next(), next()) else {
        return Err(GitError::Unexpected("rev-parse".into()));
    };
    let format = std::str::from_utf8(format)
        .ok()
        .and_then(ObjectFormat::parse)
        .ok_or_else(|| GitError::Unexpected("object format".into()))?;
    Ok(Some(Repo {
        root: PathBuf::from(OsStr::from_bytes(root)),
        git_dir: PathBuf::from(OsStr::from_bytes(git_dir)),
        format,
    }))
}

/// HEAD's commit id, or `None` before the first commit.
pub(super) async fn head(root: &Path) -> Result<Option<String>, GitError> {
    let (ok, out) = run(
        root,
        &["rev-parse", "-q", "--verify", "HEAD^{commit}"],
        1024,
    )
    .await?;
    if !ok {
        return Ok(None);
    }
    let id = String::from_utf8(out).map_err(|_| GitError::Unexpected("HEAD".into()))?;
    Ok(Some(id.trim_end().to_owned()))
}

/// A file in HEAD's tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TreeEntry {
    /// Its path from the repository's top, as git stores it.
    pub(super) path: Vec<u8>,
    /// `0o100644`, `0o100755`, `0o120000` (a symlink) or `0o160000` (a submodule).
    pub(super) mode: u32,
    /// The blob id in hex.
    pub(super) oid: String,
    /// The blob's size (none for a submodule).
    pub(super) size: Option<u64>,
}

/// Every file of `commit`'s tree (recursively), from `ls-tree -r -z -l --full-tree`.
pub(super) async fn tree(root: &Path, commit: &str) -> Result<Vec<TreeEntry>, GitError> {
    let (ok, out) = run(
        root,
        &["ls-tree", "-r", "-z", "-l", "--full-tree", commit],
        TREE_CAP,
    )
    .await?;
    if !ok {
        return Err(GitError::Unexpected("ls-tree failed".into()));
    }
    parse_tree(&out)
}

/// Parses `ls-tree -z -l` records: `<mode> SP <type> SP <oid> SP+ <size> TAB <path> NUL`.
pub(super) fn parse_tree(out: &[u8]) -> Result<Vec<TreeEntry>, GitError> {
    let bad = || GitError::Unexpected("ls-tree record".into());
    let mut entries = Vec::new();
    for record in out.split(|&b| b == 0).filter(|r| !r.is_empty()) {
        let tab = record.iter().position(|&b| b == b'\t').ok_or_else(bad)?;
        let head = std::str::from_utf8(&record[..tab]).map_err(|_| bad())?;
        let mut fields = head.split_ascii_whitespace();
        let (Some(mode), Some(_kind), Some(oid), Some(size), None) = (
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
        ) else {
            return Err(bad());
        };
        entries.push(TreeEntry {
            path: record[tab + 1..].to_vec(),
            mode: u32::from_str_radix(mode, 8).map_err(|_| bad())?,
            oid: oid.to_owned(),
            size: size.parse().ok(),
        });
    }
    Ok(entries)
}

/// One `git cat-file --batch` process answering blob after blob, each read within `deadline`.
pub(super) struct Blobs {
    _child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    deadline: Instant,
}

impl Blobs {
    /// Starts the process in `root`; every read must finish by `deadline`.
    pub(super) fn start(root: &Path, deadline: Instant) -> Result<Blobs, GitError> {
        let mut child = git(root)
            .args(["cat-file", "--batch"])
            .stdin(Stdio::piped())
            .spawn()
            .map_err(io)?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| GitError::Io("no stdin".into()))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| GitError::Io("no stdout".into()))?;
        Ok(Blobs {
            _child: child,
            stdin,
            stdout: BufReader::new(stdout),
            deadline,
        })
    }

    /// The stored bytes of blob `oid`, which must be at most `cap` bytes (callers know the size
    /// from `ls-tree`; a larger answer is `TooLarge` and ends this process's use).
    pub(super) async fn read(&mut self, oid: &str, cap: u64) -> Result<Vec<u8>, GitError> {
        if !oid.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(GitError::Unexpected("object id".into()));
        }
        let deadline = self.deadline;
        timeout_at(deadline, self.read_now(oid, cap))
            .await
            .map_err(|_| GitError::Timeout)?
    }

    async fn read_now(&mut self, oid: &str, cap: u64) -> Result<Vec<u8>, GitError> {
        self.stdin
            .write_all(format!("{oid}\n").as_bytes())
            .await
            .map_err(io)?;
        self.stdin.flush().await.map_err(io)?;
        let mut header = Vec::new();
        (&mut self.stdout)
            .take(256)
            .read_until(b'\n', &mut header)
            .await
            .map_err(io)?;
        let header =
            String::from_utf8(header).map_err(|_| GitError::Unexpected("header".into()))?;
        let mut fields = header.trim_end().split(' ');
        let (Some(_), Some("blob"), Some(size), None) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return Err(GitError::Unexpected(format!(
                "cat-file: {}",
                header.trim_end()
            )));
        };
        let size: u64 = size
            .parse()
            .map_err(|_| GitError::Unexpected("blob size".into()))?;
        if size > cap {
            return Err(GitError::TooLarge);
        }
        // `size` is at most `cap`, which the caller keeps small (the per-file cap).
        let mut blob = vec![0; size as usize];
        self.stdout.read_exact(&mut blob).await.map_err(io)?;
        let mut lf = [0u8; 1];
        self.stdout.read_exact(&mut lf).await.map_err(io)?;
        Ok(blob)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_records_parse() {
        let out = b"100644 blob 3b18e512dba79e4c8300dd08aeb37f8e728b8dad      12\ta b.txt\0\
160000 commit 1111111111111111111111111111111111111111       -\tsub\0\
120000 blob 2222222222222222222222222222222222222222       4\tdir/link\0";
        let t = parse_tree(out).expect("parses");
        assert_eq!(t.len(), 3);
        assert_eq!(t[0].path, b"a b.txt");
        assert_eq!((t[0].mode, t[0].size), (0o100644, Some(12)));
        assert_eq!((t[1].mode, t[1].size), (0o160000, None));
        assert_eq!(t[2].path, b"dir/link");
        assert!(parse_tree(b"100644 blob abc\tno-size\0").is_err());
        assert!(parse_tree(b"no tab at all\0").is_err());
    }
}
