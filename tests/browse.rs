//! Black-box tests of choosing a folder for a new pane (SPEC §11 "File view and browse", §12
//! "Starters"; decision 0040): `GET /api/browse/{m}` and `POST /api/panes {folder}` against real
//! `collie bridge` processes whose home folder is the test's temp dir — so Collie's own state and
//! config folders lie *inside* home, as they do on a real machine — a real crew over QUIC on
//! loopback, and real hosted panes whose shell prints its own folder.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use support::{wait_for, TestBridge};

/// How long a test waits for something a bridge or a shell does on its own (a member coming
/// online, a shell printing `pwd`).
const WAIT: Duration = Duration::from_secs(15);

/// A GitHub-token-shaped string (the masker keeps `ghp_` and one more character).
const TOKEN: &str = "ghp_Abcdefghijklmnopqrstuvwxyz0123456789";

/// A bridge whose `HOME` is its temp dir ([`furnish`]ed), so its `state` and `config` folders are under home;
/// `config` is applied before it starts; `crew` gives it a crew port chosen by the OS.
fn bridge(config: Option<&str>, crew: bool) -> TestBridge {
    let dir = tempfile::Builder::new()
        .prefix("collie-test-")
        .tempdir()
        .expect("tempdir");
    for d in ["state", "config", "tmuxdefault", "home"] {
        std::fs::create_dir_all(dir.path().join(d)).expect("mkdir");
    }
    // Before `apply`, which resolves the workspaces.
    furnish(dir.path());
    let mut extra_env = vec![("HOME".to_owned(), dir.path().display().to_string())];
    if crew {
        extra_env.push(("COLLIE_CREW_PORT".to_owned(), "0".to_owned()));
    }
    let mut b = TestBridge {
        dir,
        child: None,
        port: 0,
        tmux: None,
        extra_env,
        log_to_file: false,
    };
    if let Some(body) = config {
        b.configure(body);
    }
    b.launch();
    b
}

/// The bridge's home folder, canonical (what the bridge answers paths as).
fn home(b: &TestBridge) -> PathBuf {
    std::fs::canonicalize(b.dir.path()).expect("home")
}

/// Folders, a file, dot folders, links in and out, and a folder named like a secret.
fn furnish(home: &Path) {
    for d in [
        "alpha",
        "beta/inner",
        ".hidden/inside",
        ".git/objects",
        "ro",
        "alpha/.git",
    ] {
        std::fs::create_dir_all(home.join(d)).expect("set up the test");
    }
    std::fs::create_dir_all(home.join(format!("key-{TOKEN}"))).expect("set up the test");
    std::fs::write(home.join("file.txt"), "x\n").expect("set up the test");
    std::os::unix::fs::symlink("/usr", home.join("out")).expect("set up the test");
    std::os::unix::fs::symlink(home.join("alpha"), home.join("inlink")).expect("set up the test");
    std::os::unix::fs::symlink(home.join("file.txt"), home.join("filelink"))
        .expect("set up the test");
    std::os::unix::fs::symlink(home.join("state"), home.join("statelink"))
        .expect("set up the test");
}

fn browse(b: &TestBridge, token: &str, machine: &str, path: Option<&str>) -> (u16, Value) {
    let q = path.map_or(String::new(), |p| {
        format!("?path={}", support::url_encode(p))
    });
    b.get(&format!("/api/browse/{machine}{q}"), Some(token))
}

fn folders(answer: &Value) -> Vec<String> {
    answer["folders"]
        .as_array()
        .unwrap_or_else(|| panic!("no folders: {answer}"))
        .iter()
        .map(|n| n.as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The hosted panes `machine` has, as `token`'s `GET /api/panes` lists them.
fn hosted_count(b: &TestBridge, token: &str, machine: &str) -> usize {
    let (status, list) = b.get("/api/panes", Some(token));
    assert_eq!(status, 200, "{list}");
    list["panes"]
        .as_array()
        .expect("panes")
        .iter()
        .filter(|p| p["backend"] == "pty" && p["machine"] == machine)
        .count()
}

/// Types `echo "@@$(pwd)"` into the pane and waits until the snapshot shows `@@` and `want`.
fn assert_runs_in(b: &TestBridge, token: &str, machine: &str, pane: &str, want: &Path) {
    let input = format!("/api/panes/{machine}/{pane}/input");
    let (status, body) = b.post(
        &input,
        Some(token),
        &json!({"text": "echo \"@@$(pwd)\"", "keys": ["Enter"]}),
    );
    assert_eq!(status, 200, "{body}");
    // The marker tells the output from the typed line; a prompt drawn late may precede it.
    let want = format!("@@{}", want.display());
    // The shell answers when it gets to it: poll its screen.
    let seen = wait_for(WAIT, || {
        let (s, snap) = b.get(&format!("/api/panes/{machine}/{pane}"), Some(token));
        (s == 200).then_some(())?;
        snap["lines"]
            .as_array()?
            .iter()
            .any(|l| l.as_str().is_some_and(|l| l.trim_end().ends_with(&want)))
            .then_some(())
    });
    if seen.is_none() {
        let (_, snap) = b.get(&format!("/api/panes/{machine}/{pane}"), Some(token));
        panic!("the pane never printed {want}: {snap}");
    }
}

fn audit_of(b: &TestBridge, event: &str) -> Vec<Value> {
    b.audit_lines()
        .into_iter()
        .filter(|l| l["event"] == event)
        .collect()
}

#[test]
fn browse_lists_folder_names_under_home_only() {
    let b = bridge(None, false);
    let h = home(&b);
    let files = b.pair("phone", "files");

    // Home: folders only, no dot folders, no `.git`, not Collie's state or config folder, no link
    // out of home (a link to a folder inside is listed), names masked.
    let (status, answer) = browse(&b, &files, "local", None);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["machine"], "testbox");
    assert_eq!(answer["path"], h.display().to_string());
    assert_eq!(answer["truncated"], false);
    let masked = format!("key-{}", &TOKEN[..5]);
    let names = folders(&answer);
    assert_eq!(
        names
            .iter()
            .map(String::as_str)
            .filter(|n| !n.starts_with("key-"))
            .collect::<Vec<_>>(),
        ["alpha", "beta", "home", "inlink", "ro", "tmuxdefault"],
        "{answer}"
    );
    let secret = names
        .iter()
        .find(|n| n.starts_with("key-"))
        .expect("listed");
    assert!(
        secret.starts_with(&masked) && !secret.contains(TOKEN),
        "{secret}"
    );

    // A folder by `~/…`, by absolute path, and a dot folder when the path names it.
    let (status, answer) = browse(&b, &files, "local", Some("~/beta"));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(folders(&answer), ["inner"]);
    let abs = h.join("beta").display().to_string();
    let (status, answer) = browse(&b, &files, "local", Some(&abs));
    assert_eq!((status, folders(&answer)), (200, vec!["inner".to_owned()]));
    let (status, answer) = browse(&b, &files, "local", Some("~/.hidden"));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(folders(&answer), ["inside"]);
    // `alpha/.git` is a dot folder: not listed inside `alpha`.
    let (status, answer) = browse(&b, &files, "local", Some("~/alpha"));
    assert_eq!((status, folders(&answer)), (200, Vec::<String>::new()));

    // Refusals, each with the fixed string.
    let long = format!("~/{}", "a".repeat(4100));
    let cases: [(&str, u16, &str); 11] = [
        ("~/..", 403, "path outside the workspace"),
        ("~/beta/../../..", 403, "path outside the workspace"),
        ("/etc", 403, "path outside the workspace"),
        ("~/out", 403, "path outside the workspace"),
        ("~/.git", 403, "path not allowed"),
        ("~/alpha/.git", 403, "path not allowed"),
        ("~/state", 403, "path not allowed"),
        ("~/statelink", 403, "path not allowed"),
        ("~/config", 403, "path not allowed"),
        ("~/missing", 404, "no such file"),
        ("~/file.txt", 400, "path: a file, not a folder"),
    ];
    for (path, want, error) in cases {
        let (status, answer) = browse(&b, &files, "local", Some(path));
        assert_eq!(status, want, "{path}: {answer}");
        assert_eq!(answer["error"], error, "{path}");
    }
    for bad in ["~/a\0b", long.as_str()] {
        let (status, answer) = browse(&b, &files, "local", Some(bad));
        assert_eq!(status, 400, "{answer}");
        assert!(
            answer["error"].as_str().unwrap_or("").starts_with("path: "),
            "{answer}"
        );
    }

    // Tier `files`: a `read` device is refused before anything is read.
    let read = b.pair("reader", "read");
    let (status, answer) = browse(&b, &read, "local", None);
    assert_eq!(
        (status, answer["error"].as_str()),
        (403, Some("insufficient tier"))
    );
    let (status, _) = browse(&b, &files, "nowhere", None);
    assert_eq!(status, 404);
}

#[test]
fn browse_lists_at_most_200_folders_sorted() {
    let b = bridge(None, false);
    let h = home(&b);
    for i in 0..250 {
        std::fs::create_dir_all(h.join(format!("many/d{i:03}"))).expect("set up the test");
        std::fs::write(h.join(format!("many/f{i:03}")), "").expect("set up the test");
    }
    for i in 0..200 {
        std::fs::create_dir_all(h.join(format!("exact/d{i:03}"))).expect("set up the test");
    }
    let files = b.pair("phone", "files");
    let (status, answer) = browse(&b, &files, "local", Some("~/many"));
    assert_eq!(status, 200, "{answer}");
    let names = folders(&answer);
    let want: Vec<String> = (0..200).map(|i| format!("d{i:03}")).collect();
    assert_eq!(names, want, "the first 200 names, sorted");
    assert_eq!(answer["truncated"], true);
    let (status, answer) = browse(&b, &files, "local", Some("~/exact"));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(folders(&answer).len(), 200);
    assert_eq!(answer["truncated"], false);
}

#[test]
fn a_pane_opens_in_a_workspace_folder_and_nowhere_else() {
    let b = bridge(
        Some("workspaces = [\"~/alpha\", { path = \"~/ro\", access = \"read\" }]\n"),
        false,
    );
    let h = home(&b);
    std::os::unix::fs::symlink(h.join("beta"), h.join("alpha/to-beta")).expect("set up the test");
    let full = b.pair("phone", "full");

    // In a workspace folder, and in a read-only one: the shell starts there.
    for (folder, want) in [
        ("~/alpha", h.join("alpha")),
        (&*h.join("ro").display().to_string(), h.join("ro")),
    ] {
        let (status, pane) = b.post(
            "/api/panes",
            Some(&full),
            &json!({"machine": "local", "name": "here", "folder": folder}),
        );
        assert_eq!(status, 200, "{folder}: {pane}");
        let id = pane["pane"].as_str().expect("pane id").to_owned();
        assert_runs_in(&b, &full, "local", &id, &want);
    }
    let created = audit_of(&b, "pane.create");
    assert_eq!(created.len(), 2, "{created:?}");
    assert_eq!(
        created[0]["detail"]["folder"],
        h.join("alpha").display().to_string()
    );
    assert_eq!(
        created[1]["detail"]["folder"],
        h.join("ro").display().to_string()
    );

    // Refused, and nothing opened: outside the workspaces (home itself is not one here), a
    // link out of them, a file, a missing folder, Collie's state, `.git`, a relative path.
    let before = hosted_count(&b, &full, "testbox");
    let cases: [(&str, u16, &str); 8] = [
        ("~/beta", 403, "path outside the workspace"),
        ("~", 403, "path outside the workspace"),
        ("~/alpha/to-beta", 403, "path outside the workspace"),
        ("/etc", 403, "path outside the workspace"),
        ("~/alpha/missing", 404, "no such file"),
        ("~/alpha/.git", 403, "path not allowed"),
        ("~/alpha/../state", 403, "path outside the workspace"),
        ("alpha", 400, "folder: an absolute path or ~/…"),
    ];
    for (folder, want, error) in cases {
        let (status, answer) = b.post(
            "/api/panes",
            Some(&full),
            &json!({"machine": "local", "folder": folder}),
        );
        assert_eq!(status, want, "{folder}: {answer}");
        assert_eq!(answer["error"], error, "{folder}");
    }
    std::fs::write(h.join("alpha/notes.txt"), "x\n").expect("set up the test");
    let (status, answer) = b.post(
        "/api/panes",
        Some(&full),
        &json!({"machine": "local", "folder": "~/alpha/notes.txt"}),
    );
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("folder: a file, not a folder"))
    );
    assert_eq!(
        hosted_count(&b, &full, "testbox"),
        before,
        "a refused create opened a pane"
    );
    assert_eq!(audit_of(&b, "pane.create").len(), 2);
}

#[test]
fn a_starter_starts_in_the_chosen_folder() {
    // A starter that prints where it runs, then waits (so the pane stays to be read).
    let b = bridge(
        Some(
            "[[starters]]\nname = \"Where\"\nexec = \"/bin/sh\"\nargs = [\"-c\", \"echo \\\"@@$(pwd)\\\"; exec sleep 60\"]\n",
        ),
        false,
    );
    let h = home(&b);
    let full = b.pair("phone", "full");
    let (status, pane) = b.post(
        "/api/panes",
        Some(&full),
        &json!({"machine": "local", "starter": "Where", "folder": "~/beta/inner"}),
    );
    assert_eq!(status, 200, "{pane}");
    let id = pane["pane"].as_str().expect("id").to_owned();
    let want = format!("@@{}", h.join("beta/inner").display());
    // The starter prints when it gets to run: poll its screen.
    let seen = wait_for(WAIT, || {
        let (s, snap) = b.get(&format!("/api/panes/local/{id}"), Some(&full));
        (s == 200).then_some(())?;
        snap["lines"]
            .as_array()?
            .iter()
            .any(|l| l.as_str().map(str::trim_end) == Some(want.as_str()))
            .then_some(())
    });
    assert!(seen.is_some(), "the starter never printed {want}");
    let created = audit_of(&b, "pane.create");
    assert_eq!(created.len(), 1, "{created:?}");
    assert_eq!(created[0]["detail"]["starter"], "Where");
    assert_eq!(
        created[0]["detail"]["folder"],
        h.join("beta/inner").display().to_string()
    );
}

#[test]
fn a_state_folder_inside_a_workspace_is_never_a_pane_folder() {
    // Home is the workspace (no configuration) and holds Collie's state and config folders.
    let b = bridge(None, false);
    let h = home(&b);
    let full = b.pair("phone", "full");
    let before = hosted_count(&b, &full, "testbox");
    for folder in ["~/state", "~/config", "~/statelink", "~/.git"] {
        let (status, answer) = b.post(
            "/api/panes",
            Some(&full),
            &json!({"machine": "local", "folder": folder}),
        );
        assert_eq!(
            (status, answer["error"].as_str()),
            (403, Some("path not allowed")),
            "{folder}"
        );
    }
    assert_eq!(hosted_count(&b, &full, "testbox"), before);
    // Home itself is fine.
    let (status, pane) = b.post(
        "/api/panes",
        Some(&full),
        &json!({"machine": "local", "folder": "~"}),
    );
    assert_eq!(status, 200, "{pane}");
    assert_runs_in(&b, &full, "local", pane["pane"].as_str().expect("id"), &h);
}

/// A lead and a member `web-1` (whose home is its own temp dir, with `member_config`), once the
/// lead lists the member online.
fn crew(member_config: Option<&str>) -> (TestBridge, TestBridge) {
    let lead = bridge(None, true);
    let mut member = bridge(None, true);
    lead.cli_ok(&["crew", "init"]);
    member.cli_ok(&["crew", "join", &lead.invite(), "--name", "web-1"]);
    if let Some(config) = member_config {
        // The configuration is read at start: restart the member with it.
        member.stop();
        member.configure(config);
        member.launch();
    }
    let online = wait_for(WAIT, || {
        let status = support::json_of(&lead.cli_ok(&["crew", "status", "--json"]));
        status["members"]
            .as_array()?
            .iter()
            .any(|m| m["name"] == "web-1" && m["online"] == true)
            .then_some(())
    });
    assert!(online.is_some(), "web-1 never came online");
    (lead, member)
}

#[test]
fn through_the_lead_the_members_own_home_and_workspaces_decide() {
    let (lead, member) = crew(Some("workspaces = [\"~/alpha\"]\n"));
    let mh = home(&member);
    let files = lead.pair("phone", "files");
    let full = lead.pair("boss", "full");

    // Browsing the member's home: its folders, its state folder left out, names masked again.
    let (status, answer) = browse(&lead, &files, "web-1", None);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["machine"], "web-1");
    assert_eq!(answer["path"], mh.display().to_string());
    let names = folders(&answer);
    assert!(
        names.contains(&"alpha".to_owned()) && names.contains(&"beta".to_owned()),
        "{answer}"
    );
    assert!(
        !names
            .iter()
            .any(|n| n == "state" || n == "config" || n == "out"),
        "{answer}"
    );
    assert!(!names.iter().any(|n| n.contains(TOKEN)), "{answer}");
    // The member's rules, in the lead's words.
    let (status, answer) = browse(&lead, &files, "web-1", Some("~/.."));
    assert_eq!(
        (status, answer["error"].as_str()),
        (403, Some("path outside the workspace"))
    );
    let (status, answer) = browse(&lead, &files, "web-1", Some("~/state"));
    assert_eq!(
        (status, answer["error"].as_str()),
        (403, Some("path not allowed"))
    );
    let (status, answer) = browse(&lead, &files, "web-1", Some("~/nope"));
    assert_eq!(
        (status, answer["error"].as_str()),
        (404, Some("no such file"))
    );
    let read = lead.pair("reader", "read");
    let (status, _) = browse(&lead, &read, "web-1", None);
    assert_eq!(status, 403);

    // A pane in the member's workspace folder runs there (a folder the lead does not have).
    std::fs::create_dir(mh.join("alpha/member-only")).expect("set up the test");
    assert!(!home(&lead).join("alpha/member-only").exists());
    let (status, pane) = lead.post(
        "/api/panes",
        Some(&full),
        &json!({"machine": "web-1", "folder": "~/alpha/member-only"}),
    );
    assert_eq!(status, 200, "{pane}");
    assert_eq!(pane["machine"], "web-1");
    let id = pane["pane"].as_str().expect("id").to_owned();
    assert_runs_in(&lead, &full, "web-1", &id, &mh.join("alpha/member-only"));
    let on_member = audit_of(&member, "pane.create");
    assert_eq!(on_member.len(), 1, "{on_member:?}");
    assert_eq!(
        on_member[0]["detail"]["folder"],
        mh.join("alpha/member-only").display().to_string()
    );
    let on_lead = audit_of(&lead, "pane.create");
    assert_eq!(on_lead.len(), 1, "{on_lead:?}");
    assert_eq!(on_lead[0]["detail"]["folder"], "~/alpha/member-only");
    assert_eq!(on_lead[0]["request_id"], on_member[0]["request_id"]);

    // Outside the member's workspaces (though inside its home), a link out, a file: refused by
    // the member, nothing opened on it, nothing audited as created.
    std::os::unix::fs::symlink(mh.join("beta"), mh.join("alpha/to-beta")).expect("set up the test");
    std::fs::write(mh.join("alpha/notes.txt"), "x\n").expect("set up the test");
    let before = hosted_count(&lead, &full, "web-1");
    for (folder, want, error) in [
        ("~/beta", 403, "path outside the workspace"),
        ("~/alpha/to-beta", 403, "path outside the workspace"),
        ("~/alpha/notes.txt", 400, "folder: a file, not a folder"),
        ("~/alpha/missing", 404, "no such file"),
        ("alpha", 400, "folder: an absolute path or ~/…"),
    ] {
        let (status, answer) = lead.post(
            "/api/panes",
            Some(&full),
            &json!({"machine": "web-1", "folder": folder}),
        );
        assert_eq!(status, want, "{folder}: {answer}");
        assert_eq!(answer["error"], error, "{folder}");
    }
    assert_eq!(hosted_count(&lead, &full, "web-1"), before);
    assert_eq!(audit_of(&member, "pane.create").len(), 1);
    assert_eq!(audit_of(&lead, "pane.create").len(), 1);
}

#[test]
fn a_member_without_crew_tools_is_not_browsed_but_opens_panes_in_folders() {
    let (lead, member) = crew(Some("[crew]\ntools = false\n"));
    let files = lead.pair("phone", "files");
    let full = lead.pair("boss", "full");
    let (status, answer) = browse(&lead, &files, "web-1", None);
    assert_eq!(
        (status, answer["error"].as_str()),
        (501, Some("capability missing"))
    );
    // Opening a pane in a folder is not file access: its own capability, still declared.
    let (status, pane) = lead.post(
        "/api/panes",
        Some(&full),
        &json!({"machine": "web-1", "folder": "~/beta"}),
    );
    assert_eq!(status, 200, "{pane}");
    let id = pane["pane"].as_str().expect("id").to_owned();
    assert_runs_in(&lead, &full, "web-1", &id, &home(&member).join("beta"));
}
