//! Black-box tests of the starter rows a phone adds (SPEC §12 last bullet, decision 0041) against
//! real `collie` processes: a template row runs the machine's pinned executable with the flags of
//! the bridge's own table, a hand-typed row needs `free_text`, `adds = false` hides and refuses,
//! revoking a device removes its rows (also after a restart), and a member runs a row through the
//! lead under its own policy. The agent is a small script named by `agent = "claude"`.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};
use support::{wait_for, Opts, TestBridge};

/// A fake agent that prints the arguments it got, then waits.
fn agent(dir: &tempfile::TempDir, marker: &str) -> PathBuf {
    let path = dir.path().join("fake-claude");
    std::fs::write(
        &path,
        format!("#!/bin/sh\necho \"{marker}:$*:\"\nexec sleep 60\n"),
    )
    .expect("write agent");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

fn claude_starter(path: &std::path::Path) -> String {
    format!(
        "[[starters]]\nname = \"Claude\"\nexec = \"{}\"\nagent = \"claude\"\nargs = [\"--fixed\"]\n",
        path.display()
    )
}

/// Waits until pane `pane` of `machine` shows `text` (asked with `token`).
fn shows(b: &TestBridge, token: &str, machine: &str, pane: &str, text: &str) -> bool {
    wait_for(Duration::from_secs(10), || {
        let (_, snap) = b.get(&format!("/api/panes/{machine}/{pane}"), Some(token));
        snap.to_string().contains(text).then_some(())
    })
    .is_some()
}

fn add(b: &TestBridge, token: &str, machine: &str, body: Value) -> (u16, Value) {
    b.post(&format!("/api/starters/{machine}/rows"), Some(token), &body)
}

fn remove(b: &TestBridge, token: &str, id: &str) -> (u16, Value) {
    let path = format!("/api/starters/local/rows/{id}");
    b.request("DELETE", &path, Some(token), None, &[])
}

fn start(b: &TestBridge, token: &str, machine: &str, row: &str, confirm: bool) -> (u16, Value) {
    b.post(
        "/api/panes",
        Some(token),
        &json!({"machine": machine, "row": row, "confirm_no_prompts": confirm}),
    )
}

/// Starts row `row` on this bridge (confirmed or not), expects a pane, and waits until it shows
/// `text`.
fn run_shows(b: &TestBridge, token: &str, row: &str, confirm: bool, text: &str) {
    let (s, v) = start(b, token, "local", row, confirm);
    assert_eq!(s, 200, "{v}");
    let pane = v["pane"].as_str().expect("pane").to_owned();
    assert!(shows(b, token, "local", &pane, text), "{text} never shown");
}

fn events(b: &TestBridge, event: &str) -> Vec<Value> {
    b.audit_lines()
        .into_iter()
        .filter(|l| l["event"] == event)
        .collect()
}

#[test]
fn a_template_row_runs_the_pinned_agent_with_the_tables_flags() {
    let dir = tempfile::tempdir().expect("tempdir");
    let exec = agent(&dir, "ROW-RAN");
    let b = TestBridge::start_with(Opts {
        config: Some(claude_starter(&exec)),
        ..Opts::default()
    });
    let phone = b.pair("phone", "full");

    let (s, v) = b.get("/api/starters/local", Some(&phone));
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        (&v["adds"], &v["free_text"], &v["templates"], &v["rows"]),
        (&json!(true), &json!(false), &json!(["claude"]), &json!([]))
    );

    let (s, row) = add(
        &b,
        &phone,
        "local",
        json!({"name": "Sonnet", "agent": "claude", "model": "sonnet"}),
    );
    assert_eq!(s, 200, "{row}");
    let id = row["id"].as_str().expect("id").to_owned();
    let (_, v) = b.get("/api/starters/local", Some(&phone));
    assert_eq!(v["rows"][0]["name"], "Sonnet");
    assert_eq!(v["rows"][0]["agent"], "claude");
    assert_eq!(v["rows"][0]["no_prompts"], false);
    assert_eq!(v["rows"][0]["added_by"], "phone");

    // The pinned executable, with the table's flags only.
    run_shows(&b, &phone, &id, false, "ROW-RAN:--model sonnet:");
    let create = events(&b, "pane.create");
    assert_eq!(
        create.last().expect("pane.create")["detail"]["row"],
        "Sonnet"
    );
    let added = events(&b, "starter.added");
    assert_eq!(added.len(), 1);
    assert_eq!(added[0]["detail"]["agent"], "claude");
    assert_eq!(added[0]["detail"]["name"], "Sonnet");
    assert_eq!(added[0]["device"], "phone");

    // A row opens as a hosted pane, never as a window of a tmux session (decision 0042).
    let (s, v) = b.post(
        "/api/panes",
        Some(&phone),
        &json!({"machine": "local", "row": id, "session": "t0:main"}),
    );
    assert_eq!(s, 400, "{v}");

    // "No prompts": each device confirms it once.
    let (s, yolo) = add(
        &b,
        &phone,
        "local",
        json!({"name": "Yolo", "agent": "claude", "no_prompts": true}),
    );
    assert_eq!(s, 200, "{yolo}");
    let yolo = yolo["id"].as_str().expect("id").to_owned();
    let (s, v) = start(&b, &phone, "local", &yolo, false);
    assert_eq!((s, v["error"].as_str()), (409, Some("confirm no prompts")));
    run_shows(
        &b,
        &phone,
        &yolo,
        true,
        "ROW-RAN:--dangerously-skip-permissions:",
    );
    let (s, v) = start(&b, &phone, "local", &yolo, false);
    assert_eq!(s, 200, "confirmed once: {v}");
    let tablet = b.pair("tablet", "full");
    let (s, _) = start(&b, &tablet, "local", &yolo, false);
    assert_eq!(s, 409, "another device confirms it itself");

    // Bad input is refused and adds nothing.
    let long = "n".repeat(65);
    let bad = [
        json!({"name": "x", "agent": "bash"}),
        json!({"name": "x", "agent": "codex"}),
        json!({"name": "x", "agent": "claude", "model": "-x"}),
        json!({"name": long, "agent": "claude"}),
        json!({"name": "Claude", "agent": "claude"}),
        json!({"name": "Sonnet", "agent": "claude"}),
        json!({"name": "x", "agent": "claude", "exec": "/bin/sh"}),
        json!({"name": "x", "agent": "claude", "line": "ls"}),
        json!({"name": "a\u{7}b", "agent": "claude"}),
    ];
    for body in bad {
        let (s, v) = add(&b, &phone, "local", body.clone());
        assert_eq!(s, 400, "{body} → {v}");
    }
    let (s, v) = add(&b, &phone, "local", json!({"name": "x", "line": "ls"}));
    assert_eq!(s, 403, "a hand-typed row needs free_text: {v}");
    assert!(
        v["error"].as_str().unwrap_or("").contains("free_text"),
        "{v}"
    );

    // Below tier full: refused.
    let files = b.pair("files", "files");
    let (s, _) = add(&b, &files, "local", json!({"name": "f", "agent": "claude"}));
    assert_eq!(s, 403);
    let (s, _) = remove(&b, &files, &id);
    assert_eq!(s, 403);
    let (s, _) = start(&b, &files, "local", &id, false);
    assert_eq!(s, 403);

    // At most 32 rows per device.
    for i in 0..30 {
        let (s, v) = add(
            &b,
            &phone,
            "local",
            json!({"name": format!("r{i}"), "agent": "claude"}),
        );
        assert_eq!(s, 200, "{i}: {v}");
    }
    let (s, v) = add(
        &b,
        &phone,
        "local",
        json!({"name": "one more", "agent": "claude"}),
    );
    assert_eq!(s, 400, "{v}");
    assert!(
        v["error"].as_str().unwrap_or("").contains("too many"),
        "{v}"
    );
    let (s, _) = add(
        &b,
        &tablet,
        "local",
        json!({"name": "tablet's", "agent": "claude"}),
    );
    assert_eq!(s, 200, "the bound is per device");

    // Removing one: audited, and there is room again.
    let (s, v) = remove(&b, &phone, &id);
    assert_eq!(s, 200, "{v}");
    let removed = events(&b, "starter.removed");
    assert_eq!(removed.len(), 1);
    assert_eq!(removed[0]["detail"]["name"], "Sonnet");
    let (s, _) = start(&b, &phone, "local", &id, false);
    assert_eq!(s, 400, "a removed row does not start");
    let (s, v) = remove(&b, &phone, &id);
    assert_eq!((s, v["error"].as_str()), (404, Some("no such starter row")));
    let (s, v) = add(
        &b,
        &phone,
        "local",
        json!({"name": "one more", "agent": "claude"}),
    );
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        b.cli(&["audit", "verify"]).status.code(),
        Some(0),
        "the chain holds"
    );
}

#[test]
fn a_typed_line_needs_free_text_and_adds_off_hides_and_refuses_but_keeps() {
    let mut b = TestBridge::start_with(Opts {
        config: Some("[phone]\nfree_text = true\n".into()),
        ..Opts::default()
    });
    let phone = b.pair("phone", "full");
    let (_, v) = b.get("/api/starters/local", Some(&phone));
    assert_eq!(
        (&v["free_text"], &v["templates"]),
        (&json!(true), &json!([]))
    );
    let (s, v) = add(
        &b,
        &phone,
        "local",
        json!({"name": "Bell", "line": "echo a\u{7}b"}),
    );
    assert_eq!(s, 400, "control characters: {v}");
    let (s, v) = add(
        &b,
        &phone,
        "local",
        json!({"name": "Answer", "line": "echo LINE-$((6*7))"}),
    );
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["agent"], "line");
    let id = v["id"].as_str().expect("id").to_owned();
    // The line ran in a fresh shell.
    run_shows(&b, &phone, &id, false, "LINE-42");
    let added = events(&b, "starter.added");
    assert_eq!(added[0]["detail"]["word"], "echo");
    assert_eq!(added[0]["detail"]["length"], 18);
    assert!(
        !added[0].to_string().contains("6*7"),
        "never the whole line: {}",
        added[0]
    );

    // adds = false: neither listed nor started, but kept.
    b.stop();
    b.configure("[phone]\nadds = false\nfree_text = true\n");
    b.launch();
    let (_, v) = b.get("/api/starters/local", Some(&phone));
    assert_eq!((&v["adds"], &v["rows"]), (&json!(false), &json!([])));
    let (s, v) = start(&b, &phone, "local", &id, false);
    assert_eq!(s, 403, "{v}");
    let (s, _) = add(&b, &phone, "local", json!({"name": "x", "line": "ls"}));
    assert_eq!(s, 403);
    b.stop();
    b.configure("[phone]\nfree_text = true\n");
    b.launch();
    let (_, v) = b.get("/api/starters/local", Some(&phone));
    assert_eq!(v["rows"][0]["id"], id.as_str(), "kept: {v}");
}

#[test]
fn revoking_a_device_removes_its_rows_and_the_line_counts_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let exec = agent(&dir, "R");
    let mut b = TestBridge::start_with(Opts {
        config: Some(claude_starter(&exec)),
        ..Opts::default()
    });
    let phone = b.pair("phone", "full");
    let tablet = b.pair("tablet", "full");
    for name in ["a", "b"] {
        let (s, v) = add(
            &b,
            &phone,
            "local",
            json!({"name": name, "agent": "claude"}),
        );
        assert_eq!(s, 200, "{v}");
    }
    let (s, v) = add(
        &b,
        &tablet,
        "local",
        json!({"name": "t", "agent": "claude"}),
    );
    assert_eq!(s, 200, "{v}");
    let (_, v) = b.get("/api/starters/local", Some(&tablet));
    assert_eq!(v["rows"].as_array().map(Vec::len), Some(3));

    b.cli_ok(&["devices", "revoke", "phone"]);
    let names = |b: &TestBridge| -> Vec<String> {
        let (_, v) = b.get("/api/starters/local", Some(&tablet));
        v["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .map(|r| r["name"].as_str().unwrap_or("").to_owned())
            .collect()
    };
    assert_eq!(names(&b), ["t"]);
    let revoked = events(&b, "device.revoked");
    assert_eq!(revoked.last().expect("line")["detail"]["rows_removed"], 2);

    // A new device under the old label does not inherit them, and a restart keeps them gone.
    let again = b.pair("phone", "full");
    let (_, v) = b.get("/api/starters/local", Some(&again));
    assert_eq!(v["rows"].as_array().map(Vec::len), Some(1));
    b.stop();
    b.launch();
    assert_eq!(names(&b), ["t"]);

    // `collie show` lists them among the effective permissions, from the bridge or, stopped,
    // from a copy of its store.
    let shown = |b: &TestBridge| -> Value {
        support::json_of(&b.cli_ok(&["show", "--json"]))["effective"]["rows"].clone()
    };
    let running = shown(&b);
    assert_eq!(running["source"], "bridge");
    assert_eq!(
        running["rows"],
        json!([{"machine": "local", "name": "t", "runs": "claude", "no_prompts": false,
                "added_by": "tablet"}])
    );
    b.stop();
    let stopped = shown(&b);
    assert_eq!(stopped["source"], "store");
    assert_eq!(stopped["rows"], running["rows"]);
    let text = b.cli_ok(&["show"]);
    assert!(
        text.contains("row        local/t: claude, added by tablet"),
        "{text}"
    );
}

#[test]
fn a_row_runs_on_a_member_through_the_lead_under_the_member_s_own_policy() {
    let lead = support::crew_bridge_configured(false, &[], Some("[phone]\nfree_text = true\n"));
    let dir = tempfile::tempdir().expect("tempdir");
    let exec = agent(&dir, "MEMBER-RAN");
    let member = support::crew_bridge_configured(false, &[], Some(&claude_starter(&exec)));
    lead.cli_ok(&["crew", "init"]);
    member.cli_ok(&["crew", "join", &lead.invite(), "--name", "web-1"]);
    lead.wait_member_online("web-1");
    let phone = lead.pair("phone", "full");

    let (s, v) = lead.get("/api/starters/web-1", Some(&phone));
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["templates"], json!(["claude"]), "the member's agents");
    let (s, v) = add(
        &lead,
        &phone,
        "web-1",
        json!({"name": "Opus", "agent": "claude", "model": "opus", "no_prompts": true}),
    );
    assert_eq!(s, 200, "{v}");
    let id = v["id"].as_str().expect("id").to_owned();
    let (_, local) = lead.get("/api/starters/local", Some(&phone));
    assert_eq!(local["rows"], json!([]), "a row belongs to its machine");
    let (s, _) = add(
        &lead,
        &phone,
        "local",
        json!({"name": "x", "agent": "claude"}),
    );
    assert_eq!(s, 400, "the lead has no applied claude starter");

    let (s, v) = start(&lead, &phone, "web-1", &id, false);
    assert_eq!((s, v["error"].as_str()), (409, Some("confirm no prompts")));
    let (s, v) = start(&lead, &phone, "web-1", &id, true);
    assert_eq!(s, 200, "{v}");
    let pane = v["pane"].as_str().expect("pane").to_owned();
    let viewer = member.pair("viewer", "read");
    assert!(
        shows(
            &member,
            &viewer,
            "local",
            &pane,
            "MEMBER-RAN:--model opus --dangerously-skip-permissions:"
        ),
        "the member ran its own pinned agent with its own table's flags"
    );
    let on_lead = events(&lead, "pane.create");
    let on_member = events(&member, "pane.create");
    let (l, m) = (
        on_lead.last().expect("lead line"),
        on_member.last().expect("member line"),
    );
    assert_eq!(
        (&l["detail"]["row"], &m["detail"]["row"]),
        (&json!("Opus"), &json!("Opus"))
    );
    assert_eq!(l["request_id"], m["request_id"]);
    assert_eq!(
        events(&lead, "starter.added")[0]["detail"]["machine"],
        "web-1"
    );

    // The lead allows typed lines; the member does not (free_text off there) and refuses.
    let (s, v) = add(
        &lead,
        &phone,
        "web-1",
        json!({"name": "Make", "line": "make"}),
    );
    assert_eq!(s, 200, "{v}");
    let line = v["id"].as_str().expect("id").to_owned();
    let (s, v) = start(&lead, &phone, "web-1", &line, false);
    assert_eq!(s, 403, "{v}");
    assert!(
        v["error"].as_str().unwrap_or("").contains("free_text"),
        "{v}"
    );
}

#[test]
fn a_line_row_is_typed_on_the_member_and_refused_there_once_its_adds_are_off() {
    let lead = support::crew_bridge_configured(false, &[], Some("[phone]\nfree_text = true\n"));
    let mut member =
        support::crew_bridge_configured(false, &[], Some("[phone]\nfree_text = true\n"));
    lead.cli_ok(&["crew", "init"]);
    member.cli_ok(&["crew", "join", &lead.invite(), "--name", "web-1"]);
    lead.wait_member_online("web-1");
    let phone = lead.pair("phone", "full");
    let (s, v) = add(
        &lead,
        &phone,
        "web-1",
        json!({"name": "Answer", "line": "echo MEMBER-LINE-$((6*7))"}),
    );
    assert_eq!(s, 200, "{v}");
    let id = v["id"].as_str().expect("id").to_owned();

    // The member opens a shell and types the line into it: the shell computes the answer.
    let (s, v) = start(&lead, &phone, "web-1", &id, false);
    assert_eq!(s, 200, "{v}");
    let pane = v["pane"].as_str().expect("pane").to_owned();
    let viewer = member.pair("viewer", "read");
    assert!(
        shows(&member, &viewer, "local", &pane, "MEMBER-LINE-42"),
        "the member typed the row's line into the new pane"
    );
    let (on_lead, on_member) = (events(&lead, "pane.create"), events(&member, "pane.create"));
    assert_eq!((on_lead.len(), on_member.len()), (1, 1));
    assert_eq!(on_lead[0]["request_id"], on_member[0]["request_id"]);
    assert_eq!(
        (&on_lead[0]["detail"]["row"], &on_member[0]["detail"]["row"]),
        (&json!("Answer"), &json!("Answer"))
    );
    assert_eq!(on_member[0]["detail"]["via"], "relay", "{}", on_member[0]);
    assert_eq!(on_member[0]["device"], "phone", "{}", on_member[0]);

    // The member turns rows off: the lead still allows them, the member refuses in its own words
    // and neither machine writes a line for the refused create.
    member.stop();
    member.configure("[phone]\nadds = false\nfree_text = true\n");
    member.launch();
    lead.wait_member_online("web-1");
    let (s, v) = wait_for(Duration::from_secs(10), || {
        let (s, v) = start(&lead, &phone, "web-1", &id, false);
        (v["error"] != "member unreachable").then_some((s, v))
    })
    .expect("the member came back");
    assert_eq!(s, 403, "{v}");
    assert!(
        v["error"].as_str().unwrap_or("").contains("adds = false"),
        "{v}"
    );
    for b in [&lead, &member] {
        assert_eq!(
            events(b, "pane.create").len(),
            1,
            "no line for a refused row"
        );
        assert!(events(b, "resource.denied").is_empty());
    }
}
