//! Black-box tests of the applied configuration (SPEC §12, seed 001) against real `collie`
//! processes: `collie apply` resolves, shows the difference once, confirms and replaces
//! `<state>/applied.json` whole; `collie bridge` refuses to start while anything differs; `collie
//! show` changes nothing; the applied workspaces bound the file tools.

mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use support::{wait_for, Opts, TestBridge};

/// A bridge that ran once on the defaults and is stopped: its dirs are ready for a configuration.
fn stopped_bridge() -> TestBridge {
    let mut b = TestBridge::start_with(Opts::default());
    b.stop();
    b
}

fn home(b: &TestBridge) -> PathBuf {
    b.dir.path().join("home")
}

fn write_config(b: &TestBridge, body: &str) {
    std::fs::write(
        b.config_dir().join("config.toml"),
        format!("schema_version = 1\n{body}"),
    )
    .expect("write config.toml");
}

/// An executable of the test's own: a copy of `sh` at `<home>/bin/<name>`.
fn agent_binary(b: &TestBridge, name: &str) -> PathBuf {
    let dir = home(b).join("bin");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let path = dir.join(name);
    std::fs::copy("/bin/sh", &path).expect("copy sh");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

/// Runs `collie bridge` and expects it to refuse: its stderr.
fn start_refused(b: &TestBridge) -> String {
    let (status, err) = b.start_refused(&[]);
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("collie apply"), "names the fix: {err}");
    err
}

fn applied_json(b: &TestBridge) -> PathBuf {
    b.state().join("applied.json")
}

fn apply_yes(b: &TestBridge) -> String {
    let out = b.cli(&["apply", "--yes"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

#[test]
fn unapplied_start_is_refused_then_apply_pins_and_the_bridge_starts() {
    let mut b = stopped_bridge();
    let agent = agent_binary(&b, "claude");
    std::fs::create_dir_all(home(&b).join("code")).expect("mkdir");
    write_config(
        &b,
        &format!(
            "workspaces = [\"~/code\"]\n[[starters]]\nname = \"Claude\"\nexec = \"{}\"\nmodel = \"sonnet\"\nno_prompts = true\n",
            agent.display()
        ),
    );
    let err = start_refused(&b);
    assert!(err.contains("has not been applied"), "{err}");

    // Without a terminal and without --yes nothing is applied.
    let out = b.cli(&["apply"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--yes"));
    assert!(!applied_json(&b).exists());

    let shown = apply_yes(&b);
    assert!(shown.contains("+ starter Claude"), "{shown}");
    assert!(shown.contains("[No prompts]"), "{shown}");
    let meta = std::fs::metadata(applied_json(&b)).expect("applied.json");
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let snapshot: Value =
        serde_json::from_slice(&std::fs::read(applied_json(&b)).expect("read")).expect("json");
    let starter = &snapshot["resolved"]["starters"][0];
    let sha = hex::encode(Sha256::digest(std::fs::read(&agent).expect("agent")));
    assert_eq!(starter["sha256"], json!(sha));
    assert_eq!(
        starter["exec"],
        json!(std::fs::canonicalize(&agent)
            .expect("real")
            .display()
            .to_string())
    );
    // The option fields' flags come from the bridge's table.
    assert_eq!(
        starter["args"],
        json!(["--model", "sonnet", "--dangerously-skip-permissions"])
    );
    assert_eq!(snapshot["confirmed"], "yes");

    // Applying again changes nothing and writes nothing.
    let before = std::fs::read(applied_json(&b)).expect("read");
    assert!(apply_yes(&b).contains("nothing to apply"));
    assert_eq!(std::fs::read(applied_json(&b)).expect("read"), before);

    b.launch();
    let line = wait_for(Duration::from_secs(10), || {
        b.audit_lines()
            .into_iter()
            .find(|l| l["event"] == "config.applied")
    })
    .expect("config.applied is in the log once the bridge runs");
    assert_eq!(line["detail"]["confirmed"], "yes");
    assert_eq!(line["detail"]["starters"], 1);
    assert_eq!(
        b.audit_lines()
            .iter()
            .filter(|l| l["event"] == "config.applied")
            .count(),
        1,
        "the apply that changed nothing is not audited"
    );

    // Applied while the bridge runs: audited by the bridge at once, used after a restart.
    write_config(&b, "workspaces = [\"~/code\", \"~\"]\n");
    apply_yes(&b);
    let lines = b.audit_lines();
    assert_eq!(
        lines
            .iter()
            .filter(|l| l["event"] == "config.applied")
            .count(),
        2
    );
    b.stop();
    b.launch();
}

#[test]
fn an_executable_edited_replaced_by_a_link_or_deleted_stops_the_start() {
    let mut b = stopped_bridge();
    let agent = agent_binary(&b, "codex");
    let other = agent_binary(&b, "other");
    write_config(
        &b,
        &format!(
            "[[starters]]\nname = \"Codex\"\nexec = \"{}\"\n",
            agent.display()
        ),
    );
    apply_yes(&b);
    b.launch();
    b.stop();

    // Edited in place: same path, another hash.
    let original = std::fs::read(&agent).expect("read");
    let mut edited = original.clone();
    edited.extend_from_slice(b"\n# changed\n");
    std::fs::write(&agent, &edited).expect("edit");
    let err = start_refused(&b);
    assert!(err.contains("starter Codex"), "{err}");
    assert!(err.contains("the file changed"), "{err}");

    // Replaced by a symlink to another executable: the real path moved.
    std::fs::remove_file(&agent).expect("rm");
    std::os::unix::fs::symlink(&other, &agent).expect("symlink");
    let err = start_refused(&b);
    assert!(err.contains(&other.display().to_string()), "{err}");

    // Deleted: it no longer resolves.
    std::fs::remove_file(&agent).expect("rm");
    let err = start_refused(&b);
    assert!(err.contains("no longer resolves"), "{err}");
    assert!(err.contains("Codex"), "{err}");
    // `apply` refuses too, and keeps the old snapshot.
    let before = std::fs::read(applied_json(&b)).expect("read");
    let out = b.cli(&["apply", "--yes"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(std::fs::read(applied_json(&b)).expect("read"), before);

    // Put back as it was: the applied snapshot matches again.
    std::fs::write(&agent, &original).expect("restore");
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    b.launch();
}

#[test]
fn a_changed_or_removed_config_file_stops_the_start_until_applied() {
    let mut b = stopped_bridge();
    write_config(&b, "[phone]\nrun = false\n");
    apply_yes(&b);
    // One byte more, even a comment, is a different file.
    write_config(&b, "[phone]\nrun = false\n# note\n");
    let err = start_refused(&b);
    assert!(err.contains("config.toml sha256"), "{err}");
    let doctor = String::from_utf8_lossy(&b.cli(&["doctor"]).stdout).into_owned();
    assert!(
        doctor.contains("FAIL  the configuration is not the applied one"),
        "{doctor}"
    );
    apply_yes(&b);
    b.launch();
    b.stop();
    // Removed after apply: the defaults are a change too, until applied.
    std::fs::remove_file(b.config_dir().join("config.toml")).expect("rm");
    let err = start_refused(&b);
    assert!(err.contains("- config.toml"), "{err}");
    apply_yes(&b);
    b.launch();
}

#[test]
fn unknown_and_renamed_keys_are_refused_by_name_and_nothing_is_applied() {
    let b = stopped_bridge();
    for (body, names) in [
        ("[phone]\nwalk = true\n", &["walk"][..]),
        (
            "[tmux]\nsocket = \"/tmp/x\"\n",
            &["tmux.socket", "sockets"][..],
        ),
        (
            "[[starters]]\nname = \"a\"\ncommand = \"claude\"\n",
            &["starters.command", "exec"][..],
        ),
        (
            "workspace = \"~/code\"\n",
            &["workspace", "workspaces = ["][..],
        ),
    ] {
        write_config(&b, body);
        let out = b.cli(&["apply", "--yes"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{body}: {err}");
        for name in names {
            assert!(err.contains(name), "{body}: {err}");
        }
        assert!(!applied_json(&b).exists(), "{body}");
        let err = start_refused_any(&b);
        assert!(err.contains(names[0]), "{body}: {err}");
    }
    // Without schema_version: what to add.
    std::fs::write(b.config_dir().join("config.toml"), "[phone]\nrun = true\n").expect("write");
    let err = String::from_utf8_lossy(&b.cli(&["apply", "--yes"]).stderr).into_owned();
    assert!(err.contains("schema_version = 1"), "{err}");
}

/// `collie bridge` exits 1 (any message): for a file it cannot even read.
fn start_refused_any(b: &TestBridge) -> String {
    let out = b
        .command()
        .args(["bridge", "--port", "0"])
        .stdin(Stdio::null())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Every file under `dir`: its mode and the SHA-256 of its bytes.
fn fingerprint(dir: &Path) -> BTreeMap<PathBuf, (u32, String)> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).expect("ls").flatten() {
            let meta = std::fs::symlink_metadata(e.path()).expect("meta");
            if meta.is_dir() {
                todo.push(e.path());
            }
            let hash = if meta.is_file() {
                hex::encode(Sha256::digest(std::fs::read(e.path()).expect("read")))
            } else {
                String::new()
            };
            out.insert(e.path(), (meta.permissions().mode(), hash));
        }
    }
    out
}

#[test]
fn show_prints_desired_resolved_applied_and_effective_and_changes_nothing() {
    let mut b = stopped_bridge();
    b.launch();
    b.pair("pixel", "files");
    b.stop();
    let agent = agent_binary(&b, "claude");
    std::fs::create_dir_all(home(&b).join("code")).expect("mkdir");
    write_config(
        &b,
        &format!(
            "workspaces = [\"~\", {{ path = \"~/code\", access = \"write\" }}]\n[phone]\nrun = false\n[[starters]]\nname = \"Claude\"\nexec = \"{}\"\n",
            agent.display()
        ),
    );
    apply_yes(&b);
    let state_before = fingerprint(&b.state());
    let config_before = fingerprint(&b.config_dir());
    let out = b.cli(&["show", "--json"]);
    assert!(out.status.success());
    let text = b.cli(&["show"]);
    assert!(text.status.success());
    assert_eq!(
        fingerprint(&b.state()),
        state_before,
        "show wrote to the state dir"
    );
    assert_eq!(fingerprint(&b.config_dir()), config_before);

    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["state"], "applied");
    assert_eq!(v["effective"]["devices"]["source"], "store");
    assert_eq!(
        v["effective"]["devices"]["devices"],
        json!([["pixel", "files"]])
    );
    assert_eq!(v["effective"]["phone"]["run"], false);
    let starter = &v["effective"]["applied"]["starters"][0];
    assert_eq!(starter["name"], "Claude");
    assert_eq!(
        starter["sha256"],
        json!(hex::encode(Sha256::digest(
            std::fs::read(&agent).expect("agent")
        )))
    );
    assert_eq!(v["resolved"], v["applied"]["resolved"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("pixel (files)"), "{text}");
    assert!(
        text.contains("applied: the bridge starts with it"),
        "{text}"
    );

    // A difference shows as one, and still nothing changes.
    std::fs::write(&agent, b"#!/bin/sh\n").expect("edit");
    let v: Value = serde_json::from_slice(&b.cli(&["show", "--json"]).stdout).expect("json");
    assert_eq!(v["state"], "differs");
    assert!(v["differences"][0]
        .as_str()
        .is_some_and(|d| d.contains("the file changed")));
    assert_eq!(v["effective"]["applied"], Value::Null);
    assert_eq!(fingerprint(&b.state()), state_before);
}

#[test]
fn a_crash_between_write_and_rename_leaves_the_old_snapshot() {
    let b = stopped_bridge();
    write_config(&b, "[phone]\nrun = false\n");
    apply_yes(&b);
    let before = std::fs::read(applied_json(&b)).expect("read");
    write_config(&b, "[phone]\nrun = true\n");
    // The test build stops `apply` once the new snapshot is durable in its temp file, before
    // the rename (feature `fault-injection`, COLLIE_FAULT); the test kills it there.
    let mut child = b
        .command()
        .args(["apply", "--yes"])
        .env("COLLIE_FAULT", "apply-before-rename")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn apply");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut line = String::new();
    stderr.read_line(&mut line).expect("read");
    assert!(
        line.contains("fault: apply stops before the rename"),
        "{line}"
    );
    child.kill().expect("kill");
    let _ = child.wait();
    assert_eq!(
        std::fs::read(applied_json(&b)).expect("read"),
        before,
        "the old snapshot, byte for byte"
    );
    // The bridge refuses (the file is not the applied one) until a whole apply.
    let err = start_refused(&b);
    assert!(err.contains("config.toml sha256"), "{err}");
    apply_yes(&b);
    assert_ne!(std::fs::read(applied_json(&b)).expect("read"), before);
}

#[test]
fn applied_workspaces_bound_the_file_tools_and_may_not_narrow() {
    let mut b = stopped_bridge();
    let code = home(&b).join("code");
    let docs = home(&b).join("docs");
    std::fs::create_dir_all(&code).expect("mkdir");
    std::fs::create_dir_all(&docs).expect("mkdir");
    // A read-only workspace inside a writable one would narrow it: refused by name.
    write_config(
        &b,
        "workspaces = [\"~\", { path = \"~/code\", access = \"read\" }]\n",
    );
    let out = b.cli(&["apply", "--yes"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("would narrow it"), "{err}");
    assert!(!applied_json(&b).exists());

    write_config(
        &b,
        "workspaces = [{ path = \"~/docs\", access = \"read\" }, \"~/code\"]\n",
    );
    apply_yes(&b);
    b.launch();
    let token = b.pair("phone", "full");
    let write = |path: &Path| {
        b.post(
            "/api/tools/write_file",
            Some(&token),
            &json!({"path": path.display().to_string(), "content": "x"}),
        )
    };
    let (s, v) = write(&code.join("a.txt"));
    assert_eq!(s, 200, "{v}");
    let (s, v) = write(&docs.join("a.txt"));
    assert_eq!(
        (s, v["error"].as_str()),
        (403, Some("path not allowed")),
        "{v}"
    );
    assert!(!docs.join("a.txt").exists());
    let (s, v) = write(&home(&b).join("a.txt"));
    assert_eq!(s, 403, "home is no workspace now: {v}");
    assert!(!home(&b).join("a.txt").exists());
    // The Files view starts in the first workspace, not in home (which is none now).
    let (s, v) = b.get("/api/files/local/list", Some(&token));
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        v["path"],
        json!(std::fs::canonicalize(&docs)
            .expect("docs")
            .display()
            .to_string())
    );
    // Reading the read-only workspace works.
    std::fs::write(docs.join("r.txt"), "readable").expect("write");
    let (s, v) = b.post(
        "/api/tools/read_file",
        Some(&token),
        &json!({"path": docs.join("r.txt").display().to_string()}),
    );
    assert_eq!(s, 200, "{v}");
}

#[test]
fn a_starter_runs_its_pinned_executable_and_a_changed_one_is_refused() {
    let mut b = stopped_bridge();
    let agent = home(&b).join("bin").join("agent");
    std::fs::create_dir_all(agent.parent().expect("dir")).expect("mkdir");
    std::fs::write(&agent, "#!/bin/sh\necho \"STARTED-$1\"\nexec sleep 60\n").expect("write");
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    write_config(
        &b,
        &format!(
            "[[starters]]\nname = \"Agent\"\nexec = \"{}\"\nargs = [\"hello\"]\n",
            agent.display()
        ),
    );
    apply_yes(&b);
    b.launch();
    let token = b.pair("phone", "full");
    let create = |starter: &str| {
        b.post(
            "/api/panes",
            Some(&token),
            &json!({"machine": "local", "starter": starter}),
        )
    };
    let (s, v) = create("Agent");
    assert_eq!(s, 200, "{v}");
    let pane = v["pane"].as_str().expect("pane").to_owned();
    let shown = wait_for(Duration::from_secs(10), || {
        let (_, snap) = b.get(&format!("/api/panes/local/{pane}"), Some(&token));
        snap.to_string().contains("STARTED-hello").then_some(())
    });
    assert!(shown.is_some(), "the pinned executable ran with its args");
    let line = b
        .audit_lines()
        .into_iter()
        .find(|l| l["event"] == "pane.create")
        .expect("pane.create");
    assert_eq!(line["detail"]["starter"], "Agent");

    let (s, v) = create("Nobody");
    assert_eq!(s, 400, "{v}");

    // Changed on disk after apply, with the bridge running: refused just before the spawn.
    std::fs::write(&agent, "#!/bin/sh\necho EVIL\nexec sleep 60\n").expect("write");
    let (_, before) = b.get("/api/panes", Some(&token));
    let (s, v) = create("Agent");
    assert_eq!(
        (s, v["error"].as_str()),
        (409, Some("starter changed")),
        "{v}"
    );
    let (_, after) = b.get("/api/panes", Some(&token));
    assert_eq!(
        before["panes"].as_array().map(Vec::len),
        after["panes"].as_array().map(Vec::len),
        "no pane was opened"
    );
}

#[test]
fn a_member_s_starters_are_listed_and_started_through_the_lead_confirmed_once() {
    let lead = support::crew_bridge(false, &[]);
    // The member's own starter, pinned by its own apply.
    let dir = tempfile::tempdir().expect("tempdir");
    let agent = dir.path().join("fake-claude");
    std::fs::write(
        &agent,
        "#!/bin/sh\necho \"MEMBER-RAN:$*:\"\nexec sleep 60\n",
    )
    .expect("write");
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let member = support::crew_bridge_configured(
        false,
        &[],
        Some(&format!(
            "[[starters]]\nname = \"Claude\"\nexec = \"{}\"\nagent = \"claude\"\nno_prompts = true\n",
            agent.display()
        )),
    );
    lead.cli_ok(&["crew", "init"]);
    member.cli_ok(&["crew", "join", &lead.invite(), "--name", "web-1"]);
    lead.wait_member_online("web-1");
    let phone = lead.pair("phone", "full");
    let reader = lead.pair("reader", "read");

    let (s, v) = lead.get("/api/starters/web-1", Some(&phone));
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["machine"], "web-1");
    assert_eq!(
        v["starters"],
        json!([
            {"name": "Claude", "agent": "claude", "no_prompts": true, "confirmed": false}
        ])
    );
    let (s, _) = lead.get("/api/starters/web-1", Some(&reader));
    assert_eq!(s, 403, "only a device that may start one lists them");
    let (_, local) = lead.get("/api/starters/local", Some(&phone));
    assert_eq!(local["starters"], json!([]), "the lead has none of its own");

    let start = |confirm: bool| {
        lead.post(
            "/api/panes",
            Some(&phone),
            &json!({"machine": "web-1", "starter": "Claude", "confirm_no_prompts": confirm}),
        )
    };
    let (s, v) = start(false);
    assert_eq!((s, v["error"].as_str()), (409, Some("confirm no prompts")));
    let (s, v) = start(true);
    assert_eq!(s, 200, "{v}");
    let pane = v["pane"].as_str().expect("pane").to_owned();
    let on_member = member.pair("viewer", "read");
    let ran = wait_for(Duration::from_secs(10), || {
        let (_, snap) = member.get(&format!("/api/panes/local/{pane}"), Some(&on_member));
        snap.to_string()
            .contains("MEMBER-RAN:--dangerously-skip-permissions:")
            .then_some(())
    });
    assert!(
        ran.is_some(),
        "the member ran its pinned starter with the flag from its table"
    );
    // Confirmed once, for this device: kept, and listed so.
    let (_, v) = lead.get("/api/starters/web-1", Some(&phone));
    assert_eq!(v["starters"][0]["confirmed"], true);
    let (s, v) = start(false);
    assert_eq!(s, 200, "{v}");
    // Another device has not confirmed it.
    let other = lead.pair("tablet", "full");
    let (s, _) = lead.post(
        "/api/panes",
        Some(&other),
        &json!({"machine": "web-1", "starter": "Claude"}),
    );
    assert_eq!(s, 409);
}

#[test]
fn an_apply_the_running_bridge_cannot_audit_says_so_exits_1_and_stays_applied() {
    let mut b = stopped_bridge();
    write_config(&b, "[phone]\nrun = false\n");
    apply_yes(&b);
    b.launch();
    let before = std::fs::read(applied_json(&b)).expect("read");
    // The audit log cannot be written: a directory in its place (file modes alone do not stop
    // root, which CI runs as).
    let log = b.state().join("audit.log");
    std::fs::remove_file(&log).expect("remove the log");
    std::fs::create_dir(&log).expect("a directory in the log's place");

    write_config(&b, "[phone]\nrun = true\n");
    let out = b.cli(&["apply", "--yes"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("applied, but the bridge could not audit it"),
        "{err}"
    );
    assert!(err.contains("audit unavailable"), "{err}");
    // The rename happened: the new snapshot is in place, and there is nothing left to apply.
    let after = std::fs::read(applied_json(&b)).expect("read");
    assert_ne!(after, before, "the change was applied");
    let again = apply_yes(&b);
    assert!(again.contains("nothing to apply"), "{again}");
    std::fs::remove_dir(&log).expect("remove the directory");
}
