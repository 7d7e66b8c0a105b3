//! Black-box tests of the tools under tiers (SPEC §11) through their three doors — the phone API
//! (`POST /api/tools/{tool}`), MCP (`POST /mcp`) and the crew relay — against a real bridge, a
//! real home folder in a temp dir and real processes. Most of them are the red-team list of seed
//! 003 §8.13 and the field's guardrail failures, each trying the attack and asserting it fails.

mod support;

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use support::{crew_bridge, procs, wait_for, Opts, TestBridge};

/// A bridge without tmux.
fn bridge() -> TestBridge {
    TestBridge::start_with(Opts {
        log_to_file: true,
        ..Opts::default()
    })
}

fn home(b: &TestBridge) -> std::path::PathBuf {
    b.dir.path().join("home")
}

/// `POST /api/tools/{name}` with `args`.
fn tool(b: &TestBridge, token: &str, name: &str, args: Value) -> (u16, Value) {
    b.post(&format!("/api/tools/{name}"), Some(token), &args)
}

/// A tool call that must succeed; its answer.
fn tool_ok(b: &TestBridge, token: &str, name: &str, args: Value) -> Value {
    let (status, body) = tool(b, token, name, args.clone());
    assert_eq!(status, 200, "{name} {args}: {body}");
    body
}

/// One JSON-RPC request to `POST /mcp`; the status and the JSON answer.
fn mcp(b: &TestBridge, token: Option<&str>, id: u64, method: &str, params: Value) -> (u16, Value) {
    let (status, _, text) = b.raw(
        "POST",
        "/mcp",
        token,
        Some(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})),
        &[("Accept", "application/json, text/event-stream")],
    );
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// The names `tools/list` shows a device.
fn mcp_tool_names(b: &TestBridge, token: &str) -> Vec<String> {
    let (status, body) = mcp(b, Some(token), 2, "tools/list", json!({}));
    assert_eq!(status, 200, "{body}");
    body["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("tools/list: {body}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// `tools/call` through MCP: (is_error, the text of its first content block, structured content).
fn mcp_call(b: &TestBridge, token: &str, name: &str, args: Value) -> (bool, String, Value) {
    let (status, body) = mcp(
        b,
        Some(token),
        3,
        "tools/call",
        json!({"name": name, "arguments": args}),
    );
    assert_eq!(status, 200, "{body}");
    let result = &body["result"];
    (
        result["isError"].as_bool().unwrap_or(false),
        result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        result["structuredContent"].clone(),
    )
}

/// Audit lines of `event`.
fn audited(b: &TestBridge, event: &str) -> Vec<Value> {
    b.audit_lines()
        .into_iter()
        .filter(|l| l["event"] == event)
        .collect()
}

fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(path, text).expect("write");
}

const READ_TOOLS: [&str; 11] = [
    "read_file",
    "read_multiple_files",
    "list_directory",
    "get_file_info",
    "start_search",
    "get_more_search_results",
    "stop_search",
    "list_processes",
    "list_sessions",
    "read_process_output",
    "git_diff",
];
const FILES_TOOLS: [&str; 4] = ["edit_block", "write_file", "create_directory", "move_file"];
const FULL_TOOLS: [&str; 5] = [
    "exec_command",
    "start_process",
    "interact_with_process",
    "kill_process",
    "force_terminate",
];

#[test]
fn every_door_gates_every_tool_by_the_devices_tier() {
    let b = bridge();
    let read = b.pair("reader", "read");
    let files = b.pair("filer", "files");
    let full = b.pair("owner", "full");

    // MCP's tools/list shows exactly what each tier may call.
    let mut names = mcp_tool_names(&b, &read);
    names.sort();
    let mut want: Vec<String> = READ_TOOLS.iter().map(|s| (*s).to_owned()).collect();
    want.sort();
    assert_eq!(names, want);
    assert_eq!(mcp_tool_names(&b, &files).len(), 15);
    assert_eq!(mcp_tool_names(&b, &full).len(), 20);

    // Every tool above the device's tier is refused at both doors with `insufficient tier`,
    // before its arguments are even looked at (these are empty), and nothing runs.
    for name in FILES_TOOLS.iter().chain(FULL_TOOLS.iter()) {
        let (status, body) = tool(&b, &read, name, json!({}));
        assert_eq!(
            (status, body["error"].as_str()),
            (403, Some("insufficient tier")),
            "{name}"
        );
        let (is_error, text, _) = mcp_call(&b, &read, name, json!({}));
        assert!(is_error, "{name}");
        assert_eq!(text, "insufficient tier", "{name}");
    }
    for name in FULL_TOOLS {
        let (status, body) = tool(&b, &files, name, json!({"command": "touch pwned"}));
        assert_eq!(
            (status, body["error"].as_str()),
            (403, Some("insufficient tier")),
            "{name}"
        );
    }
    assert!(!home(&b).join("pwned").exists());
    // Refusals are audited, at most once a minute per source and reason (SPEC §7): the first
    // line names the tool and the tier it needs.
    let denied = audited(&b, "security.denied");
    assert!(
        denied.iter().any(|l| l["device"] == "reader"
            && l["detail"]["tool"] == "edit_block"
            && l["detail"]["required"] == "files"
            && l["detail"]["reason"] == "insufficient tier"),
        "{denied:?}"
    );

    // No token, a wrong token, the local secret: MCP is refused before it starts.
    for token in [None, Some("nope")] {
        let (status, body) = mcp(&b, token, 1, "tools/list", json!({}));
        assert_eq!(
            (status, body["error"].as_str()),
            (403, Some("device not paired"))
        );
    }
    let secret = std::fs::read_to_string(b.state().join("local-secret")).expect("secret");
    let (status, _, _) = b.raw(
        "POST",
        "/mcp",
        None,
        Some(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})),
        &[("Authorization", &format!("Local {secret}"))],
    );
    assert_eq!(status, 403);
    // An unknown tool.
    let (status, body) = tool(&b, &full, "rm_rf", json!({}));
    assert_eq!(
        (status, body["error"].as_str()),
        (404, Some("no such tool"))
    );
}

#[test]
fn a_forged_risk_field_grants_nothing_and_is_refused() {
    let b = bridge();
    let read = b.pair("reader", "read");
    write(&home(&b).join("notes.txt"), "one\ntwo\n");
    // The registry decides; a request field naming a tier or risk is an unknown argument.
    for args in [
        json!({"path": "notes.txt", "risk": "high"}),
        json!({"path": "notes.txt", "tier": "full"}),
    ] {
        let (status, body) = tool(&b, &read, "read_file", args);
        assert_eq!(status, 400, "{body}");
        assert!(
            body["error"]
                .as_str()
                .is_some_and(|e| e.contains("risk") || e.contains("tier")),
            "{body}"
        );
    }
    let (status, body) = tool(
        &b,
        &read,
        "write_file",
        json!({"path": "x", "content": "y", "risk": "high"}),
    );
    assert_eq!(
        (status, body["error"].as_str()),
        (403, Some("insufficient tier"))
    );
    assert!(!home(&b).join("x").exists());
}

#[test]
fn a_tier_lowered_a_moment_ago_counts_at_once() {
    let b = bridge();
    let token = b.pair("phone", "files");
    tool_ok(
        &b,
        &token,
        "write_file",
        json!({"path": "a.txt", "content": "1"}),
    );
    b.cli_ok(&["devices", "set-tier", "phone", "read"]);
    let (status, body) = tool(
        &b,
        &token,
        "write_file",
        json!({"path": "a.txt", "content": "2"}),
    );
    assert_eq!(
        (status, body["error"].as_str()),
        (403, Some("insufficient tier"))
    );
    assert_eq!(
        std::fs::read_to_string(home(&b).join("a.txt")).expect("a"),
        "1"
    );
    // And revoked: every door says so.
    b.cli_ok(&["devices", "revoke", "phone"]);
    let (status, body) = tool(&b, &token, "read_file", json!({"path": "a.txt"}));
    assert_eq!(
        (status, body["error"].as_str()),
        (403, Some("device not paired"))
    );
    let (status, _) = mcp(&b, Some(&token), 1, "tools/list", json!({}));
    assert_eq!(status, 403);
}

#[test]
fn file_tools_work_inside_the_workspace_and_the_answer_is_masked() {
    let b = bridge();
    let files = b.pair("filer", "files");
    // A token of a shape the masker knows, in a file the device reads.
    let token = format!("ghp_{}", "A1b2C3d4E5".repeat(4));
    write(
        &home(&b).join("proj/notes.txt"),
        &format!("first\nkey={token}\nlast\n"),
    );
    let read = tool_ok(&b, &files, "read_file", json!({"path": "proj/notes.txt"}));
    let content = read["content"].as_str().expect("content");
    assert!(content.starts_with("first\nkey=ghp_"), "{content}");
    assert!(
        !content.contains(&token),
        "the token left the machine: {content}"
    );
    assert_eq!(read["total_lines"], 3);
    // The same file through MCP: the same masked answer.
    let (is_error, text, structured) =
        mcp_call(&b, &files, "read_file", json!({"path": "proj/notes.txt"}));
    assert!(!is_error, "{text}");
    assert!(!text.contains(&token));
    assert_eq!(structured["content"], read["content"]);

    // Write, then edit with the fingerprint the write answered.
    let written = tool_ok(
        &b,
        &files,
        "write_file",
        json!({"path": "proj/app.conf", "content": "port = 1\npassword = hunter2\n"}),
    );
    let fingerprint = written["fingerprint"]
        .as_str()
        .expect("fingerprint")
        .to_owned();
    tool_ok(
        &b,
        &files,
        "edit_block",
        json!({"file_path": "proj/app.conf", "old_string": "port = 1", "new_string": "port = 2",
               "fingerprint": fingerprint}),
    );
    let conf = home(&b).join("proj/app.conf");
    assert_eq!(
        std::fs::read_to_string(&conf).expect("conf"),
        "port = 2\npassword = hunter2\n"
    );
    // The old fingerprint no longer matches: 409 conflict, and the file is untouched.
    let (status, body) = tool(
        &b,
        &files,
        "edit_block",
        json!({"file_path": "proj/app.conf", "old_string": "port = 2", "new_string": "port = 3",
               "fingerprint": fingerprint}),
    );
    assert_eq!((status, body["error"].as_str()), (409, Some("conflict")));
    assert!(std::fs::read_to_string(&conf)
        .expect("conf")
        .contains("port = 2"));

    // The audit names paths and sizes, never contents.
    // One line before the write (what was asked), one after (what it did), one request id.
    let lines = audited(&b, "tool.write_file");
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["device"], "filer");
    assert_eq!(lines[0]["detail"]["path"], "proj/app.conf");
    assert_eq!(lines[0]["detail"]["content_bytes"], 28);
    assert_eq!(lines[1]["detail"]["phase"], "done");
    assert_eq!(lines[1]["detail"]["size"], 28);
    assert_eq!(lines[1]["request_id"], lines[0]["request_id"]);
    let log = std::fs::read_to_string(b.state().join("audit.log")).expect("audit.log");
    for secret in ["hunter2", "port = 2", "A1b2C3d4E5"] {
        assert!(!log.contains(secret), "{secret} in the audit log");
    }
    assert!(!audited(&b, "tool.read_file").is_empty());
    // Each edit is audited before it runs; only the one that changed the file has a `done` line.
    let edits = audited(&b, "tool.edit_block");
    assert_eq!(edits.len(), 3, "{edits:?}");
    assert_eq!(
        edits
            .iter()
            .filter(|l| l["detail"]["phase"] == "done")
            .count(),
        1,
        "{edits:?}"
    );
}

#[test]
fn no_path_leaves_the_workspace_or_reaches_collies_own_files() {
    let b = bridge();
    let files = b.pair("filer", "files");
    let h = home(&b);
    write(&h.join("ok.txt"), "fine");
    // A symlink inside the home folder that points at the state dir, and one at /etc.
    std::os::unix::fs::symlink(b.state(), h.join("state-link")).expect("symlink");
    std::os::unix::fs::symlink("/etc", h.join("etc-link")).expect("symlink");
    let outside = [
        json!({"path": "state-link/audit.log"}),
        json!({"path": "state-link/local-secret"}),
        json!({"path": "etc-link/passwd"}),
        json!({"path": "../state/local-secret"}),
        json!({"path": b.state().join("local-secret").display().to_string()}),
        json!({"path": "/etc/passwd"}),
    ];
    for args in outside {
        let (status, body) = tool(&b, &files, "read_file", args.clone());
        assert_eq!(status, 403, "{args}: {body}");
        assert!(
            matches!(
                body["error"].as_str(),
                Some("path outside the workspace" | "path not allowed")
            ),
            "{args}: {body}"
        );
    }
    // Writing through a link out is refused too, and nothing lands outside.
    let (status, _) = tool(
        &b,
        &files,
        "write_file",
        json!({"path": "etc-link/collie-was-here", "content": "x"}),
    );
    assert_eq!(status, 403);
    assert!(!Path::new("/etc/collie-was-here").exists());

    // An agent must not raise its own permissions through Collie: the hook settings of Claude Code
    // and Codex, in the home folder and in a project, are neither readable nor writable.
    write(&h.join(".claude/settings.json"), "{}");
    write(&h.join("proj/.codex/hooks.json"), "{}");
    for path in [
        ".claude/settings.json",
        ".claude/settings.local.json",
        "proj/.claude/settings.json",
        "proj/.codex/hooks.json",
        ".codex/config.toml",
        ".claude.json",
        ".codex/auth.json",
        ".claude/.credentials.json",
    ] {
        let (status, body) = tool(
            &b,
            &files,
            "write_file",
            json!({"path": path, "content": "{\"hooks\":{}}"}),
        );
        assert_eq!(
            (status, body["error"].as_str()),
            (403, Some("path not allowed")),
            "{path}"
        );
    }
    let (status, _) = tool(
        &b,
        &files,
        "read_file",
        json!({"path": ".claude/settings.json"}),
    );
    assert_eq!(status, 403);
    assert_eq!(
        std::fs::read_to_string(h.join(".claude/settings.json")).expect("kept"),
        "{}"
    );
    // Nor by moving a file onto that name.
    let (status, _) = tool(
        &b,
        &files,
        "move_file",
        json!({"source": "ok.txt", "destination": "proj/.codex/hooks.json"}),
    );
    assert_eq!(status, 403);
    // A file named like a Collie state file, anywhere.
    write(&h.join("proj/audit.log"), "not ours");
    let (status, body) = tool(&b, &files, "read_file", json!({"path": "proj/audit.log"}));
    assert_eq!(
        (status, body["error"].as_str()),
        (403, Some("path not allowed"))
    );
    // Listing the home folder shows neither the guarded files nor what the links point at.
    let listed = tool_ok(
        &b,
        &files,
        "list_directory",
        json!({"path": ".", "depth": 3}),
    );
    let text = listed.to_string();
    assert!(text.contains("ok.txt"), "{text}");
    assert!(
        !text.contains("settings.json") && !text.contains("hooks.json"),
        "{text}"
    );
    assert!(
        !text.contains("local-secret") && !text.contains("passwd"),
        "{text}"
    );
    // Each refusal left a security.denied line.
    assert!(audited(&b, "security.denied")
        .iter()
        .any(|l| l["detail"]["reason"] == "path not allowed"));
}

/// Calls `name` through the lead until the member is reachable (it joined a moment ago).
fn tool_via(lead: &TestBridge, token: &str, name: &str, args: Value) -> (u16, Value) {
    wait_for(Duration::from_secs(15), || {
        let (status, body) = tool(lead, token, name, args.clone());
        (body["error"] != "member unreachable").then_some((status, body))
    })
    .expect("the member came online")
}

#[test]
fn one_client_reaches_every_machine_of_the_crew_and_a_member_may_decline() {
    let lead = crew_bridge(false, &[]);
    let member = crew_bridge(false, &[]);
    let mut shy = crew_bridge(false, &[]);
    // `shy` serves no tools to its lead.
    shy.configure("[crew]\ntools = false\n");
    shy.stop();
    shy.launch();
    lead.cli_ok(&["crew", "init"]);
    member.cli_ok(&["crew", "join", &lead.invite(), "--name", "web-1"]);
    shy.cli_ok(&["crew", "join", &lead.invite(), "--name", "web-2"]);
    let phone = lead.pair("phone", "files");
    let reader = lead.pair("reader", "read");
    let token = format!("ghp_{}", "Z9y8X7w6V5".repeat(4));
    write(
        &home(&member).join("m.txt"),
        &format!("on the member {token}\n"),
    );
    write(&home(&lead).join("m.txt"), "on the lead\n");

    // The same tool, the same arguments, another machine: the member's file, masked by both.
    let (status, body) = tool_via(
        &lead,
        &phone,
        "read_file",
        json!({"path": "m.txt", "machine": "web-1"}),
    );
    assert_eq!(status, 200, "{body}");
    let content = body["content"].as_str().expect("content");
    assert!(content.starts_with("on the member ghp_"), "{content}");
    assert!(!content.contains(&token), "{content}");
    let here = tool_ok(&lead, &phone, "read_file", json!({"path": "m.txt"}));
    assert_eq!(here["content"], "on the lead\n");
    // MCP: one client, every machine.
    let (is_error, text, structured) = mcp_call(
        &lead,
        &phone,
        "read_file",
        json!({"path": "m.txt", "machine": "web-1"}),
    );
    assert!(!is_error, "{text}");
    assert_eq!(structured["content"], body["content"]);

    // A relayed write is audited on both machines with one request id; the member's line names
    // the lead and the device.
    let (status, body) = tool(
        &lead,
        &phone,
        "write_file",
        json!({"path": "from-phone.txt", "content": "hello", "machine": "web-1"}),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        std::fs::read_to_string(home(&member).join("from-phone.txt")).expect("written"),
        "hello"
    );
    assert!(!home(&lead).join("from-phone.txt").exists());
    let on_lead = audited(&lead, "tool.write_file");
    let on_member = audited(&member, "tool.write_file");
    assert_eq!(on_lead.len(), 1, "{on_lead:?}");
    assert_eq!(on_lead[0]["detail"]["machine"], "web-1");
    assert!(!on_member.is_empty());
    assert_eq!(on_member[0]["request_id"], on_lead[0]["request_id"]);
    assert_eq!(on_member[0]["device"], "phone");
    assert_eq!(on_member[0]["detail"]["via"], "relay");

    // The tier gate is the lead's, before the relay: a read device never reaches the member.
    let (status, body) = tool(
        &lead,
        &reader,
        "write_file",
        json!({"path": "r.txt", "content": "x", "machine": "web-1"}),
    );
    assert_eq!(
        (status, body["error"].as_str()),
        (403, Some("insufficient tier"))
    );
    assert!(!home(&member).join("r.txt").exists());

    // A member that declines tools: capability missing, and nothing written there.
    let (status, body) = tool_via(
        &lead,
        &phone,
        "write_file",
        json!({"path": "x.txt", "content": "x", "machine": "web-2"}),
    );
    assert_eq!(
        (status, body["error"].as_str()),
        (501, Some("capability missing")),
        "{body}"
    );
    assert!(!home(&shy).join("x.txt").exists());
    assert!(audited(&shy, "tool.write_file").is_empty());
    // Unknown machines.
    let (status, body) = tool(
        &lead,
        &phone,
        "read_file",
        json!({"path": "m.txt", "machine": "nope"}),
    );
    assert_eq!(
        (status, body["error"].as_str()),
        (404, Some("no such machine"))
    );
}

/// A number no other test uses, for a command line to be found by in `/proc`.
fn marker() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{}", 90_000 + (nanos % 9_000) + std::process::id() % 1000)
}

#[test]
fn sessions_belong_to_their_device_and_die_with_the_bridge_even_when_it_is_killed() {
    let mut b = bridge();
    let alice = b.pair("alice", "full");
    let bob = b.pair("bob", "full");
    let reader = b.pair("reader", "read");
    let n = marker();
    // A session whose shell leaves a grandchild in the background.
    let started = tool_ok(
        &b,
        &alice,
        "start_process",
        json!({"command": format!("sleep {n}1 & sleep {n}2; echo done")}),
    );
    let session = started["session"].as_str().expect("session").to_owned();
    assert_eq!(session.len(), 32, "128 bits in hex: {session}");
    let both = wait_for(Duration::from_secs(5), || {
        (procs::live_starting_with(&format!("sleep {n}")).len() == 2).then_some(())
    });
    assert!(
        both.is_some(),
        "{started} {n} {:?}",
        procs::live_starting_with("sleep")
            .iter()
            .map(|p| procs::cmdline(*p))
            .collect::<Vec<_>>()
    );
    let pids: Vec<i32> = procs::live_starting_with(&format!("sleep {n}"));
    assert!(
        !started.to_string().contains(&pids[0].to_string()) || pids[0] < 100,
        "a pid in the answer"
    );

    // Bob cannot see, read, write to or kill Alice's session: it does not exist for him.
    assert_eq!(
        tool_ok(&b, &bob, "list_sessions", json!({}))["sessions"],
        json!([])
    );
    for (name, args) in [
        ("read_process_output", json!({"session": session})),
        (
            "interact_with_process",
            json!({"session": session, "input": "x\n"}),
        ),
        ("kill_process", json!({"session": session})),
        ("force_terminate", json!({"session": session})),
    ] {
        let (status, body) = tool(&b, &bob, name, args);
        assert_eq!(
            (status, body["error"].as_str()),
            (404, Some("no such session")),
            "{name}"
        );
    }
    // A read device may read only its own sessions (it can start none).
    let (status, _) = tool(
        &b,
        &reader,
        "read_process_output",
        json!({"session": session}),
    );
    assert_eq!(status, 404);
    // A pid is not a session: as it is (not an id at all) or dressed up as one.
    let (status, _) = tool(
        &b,
        &alice,
        "kill_process",
        json!({"session": pids[0].to_string()}),
    );
    assert_eq!(status, 400);
    let (status, _) = tool(
        &b,
        &alice,
        "kill_process",
        json!({"session": format!("{:032x}", pids[0])}),
    );
    assert_eq!(status, 404);
    let (status, body) = tool(&b, &alice, "kill_process", json!({"pid": 1}));
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        procs::live_starting_with(&format!("sleep {n}")).len(),
        2,
        "nothing was signalled"
    );
    // Alice's own session is hers.
    let listed = tool_ok(&b, &alice, "list_sessions", json!({}));
    assert_eq!(listed["sessions"][0]["session"], session.as_str());

    // The bridge is SIGKILLed: no cleanup of its own, yet the whole group goes with it.
    b.kill_hard();
    let gone = wait_for(Duration::from_secs(10), || {
        procs::live_starting_with(&format!("sleep {n}"))
            .is_empty()
            .then_some(())
    });
    assert!(
        gone.is_some(),
        "left behind: {:?}",
        procs::live_starting_with(&format!("sleep {n}"))
    );

    // After a restart the old session is no more, for anyone.
    b.launch();
    let (status, body) = tool(
        &b,
        &alice,
        "read_process_output",
        json!({"session": session}),
    );
    assert_eq!(
        (status, body["error"].as_str()),
        (404, Some("no such session"))
    );
    assert_eq!(
        tool_ok(&b, &alice, "list_sessions", json!({}))["sessions"],
        json!([])
    );
}

#[test]
fn exec_runs_to_its_end_within_the_devices_limits() {
    let b = bridge();
    let full = b.pair("owner", "full");
    let other = b.pair("other", "full");
    let ran = tool_ok(
        &b,
        &full,
        "exec_command",
        json!({"command": "echo hi; echo TOKEN=hunter2 >&2; exit 3"}),
    );
    assert_eq!(ran["exit_code"], 3);
    assert_eq!(ran["stdout"], "hi\n");
    // The audit holds the first word and the length, then the exit code — not the command.
    let lines = audited(&b, "tool.exec_command");
    assert_eq!(lines[0]["detail"]["command_first_word"], "echo");
    assert!(
        lines.iter().any(|l| l["detail"]["exit_code"] == 3),
        "{lines:?}"
    );
    let log = std::fs::read_to_string(b.state().join("audit.log")).expect("audit.log");
    assert!(!log.contains("hunter2") && !log.contains("echo hi"));

    // The per-device concurrency limit: the device's fifth concurrent exec is refused, another
    // device is not held up by it, and the refusal is audited resource.denied.
    let limit = 4;
    let n = marker();
    let running: Vec<_> = (0..limit)
        .map(|_| {
            let url = b.url("/api/tools/exec_command");
            let token = full.clone();
            let command = format!("sleep {n}.5");
            std::thread::spawn(move || {
                ureq::post(&url)
                    .set("Authorization", &format!("Bearer {token}"))
                    .send_json(json!({"command": command, "timeout_ms": 4000}))
                    .map(|r| r.status())
                    .unwrap_or_else(|e| match e {
                        ureq::Error::Status(s, _) => s,
                        _ => 0,
                    })
            })
        })
        .collect();
    let all_running = wait_for(Duration::from_secs(10), || {
        (procs::live_starting_with(&format!("sleep {n}.5")).len() == limit).then_some(())
    });
    assert!(
        all_running.is_some(),
        "{:?}",
        procs::live_starting_with("sleep")
    );
    let (status, body) = tool(&b, &full, "exec_command", json!({"command": "true"}));
    assert_eq!(
        (status, body["error"].as_str()),
        (503, Some("resource limit"))
    );
    tool_ok(&b, &other, "exec_command", json!({"command": "true"}));
    assert!(audited(&b, "resource.denied")
        .iter()
        .any(|l| l["device"] == "owner" && l["detail"]["tool"] == "exec_command"));
    for t in running {
        assert_eq!(t.join().expect("exec thread"), 200);
    }
}

#[test]
fn an_unreadable_policy_denies_every_tool_at_every_door() {
    use collie_actors::store::{Store, Table};
    let mut b = bridge();
    let token = b.pair("phone", "full");
    write(&home(&b).join("a.txt"), "a");
    b.stop();
    {
        let store = Store::open(&b.state().join("db")).expect("store");
        store
            .put(Table::Devices, "phone", b"{ half-written")
            .expect("put");
    }
    b.launch();
    // A broken policy never means "allow": every tool and MCP itself answer `pairing unavailable`.
    for name in ["read_file", "write_file", "exec_command"] {
        let (status, body) = tool(
            &b,
            &token,
            name,
            json!({"path": "a.txt", "content": "b", "command": "true"}),
        );
        assert_eq!(
            (status, body["error"].as_str()),
            (503, Some("pairing unavailable")),
            "{name}"
        );
    }
    let (status, _) = mcp(&b, Some(&token), 1, "tools/list", json!({}));
    assert_eq!(status, 503);
    assert_eq!(
        std::fs::read_to_string(home(&b).join("a.txt")).expect("a"),
        "a"
    );
}

#[test]
fn tier_changes_racing_tool_calls_never_let_a_write_through_a_lower_tier() {
    let b = bridge();
    let token = b.pair("phone", "files");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // One thread flips the tier between `files` and `read` as fast as the CLI can.
    let flipper = {
        let stop = std::sync::Arc::clone(&stop);
        let mut cmd = b.command();
        cmd.args(["devices", "set-tier", "phone"]);
        let base: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let envs: Vec<(String, String)> = cmd
            .get_envs()
            .filter_map(|(k, v)| {
                Some((
                    k.to_string_lossy().into_owned(),
                    v?.to_string_lossy().into_owned(),
                ))
            })
            .collect();
        std::thread::spawn(move || {
            let mut flips = 0;
            for tier in ["read", "files"].iter().cycle() {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                let ok = std::process::Command::new(support::collie_bin())
                    .env_clear()
                    .envs(envs.iter().map(|(k, v)| (k, v)))
                    .args(&base)
                    .arg(tier)
                    .output()
                    .is_ok_and(|o| o.status.success());
                assert!(ok, "set-tier {tier}");
                flips += 1;
            }
            flips
        })
    };
    // Meanwhile: writes, each answered 200 or `insufficient tier`, nothing else.
    let mut answered = std::collections::BTreeMap::new();
    for i in 0..60 {
        let (status, body) = tool(
            &b,
            &token,
            "write_file",
            json!({"path": "race.txt", "content": i.to_string()}),
        );
        assert!(
            status == 200 || (status == 403 && body["error"] == "insufficient tier"),
            "{status} {body}"
        );
        *answered.entry(status).or_insert(0) += 1;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let flips = flipper.join().expect("flipper");
    assert!(flips >= 2, "the tier changed only {flips} times");
    // Once the tier rests at `read`, no write passes.
    b.cli_ok(&["devices", "set-tier", "phone", "read"]);
    let before = std::fs::read_to_string(home(&b).join("race.txt")).unwrap_or_default();
    let (status, _) = tool(
        &b,
        &token,
        "write_file",
        json!({"path": "race.txt", "content": "late"}),
    );
    assert_eq!(status, 403);
    assert_eq!(
        std::fs::read_to_string(home(&b).join("race.txt")).unwrap_or_default(),
        before
    );
    // Every change of tier is audited (old, new, version) — as many lines as flips that changed it.
    assert!(audited(&b, "device.tier").len() >= flips, "{answered:?}");
}
