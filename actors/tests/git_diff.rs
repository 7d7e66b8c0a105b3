//! `git_diff` against real git repositories in temp folders (SPEC §11, decision 0034): statuses,
//! counts and hunks checked against git's own `diff --numstat`, the scope, the caller's `allowed`,
//! the bounds — and a repository whose `.git/config` would run a program on `git status` or
//! `git diff`, which `git_diff` must never start.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use collie_actors::tools::git_diff::{
    git_diff, Content, FileDiff, FileStatus, GitDiffAnswer, GitDiffArgs, MAX_DIFF_BYTES, MAX_FILES,
    MAX_FILE_BYTES,
};
use collie_actors::tools::ToolError;
use tempfile::TempDir;

/// A repository in a temp folder (removed on drop, pass or fail).
struct Repo {
    dir: TempDir,
}

impl Repo {
    fn new() -> Repo {
        Repo::with_format("sha1")
    }

    fn with_format(format: &str) -> Repo {
        let r = Repo {
            dir: tempfile::tempdir().expect("temp dir"),
        };
        r.git(&["init", "-q", &format!("--object-format={format}"), "."]);
        r
    }

    fn path(&self) -> PathBuf {
        self.dir.path().canonicalize().expect("canonical temp dir")
    }

    /// Runs real git in the repository as a user would (their git, not `git_diff`'s).
    fn git(&self, args: &[&str]) -> String {
        let out = git_cmd(self.dir.path())
            .args(args)
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn write(&self, rel: &str, bytes: impl AsRef<[u8]>) {
        let p = self.dir.path().join(rel);
        std::fs::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
        std::fs::write(p, bytes).expect("write");
    }

    fn commit_all(&self) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", "c"]);
    }

    /// `git diff HEAD --numstat` of the tracked files: path → (added, removed).
    fn numstat(&self) -> Vec<(String, u64, u64)> {
        self.git(&["diff", "HEAD", "--numstat", "--no-renames"])
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                (
                    f[2].to_owned(),
                    f[0].parse().expect("added"),
                    f[1].parse().expect("removed"),
                )
            })
            .collect()
    }
}

fn git_cmd(dir: &Path) -> Command {
    let mut c = Command::new("git");
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("GIT_") {
            c.env_remove(k);
        }
    }
    c.env("GIT_CONFIG_NOSYSTEM", "1")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
        ])
        .current_dir(dir);
    c
}

fn all() -> Arc<dyn Fn(&Path) -> bool + Send + Sync> {
    Arc::new(|_| true)
}

async fn diff(dir: &Path) -> GitDiffAnswer {
    git_diff(dir.to_path_buf(), all(), GitDiffArgs::default())
        .await
        .expect("git_diff answers")
        .answer
}

fn file<'a>(a: &'a GitDiffAnswer, path: &str) -> &'a FileDiff {
    a.files
        .iter()
        .find(|f| f.path == path)
        .unwrap_or_else(|| panic!("{path} not in {:?}", a.files))
}

fn paths(a: &GitDiffAnswer) -> Vec<&str> {
    a.files.iter().map(|f| f.path.as_str()).collect()
}

#[tokio::test]
async fn statuses_counts_and_hunks_match_gits() {
    let r = Repo::new();
    r.write("a.txt", "one\ntwo\nthree\n");
    r.write("gone.txt", "bye\nbye\n");
    r.write(
        "src/deep/lib.rs",
        (1..=40).map(|i| format!("line {i}\n")).collect::<String>(),
    );
    r.write(".gitignore", "*.log\n");
    r.commit_all();

    r.write("a.txt", "one\nTWO\nthree\nfour\n");
    std::fs::remove_file(r.path().join("gone.txt")).expect("rm");
    r.write(
        "src/deep/lib.rs",
        (1..=40)
            .map(|i| {
                if i == 5 || i == 30 {
                    format!("changed {i}\n")
                } else {
                    format!("line {i}\n")
                }
            })
            .collect::<String>(),
    );
    r.write("staged.txt", "new\nfile\n");
    r.git(&["add", "staged.txt"]);
    r.write("src/new/untracked.md", "# hi\n");
    r.write(".hidden", "dot\n");
    r.write("debug.log", "ignored\n");

    let a = diff(&r.path()).await;
    assert_eq!(a.root, r.path().to_string_lossy());
    assert_eq!(a.scope, "");
    assert_eq!(
        a.head.as_deref(),
        Some(r.git(&["rev-parse", "HEAD"]).trim())
    );
    assert!(!a.truncated);
    assert_eq!(
        paths(&a),
        [
            ".hidden",
            "a.txt",
            "gone.txt",
            "src/deep/lib.rs",
            "src/new/untracked.md",
            "staged.txt"
        ]
    );
    assert_eq!(file(&a, "a.txt").status, FileStatus::Modified);
    assert_eq!(file(&a, "gone.txt").status, FileStatus::Deleted);
    assert_eq!(file(&a, "staged.txt").status, FileStatus::Added);
    assert_eq!(
        file(&a, "src/new/untracked.md").status,
        FileStatus::Untracked
    );
    assert_eq!(file(&a, ".hidden").status, FileStatus::Untracked);

    assert_eq!(
        file(&a, "a.txt").diff,
        "@@ -1,3 +1,4 @@\n one\n-two\n+TWO\n three\n+four\n"
    );
    assert_eq!(file(&a, "gone.txt").diff, "@@ -1,2 +0,0 @@\n-bye\n-bye\n");
    assert_eq!(
        file(&a, "src/new/untracked.md").diff,
        "@@ -0,0 +1 @@\n+# hi\n"
    );
    assert_eq!(
        file(&a, "src/deep/lib.rs").diff.matches("\n@@ ").count() + 1,
        2,
        "two hunks"
    );

    // Git's own counts for everything git diffs against HEAD (staged and tracked files).
    for (path, added, removed) in r.numstat() {
        let f = file(&a, &path);
        assert_eq!((f.added, f.removed), (added, removed), "{path}");
    }
    let total: (u64, u64) = a
        .files
        .iter()
        .fold((0, 0), |t, f| (t.0 + f.added, t.1 + f.removed));
    assert_eq!((a.added, a.removed), total);

    // Committing everything leaves nothing to show.
    r.commit_all();
    let a = diff(&r.path()).await;
    assert!(a.files.is_empty(), "{:?}", a.files);
}

/// The reason this tool is built the way it is: a repository can name programs that git runs on
/// `git status` and `git diff`. Each one here leaves a marker; `git_diff` must leave none. The
/// second half runs real git on the same repository and sees every marker appear, so the traps
/// are live and the first half proves something.
#[tokio::test]
async fn a_hostile_repository_config_runs_nothing() {
    let r = Repo::new();
    let root = r.path();
    r.write("a.txt", "a\n");
    r.write("b.md", "b\n");
    r.commit_all();
    let marks = tempfile::tempdir().expect("marker dir");
    let script = marks.path().join("evil.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ntouch '{}'/\"$1\"\ncat\n",
            marks.path().display()
        ),
    )
    .expect("script");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let run = |what: &str| format!("{} {what}", script.display());
    for (key, value) in [
        ("core.fsmonitor", run("fsmonitor")),
        ("filter.evil.process", run("process")),
        ("filter.evil.clean", run("clean")),
        ("filter.evil.smudge", run("smudge")),
        ("filter.evilclean.clean", run("clean")),
        ("diff.evil.textconv", run("textconv")),
        ("diff.external", run("external")),
        ("core.pager", run("pager")),
    ] {
        r.git(&["config", key, &value]);
    }
    r.write(
        ".gitattributes",
        "*.txt filter=evil diff=evil\n*.md filter=evilclean diff=evil\n",
    );
    r.write("a.txt", "a\nmore\n");
    r.write("b.md", "b\nmore\n");
    r.write("new.txt", "untracked\n");

    let a = diff(&root).await;
    assert_eq!(file(&a, "a.txt").diff, "@@ -1 +1,2 @@\n a\n+more\n");
    assert_eq!(file(&a, "b.md").status, FileStatus::Modified);
    assert_eq!(file(&a, "new.txt").status, FileStatus::Untracked);
    let left: Vec<_> = std::fs::read_dir(marks.path())
        .expect("read markers")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n != "evil.sh")
        .collect();
    assert!(
        left.is_empty(),
        "git_diff ran the repository's programs: {left:?}"
    );

    // The control: plain git on the same repository runs them.
    let _ = git_cmd(&root).args(["status"]).output();
    let _ = git_cmd(&root).args(["diff"]).output();
    let _ = git_cmd(&root).args(["diff", "--no-ext-diff"]).output();
    for marker in ["fsmonitor", "process", "clean", "external", "textconv"] {
        assert!(
            marks.path().join(marker).exists(),
            "the {marker} trap is not live"
        );
    }
}

#[tokio::test]
async fn a_folder_outside_any_repository_is_a_clear_error() {
    let d = tempfile::tempdir().expect("temp dir");
    let e = git_diff(d.path().to_path_buf(), all(), GitDiffArgs::default())
        .await
        .expect_err("not a repository");
    assert_eq!(e, ToolError::BadArgument("not a git repository".into()));
    assert_eq!(e.to_string(), "not a git repository");

    // Inside `.git` there is no working tree either.
    let r = Repo::new();
    let e = git_diff(r.path().join(".git"), all(), GitDiffArgs::default())
        .await
        .expect_err("no working tree");
    assert_eq!(e, ToolError::BadArgument("not a git repository".into()));

    let e = git_diff(r.path().join("missing"), all(), GitDiffArgs::default())
        .await
        .expect_err("missing");
    assert_eq!(e, ToolError::NoSuchFile);
    let args = GitDiffArgs {
        context_lines: Some(51),
        ..GitDiffArgs::default()
    };
    let e = git_diff(r.path(), all(), args)
        .await
        .expect_err("too much context");
    assert_eq!(
        e,
        ToolError::BadArgument("context_lines must be at most 50".into())
    );
    let e = serde_json::from_str::<GitDiffArgs>(r#"{"path":".","risk":"high"}"#)
        .expect_err("unknown field");
    assert!(e.to_string().contains("unknown field"), "{e}");
}

#[tokio::test]
async fn before_the_first_commit_everything_is_new() {
    let r = Repo::new();
    r.write("a.txt", "a\n");
    r.write("sub/b.txt", "b\nb\n");
    r.git(&["add", "a.txt"]);
    let a = diff(&r.path()).await;
    assert_eq!(a.head, None);
    assert_eq!(paths(&a), ["a.txt", "sub/b.txt"]);
    assert_eq!(file(&a, "a.txt").status, FileStatus::Added);
    assert_eq!(file(&a, "sub/b.txt").status, FileStatus::Untracked);
    assert_eq!((a.added, a.removed), (3, 0));
}

#[tokio::test]
async fn a_subfolder_shows_only_its_own_changes() {
    let r = Repo::new();
    r.write("top.txt", "t\n");
    r.write("sub/in.txt", "i\n");
    r.write("sub2/out.txt", "o\n");
    r.commit_all();
    r.write("top.txt", "T\n");
    r.write("sub/in.txt", "I\n");
    r.write("sub2/out.txt", "O\n");
    r.write("sub/new.txt", "n\n");
    r.write("sub2/new.txt", "n\n");
    std::fs::write(r.path().join("sub/.gitignore"), "*.tmp\n").expect("ignore");
    r.write("sub/x.tmp", "ignored by a nested .gitignore\n");

    let a = diff(&r.path().join("sub")).await;
    assert_eq!(a.root, r.path().to_string_lossy());
    assert_eq!(a.scope, "sub");
    assert_eq!(paths(&a), ["sub/.gitignore", "sub/in.txt", "sub/new.txt"]);
}

#[tokio::test]
async fn refused_paths_are_left_out_entirely() {
    let r = Repo::new();
    r.write("ok.txt", "1\n");
    r.write("secret.txt", "s\n");
    r.write("state/kept.txt", "k\n");
    r.commit_all();
    r.write("ok.txt", "2\n");
    r.write("secret.txt", "S\n");
    std::fs::remove_file(r.path().join("state/kept.txt")).expect("rm");
    r.write("state/new.txt", "untracked under a refused folder\n");
    r.write("deny-untracked.txt", "x\n");

    let root = r.path();
    let refused = [
        root.join("secret.txt"),
        root.join("state"),
        root.join("deny-untracked.txt"),
    ];
    let asked = Arc::new(std::sync::Mutex::new(Vec::<PathBuf>::new()));
    let seen = Arc::clone(&asked);
    let allowed: Arc<dyn Fn(&Path) -> bool + Send + Sync> = Arc::new(move |p: &Path| {
        seen.lock().expect("lock").push(p.to_path_buf());
        !refused.iter().any(|r| p.starts_with(r))
    });
    let a = git_diff(root.clone(), allowed, GitDiffArgs::default())
        .await
        .expect("answers")
        .answer;
    assert_eq!(paths(&a), ["ok.txt"]);
    let asked = asked.lock().expect("lock");
    assert!(asked.iter().all(|p| p.is_absolute()), "{asked:?}");
    assert!(asked.contains(&root.join("secret.txt")));
    // The refused folder was never entered.
    assert!(!asked.contains(&root.join("state/new.txt")), "{asked:?}");
}

#[tokio::test]
async fn binary_and_huge_files_get_no_text() {
    let r = Repo::new();
    r.write("img.bin", b"\x89PNG\0\0\x01");
    r.write("big.txt", "small\n");
    r.commit_all();
    r.write("img.bin", b"\x89PNG\0\0\x02");
    let big = "x".repeat(99) + "\n";
    r.write("big.txt", big.repeat((MAX_FILE_BYTES as usize / 100) + 1));
    r.write(
        "new-big.txt",
        big.repeat((MAX_FILE_BYTES as usize / 100) + 1),
    );

    let a = diff(&r.path()).await;
    let img = file(&a, "img.bin");
    assert_eq!(
        (img.status, img.content, img.diff.as_str()),
        (FileStatus::Modified, Content::Binary, "")
    );
    let b = file(&a, "big.txt");
    assert_eq!(
        (b.status, b.content, b.diff.as_str()),
        (FileStatus::Modified, Content::TooLarge, "")
    );
    assert_eq!(file(&a, "new-big.txt").content, Content::TooLarge);
    assert_eq!((a.added, a.removed), (0, 0));
}

#[tokio::test]
async fn symlinks_are_diffed_as_their_target_never_followed() {
    let r = Repo::new();
    let outside = tempfile::tempdir().expect("outside");
    let secret = outside.path().join("secret");
    std::fs::write(&secret, "TOP-SECRET-CONTENT\n").expect("secret");
    std::os::unix::fs::symlink("a.txt", r.path().join("link")).expect("symlink");
    r.write("a.txt", "a\n");
    r.write("was-file", "plain\n");
    r.commit_all();
    std::fs::remove_file(r.path().join("link")).expect("rm link");
    std::os::unix::fs::symlink(&secret, r.path().join("link")).expect("relink");
    std::os::unix::fs::symlink(&secret, r.path().join("new-link")).expect("new link");
    std::fs::remove_file(r.path().join("was-file")).expect("rm");
    std::os::unix::fs::symlink(&secret, r.path().join("was-file")).expect("file to link");

    let a = diff(&r.path()).await;
    assert_eq!(paths(&a), ["link", "new-link", "was-file"]);
    let target = secret.to_string_lossy();
    assert_eq!(
        file(&a, "link").diff,
        format!("@@ -1 +1 @@\n-a.txt\n\\ No newline at end of file\n+{target}\n\\ No newline at end of file\n")
    );
    assert!(!serde_json::to_string(&a.files)
        .expect("json")
        .contains("TOP-SECRET"));
}

/// The index in its compressed form (version 4), the stat shortcut, and a SHA-256 repository all
/// give the same answers; a corrupt index is done without.
#[tokio::test]
async fn index_versions_and_object_formats_agree() {
    for (format, version) in [("sha1", "2"), ("sha1", "4"), ("sha256", "3")] {
        let r = Repo::with_format(format);
        for i in 0..20 {
            r.write(&format!("d{}/f{i}.txt", i % 3), format!("{i}\n"));
        }
        r.commit_all();
        r.git(&["update-index", "--index-version", version]);
        r.write("d1/f1.txt", "changed\n");
        r.write("d2/f5.txt", "5\n"); // rewritten with the same bytes: not a change
        r.write("d0/new.txt", "n\n");
        std::fs::remove_file(r.path().join("d0/f3.txt")).expect("rm");
        let a = diff(&r.path()).await;
        assert_eq!(
            paths(&a),
            ["d0/f3.txt", "d0/new.txt", "d1/f1.txt"],
            "{format} v{version}"
        );

        std::fs::write(r.path().join(".git/index"), b"DIRC\0\0\0\x02garbage").expect("corrupt");
        let b = diff(&r.path()).await;
        // Without an index, nothing is staged: the answer for these files is the same.
        assert_eq!(paths(&b), paths(&a), "{format} v{version} corrupt index");
    }
}

#[tokio::test]
async fn bounds_cut_the_answer_and_say_so() {
    let r = Repo::new();
    r.write("keep.txt", "k\n");
    r.commit_all();
    for i in 0..=MAX_FILES {
        r.write(&format!("many/{i:04}.txt"), "x\n");
    }
    let a = diff(&r.path()).await;
    assert_eq!(a.files.len(), MAX_FILES);
    assert!(a.truncated);

    // Text: 3 files with ~600 KiB of added lines each; only whole hunks up to 1 MiB are kept,
    // but every file is listed with its full counts.
    let r = Repo::new();
    for n in 0..3 {
        r.write(&format!("f{n}.txt"), "head\n");
    }
    r.commit_all();
    let added: String = (0..6000).map(|i| format!("{i:0>99}\n")).collect();
    for n in 0..3 {
        r.write(&format!("f{n}.txt"), format!("head\n{added}"));
    }
    let a = diff(&r.path()).await;
    assert!(a.truncated);
    assert_eq!(paths(&a), ["f0.txt", "f1.txt", "f2.txt"]);
    let text: usize = a.files.iter().map(|f| f.diff.len()).sum();
    assert!(text <= MAX_DIFF_BYTES, "{text}");
    assert!(!a.files[0].truncated && a.files[0].diff.len() > 600_000);
    assert!(a.files[1].truncated && a.files[1].diff.is_empty());
    assert!(a.files.iter().all(|f| (f.added, f.removed) == (6000, 0)));
}

#[tokio::test]
async fn audit_meta_has_counts_never_contents() {
    let r = Repo::new();
    r.write("a.txt", "public\n");
    r.commit_all();
    r.write("a.txt", "SECRET-LINE\n");
    let done = git_diff(r.path(), all(), GitDiffArgs::default())
        .await
        .expect("answers");
    let meta = serde_json::Value::Object(done.meta.clone());
    assert_eq!(meta["files"], 1);
    assert_eq!(meta["added"], 1);
    assert_eq!(meta["removed"], 1);
    assert_eq!(meta["truncated"], false);
    assert_eq!(meta["root"], r.path().to_string_lossy().as_ref());
    assert!(!meta.to_string().contains("SECRET"), "{meta}");
    assert!(serde_json::to_string(&done.answer)
        .expect("json")
        .contains("SECRET-LINE"));
}

/// A FIFO is never opened (an open would wait for a writer): a tracked file turned FIFO is gone as
/// far as a diff goes, an untracked one is not listed, and a `.gitignore` that is a FIFO keeps its
/// folder out of the untracked listing instead of hanging the walk.
#[test]
fn fifos_are_never_opened() {
    let r = Repo::new();
    r.write("pipe", "was a file\n");
    r.write("sub/kept.txt", "k\n");
    r.commit_all();
    std::fs::remove_file(r.path().join("pipe")).expect("rm");
    for fifo in ["pipe", "new-pipe", "sub/.gitignore"] {
        let made = Command::new("mkfifo")
            .arg(r.path().join(fifo))
            .status()
            .expect("mkfifo runs");
        assert!(made.success());
    }
    r.write("sub/untracked.txt", "u\n");
    // A runtime of its own: a regression leaves a blocking thread waiting on a FIFO, and a
    // `#[tokio::test]` runtime would wait for that thread on drop, hanging instead of failing.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let answer = rt.block_on(git_diff(r.path(), all(), GitDiffArgs::default()));
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    let a = answer
        .expect("git_diff answers without waiting on a FIFO")
        .answer;
    assert_eq!(paths(&a), ["pipe"]);
    assert_eq!(file(&a, "pipe").status, FileStatus::Deleted);
    assert!(
        a.truncated,
        "the skipped folder makes the answer incomplete"
    );
}

/// A tracked folder swapped for a symlink to somewhere else: its files are gone as far as git
/// goes, and nothing of the place the link points to is read — even a file there with the very
/// name the repository tracks.
#[tokio::test]
async fn a_folder_swapped_for_a_symlink_is_not_followed() {
    let r = Repo::new();
    r.write("conf/app.ini", "setting = 1\n");
    r.commit_all();
    let outside = tempfile::tempdir().expect("outside");
    std::fs::write(outside.path().join("app.ini"), "OUTSIDE-SECRET\n").expect("secret");
    std::fs::remove_dir_all(r.path().join("conf")).expect("rm");
    std::os::unix::fs::symlink(outside.path(), r.path().join("conf")).expect("swap");

    let a = diff(&r.path()).await;
    let json = serde_json::to_string(&a).expect("json");
    assert!(!json.contains("OUTSIDE-SECRET"), "{json}");
    assert_eq!(file(&a, "conf/app.ini").status, FileStatus::Deleted);
    assert_eq!(
        file(&a, "conf/app.ini").diff,
        "@@ -1 +0,0 @@\n-setting = 1\n"
    );
    // The link itself is a new, untracked file whose text is its target.
    assert_eq!(file(&a, "conf").status, FileStatus::Untracked);
    assert_eq!(paths(&a), ["conf", "conf/app.ini"]);
}

/// A HEAD crafted to track `.git/config` (git's own `mktree` writes such a tree): the repository's
/// config — where a remote's URL can hold a token — is never read into an answer.
#[tokio::test]
async fn a_crafted_tree_cannot_reach_into_dot_git() {
    let r = Repo::new();
    r.git(&[
        "config",
        "remote.origin.url",
        "https://user:TOKEN-IN-CONFIG@example.com/r.git",
    ]);
    let blob = |text: &str| {
        let out = git_cmd(&r.path())
            .args(["hash-object", "-w", "--stdin"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().expect("stdin").write_all(text.as_bytes())?;
                c.wait_with_output()
            })
            .expect("hash-object");
        String::from_utf8(out.stdout)
            .expect("oid")
            .trim()
            .to_owned()
    };
    let mktree = |listing: String| {
        let out = git_cmd(&r.path())
            .arg("mktree")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin
                    .take()
                    .expect("stdin")
                    .write_all(listing.as_bytes())?;
                c.wait_with_output()
            })
            .expect("mktree");
        String::from_utf8(out.stdout)
            .expect("oid")
            .trim()
            .to_owned()
    };
    let b = blob("old\n");
    let dotgit = mktree(format!("100644 blob {b}\tconfig\n"));
    let top = mktree(format!(
        "040000 tree {dotgit}\t.git\n100644 blob {b}\tok.txt\n"
    ));
    let commit = r.git(&["commit-tree", "-m", "crafted", &top]);
    r.git(&["update-ref", "HEAD", commit.trim()]);
    assert!(
        r.git(&["ls-tree", "-r", "HEAD"]).contains(".git/config"),
        "the trap is set"
    );
    r.write("ok.txt", "old\n");

    let a = diff(&r.path()).await;
    let json = serde_json::to_string(&a).expect("json");
    assert!(!json.contains("TOKEN-IN-CONFIG"), "{json}");
    assert!(a.files.is_empty(), "{:?}", a.files);
}
