//! The file tools (SPEC §11) on a real folder tree: what each answers, every refusal the rules
//! require (outside, guarded, `.git`, caps, conflicts), that a failed write leaves nothing behind,
//! that the audit metadata never holds content, and that the tools work at the sizes the bench
//! uses (a 1 MiB edit, a 10 MiB read).

mod files_tree;

use std::os::unix::fs::PermissionsExt;

use collie_actors::tools::files::{
    self, create_directory, edit_block, get_file_info, list_directory, move_file, read_file,
    read_multiple_files, write_file, CreateDirectoryArgs, EditBlockArgs, EntryKind,
    GetFileInfoArgs, ListDirectoryArgs, MoveFileArgs, ReadFileArgs, ReadMultipleFilesArgs,
    WriteFileArgs, WriteMode, READ_CAP, WRITE_CAP,
};
use collie_actors::tools::{Meta, ToolError};
use files_tree::Tree;
use serde_json::json;
use sha2::{Digest, Sha256};

fn read(t: &Tree, path: &str) -> Result<files::ReadFileAnswer, ToolError> {
    read_file(
        &t.ws,
        ReadFileArgs {
            path: path.to_owned(),
            offset: 0,
            length: None,
        },
    )
    .map(|d| d.answer)
}

fn write(t: &Tree, path: &str, content: &str, mode: WriteMode) -> Result<(), ToolError> {
    write_file(
        &t.ws,
        WriteFileArgs {
            path: path.to_owned(),
            content: content.to_owned(),
            mode,
        },
    )
    .map(|_| ())
}

fn edit(t: &Tree, path: &str, old: &str, new: &str) -> Result<files::EditBlockAnswer, ToolError> {
    edit_block(
        &t.ws,
        EditBlockArgs {
            file_path: path.to_owned(),
            old_string: old.to_owned(),
            new_string: new.to_owned(),
            expected_replacements: None,
            fingerprint: None,
        },
    )
    .map(|d| d.answer)
}

fn mv(t: &Tree, from: &str, to: &str) -> Result<(), ToolError> {
    move_file(
        &t.ws,
        MoveFileArgs {
            source: from.to_owned(),
            destination: to.to_owned(),
        },
    )
    .map(|_| ())
}

fn meta_text(m: &Meta) -> String {
    serde_json::to_string(m).expect("meta serializes")
}

#[test]
fn read_file_answers_lines_tails_and_the_fingerprint() {
    let t = Tree::new();
    std::fs::write(t.p("five.txt"), "1\n2\n3\n4\n5\n").expect("write");
    let whole = read(&t, "five.txt").expect("read");
    assert_eq!(whole.content.as_deref(), Some("1\n2\n3\n4\n5\n"));
    assert_eq!(
        (whole.offset, whole.lines, whole.total_lines),
        (0, 5, Some(5))
    );
    assert!(!whole.truncated);
    assert_eq!(whole.size, 10);
    assert_eq!(whole.path, t.s("five.txt"));
    assert_eq!(
        whole.fingerprint,
        hex::encode(Sha256::digest(b"1\n2\n3\n4\n5\n"))
    );

    let done = read_file(
        &t.ws,
        files::args(json!({"path": "five.txt", "offset": 1, "length": 2})).expect("args"),
    )
    .expect("read");
    assert_eq!(done.answer.content.as_deref(), Some("2\n3\n"));
    assert!(done.answer.truncated);
    // The slice's fingerprint is still the whole file's.
    assert_eq!(done.answer.fingerprint, whole.fingerprint);
    assert!(
        !meta_text(&done.meta).contains("2\\n3"),
        "no content in meta"
    );
    assert_eq!(done.meta.get("path"), Some(&json!(t.s("five.txt"))));

    let tail = read_file(
        &t.ws,
        files::args(json!({"path": "five.txt", "offset": -2})).expect("args"),
    )
    .expect("read");
    assert_eq!(tail.answer.content.as_deref(), Some("4\n5\n"));
    assert_eq!(tail.answer.offset, 3);
}

#[test]
fn binary_files_are_answered_as_such_without_content() {
    let t = Tree::new();
    let mut bytes = b"PNG".to_vec();
    bytes.push(0);
    bytes.extend_from_slice(b"rest");
    std::fs::write(t.p("img.bin"), &bytes).expect("write");
    let a = read(&t, "img.bin").expect("read");
    assert!(a.binary);
    assert_eq!(a.content, None);
    assert_eq!(a.size, 8);
    // A NUL after the first 8 KiB does not make a file binary.
    let mut late = vec![b'a'; 9000];
    late.push(0);
    std::fs::write(t.p("late.txt"), &late).expect("write");
    assert!(!read(&t, "late.txt").expect("read").binary);
}

#[test]
fn reads_are_refused_outside_guarded_and_over_the_cap() {
    let t = Tree::new();
    assert_eq!(
        read(&t, "link_out/secret.txt"),
        Err(ToolError::OutsideWorkspace)
    );
    assert_eq!(read(&t, "chain1"), Err(ToolError::OutsideWorkspace));
    assert_eq!(
        read(&t, "../outside/secret.txt"),
        Err(ToolError::OutsideWorkspace)
    );
    assert_eq!(read(&t, "state/db.txt"), Err(ToolError::PathNotAllowed));
    assert_eq!(
        read(&t, "proj/.claude/settings.json"),
        Err(ToolError::PathNotAllowed)
    );
    assert_eq!(read(&t, "innocent.json"), Err(ToolError::PathNotAllowed));
    assert_eq!(read(&t, "proj/audit.log"), Err(ToolError::PathNotAllowed));
    // `.git` is readable.
    assert!(read(&t, "proj/.git/config").is_ok());
    assert!(matches!(read(&t, "sub"), Err(ToolError::WrongKind(_))));
    assert_eq!(read(&t, "nope"), Err(ToolError::NoSuchFile));
    // One byte over the cap: refused before reading (a sparse file, so the test is cheap).
    let big = std::fs::File::create(t.p("big.bin")).expect("create");
    big.set_len(READ_CAP + 1).expect("set_len");
    assert_eq!(
        read(&t, "big.bin"),
        Err(ToolError::ResourceLimit("read size"))
    );
    // A FIFO is not read (and does not hang the call).
    nix::unistd::mkfifo(
        &t.p("fifo"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .expect("mkfifo");
    assert!(matches!(read(&t, "fifo"), Err(ToolError::WrongKind(_))));
}

#[test]
fn read_multiple_files_answers_each_on_its_own_within_caps() {
    let t = Tree::new();
    let done = read_multiple_files(
        &t.ws,
        ReadMultipleFilesArgs {
            paths: vec![
                "a.txt".into(),
                "link_out/secret.txt".into(),
                "state/db.txt".into(),
                "nope".into(),
                "sub/b.txt".into(),
            ],
        },
    )
    .expect("read");
    let f = &done.answer.files;
    assert_eq!(f.len(), 5);
    assert_eq!(
        f[0].file.as_ref().and_then(|a| a.content.as_deref()),
        Some("alpha\nbeta\n")
    );
    assert_eq!(f[1].error.as_deref(), Some("path outside the workspace"));
    assert_eq!(f[2].error.as_deref(), Some("path not allowed"));
    assert_eq!(f[3].error.as_deref(), Some("no such file"));
    assert_eq!(
        f[4].file.as_ref().and_then(|a| a.content.as_deref()),
        Some("bee\n")
    );
    let meta = meta_text(&done.meta);
    assert!(
        !meta.contains("alpha") && !meta.contains("outside secret"),
        "{meta}"
    );
    assert_eq!(
        done.meta.get("denied"),
        Some(&json!(["link_out/secret.txt", "state/db.txt"]))
    );

    let too_many = ReadMultipleFilesArgs {
        paths: vec!["a.txt".to_owned(); 33],
    };
    assert!(matches!(
        read_multiple_files(&t.ws, too_many),
        Err(ToolError::BadArgument(_))
    ));
    // Two 9 MiB files: the second would pass the 16 MiB total.
    for name in ["n1.bin", "n2.bin"] {
        let f = std::fs::File::create(t.p(name)).expect("create");
        f.set_len(9 * 1024 * 1024).expect("set_len");
    }
    let done = read_multiple_files(
        &t.ws,
        ReadMultipleFilesArgs {
            paths: vec!["n1.bin".into(), "n2.bin".into()],
        },
    )
    .expect("read");
    assert!(done.answer.files[0].file.is_some());
    assert_eq!(
        done.answer.files[1].error.as_deref(),
        Some("resource limit")
    );
}

#[test]
fn list_directory_is_structured_bounded_and_omits_guarded_entries() {
    let t = Tree::new();
    let done = list_directory(
        &t.ws,
        ListDirectoryArgs {
            path: ".".into(),
            depth: None,
        },
    )
    .expect("list");
    let a = &done.answer;
    assert_eq!(a.depth, 2);
    let paths: Vec<&str> = a.entries.iter().map(|e| e.path.as_str()).collect();
    for want in [
        "a.txt",
        "sub",
        "sub/b.txt",
        "sub/deeper",
        "link_out",
        "proj/main.rs",
        "proj/.git",
    ] {
        assert!(paths.contains(&want), "{want} in {paths:?}");
    }
    // Depth 2: not `sub/deeper/c.txt`; a symlink is listed, never followed.
    assert!(!paths.contains(&"sub/deeper/c.txt"));
    assert!(!paths.iter().any(|p| p.starts_with("link_out/")));
    let link = a
        .entries
        .iter()
        .find(|e| e.path == "link_out")
        .expect("link");
    assert_eq!(link.kind, EntryKind::Symlink);
    let file = a.entries.iter().find(|e| e.path == "a.txt").expect("file");
    assert_eq!((file.kind, file.size), (EntryKind::File, Some(11)));
    // Guarded entries are left out, not errors.
    for hidden in [
        "state",
        "config",
        "proj/audit.log",
        "claude-home/settings.json",
    ] {
        assert!(!paths.contains(&hidden), "{hidden} listed");
    }
    assert!(!a.truncated);

    // Deeper listing still hides hook settings and does not descend into `.git`.
    let deep = list_directory(
        &t.ws,
        ListDirectoryArgs {
            path: "proj".into(),
            depth: Some(5),
        },
    )
    .expect("list");
    let paths: Vec<&str> = deep
        .answer
        .entries
        .iter()
        .map(|e| e.path.as_str())
        .collect();
    assert!(paths.contains(&".claude"));
    assert!(!paths.contains(&".claude/settings.json"));
    assert!(!paths.contains(&".codex/hooks.json"));
    assert!(!paths.contains(&".git/config"));

    for depth in [0, 6] {
        assert!(matches!(
            list_directory(
                &t.ws,
                ListDirectoryArgs {
                    path: ".".into(),
                    depth: Some(depth)
                }
            ),
            Err(ToolError::BadArgument(_))
        ));
    }
    assert_eq!(
        list_directory(
            &t.ws,
            ListDirectoryArgs {
                path: "link_out".into(),
                depth: None
            }
        )
        .map(|_| ()),
        Err(ToolError::OutsideWorkspace)
    );

    // 1,000 entries at most.
    std::fs::create_dir(t.p("many")).expect("mkdir");
    for i in 0..1_100 {
        std::fs::write(t.p(&format!("many/f{i:04}")), "").expect("write");
    }
    let many = list_directory(
        &t.ws,
        ListDirectoryArgs {
            path: "many".into(),
            depth: Some(1),
        },
    )
    .expect("list");
    assert_eq!(many.answer.entries.len(), 1_000);
    assert!(many.answer.truncated);
}

#[test]
fn get_file_info_describes_without_content() {
    let t = Tree::new();
    std::fs::set_permissions(t.p("a.txt"), std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let i = get_file_info(
        &t.ws,
        GetFileInfoArgs {
            path: "a.txt".into(),
        },
    )
    .expect("info")
    .answer;
    assert_eq!(i.kind, EntryKind::File);
    assert_eq!(i.size, 11);
    assert_eq!(i.permissions, "0640");
    assert_eq!(i.lines, Some(2));
    let modified = i.modified.expect("mtime");
    assert!(
        time::OffsetDateTime::parse(&modified, &time::format_description::well_known::Rfc3339)
            .is_ok(),
        "{modified}"
    );
    let d = get_file_info(&t.ws, GetFileInfoArgs { path: "sub".into() })
        .expect("info")
        .answer;
    assert_eq!((d.kind, d.lines), (EntryKind::Dir, None));
    assert_eq!(
        get_file_info(
            &t.ws,
            GetFileInfoArgs {
                path: "state".into()
            }
        )
        .map(|_| ()),
        Err(ToolError::PathNotAllowed)
    );
    assert_eq!(
        get_file_info(
            &t.ws,
            GetFileInfoArgs {
                path: "link_out".into()
            }
        )
        .map(|_| ()),
        Err(ToolError::OutsideWorkspace)
    );
}

#[test]
fn edit_block_replaces_exactly_what_was_asked() {
    let t = Tree::new();
    std::fs::write(t.p("e.txt"), "one two two three\n").expect("write");
    assert_eq!(
        edit(&t, "e.txt", "four", "4"),
        Err(ToolError::BadArgument("old_string not found".into()))
    );
    match edit(&t, "e.txt", "two", "2") {
        Err(ToolError::BadArgument(m)) => assert!(m.contains("2 times"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        edit(&t, "e.txt", "", "x"),
        Err(ToolError::BadArgument(_))
    ));
    assert_eq!(
        std::fs::read_to_string(t.p("e.txt")).expect("read"),
        "one two two three\n"
    );

    let done = edit_block(
        &t.ws,
        EditBlockArgs {
            file_path: "e.txt".into(),
            old_string: "two".into(),
            new_string: "2".into(),
            expected_replacements: Some(2),
            fingerprint: None,
        },
    )
    .expect("edit");
    assert_eq!(done.answer.replacements, 2);
    assert_eq!(
        std::fs::read_to_string(t.p("e.txt")).expect("read"),
        "one 2 2 three\n"
    );
    assert_eq!(done.answer.size, 14);
    assert_eq!(
        done.answer.fingerprint,
        hex::encode(Sha256::digest(b"one 2 2 three\n"))
    );
    let meta = meta_text(&done.meta);
    assert!(!meta.contains("two") && !meta.contains("three"), "{meta}");
    assert_eq!(done.meta.get("replacements"), Some(&json!(2)));

    // A stale fingerprint is a conflict; the fresh one works.
    let stale = hex::encode(Sha256::digest(b"one two two three\n"));
    let with_fp = |fp: String| EditBlockArgs {
        file_path: "e.txt".into(),
        old_string: "one".into(),
        new_string: "1".into(),
        expected_replacements: None,
        fingerprint: Some(fp),
    };
    assert_eq!(
        edit_block(&t.ws, with_fp(stale)).map(|_| ()),
        Err(ToolError::Conflict)
    );
    let fresh = read(&t, "e.txt").expect("read").fingerprint;
    edit_block(&t.ws, with_fp(fresh)).expect("edit with the fresh fingerprint");
    assert_eq!(
        std::fs::read_to_string(t.p("e.txt")).expect("read"),
        "1 2 2 three\n"
    );
    assert_eq!(t.temp_files_left(), 0);
}

#[test]
fn edits_and_writes_are_refused_where_tools_may_not_write() {
    let t = Tree::new();
    let before = std::fs::read_to_string(t.outside.join("secret.txt")).expect("read");
    for (p, want) in [
        ("link_out/secret.txt", ToolError::OutsideWorkspace),
        ("chain1", ToolError::OutsideWorkspace),
        ("deep/../secret.txt", ToolError::OutsideWorkspace),
        ("proj/.git/config", ToolError::PathNotAllowed),
        ("proj/.claude/settings.json", ToolError::PathNotAllowed),
        ("innocent.json", ToolError::PathNotAllowed),
        ("state/db.txt", ToolError::PathNotAllowed),
        ("claude-home/settings.json", ToolError::PathNotAllowed),
    ] {
        assert_eq!(
            edit(&t, p, "x", "y").map(|_| ()),
            Err(want.clone()),
            "edit {p}"
        );
        assert_eq!(
            write(&t, p, "x", WriteMode::Rewrite),
            Err(want.clone()),
            "write {p}"
        );
        assert_eq!(
            write(&t, p, "x", WriteMode::Append),
            Err(want),
            "append {p}"
        );
    }
    for (p, want) in [
        ("dangling", ToolError::OutsideWorkspace),
        ("link_out/new.txt", ToolError::OutsideWorkspace),
        ("proj/.git/hooks/pre-commit", ToolError::PathNotAllowed),
        ("proj/.git/new", ToolError::PathNotAllowed),
        ("sub/.git", ToolError::PathNotAllowed),
        ("sub/.claude/settings.json", ToolError::PathNotAllowed),
        ("sub/.codex/config.toml", ToolError::PathNotAllowed),
        ("claude-home/settings.local.json", ToolError::PathNotAllowed),
        ("sub/local-secret", ToolError::PathNotAllowed),
        ("state/new.txt", ToolError::PathNotAllowed),
    ] {
        assert_eq!(
            write(&t, p, "x", WriteMode::Rewrite),
            Err(want),
            "write {p}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(t.outside.join("secret.txt")).expect("read"),
        before
    );
    assert!(!t.outside.join("new.txt").exists());
    assert!(!t.p("proj/.git/new").exists());
    assert!(!t.p("sub/.claude").exists());
}

#[test]
fn write_file_is_atomic_keeps_permissions_and_appends() {
    let t = Tree::new();
    // New file: 0644 less the umask (the test process's umask is at most 022 here).
    write(&t, "new.txt", "hello\n", WriteMode::Rewrite).expect("write");
    assert_eq!(
        std::fs::read_to_string(t.p("new.txt")).expect("read"),
        "hello\n"
    );
    let mode = std::fs::metadata(t.p("new.txt"))
        .expect("stat")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode & !0o644, 0, "{mode:o}");
    // Existing file keeps its mode.
    std::fs::set_permissions(t.p("new.txt"), std::fs::Permissions::from_mode(0o600))
        .expect("chmod");
    let done = write_file(
        &t.ws,
        WriteFileArgs {
            path: "new.txt".into(),
            content: "more\n".into(),
            mode: WriteMode::Append,
        },
    )
    .expect("append");
    assert!(!done.answer.created);
    assert_eq!(done.answer.size, 11);
    assert!(!meta_text(&done.meta).contains("more"));
    assert_eq!(
        std::fs::read_to_string(t.p("new.txt")).expect("read"),
        "hello\nmore\n"
    );
    let mode = std::fs::metadata(t.p("new.txt"))
        .expect("stat")
        .permissions()
        .mode()
        & 0o7777;
    assert_eq!(mode, 0o600);
    // A write replaces the entry: a hard link to the old file keeps the old bytes.
    std::fs::hard_link(t.p("new.txt"), t.p("sub/hard.txt")).expect("link");
    write(&t, "new.txt", "replaced\n", WriteMode::Rewrite).expect("write");
    assert_eq!(
        std::fs::read_to_string(t.p("sub/hard.txt")).expect("read"),
        "hello\nmore\n"
    );
    // A dangling symlink inside pointing inside: the write lands at its target.
    write(&t, "dangling_in", "via link\n", WriteMode::Rewrite).expect("write");
    assert_eq!(
        std::fs::read_to_string(t.p("sub/new.txt")).expect("read"),
        "via link\n"
    );
    assert!(std::fs::symlink_metadata(t.p("dangling_in"))
        .expect("lstat")
        .file_type()
        .is_symlink());
    // Missing folder, a folder as target, over the cap: refused, nothing left behind.
    assert_eq!(
        write(&t, "nofolder/x.txt", "x", WriteMode::Rewrite),
        Err(ToolError::NoSuchFile)
    );
    assert!(matches!(
        write(&t, "sub", "x", WriteMode::Rewrite),
        Err(ToolError::WrongKind(_))
    ));
    let huge = "x".repeat(usize::try_from(WRITE_CAP).expect("fits") + 1);
    assert_eq!(
        write(&t, "huge.txt", &huge, WriteMode::Rewrite),
        Err(ToolError::ResourceLimit("write size"))
    );
    // An append that would pass the cap is refused too.
    std::fs::write(t.p("half.txt"), "x".repeat(9 * 1024 * 1024)).expect("write");
    assert_eq!(
        write(
            &t,
            "half.txt",
            &"y".repeat(8 * 1024 * 1024),
            WriteMode::Append
        ),
        Err(ToolError::ResourceLimit("write size"))
    );
    assert!(!t.p("huge.txt").exists());
    assert_eq!(t.temp_files_left(), 0);
}

#[test]
fn create_directory_makes_parents_inside_only() {
    let t = Tree::new();
    let done = create_directory(
        &t.ws,
        CreateDirectoryArgs {
            path: "n1/n2/n3".into(),
        },
    )
    .expect("mkdir");
    assert_eq!(done.answer.created, 3);
    assert!(t.p("n1/n2/n3").is_dir());
    let again = create_directory(
        &t.ws,
        CreateDirectoryArgs {
            path: "n1/n2/n3".into(),
        },
    )
    .expect("mkdir again");
    assert_eq!(again.answer.created, 0);
    for (p, want) in [
        ("link_out/made", ToolError::OutsideWorkspace),
        ("../outside/made", ToolError::OutsideWorkspace),
        ("proj/.git/made", ToolError::PathNotAllowed),
        ("state/made", ToolError::PathNotAllowed),
    ] {
        assert_eq!(
            create_directory(&t.ws, CreateDirectoryArgs { path: p.into() }).map(|_| ()),
            Err(want),
            "{p}"
        );
    }
    assert!(!t.outside.join("made").exists());
    assert!(matches!(
        create_directory(
            &t.ws,
            CreateDirectoryArgs {
                path: "a.txt".into()
            }
        ),
        Err(ToolError::WrongKind(_))
    ));
    assert!(matches!(
        create_directory(
            &t.ws,
            CreateDirectoryArgs {
                path: "a.txt/x".into()
            }
        ),
        Err(ToolError::WrongKind(_))
    ));
}

#[test]
fn move_file_moves_inside_and_refuses_the_rest() {
    let t = Tree::new();
    mv(&t, "a.txt", "sub/a-moved.txt").expect("move");
    assert!(!t.p("a.txt").exists());
    assert_eq!(
        std::fs::read_to_string(t.p("sub/a-moved.txt")).expect("read"),
        "alpha\nbeta\n"
    );
    // A symlink is moved as a link; its target stays.
    mv(&t, "link_in", "link_moved").expect("move link");
    assert!(std::fs::symlink_metadata(t.p("link_moved"))
        .expect("lstat")
        .file_type()
        .is_symlink());
    assert!(t.p("sub/b.txt").exists());

    assert_eq!(
        mv(&t, "sub/b.txt", "proj/main.rs"),
        Err(ToolError::AlreadyExists)
    );
    assert_eq!(
        mv(&t, "sub/b.txt", "dangling"),
        Err(ToolError::AlreadyExists)
    );
    assert_eq!(mv(&t, "missing", "x"), Err(ToolError::NoSuchFile));
    assert_eq!(
        mv(&t, "sub/b.txt", "nofolder/x"),
        Err(ToolError::NoSuchFile)
    );
    assert!(matches!(
        mv(&t, "sub", "sub/deeper/sub"),
        Err(ToolError::BadArgument(_))
    ));
    for (from, to, want) in [
        (".", "elsewhere", ToolError::PathNotAllowed), // the root
        ("sub/b.txt", "../outside/b.txt", ToolError::OutsideWorkspace),
        ("sub/b.txt", "link_out/b.txt", ToolError::OutsideWorkspace),
        (
            "../outside/secret.txt",
            "stolen.txt",
            ToolError::OutsideWorkspace,
        ),
        ("state/db.txt", "db.txt", ToolError::PathNotAllowed), // guarded out
        ("state", "not-state", ToolError::PathNotAllowed),
        (
            "proj/.claude/settings.json",
            "s.json",
            ToolError::PathNotAllowed,
        ),
        ("proj/audit.log", "x.log", ToolError::PathNotAllowed),
        ("sub/b.txt", "sub/audit.log", ToolError::PathNotAllowed), // onto a guarded name
        (
            "sub/b.txt",
            "proj/.claude/settings.local.json",
            ToolError::PathNotAllowed,
        ),
        (
            "sub/b.txt",
            "claude-home/settings.json",
            ToolError::PathNotAllowed,
        ),
        ("sub/b.txt", "proj/.git/b.txt", ToolError::PathNotAllowed), // into .git
        ("proj/.git/config", "git-config", ToolError::PathNotAllowed), // out of .git
        ("proj/.git", "git-moved", ToolError::PathNotAllowed),
        ("proj/.claude", "claude-moved", ToolError::PathNotAllowed),
        ("sub/deeper", "sub/.claude", ToolError::PathNotAllowed), // making a `.claude`
        ("sub/deeper", "sub/.codex", ToolError::PathNotAllowed),
    ] {
        assert_eq!(mv(&t, from, to), Err(want), "{from} -> {to}");
    }
    assert!(t.p("proj/.claude/settings.json").exists());
    assert!(t.p("state/db.txt").exists());
    assert!(t.outside.join("secret.txt").exists());
    assert!(!t.outside.join("b.txt").exists());

    // A folder that holds a guarded folder cannot be moved away with it.
    let t2 = Tree::new();
    std::fs::create_dir_all(t2.p("holder")).expect("mkdir");
    let guarded = collie_actors::tools::workspace::Guarded {
        state_dirs: vec![t2.p("holder/state")],
        ..Default::default()
    };
    let ws = collie_actors::tools::workspace::Workspaces::new(vec![t2.root.clone()], guarded)
        .expect("ws");
    let r = move_file(
        &ws,
        MoveFileArgs {
            source: "holder".into(),
            destination: "holder2".into(),
        },
    );
    assert_eq!(r.map(|_| ()), Err(ToolError::PathNotAllowed));
}

#[test]
fn arguments_refuse_unknown_fields_such_as_a_risk_or_a_machine() {
    let refused = |v: serde_json::Value| -> String {
        match files::args::<WriteFileArgs>(v) {
            Err(ToolError::BadArgument(m)) => m,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(
        refused(json!({"path": "a", "content": "x", "risk": "high"})),
        "unknown field `risk`"
    );
    assert_eq!(
        refused(json!({"path": "a", "content": "x", "machine": "web-1"})),
        "unknown field `machine`"
    );
    assert_eq!(
        refused(json!({"path": "a", "content": "x", "tier": "full"})),
        "unknown field `tier`"
    );
    let m = refused(json!({"path": "a", "content": "x", "mode": "truncate"}));
    assert!(m.starts_with("`mode`: expected"), "{m}");
    assert!(files::args::<EditBlockArgs>(json!({
        "file_path": "a", "old_string": "x", "new_string": "y", "expected_replacements": 2
    }))
    .is_ok());
    // Every tool's argument schema is an object that refuses other properties.
    let schema = serde_json::to_value(schemars::schema_for!(EditBlockArgs)).expect("schema");
    assert_eq!(schema["additionalProperties"], json!(false));
}

/// The sizes the bench uses: a 10 MiB file read whole, a 1 MiB file edited in one place.
#[test]
fn a_ten_mib_read_and_a_one_mib_edit_work() {
    let t = Tree::new();
    let line = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n"; // 64 bytes
    let ten = line.repeat(10 * 1024 * 1024 / 64);
    std::fs::write(t.p("ten.txt"), &ten).expect("write");
    let a = read(&t, "ten.txt").expect("read 10 MiB");
    assert_eq!(a.size, 10 * 1024 * 1024);
    assert_eq!(a.total_lines, Some(10 * 1024 * 1024 / 64));
    assert_eq!(a.content.as_deref().map(str::len), Some(ten.len()));

    let mut one = line.repeat(1024 * 1024 / 64);
    one.replace_range(512 * 1024..512 * 1024 + 6, "MARKER");
    std::fs::write(t.p("one.txt"), &one).expect("write");
    let done = edit(&t, "one.txt", "MARKER", "marked").expect("edit 1 MiB");
    assert_eq!(done.replacements, 1);
    let after = std::fs::read_to_string(t.p("one.txt")).expect("read");
    assert_eq!(after.len(), one.len());
    assert_eq!(&after[512 * 1024..512 * 1024 + 6], "marked");
}
