//! Black-box tests of held permissions (SPEC §10.1, §10.2): a real bridge, the real `collie hook
//! claude-permission` run inside a real tmux pane with Claude Code's documented hook input on
//! stdin, and the phone API answering it. What the hook prints is what Claude Code would read.

#[path = "support/hook.rs"]
mod hook;
mod support;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use hook::Hook;
use serde_json::{json, Value};
use support::{crew_bridge, crew_bridge_configured, json_of, wait_for, Opts, TestBridge};

/// Claude Code's PermissionRequest hook input for a Bash call (the fields it sends, as recorded
/// from a real session: see docs/guide/hooks.md).
fn bash_request(command: &str) -> Value {
    json!({
        "session_id": "3f1c-session",
        "transcript_path": "/tmp/none.jsonl",
        "cwd": "/tmp",
        "permission_mode": "default",
        "hook_event_name": "PermissionRequest",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "Run the tests"},
        "permission_suggestions": [
            {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": command}],
             "behavior": "allow", "destination": "localSettings"},
            {"type": "setMode", "mode": "acceptEdits", "destination": "session"}
        ]
    })
}

/// The one waiting card (waits until there is exactly one).
fn the_card(b: &TestBridge, token: &str) -> Value {
    wait_for(Duration::from_secs(10), || {
        let (status, v) = b.get("/api/cards", Some(token));
        assert_eq!(status, 200, "{v}");
        let cards = v["cards"].as_array().cloned().unwrap_or_default();
        (cards.len() == 1).then(|| cards[0].clone())
    })
    .expect("no card appeared")
}

fn answer(b: &TestBridge, token: &str, card: &Value, option: &str) -> (u16, Value) {
    b.post(
        &format!("/api/cards/{}/answer", card["id"].as_str().expect("id")),
        Some(token),
        &json!({"option": option, "shown": card["shown"]}),
    )
}

fn printed(out: &str) -> Value {
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("hook printed {out:?}: {e}"))
}

#[test]
fn a_tap_decides_the_held_permission_and_nothing_else_does() {
    let b = TestBridge::start();
    let phone = b.pair("pixel", "full");
    let reader = b.pair("reader", "read");

    // Allow.
    let hook = Hook::start(&b, "allow", &bash_request("cargo test"));
    let card = the_card(&b, &phone);
    assert_eq!(card["source"], "claude");
    assert_eq!(card["state"], "waiting");
    assert_eq!(card["title"], "Claude Code asks to use Bash");
    assert_eq!(card["pane_name"], "allow", "the hook's own tmux window");
    assert!(card["items"]
        .as_array()
        .expect("items")
        .contains(&json!({"kind": "code", "text": "cargo test"})));
    let options: Vec<&str> = card["options"]
        .as_array()
        .expect("options")
        .iter()
        .filter_map(|o| o["id"].as_str())
        .collect();
    assert_eq!(options, ["allow", "deny", "always"]);
    // Nobody but a full device's tap, with the hash of what it was shown.
    assert_eq!(
        answer(&b, &reader, &card, "allow"),
        (403, json!({"error": "insufficient tier"}))
    );
    let secret = std::fs::read_to_string(b.state().join("local-secret")).expect("secret");
    assert_eq!(
        answer(&b, secret.trim(), &card, "allow"),
        (403, json!({"error": "device not paired"}))
    );
    let stale = b.post(
        &format!("/api/cards/{}/answer", card["id"].as_str().expect("id")),
        Some(&phone),
        &json!({"option": "allow", "shown": "0".repeat(64)}),
    );
    assert_eq!(stale, (409, json!({"error": "card changed"})));
    assert_eq!(
        answer(&b, &phone, &card, "sometimes"),
        (400, json!({"error": "unknown option: sometimes"}))
    );
    // The CLI reads cards and cannot answer one.
    let listed = b.cli_ok(&["cards"]);
    let short = &card["id"].as_str().expect("id")[..8];
    assert!(
        listed.contains("waiting") && listed.contains(short),
        "{listed}"
    );
    let json_list: Value = serde_json::from_str(&b.cli_ok(&["cards", "--json"])).expect("JSON");
    assert_eq!(json_list["cards"][0]["id"], card["id"]);
    assert!(!b.cli(&["cards", "answer"]).status.success());
    // A negative: a refused answer that wrongly decided would reach the hook well within this.
    std::thread::sleep(Duration::from_millis(300));
    assert!(hook.running(), "no refused answer decided anything");
    assert_eq!(
        answer(&b, &phone, &card, "allow"),
        (200, json!({"ok": true, "delivered": true}))
    );
    let (out, code) = hook.finished();
    assert_eq!(code, "0");
    assert_eq!(
        printed(&out),
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
            "decision": {"behavior": "allow"}}})
    );
    assert_eq!(
        answer(&b, &phone, &card, "allow"),
        (410, json!({"error": "card closed"}))
    );

    // Deny names the device.
    let hook = Hook::start(&b, "deny", &bash_request("rm -rf target"));
    let card = the_card(&b, &phone);
    assert_eq!(answer(&b, &phone, &card, "deny").0, 200);
    let (out, _) = hook.finished();
    assert_eq!(
        printed(&out)["hookSpecificOutput"]["decision"],
        json!({"behavior": "deny", "message": "Denied from pixel via Collie"})
    );

    // Always allow takes two taps and applies only the suggested rule, never the mode.
    let hook = Hook::start(&b, "always", &bash_request("make"));
    let card = the_card(&b, &phone);
    let (status, first) = answer(&b, &phone, &card, "always");
    assert_eq!(status, 200, "{first}");
    let confirm = first["confirm"]
        .as_str()
        .expect("a confirm token")
        .to_owned();
    // A negative, as above: a first tap that wrongly decided would have reached the hook by now.
    std::thread::sleep(Duration::from_millis(300));
    assert!(hook.running(), "one tap is not enough for always");
    let second = b.post(
        &format!("/api/cards/{}/answer", card["id"].as_str().expect("id")),
        Some(&phone),
        &json!({"option": "always", "shown": card["shown"], "confirm": confirm}),
    );
    assert_eq!(second, (200, json!({"ok": true, "delivered": true})));
    let (out, _) = hook.finished();
    let decision = &printed(&out)["hookSpecificOutput"]["decision"];
    assert_eq!(decision["behavior"], "allow");
    assert_eq!(
        decision["updatedPermissions"],
        json!([{"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "make"}],
            "behavior": "allow", "destination": "localSettings"}])
    );

    // Answered at the machine: the hook goes away, the card says so at once, a late tap is 410.
    let hook = Hook::start(&b, "elsewhere", &bash_request("ls"));
    let card = the_card(&b, &phone);
    let killed = b
        .tmux
        .as_ref()
        .expect("tmux")
        .cmd()
        .args(["kill-window", "-t", &hook.window])
        .status()
        .expect("kill-window");
    assert!(killed.success());
    let receipt = wait_for(Duration::from_secs(5), || {
        let (_, v) = b.get("/api/cards", Some(&phone));
        v["receipts"]
            .as_array()
            .and_then(|r| r.iter().find(|r| r["card"] == card["id"]).cloned())
    })
    .expect("no receipt for the card answered elsewhere");
    assert_eq!(receipt["state"], "answered elsewhere");
    assert_eq!(
        answer(&b, &phone, &card, "allow"),
        (410, json!({"error": "card closed"}))
    );

    // Every tap is audited with the device, the card, its source and the option — no command.
    let answered: Vec<Value> = b
        .audit_lines()
        .into_iter()
        .filter(|l| l["event"] == "card.answered")
        .collect();
    assert_eq!(answered.len(), 3, "{answered:?}");
    assert!(answered.iter().all(|l| l["device"] == "pixel"));
    let options: Vec<&str> = answered
        .iter()
        .filter_map(|l| l["detail"]["option"].as_str())
        .collect();
    assert_eq!(options, ["allow", "deny", "always"]);
    assert!(answered.iter().all(|l| l["detail"]["source"] == "claude"));
    assert!(!answered
        .iter()
        .any(|l| l.to_string().contains("cargo test") || l.to_string().contains("rm -rf")));
}

/// Opens `GET /api/cards/stream` as `token`; each SSE event arrives as (event name, data).
fn card_stream(b: &TestBridge, token: &str) -> mpsc::Receiver<(String, Value)> {
    b.sse("/api/cards/stream", token)
}

fn next_event(events: &mpsc::Receiver<(String, Value)>) -> (String, Value) {
    events
        .recv_timeout(Duration::from_secs(10))
        .expect("an event on the card stream")
}

#[test]
fn the_card_stream_shows_each_change_and_ends_when_the_device_is_revoked() {
    let b = TestBridge::start();
    let phone = b.pair("pixel", "full");
    let watcher = b.pair("watcher", "read");
    let events = card_stream(&b, &watcher);
    assert_eq!(
        next_event(&events),
        ("cards".to_owned(), json!({"cards": [], "receipts": []}))
    );
    let hook = Hook::start(&b, "streamed", &bash_request("cargo build"));
    let (name, opened) = next_event(&events);
    assert_eq!(
        (name.as_str(), &opened["state"]),
        ("card", &json!("waiting"))
    );
    assert_eq!(opened["title"], "Claude Code asks to use Bash");
    assert_eq!(answer(&b, &phone, &opened, "allow").0, 200);
    let (name, answered) = next_event(&events);
    assert_eq!(
        (name.as_str(), &answered["id"], &answered["state"]),
        ("card", &opened["id"], &json!("answered"))
    );
    hook.finished();
    b.cli_ok(&["devices", "revoke", "watcher"]);
    assert_eq!(
        next_event(&events),
        ("closed".to_owned(), json!({"error": "device not paired"}))
    );
}

/// Runs `collie hook claude-permission` from the test process itself (not in any pane) with
/// `stdin`, against the state dir `state`; returns (exit code, stdout, stderr).
fn run_hook(b: &TestBridge, state: &Path, stdin: &[u8]) -> (i32, String, String) {
    use std::io::Write;
    let mut cmd = b.command();
    cmd.env("COLLIE_STATE_DIR", state)
        .args(["hook", "claude-permission"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("collie hook");
    let mut input = child.stdin.take().expect("stdin");
    // A hook that stops reading early must not make this test fail on a broken pipe.
    let _ = input.write_all(stdin);
    drop(input);
    let out = child.wait_with_output().expect("hook output");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn every_failure_prints_nothing_and_exits_zero() {
    let b = TestBridge::start();
    let phone = b.pair("pixel", "full");
    let request = bash_request("cargo test").to_string();

    // Outside any pane: the bridge does not answer for the process, and no card is made.
    assert_eq!(
        run_hook(&b, &b.state(), request.as_bytes()),
        (0, String::new(), String::new())
    );
    let (_, v) = b.get("/api/cards", Some(&phone));
    assert_eq!(v["cards"], json!([]));

    // Not JSON, not an object, a wrong event, too large.
    for bad in [
        b"not json".to_vec(),
        b"[1,2]".to_vec(),
        json!({"hook_event_name": "PreToolUse", "tool_name": "Bash"})
            .to_string()
            .into_bytes(),
        vec![b' '; 1024 * 1024 + 10],
    ] {
        assert_eq!(
            run_hook(&b, &b.state(), &bad),
            (0, String::new(), String::new())
        );
    }

    // No bridge: a state dir without a socket.
    let empty = b.dir.path().join("empty-state");
    std::fs::create_dir(&empty).expect("mkdir");
    assert_eq!(
        run_hook(&b, &empty, request.as_bytes()),
        (0, String::new(), String::new())
    );

    // A socket path someone else could replace: the state dir opened to the group.
    let state = b.state();
    let wide = Command::new("chmod")
        .arg("750")
        .arg(&state)
        .status()
        .expect("chmod");
    assert!(wide.success());
    let hook = Hook::start(&b, "wide", &bash_request("cargo test"));
    let (out, code) = hook.finished();
    assert_eq!((out.as_str(), code.as_str()), ("", "0"));
    let (_, v) = b.get("/api/cards", Some(&phone));
    assert_eq!(v["cards"], json!([]), "the hook refused to connect");
}

#[test]
fn the_hold_deadline_lets_the_agent_ask_in_its_terminal() {
    // A bridge whose config holds permissions for 2 s.
    let b = TestBridge::start_with(Opts {
        with_tmux: true,
        config: Some("[hooks]\nhold = 2\n".to_owned()),
        ..Opts::default()
    });
    let phone = b.pair("pixel", "full");
    let hook = Hook::start(&b, "late", &bash_request("sleep 1"));
    let card = the_card(&b, &phone);
    let (out, code) = hook.finished();
    assert_eq!((out.as_str(), code.as_str()), ("", "0"));
    let (_, v) = b.get("/api/cards", Some(&phone));
    let receipt = v["receipts"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["card"] == card["id"]).cloned())
        .expect("a receipt");
    assert_eq!(receipt["state"], "expired");
    assert_eq!(
        answer(&b, &phone, &card, "allow"),
        (410, json!({"error": "card closed"}))
    );
}

#[test]
fn a_member_s_card_is_answered_through_the_lead_and_audited_on_both() {
    let lead = crew_bridge(false, &[]);
    let member = crew_bridge(true, &[]);
    lead.cli_ok(&["crew", "init"]);
    member.cli_ok(&["crew", "join", &lead.invite(), "--name", "web-1"]);
    assert!(
        wait_for(Duration::from_secs(10), || {
            let status = json_of(&lead.cli_ok(&["crew", "status", "--json"]));
            status["members"]
                .as_array()
                .is_some_and(|ms| {
                    ms.iter()
                        .any(|m| m["name"] == "web-1" && m["online"] == true)
                })
                .then_some(())
        })
        .is_some(),
        "web-1 did not come online"
    );
    let phone = lead.pair("pixel", "full");
    let events = card_stream(&lead, &phone);
    assert_eq!(
        next_event(&events),
        ("cards".to_owned(), json!({"cards": [], "receipts": []}))
    );
    let hook = Hook::start(&member, "remote", &bash_request("make deploy"));
    let (name, pushed) = next_event(&events);
    assert_eq!(
        (name.as_str(), &pushed["machine"], &pushed["state"]),
        ("card", &json!("web-1"), &json!("waiting")),
        "the member's card reaches the lead's stream"
    );
    let card = the_card(&lead, &phone);
    assert_eq!(card["machine"], "web-1");
    assert_eq!(pushed["shown"], card["shown"], "one rendering, one hash");
    assert_eq!(card["pane_name"], "remote");
    let id = card["id"].as_str().expect("id").to_owned();
    let tap = |option: &str, shown: &Value| {
        lead.post(
            &format!("/api/cards/{id}/answer"),
            Some(&phone),
            &json!({"option": option, "shown": shown, "machine": "web-1"}),
        )
    };
    assert_eq!(
        tap("allow", &json!("0".repeat(64))),
        (409, json!({"error": "card changed"}))
    );
    let elsewhere = lead.post(
        &format!("/api/cards/{}/answer", "f".repeat(32)),
        Some(&phone),
        &json!({"option": "allow", "shown": card["shown"], "machine": "web-1"}),
    );
    assert_eq!(elsewhere, (410, json!({"error": "card closed"})));
    assert!(hook.running());
    assert_eq!(
        tap("allow", &card["shown"]),
        (200, json!({"ok": true, "delivered": true}))
    );
    let (out, _) = hook.finished();
    assert_eq!(
        printed(&out)["hookSpecificOutput"]["decision"],
        json!({"behavior": "allow"})
    );
    let (name, answered) = next_event(&events);
    assert_eq!(
        (name.as_str(), &answered["id"], &answered["state"]),
        ("card", &card["id"], &json!("answered"))
    );
    let on_lead: Vec<Value> = lead
        .audit_lines()
        .into_iter()
        .filter(|l| l["event"] == "card.answered")
        .collect();
    let on_member: Vec<Value> = member
        .audit_lines()
        .into_iter()
        .filter(|l| l["event"] == "card.answered")
        .collect();
    assert_eq!((on_lead.len(), on_member.len()), (1, 1));
    assert_eq!(on_lead[0]["request_id"], on_member[0]["request_id"]);
    assert_eq!(on_lead[0]["device"], "pixel");
    assert_eq!(on_member[0]["device"], "pixel");
    assert_eq!(on_member[0]["detail"]["via"], "relay");
    assert_eq!(on_lead[0]["detail"]["machine"], "web-1");
}

/// One line to a Unix socket of the bridge, and everything it answers before closing.
fn over_socket(path: &Path, line: &str) -> String {
    use std::io::Read;
    use std::os::unix::net::UnixStream;
    let mut s = UnixStream::connect(path).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    s.write_all(format!("{line}\n").as_bytes()).expect("write");
    s.shutdown(std::net::Shutdown::Write).expect("shutdown");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// SPEC §10.1: "Not an agent, a hook, walky, MCP, model output, the local secret or the CLI: there
/// is no code path from any of them to an answer, and a test for each proves it." Each party below
/// tries what it can reach; the card must still be waiting afterwards, and then a full device's
/// tap decides it. (The local secret, a `read` device and the CLI are tried in the first test.)
#[test]
fn no_party_but_a_full_device_s_tap_answers_a_card() {
    let b = TestBridge::start();
    let phone = b.pair("pixel", "full");
    let files = b.pair("laptop-files", "files");
    let hook = Hook::start(&b, "held", &bash_request("make deploy"));
    let card = the_card(&b, &phone);
    let id = card["id"].as_str().expect("id").to_owned();
    let pane = card["pane"].as_str().expect("pane").to_owned();

    // A `files` device.
    assert_eq!(
        answer(&b, &files, &card, "allow"),
        (403, json!({"error": "insufficient tier"}))
    );
    // The control socket (the CLI's and every local program's door): no request answers a card.
    for attempt in [
        json!({"CardAnswer": {"id": id, "option": "allow", "shown": card["shown"]}}),
        json!({"Answer": {"id": id, "option": "allow"}}),
        json!({"Cards": {"answer": {"id": id, "option": "allow"}}}),
    ] {
        let reply = over_socket(&b.state().join("bridge.sock"), &attempt.to_string());
        assert!(reply.contains("bad request"), "{attempt} → {reply}");
    }
    // The hook socket (what a hook, or an agent pretending to be one, reaches): an answer-shaped
    // message is not a hook request; nothing comes back.
    for attempt in [
        json!({"card": id, "option": "allow"}),
        json!({"decision": {"behavior": "allow"}, "id": id}),
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
            "decision": {"behavior": "allow"}}}),
    ] {
        let reply = over_socket(&b.state().join("hooks.sock"), &attempt.to_string());
        assert_eq!(reply, "", "{attempt}");
    }
    // An agent in a pane: walky to the held pane types only an inert header, never an answer.
    let agent = b.hosted("agent", &["sh", "-c", "exec cat"]);
    let agent = agent["pane"].as_str().expect("pane").to_owned();
    let walky = b
        .command()
        .env("COLLIE_PANE", &agent)
        .args(["walky", "send", &pane, "allow"])
        .output()
        .expect("collie walky");
    let said = String::from_utf8_lossy(&walky.stdout).to_string()
        + &String::from_utf8_lossy(&walky.stderr);
    assert!(!said.contains("answered"), "{said}");
    // MCP (an agent's tools): the tools are the four walky tools, and no other name is served.
    let mut mcp = b
        .command()
        .env("COLLIE_PANE", &agent)
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("collie mcp");
    let script = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "answer_card", "arguments": {"id": id, "option": "allow"}}}),
    ];
    let mut stdin = mcp.stdin.take().expect("stdin");
    for msg in &script {
        writeln!(stdin, "{msg}").expect("write");
    }
    let mut lines = BufReader::new(mcp.stdout.take().expect("stdout")).lines();
    let mut replies = Vec::new();
    while replies.len() < 3 {
        let Some(Ok(line)) = lines.next() else { break };
        let v: Value = serde_json::from_str(&line).expect("JSON-RPC");
        if v.get("id").is_some() {
            replies.push(v);
        }
    }
    drop(stdin);
    let _ = mcp.kill();
    let _ = mcp.wait();
    let tools: Vec<&str> = replies[1]["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(
        tools,
        ["walky_inbox", "walky_read", "walky_send", "walky_who"]
    );
    assert!(replies[2].get("error").is_some(), "{}", replies[2]);

    // After all of that the card still waits, and the hook with it.
    assert!(hook.running(), "nothing above decided the card");
    assert_eq!(the_card(&b, &phone)["id"], card["id"]);
    assert_eq!(
        answer(&b, &phone, &card, "deny"),
        (200, json!({"ok": true, "delivered": true}))
    );
    let (out, _) = hook.finished();
    assert_eq!(
        printed(&out)["hookSpecificOutput"]["decision"]["behavior"],
        "deny"
    );
}

/// A crew member that joined `lead` as `name` and is online.
fn joined(lead: &TestBridge, name: &str) -> TestBridge {
    joined_with(lead, name, None)
}

/// As [`joined`], with extra environment for the member's bridge.
fn joined_with(lead: &TestBridge, name: &str, config: Option<&str>) -> TestBridge {
    let member = crew_bridge_configured(true, &[], config);
    member.cli_ok(&["crew", "join", &lead.invite(), "--name", name]);
    wait_for(Duration::from_secs(10), || {
        let status = json_of(&lead.cli_ok(&["crew", "status", "--json"]));
        status["members"]
            .as_array()?
            .iter()
            .any(|m| m["name"] == name && m["online"] == true)
            .then_some(())
    })
    .unwrap_or_else(|| panic!("{name} did not come online"));
    member
}

/// The lead's waiting card from `machine` whose title is `title` (waits for it).
fn card_from(lead: &TestBridge, token: &str, machine: &str, title: &str) -> Value {
    wait_for(Duration::from_secs(10), || {
        let (_, v) = lead.get("/api/cards", Some(token));
        v["cards"]
            .as_array()?
            .iter()
            .find(|c| c["machine"] == machine && c["title"] == title)
            .cloned()
    })
    .unwrap_or_else(|| panic!("no card {title:?} from {machine}"))
}

fn tap_on(lead: &TestBridge, token: &str, card: &Value, body: Value) -> (u16, Value) {
    let mut body = body;
    body["shown"] = card["shown"].clone();
    body["machine"] = card["machine"].clone();
    lead.post(
        &format!("/api/cards/{}/answer", card["id"].as_str().expect("id")),
        Some(token),
        &body,
    )
}

/// The same loop through a lead with two members: each member's held permission — deny, always
/// (two taps), answered at the machine — and a screen prompt on a member, typed through the relay
/// only while its dialog is on the member's screen.
#[test]
fn two_members_cards_are_decided_from_the_lead_s_phone() {
    let lead = crew_bridge(false, &[]);
    lead.cli_ok(&["crew", "init"]);
    let web1 = joined(&lead, "web-1");
    let web2 = joined(&lead, "web-2");
    let phone = lead.pair("pixel", "full");
    const BASH: &str = "Claude Code asks to use Bash";

    // Deny on web-2.
    let denied = Hook::start(&web2, "deny", &bash_request("rm -rf /srv"));
    let card = card_from(&lead, &phone, "web-2", BASH);
    assert_eq!(
        tap_on(&lead, &phone, &card, json!({"option": "deny"})).0,
        200
    );
    let (out, _) = denied.finished();
    assert_eq!(
        printed(&out)["hookSpecificOutput"]["decision"],
        json!({"behavior": "deny", "message": "Denied from pixel via Collie"})
    );

    // Always on web-1: the first tap decides nothing, the second carries its token.
    let always = Hook::start(&web1, "always", &bash_request("cargo test"));
    let card = card_from(&lead, &phone, "web-1", BASH);
    let (status, first) = tap_on(&lead, &phone, &card, json!({"option": "always"}));
    assert_eq!(status, 200, "{first}");
    let token = first["confirm"]
        .as_str()
        .expect("a confirm token")
        .to_owned();
    assert!(always.running(), "one tap decides nothing");
    let (status, _) = tap_on(
        &lead,
        &phone,
        &card,
        json!({"option": "always", "confirm": token}),
    );
    assert_eq!(status, 200);
    let (out, _) = always.finished();
    let decision = &printed(&out)["hookSpecificOutput"]["decision"];
    assert_eq!(decision["behavior"], "allow");
    assert_eq!(decision["updatedPermissions"][0]["type"], "addRules");

    // Answered at web-2's keyboard first: the hook goes away, a late tap gets 410.
    let _elsewhere = Hook::start(&web2, "elsewhere", &bash_request("make"));
    let card = card_from(&lead, &phone, "web-2", BASH);
    let tmux = web2.tmux.as_ref().expect("tmux");
    assert!(tmux
        .cmd()
        .args(["kill-window", "-t", "main:elsewhere"])
        .status()
        .expect("tmux")
        .success());
    wait_for(Duration::from_secs(10), || {
        let (_, v) = lead.get("/api/cards", Some(&phone));
        v["receipts"]
            .as_array()?
            .iter()
            .any(|r| r["card"] == card["id"] && r["state"] == "answered elsewhere")
            .then_some(())
    })
    .expect("answered elsewhere, seen from the lead");
    assert_eq!(
        tap_on(&lead, &phone, &card, json!({"option": "allow"})),
        (410, json!({"error": "card closed"}))
    );

    // A screen prompt on web-1, answered from the lead: the number is typed on web-1.
    let script = web1.dir.path().join("dialog.sh");
    std::fs::write(&script, include_str!("fixtures/screen-dialog.sh")).expect("script");
    let (typed, moving) = (
        web1.dir.path().join("typed"),
        web1.dir.path().join("moving"),
    );
    let arg = |p: &Path| p.display().to_string();
    web1.hosted(
        "agent",
        &["bash", &arg(&script), &arg(&typed), &arg(&moving)],
    );
    let card = card_from(&lead, &phone, "web-1", "Do you want to proceed?");
    assert_eq!(card["source"], "screen");
    assert_eq!(
        tap_on(&lead, &phone, &card, json!({"option": "1"})),
        (200, json!({"ok": true, "delivered": true}))
    );
    let got = wait_for(Duration::from_secs(10), || {
        std::fs::read_to_string(&typed)
            .ok()
            .filter(|s| !s.is_empty())
    });
    assert_eq!(got.as_deref(), Some("1"));

    // And one whose dialog then left web-1's screen: refused through the relay, nothing typed.
    let (second, moving2) = (
        web1.dir.path().join("typed-2"),
        web1.dir.path().join("moving-2"),
    );
    let pane = web1.hosted(
        "agent-2",
        &["bash", &arg(&script), &arg(&second), &arg(&moving2)],
    );
    let pane = pane["pane"].as_str().expect("pane").to_owned();
    let card = wait_for(Duration::from_secs(10), || {
        let (_, v) = lead.get("/api/cards", Some(&phone));
        v["cards"]
            .as_array()?
            .iter()
            .find(|c| c["pane"] == pane.as_str() && c["machine"] == "web-1")
            .cloned()
    })
    .expect("the second dialog's card");
    std::fs::write(&moving2, "").expect("moving");
    wait_for(Duration::from_secs(10), || {
        let (_, v) = lead.get(&format!("/api/panes/web-1/{pane}"), Some(&phone));
        let text: String = v["lines"]
            .as_array()?
            .iter()
            .filter_map(Value::as_str)
            .collect();
        text.contains("working").then_some(())
    })
    .expect("web-1's screen changed");
    assert_eq!(
        tap_on(&lead, &phone, &card, json!({"option": "1"})),
        (
            409,
            json!({"error": "The screen changed before that could be sent"})
        )
    );
    assert!(
        !second.exists(),
        "nothing was typed into the changed screen"
    );
    drop(web2);
    drop(web1);
}

/// A phone's card stream on the lead follows a member that comes online after it opened.
#[test]
fn the_lead_s_card_stream_follows_a_member_that_joins_later() {
    let lead = crew_bridge(false, &[]);
    lead.cli_ok(&["crew", "init"]);
    let phone = lead.pair("pixel", "full");
    let events = card_stream(&lead, &phone);
    assert_eq!(
        next_event(&events),
        ("cards".to_owned(), json!({"cards": [], "receipts": []}))
    );
    let member = joined(&lead, "web-3");
    let hook = Hook::start(&member, "late", &bash_request("make release"));
    // The card arrives as a change, or in the full list the stream sends once it follows web-3.
    let seen = wait_for(Duration::from_secs(15), || {
        let (name, v) = events.recv_timeout(Duration::from_millis(200)).ok()?;
        let cards = match name.as_str() {
            "card" => vec![v],
            "cards" => v["cards"].as_array().cloned().unwrap_or_default(),
            _ => Vec::new(),
        };
        cards
            .into_iter()
            .find(|c| c["machine"] == "web-3" && c["state"] == "waiting")
    })
    .expect("web-3's card on the stream opened before it joined");
    assert_eq!(seen["pane_name"], "late");
    assert!(hook.running());
}

/// The two taps of "Always allow" are one device's: another device cannot confirm with its token,
/// and a device revoked between its taps decides nothing.
#[test]
fn a_device_revoked_between_its_two_taps_decides_nothing() {
    let b = TestBridge::start();
    let phone = b.pair("pixel", "full");
    let other = b.pair("tablet", "full");
    let hook = Hook::start(&b, "revoked", &bash_request("cargo publish"));
    let card = the_card(&b, &phone);
    let (status, first) = answer(&b, &phone, &card, "always");
    assert_eq!(status, 200, "{first}");
    let token = first["confirm"].as_str().expect("token").to_owned();
    // Another device holding pixel's token does not confirm with it: that is a first tap of its
    // own.
    let borrowed = b.post(
        &format!("/api/cards/{}/answer", card["id"].as_str().expect("id")),
        Some(&other),
        &json!({"option": "always", "shown": card["shown"], "confirm": token}),
    );
    assert_eq!(borrowed.0, 200, "{borrowed:?}");
    assert!(borrowed.1["confirm"].is_string(), "{borrowed:?}");
    assert!(hook.running(), "a borrowed token decided nothing");
    b.cli_ok(&["devices", "revoke", "pixel"]);
    let second = b.post(
        &format!("/api/cards/{}/answer", card["id"].as_str().expect("id")),
        Some(&phone),
        &json!({"option": "always", "shown": card["shown"], "confirm": token}),
    );
    assert_eq!(second.0, 403, "{second:?}");
    // Another device's token-less second tap is a first tap of its own, not a confirmation.
    let (status, again) = answer(&b, &other, &card, "always");
    assert_eq!(status, 200);
    assert!(again["confirm"].is_string(), "{again}");
    assert!(hook.running(), "nothing was decided");
    assert!(!b
        .audit_lines()
        .iter()
        .any(|l| l["event"] == "card.answered"));
}

/// A hook run by Codex's shared background server (`codex app-server --managed-daemon`) is not
/// answered: its parent chain names the first Codex's pane, whichever Codex asked.
#[test]
fn a_hook_under_an_agent_s_shared_server_is_not_answered() {
    let b = TestBridge::start_with(Opts {
        with_tmux: true,
        log_to_file: true,
        ..Opts::default()
    });
    let phone = b.pair("pixel", "full");
    let hook = Hook::start_under(
        &b,
        "daemon",
        &bash_request("touch marker"),
        &["app-server", "--managed-daemon"],
    );
    let (out, code) = hook.finished();
    assert_eq!((out.as_str(), code.as_str()), ("", "0"), "silent, exit 0");
    let (_, v) = b.get("/api/cards", Some(&phone));
    assert_eq!(v["cards"], json!([]), "no card");
    assert!(
        b.log().contains("shared background server"),
        "the log says why"
    );
    // The same hook without the server on its chain gets its card.
    let _hook = Hook::start(&b, "own", &bash_request("touch marker"));
    assert_eq!(the_card(&b, &phone)["pane_name"], "own");
}

/// Through a lead, the rest of the loop: a member's hold deadline (the card ends `expired` on the
/// lead's phone too, a late tap gets 410, the hook prints nothing), a hook outside any pane of the
/// member (no card anywhere), and a member whose bridge is not running (the hook prints nothing).
#[test]
fn a_member_s_deadline_outside_a_pane_and_stopped_bridge_through_the_lead() {
    let lead = crew_bridge(false, &[]);
    lead.cli_ok(&["crew", "init"]);
    let mut web1 = joined_with(&lead, "web-1", Some("[hooks]\nhold = 2\n"));
    let phone = lead.pair("pixel", "full");

    // The deadline.
    let hook = Hook::start(&web1, "late", &bash_request("sleep 1"));
    let card = card_from(&lead, &phone, "web-1", "Claude Code asks to use Bash");
    let (out, code) = hook.finished();
    assert_eq!(
        (out.as_str(), code.as_str()),
        ("", "0"),
        "past the hold: silent"
    );
    wait_for(Duration::from_secs(10), || {
        let (_, v) = lead.get("/api/cards", Some(&phone));
        v["receipts"]
            .as_array()?
            .iter()
            .any(|r| r["card"] == card["id"] && r["state"] == "expired")
            .then_some(())
    })
    .expect("expired, seen from the lead");
    assert_eq!(
        tap_on(&lead, &phone, &card, json!({"option": "allow"})),
        (410, json!({"error": "card closed"}))
    );

    // Outside any pane of the member.
    let request = bash_request("cargo test").to_string();
    assert_eq!(
        run_hook(&web1, &web1.state(), request.as_bytes()),
        (0, String::new(), String::new())
    );
    let (_, v) = lead.get("/api/cards", Some(&phone));
    assert_eq!(v["cards"], json!([]), "no card on the lead");

    // The member's bridge not running.
    web1.stop();
    assert_eq!(
        run_hook(&web1, &web1.state(), request.as_bytes()),
        (0, String::new(), String::new())
    );
}
