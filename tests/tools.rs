//! Black-box tests of the tools under tiers (SPEC §11) through their three doors — the phone API
//! (`POST /api/tools/{tool}`), MCP (`POST /mcp`) and the crew relay — against a real bridge, a
//! real home folder in a temp dir and real processes. Most of them are the red-team list of seed
//! 003 §8.13 and the field's guardrail failures, each trying the attack and asserting it fails.

mod support;

use std::path::Path;

use serde_json::{json, Value};
use support::{Opts, TestBridge};

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
