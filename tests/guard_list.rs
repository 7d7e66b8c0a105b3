//! The tools' guard list is the list Collie names its state files by (SPEC §11; decision 0049):
//! a copy of any of them inside a workspace — the crew key, the VAPID key, `no-prompts.json`,
//! the walky's `instances.json` — is refused by name to every tool and the Files view, and every
//! file a running bridge leaves in its state folder is in that list.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use collie_actors::tools::workspace::STATE_FILE_NAMES;
use serde_json::{json, Value};
use support::{url_encode, wait_for, Opts, TestBridge};

/// What each copy holds: a search for it must find nothing.
const MARK: &str = "COPIED-STATE-9f3e";

/// The state files the hole was about, and the crew's certificate beside its key.
const COPIES: [&str; 5] = [
    "key.der",
    "cert.der",
    "vapid.p8",
    "no-prompts.json",
    "instances.json",
];

fn tool(b: &TestBridge, token: &str, name: &str, args: Value) -> (u16, Value) {
    b.post(&format!("/api/tools/{name}"), Some(token), &args)
}

/// A search under `dir` to its end: every result's text.
fn search(b: &TestBridge, token: &str, dir: &str, kind: &str, pattern: &str) -> String {
    let (status, first) = tool(
        b,
        token,
        "start_search",
        json!({"path": dir, "pattern": pattern, "searchType": kind, "includeHidden": true}),
    );
    assert_eq!(status, 200, "start_search: {first}");
    let id = first["sessionId"].as_str().expect("a search id").to_owned();
    let last = wait_for(Duration::from_secs(20), || {
        let (_, page) = tool(
            b,
            token,
            "get_more_search_results",
            json!({"sessionId": id, "offset": 0, "length": 100}),
        );
        (page["isComplete"] == true).then_some(page)
    })
    .expect("the search ends");
    last["results"].to_string()
}

#[test]
fn copies_of_collies_state_files_in_a_workspace_are_refused_by_name() {
    let b = TestBridge::start_with(Opts {
        log_to_file: true,
        config: Some("workspaces = [\"~\"]\n".to_owned()),
        ..Opts::default()
    });
    let proj = b.dir.path().join("home").join("proj");
    std::fs::create_dir(&proj).expect("set up the test");
    std::fs::write(proj.join("plain.txt"), format!("{MARK}\n")).expect("set up the test");
    for name in COPIES {
        std::fs::write(proj.join(name), format!("{MARK}\n")).expect("set up the test");
    }
    let reader = b.pair("reader", "read");
    let filer = b.pair("filer", "files");
    let dir = proj.display().to_string();

    for name in COPIES {
        let path = format!("{dir}/{name}");
        for token in [&reader, &filer] {
            let (status, body) = tool(&b, token, "read_file", json!({"path": path}));
            assert_eq!(status, 403, "read_file {name}: {body}");
            assert_eq!(body["error"], "path not allowed", "{name}: {body}");
            let (status, body) = tool(&b, token, "get_file_info", json!({"path": path}));
            assert_eq!(status, 403, "get_file_info {name}: {body}");
        }
        let view = format!("/api/files/local/read?path={}", url_encode(&path));
        let (status, body) = b.get(&view, Some(&filer));
        assert_eq!(status, 403, "Files view {name}: {body}");
        assert!(!body.to_string().contains(MARK), "{name}: {body}");
        let (status, body) = tool(
            &b,
            &filer,
            "write_file",
            json!({"path": path, "content": "x"}),
        );
        assert_eq!(status, 403, "write_file {name}: {body}");
    }
    let (status, listing) = tool(&b, &reader, "list_directory", json!({"path": dir}));
    assert_eq!(status, 200, "{listing}");
    let view = format!("/api/files/local/list?path={}", url_encode(&dir));
    let (status, viewed) = b.get(&view, Some(&filer));
    assert_eq!(status, 200, "{viewed}");
    for shown in [&listing, &viewed] {
        let text = shown.to_string();
        assert!(text.contains("plain.txt"), "{text}");
        for name in COPIES {
            assert!(!text.contains(name), "{name} listed: {text}");
        }
    }
    let found = search(&b, &reader, &dir, "content", MARK);
    assert!(found.contains("plain.txt"), "{found}");
    for name in COPIES {
        assert!(!found.contains(name), "{name} searched: {found}");
        let named = search(&b, &reader, &dir, "files", name);
        assert_eq!(named, "[]", "{name} found by name");
    }
}

/// Every file under `dir`, as paths relative to it.
fn files_under(dir: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read the state folder") {
        let entry = entry.expect("entry");
        let path = rel.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            files_under(&entry.path(), &path, out);
        } else {
            out.push(path);
        }
    }
}

#[test]
fn every_file_a_bridge_leaves_in_its_state_folder_is_guarded_by_name() {
    let b = TestBridge::start_with(Opts {
        with_tmux: true,
        log_to_file: true,
        env: vec![("COLLIE_CREW_PORT".to_owned(), "0".to_owned())],
        config: Some("workspaces = [\"~\"]\n".to_owned()),
    });
    // Make the bridge write what it writes on demand: a device, the push key, the crew identity,
    // a line in the sent log.
    let token = b.pair("phone", "full");
    let (status, body) = b.get("/api/push/key", Some(&token));
    assert_eq!(status, 200, "{body}");
    b.cli_ok(&["crew", "init"]);
    b.invite();
    let pane = b.first_tmux_pane(&token);
    let (status, body) = b.post(
        &format!("/api/panes/local/{pane}/input"),
        Some(&token),
        &json!({"text": "echo guarded-by-name", "keys": ["Enter"]}),
    );
    assert_eq!(status, 200, "{body}");

    let state = b.state();
    let wanted = ["vapid.p8", "key.der", "applied.json", "audit.log"];
    wait_for(Duration::from_secs(10), || {
        let mut all = Vec::new();
        files_under(&state, Path::new(""), &mut all);
        wanted
            .iter()
            .all(|w| all.iter().any(|p| p.file_name().is_some_and(|n| n == *w)))
            .then_some(())
    })
    .expect("the bridge wrote its files");

    let mut all = Vec::new();
    files_under(&state, Path::new(""), &mut all);
    let unguarded: Vec<&PathBuf> = all
        .iter()
        .filter(|p| {
            // sled's own files, the kept uploads (named by id) and the walky's daily logs lie in
            // folders the guard covers as Collie's state folder; their names say nothing.
            let first = p.components().next().map(|c| c.as_os_str().to_owned());
            let under = |d: &str| first.as_deref() == Some(std::ffi::OsStr::new(d));
            let exempt = under("db")
                || under("blobs")
                || (under("walky") && p.extension().is_some_and(|e| e == "jsonl"));
            let guarded = p
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| STATE_FILE_NAMES.contains(&n));
            !exempt && !guarded
        })
        .collect();
    assert!(
        unguarded.is_empty(),
        "files the bridge wrote that the tools' guard does not name: {unguarded:?}"
    );
}
