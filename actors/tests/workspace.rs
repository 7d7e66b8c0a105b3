//! Workspaces (SPEC §11) on a real folder tree: every way out of a root is refused with
//! `OutsideWorkspace`, every guarded path with `PathNotAllowed`, and — a property test over random
//! path strings — whatever `resolve` or `resolve_new` accepts is inside a root and not guarded.

mod files_tree;

use std::path::PathBuf;

use collie_actors::tools::workspace::{Guarded, Workspaces, STATE_FILE_NAMES};
use collie_actors::tools::ToolError;
use files_tree::Tree;
use proptest::prelude::*;
use proptest::test_runner::TestRunner;

#[test]
fn relative_absolute_and_home_paths_resolve_inside() {
    let t = Tree::new();
    assert_eq!(t.ws.resolve("a.txt"), Ok(t.p("a.txt")));
    assert_eq!(t.ws.resolve("./sub/../a.txt"), Ok(t.p("a.txt")));
    assert_eq!(t.ws.resolve(&t.s("sub//b.txt")), Ok(t.p("sub/b.txt")));
    assert_eq!(t.ws.resolve("~/sub/b.txt"), Ok(t.p("sub/b.txt")));
    assert_eq!(t.ws.resolve("~"), Ok(t.root.clone()));
    assert_eq!(t.ws.resolve("."), Ok(t.root.clone()));
    // A symlink inside pointing inside is followed.
    assert_eq!(t.ws.resolve("link_in/b.txt"), Ok(t.p("sub/b.txt")));
    assert_eq!(
        t.ws.resolve("dangling_in").map(|_| ()),
        Err(ToolError::NoSuchFile)
    );
    assert_eq!(t.ws.resolve_new("dangling_in"), Ok(t.p("sub/new.txt")));
    assert_eq!(t.ws.resolve("nope.txt"), Err(ToolError::NoSuchFile));
    assert_eq!(
        t.ws.resolve_new("new/deeper/x.txt"),
        Ok(t.p("new/deeper/x.txt"))
    );
    // As in the kernel, `..` after a missing name or a file fails.
    assert_eq!(
        t.ws.resolve_new("new/../a2.txt"),
        Err(ToolError::NoSuchFile)
    );
    assert!(matches!(
        t.ws.resolve("a.txt/"),
        Err(ToolError::WrongKind(_))
    ));
    assert!(matches!(
        t.ws.resolve("a.txt/."),
        Err(ToolError::WrongKind(_))
    ));
    assert_eq!(t.ws.resolve("link_in/"), Ok(t.p("sub")));
    assert!(matches!(
        t.ws.resolve("a.txt/.."),
        Err(ToolError::WrongKind(_))
    ));
}

#[test]
fn every_way_out_is_refused() {
    let t = Tree::new();
    let out = Err(ToolError::OutsideWorkspace);
    let secret = t.outside.join("secret.txt").to_string_lossy().into_owned();
    for p in [
        "..",                    // the root's parent
        "../outside/secret.txt", // `..` out
        "sub/../../outside/secret.txt",
        "/",
        "/etc/passwd",
        secret.as_str(), // absolute, outside
        "link_out",      // a symlink inside pointing out
        "link_out/secret.txt",
        "link_out/inner/../secret.txt",
        "chain1",             // a chain of symlinks ending out
        "deep/../secret.txt", // `..` through a symlinked folder: the target's parent
        "~/..",
        "/nonexistent-collie-test/x", // a missing path outside is outside, not missing
        "../outside/missing.txt",
    ] {
        assert_eq!(t.ws.resolve(p), out, "resolve {p}");
        assert_eq!(t.ws.resolve_new(p), out, "resolve_new {p}");
    }
    // A dangling symlink inside pointing out, as a write target.
    assert_eq!(t.ws.resolve_new("dangling"), out);
    assert_eq!(t.ws.resolve_new("link_out/new.txt"), out);
    // Lexically `deep/../a.txt` is inside; through the symlink it is the outside folder's.
    assert_eq!(t.ws.resolve_new("deep/../a.txt"), out);
}

#[test]
fn bad_path_strings_are_bad_arguments() {
    let t = Tree::new();
    let bad = |p: &str| matches!(t.ws.resolve(p), Err(ToolError::BadArgument(_)));
    assert!(bad(""));
    assert!(bad("a\0b"));
    assert!(bad("~root/x"));
    assert!(bad(&"a/".repeat(3000)));
    assert!(bad("loop_a"), "a symlink loop");
    let no_home = Workspaces::new(vec![t.root.clone()], Guarded::default()).expect("ws");
    assert!(matches!(
        no_home.resolve("~/a.txt"),
        Err(ToolError::BadArgument(_))
    ));
}

#[test]
fn guarded_paths_are_refused_wherever_they_are() {
    let t = Tree::new();
    let denied = Err(ToolError::PathNotAllowed);
    for p in [
        "state",        // the state dir itself
        "state/db.txt", // anything in it
        "state/audit.log",
        "state/new-file",            // also what does not exist yet
        "config/config.toml",        // the config dir
        "claude-home/settings.json", // an agent settings dir, by name
        "claude-home/settings.local.json",
        "proj/.claude/settings.json", // hook settings anywhere
        "proj/.claude/settings.local.json",
        "proj/.codex/hooks.json",
        "proj/.codex/config.toml",
        "proj/.CLAUDE/Settings.json", // case-insensitive file systems
        "proj/audit.log",             // a state file's name anywhere
        "innocent.json",              // a symlink to hook settings
        "link_in/../state/db.txt",
    ] {
        assert_eq!(t.ws.resolve_new(p), denied, "{p}");
    }
    for name in STATE_FILE_NAMES {
        assert_eq!(t.ws.resolve_new(&format!("sub/{name}")), denied, "{name}");
        assert_eq!(
            t.ws.resolve_new(&format!("sub/{}", name.to_uppercase())),
            denied,
            "{name}"
        );
    }
    // Near misses are fine.
    for p in [
        "proj/.claude",
        "proj/.claude/commands.md",
        "claude-home/other.json",
        "sub/settings.json",
        "sub/audit.log.txt",
        "proj/.git/config",
    ] {
        assert!(t.ws.resolve_new(p).is_ok(), "{p}");
    }
    assert!(!t.ws.allows_write(&t.p("proj/.git/config")));
    assert!(!t.ws.allows_write(&t.p("proj/.git")));
    assert!(t.ws.allows_write(&t.p("proj/main.rs")));
}

#[test]
fn allows_is_the_same_check_without_syscalls() {
    let t = Tree::new();
    assert!(t.ws.allows(&t.p("a.txt")));
    assert!(t.ws.allows(&t.p("not/there/yet")));
    assert!(!t.ws.allows(&t.outside.join("secret.txt")));
    assert!(!t.ws.allows(&t.p("state/x")));
    assert!(!t.ws.allows(&t.p("x/.codex/hooks.json")));
    assert!(!t.ws.allows(&PathBuf::from("/")));
}

#[test]
fn new_refuses_no_roots_and_missing_roots_and_dedupes() {
    let t = Tree::new();
    assert!(matches!(
        Workspaces::new(vec![], Guarded::default()),
        Err(ToolError::BadArgument(_))
    ));
    assert!(matches!(
        Workspaces::new(vec![t.p("missing")], Guarded::default()),
        Err(ToolError::BadArgument(_))
    ));
    assert!(matches!(
        Workspaces::new(vec![t.p("a.txt")], Guarded::default()),
        Err(ToolError::WrongKind(_))
    ));
    let ws = Workspaces::new(
        vec![t.p("sub"), t.p("link_in"), t.outside.clone()],
        Guarded::default(),
    )
    .expect("ws");
    assert_eq!(ws.roots(), [t.p("sub"), t.outside.clone()]);
    // Relative paths start at the first root; the second root is reachable absolutely.
    assert_eq!(ws.resolve("b.txt"), Ok(t.p("sub/b.txt")));
    assert_eq!(
        ws.resolve(&t.outside.join("secret.txt").to_string_lossy()),
        Ok(t.outside.join("secret.txt"))
    );
}

/// A component for random paths: names that exist, symlinks of every kind, `..`, `.`, empty
/// (which makes `//`), guarded names.
fn component() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "a.txt",
        "sub",
        "deeper",
        "b.txt",
        "..",
        ".",
        "",
        "link_out",
        "link_in",
        "chain1",
        "chain2",
        "dangling",
        "dangling_in",
        "deep",
        "loop_a",
        "state",
        "config",
        "claude-home",
        "settings.json",
        "proj",
        ".claude",
        ".codex",
        "hooks.json",
        ".git",
        "audit.log",
        "new",
        "outside",
        "ws",
        "innocent.json",
        "inner",
    ])
}

fn path_string() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec!["", "/", "~/", "./"]),
        prop::collection::vec(component(), 1..8),
    )
        .prop_map(|(lead, parts)| format!("{lead}{}", parts.join("/")))
}

/// Whatever `resolve` or `resolve_new` accepts is inside the root and not guarded; what
/// `resolve` accepts exists and is what the kernel resolves the path to. One tree serves every
/// case (building it per case would dominate the run) and is removed at the end.
#[test]
fn accepted_paths_are_inside_and_unguarded() {
    let t = Tree::new();
    let mut runner = TestRunner::new(ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::with_cases(1024)
    });
    runner
        .run(&path_string(), |p| {
            if let Ok(r) = t.ws.resolve(&p) {
                prop_assert!(r.starts_with(&t.root), "{} -> {}", p, r.display());
                prop_assert!(t.ws.allows(&r));
                prop_assert!(!r.starts_with(t.root.join("state")));
                let abs = match p.strip_prefix("~/") {
                    Some(rest) => t.root.join(rest.trim_start_matches('/')),
                    None => t.root.join(&p),
                };
                prop_assert_eq!(std::fs::canonicalize(&abs).ok(), Some(r));
            }
            if let Ok(r) = t.ws.resolve_new(&p) {
                prop_assert!(r.starts_with(&t.root), "{} -> {}", p, r.display());
                prop_assert!(t.ws.allows(&r));
            }
            Ok(())
        })
        .expect("no accepted path leaves the workspace");
}

/// A state folder that does not exist yet when the workspaces are made, under a symlinked parent:
/// once it exists, a path into it is still refused (its existing part was canonicalized).
#[test]
fn a_guarded_folder_made_later_under_a_symlink_is_still_guarded() {
    let t = Tree::new();
    let guarded = Guarded {
        state_dirs: vec![t.p("link_in/later-state")],
        ..Guarded::default()
    };
    let ws = Workspaces::new(vec![t.root.clone()], guarded).expect("ws");
    std::fs::create_dir(t.p("sub/later-state")).expect("mkdir");
    std::fs::write(t.p("sub/later-state/x"), "x").expect("write");
    assert_eq!(
        ws.resolve("sub/later-state/x"),
        Err(ToolError::PathNotAllowed)
    );
    assert_eq!(ws.resolve("sub/b.txt"), Ok(t.p("sub/b.txt")));
}
