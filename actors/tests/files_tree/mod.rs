//! A real folder tree in a temp dir for the workspace and file-tool tests: one workspace root with
//! symlinks pointing in, out, in chains and nowhere, a folder outside it, and Collie's guarded
//! folders (state, config, an agent's settings) inside the root so that only the guard — not the
//! root — keeps a tool out of them. The temp dir is removed when the tree drops, pass or fail.

#![allow(dead_code, unreachable_pub)]

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use collie_actors::tools::workspace::{Guarded, Workspaces};

pub struct Tree {
    /// Owns the temp dir; dropping it removes everything.
    pub tmp: tempfile::TempDir,
    /// The workspace root (canonical).
    pub root: PathBuf,
    /// A folder next to the root, outside it.
    pub outside: PathBuf,
    pub ws: Workspaces,
}

impl Tree {
    pub fn new() -> Tree {
        let tmp = tempfile::tempdir().expect("temp dir");
        let base = std::fs::canonicalize(tmp.path()).expect("canonical temp dir");
        let root = base.join("ws");
        let outside = base.join("outside");
        for d in [
            root.join("sub/deeper"),
            outside.join("inner"),
            root.join("state"),
            root.join("config"),
            root.join("claude-home"),
            root.join("proj/.git"),
            root.join("proj/.claude"),
            root.join("proj/.codex"),
        ] {
            std::fs::create_dir_all(&d).expect("mkdir");
        }
        let files: [(&Path, &str, &str); 13] = [
            (&root, "a.txt", "alpha\nbeta\n"),
            (&root, "sub/b.txt", "bee\n"),
            (&root, "sub/deeper/c.txt", "sea\n"),
            (&outside, "secret.txt", "outside secret\n"),
            (&outside, "inner/x.txt", "x\n"),
            (&root, "state/audit.log", "state\n"),
            (&root, "state/db.txt", "db\n"),
            (&root, "config/config.toml", "[phone]\n"),
            (&root, "claude-home/settings.json", "{}\n"),
            (&root, "proj/.git/config", "[core]\n"),
            (&root, "proj/.claude/settings.json", "{}\n"),
            (&root, "proj/.codex/hooks.json", "{}\n"),
            (&root, "proj/audit.log", "not collie's, but named like it\n"),
        ];
        for (dir, name, content) in files {
            std::fs::write(dir.join(name), content).expect("write fixture");
        }
        std::fs::write(root.join("proj/main.rs"), "fn main() {}\n").expect("write");
        symlink("../outside", root.join("link_out")).expect("symlink");
        symlink("sub", root.join("link_in")).expect("symlink");
        symlink("chain2", root.join("chain1")).expect("symlink");
        symlink("../outside/secret.txt", root.join("chain2")).expect("symlink");
        symlink("../outside/new.txt", root.join("dangling")).expect("symlink");
        symlink("sub/new.txt", root.join("dangling_in")).expect("symlink");
        symlink(outside.join("inner"), root.join("deep")).expect("symlink");
        symlink("loop_b", root.join("loop_a")).expect("symlink");
        symlink("loop_a", root.join("loop_b")).expect("symlink");
        symlink("proj/.claude/settings.json", root.join("innocent.json")).expect("symlink");
        let guarded = Guarded {
            state_dirs: vec![root.join("state")],
            config_dirs: vec![root.join("config")],
            agent_settings_dirs: vec![root.join("claude-home")],
        };
        let ws = Workspaces::new(vec![root.clone()], guarded)
            .expect("workspace")
            .with_home(root.clone());
        Tree {
            tmp,
            root,
            outside,
            ws,
        }
    }

    pub fn p(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub fn s(&self, rel: &str) -> String {
        self.root.join(rel).to_string_lossy().into_owned()
    }

    /// How many of the tools' temporary files (`.collie-…`, written then renamed) are left in the
    /// tree: none after any write, whether it landed or was refused.
    pub fn temp_files_left(&self) -> usize {
        Self::names_under(&self.root)
            .iter()
            .filter(|n| n.contains(".collie-"))
            .count()
    }

    /// Every file name under `dir` (recursive, relative), sorted: to show nothing else appeared.
    pub fn names_under(dir: &Path) -> Vec<String> {
        let mut out = Vec::new();
        let mut todo = vec![dir.to_path_buf()];
        while let Some(d) = todo.pop() {
            for e in std::fs::read_dir(&d).expect("read dir") {
                let e = e.expect("entry");
                let p = e.path();
                out.push(
                    p.strip_prefix(dir)
                        .expect("under dir")
                        .to_string_lossy()
                        .into_owned(),
                );
                if e.file_type().expect("type").is_dir() {
                    todo.push(p);
                }
            }
        }
        out.sort();
        out
    }
}
