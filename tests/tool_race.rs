//! The file tools' workspace rule under a race (SPEC §11, §15; decision 0049): while a thread
//! swaps a folder inside the workspace with a symlink to a folder outside it — `renameat2`'s
//! `RENAME_EXCHANGE` in a tight loop, so the name is always one or the other — the phone keeps
//! reading, writing, editing, listing, searching and opening files through that name. Nothing of
//! the outside folder may reach an answer and nothing in it may change: the tools open every
//! path beneath a handle on the workspace root following no symlink, never by checking a path
//! and opening it again.

mod support;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use nix::fcntl::{renameat2, RenameFlags};
use serde_json::{json, Value};
use support::{url_encode, wait_for, Opts, TestBridge};

/// How many times each kind of call is made while the swap runs.
const READS: usize = 1_000;
const WRITES: usize = 300;
const EDITS: usize = 300;
const VIEWS: usize = 300;
const LISTS: usize = 100;
const SEARCHES: usize = 20;
/// The most swaps the swapping thread makes (it stops earlier when the calls are done).
const MAX_SWAPS: u64 = 50_000_000;

/// The text only the outside folder's files hold.
const OUTSIDE: &str = "OUTSIDE-SECRET";

/// Swaps `a` and `b` until `stop` (or [`MAX_SWAPS`]); answers how many swaps it made.
fn swapper(a: PathBuf, b: PathBuf, stop: Arc<AtomicBool>) -> JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut n = 0u64;
        while !stop.load(Ordering::Relaxed) && n < MAX_SWAPS {
            renameat2(None, &a, None, &b, RenameFlags::RENAME_EXCHANGE).expect("exchange");
            n += 1;
        }
        n
    })
}

/// The names in `dir`.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Every answer text the calls gave, to look for the outside text in.
#[derive(Default)]
struct Seen {
    /// How many calls answered 200.
    ok: usize,
    /// Answers holding something of the outside folder.
    leaked: Vec<String>,
}

impl Seen {
    fn look(&mut self, what: &str, status: u16, body: &Value) {
        if status == 200 {
            self.ok += 1;
        }
        let text = body.to_string();
        if text.contains(OUTSIDE) || text.contains("only-outside") {
            self.leaked.push(format!("{what}: {text}"));
        }
    }
}

/// A bridge whose one workspace is the home folder, applied from `config.toml`, and the layout:
/// `~/link` a real folder (`f.txt`, `e.txt`), `~/spare` a symlink to `<test>/outside` (the same
/// names holding [`OUTSIDE`], and `only-outside.txt`).
fn setup() -> (TestBridge, PathBuf, PathBuf) {
    let b = TestBridge::start_with(Opts {
        log_to_file: true,
        config: Some("workspaces = [\"~\"]\n".to_owned()),
        ..Opts::default()
    });
    let home = b.dir.path().join("home");
    let outside = b.dir.path().join("outside");
    std::fs::create_dir(&outside).expect("set up the test");
    for (name, text) in [
        ("f.txt", format!("{OUTSIDE}\n")),
        ("e.txt", format!("one two {OUTSIDE}\n")),
        ("only-outside.txt", format!("{OUTSIDE}\n")),
    ] {
        std::fs::write(outside.join(name), text).expect("set up the test");
    }
    let inside = home.join("link");
    std::fs::create_dir(&inside).expect("set up the test");
    std::fs::write(inside.join("f.txt"), "inside\n").expect("set up the test");
    std::fs::write(inside.join("e.txt"), "one two\n").expect("set up the test");
    std::os::unix::fs::symlink(&outside, home.join("spare")).expect("set up the test");
    (b, home, outside)
}

/// Runs a content and a name search under `dir` to the end; every page it answered.
fn search(b: &TestBridge, token: &str, dir: &str, seen: &mut Seen) {
    for (kind, pattern) in [("content", OUTSIDE), ("files", "only-outside")] {
        let (status, first) = b.post(
            "/api/tools/start_search",
            Some(token),
            &json!({"path": dir, "pattern": pattern, "searchType": kind}),
        );
        seen.look("start_search", status, &first);
        let Some(id) = first["sessionId"].as_str() else {
            continue;
        };
        let last = wait_for(Duration::from_secs(20), || {
            let (s, page) = b.post(
                "/api/tools/get_more_search_results",
                Some(token),
                &json!({"sessionId": id, "offset": 0, "length": 100}),
            );
            (s != 200 || page["isComplete"] == true).then_some((s, page))
        })
        .expect("the search ends");
        seen.look("get_more_search_results", last.0, &last.1);
    }
}

#[test]
fn a_folder_swapped_for_a_link_out_never_leads_a_tool_out() {
    let (b, home, outside) = setup();
    let token = b.pair("phone", "files");
    let outside_before: Vec<(String, Vec<u8>)> = names(&outside)
        .into_iter()
        .map(|n| {
            let bytes = std::fs::read(outside.join(&n)).expect("read");
            (n, bytes)
        })
        .collect();
    let link = home.join("link");
    let dir = link.display().to_string();
    let file = format!("{dir}/f.txt");

    let stop = Arc::new(AtomicBool::new(false));
    let swaps = swapper(link.clone(), home.join("spare"), stop.clone());
    let mut seen = Seen::default();
    let mut inside_reads = 0usize;
    for _ in 0..READS {
        let (status, body) = b.post("/api/tools/read_file", Some(&token), &json!({"path": file}));
        seen.look("read_file", status, &body);
        if body["content"] == "inside\n" {
            inside_reads += 1;
        }
    }
    for i in 0..WRITES {
        let (status, body) = b.post(
            "/api/tools/write_file",
            Some(&token),
            &json!({"path": format!("{dir}/w.txt"), "content": format!("write {i}\n")}),
        );
        seen.look("write_file", status, &body);
    }
    for i in 0..EDITS {
        let (old, new) = if i % 2 == 0 {
            ("two", "TWO")
        } else {
            ("TWO", "two")
        };
        let (status, body) = b.post(
            "/api/tools/edit_block",
            Some(&token),
            &json!({"file_path": format!("{dir}/e.txt"), "old_string": old, "new_string": new}),
        );
        seen.look("edit_block", status, &body);
    }
    for _ in 0..VIEWS {
        let path = format!("/api/files/local/read?path={}", url_encode(&file));
        let (status, body) = b.get(&path, Some(&token));
        seen.look("files view read", status, &body);
    }
    for _ in 0..LISTS {
        let path = format!("/api/files/local/list?path={}", url_encode(&dir));
        let (status, body) = b.get(&path, Some(&token));
        seen.look("files view list", status, &body);
        let (status, body) = b.post(
            "/api/tools/list_directory",
            Some(&token),
            &json!({"path": dir, "depth": 1}),
        );
        seen.look("list_directory", status, &body);
        let (status, body) = b.post(
            "/api/tools/get_file_info",
            Some(&token),
            &json!({"path": format!("{dir}/only-outside.txt")}),
        );
        seen.look("get_file_info", status, &body);
    }
    for _ in 0..SEARCHES {
        search(&b, &token, &dir, &mut seen);
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swaps.join().expect("the swapping thread");

    assert!(swaps > 1_000, "the swap hardly ran: {swaps} swaps");
    assert!(
        inside_reads > 0,
        "no read ever got through, so the test showed nothing"
    );
    assert!(
        seen.leaked.is_empty(),
        "{} of {} answers held the outside folder's files, e.g. {:?}",
        seen.leaked.len(),
        seen.ok,
        &seen.leaked[..seen.leaked.len().min(3)]
    );
    let outside_after: Vec<(String, Vec<u8>)> = names(&outside)
        .into_iter()
        .map(|n| {
            let bytes = std::fs::read(outside.join(&n)).expect("read");
            (n, bytes)
        })
        .collect();
    assert_eq!(
        outside_after
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>(),
        outside_before
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>(),
        "a tool made a file outside the workspace (a write, or a temp file left behind)"
    );
    assert!(
        outside_after == outside_before,
        "a tool changed a file outside the workspace"
    );
}

/// Opens a tmux window whose shell starts in `dir`; the bridge's id for its pane.
fn pane_in(b: &TestBridge, token: &str, dir: &Path) -> String {
    let first = b.first_tmux_pane(token);
    let prefix = first.split('-').next().expect("t<i>").to_owned();
    let tmux = b.tmux.as_ref().expect("tmux");
    let out = tmux
        .cmd()
        .args(["new-window", "-d", "-t", "main", "-c"])
        .arg(dir)
        .args(["-P", "-F", "#{pane_id}"])
        .output()
        .expect("tmux new-window");
    assert!(out.status.success(), "{out:?}");
    let n = String::from_utf8_lossy(&out.stdout)
        .trim()
        .trim_start_matches('%')
        .to_owned();
    let id = format!("{prefix}-{n}");
    wait_for(Duration::from_secs(10), || {
        let (s, v) = b.get("/api/panes", Some(token));
        (s == 200).then_some(())?;
        v["panes"]
            .as_array()?
            .iter()
            .any(|p| p["pane"] == id.as_str())
            .then_some(())
    })
    .expect("the bridge lists the new window");
    id
}

/// How many uploads are made while the swap runs.
const UPLOADS: usize = 150;

#[test]
fn an_upload_into_a_folder_swapped_for_a_link_out_never_lands_outside() {
    let b = TestBridge::start_with(Opts {
        with_tmux: true,
        log_to_file: true,
        config: Some("workspaces = [\"~\"]\n".to_owned()),
        ..Opts::default()
    });
    let home = b.dir.path().join("home");
    let outside = b.dir.path().join("outside");
    std::fs::create_dir(&outside).expect("set up the test");
    let link = home.join("link");
    std::fs::create_dir(&link).expect("set up the test");
    std::os::unix::fs::symlink(&outside, home.join("spare")).expect("set up the test");
    let token = b.pair("phone", "files");
    // The pane's shell sits in the real folder, whichever of the two names it has at a moment.
    let pane = pane_in(&b, &token, &link);

    let stop = Arc::new(AtomicBool::new(false));
    let swaps = swapper(link.clone(), home.join("spare"), stop.clone());
    let mut placed = 0usize;
    for i in 0..UPLOADS {
        let (status, _) = b.upload(&token, "local", &pane, &format!("u{i}.txt"), b"upload");
        if status == 200 {
            placed += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swaps.join().expect("the swapping thread");
    assert!(swaps > 1_000, "the swap hardly ran: {swaps} swaps");
    assert!(
        placed > 0,
        "no upload got through, so the test showed nothing"
    );
    assert!(
        names(&outside).is_empty(),
        "uploads landed outside the workspace: {:?}",
        names(&outside)
    );
}
