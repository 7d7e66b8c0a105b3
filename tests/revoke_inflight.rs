//! Authorization holds for the whole life of a request (SPEC §3.2, §10.1, §11), tried against real
//! bridges and real processes:
//!
//! - a call in flight — `exec_command` through `POST /api/tools`, MCP's `tools/call`,
//!   `interact_with_process` — ends at once when its device is revoked or drops to `read`, and
//!   its output is not delivered;
//! - the device's `start_process` sessions are killed with their process groups, and audited;
//! - the same for a call relayed through the lead to a member, and for the member's sessions;
//! - what a device owns is bound to its identity, not its label: a device paired again under the
//!   same label owns none of the old one's sessions, here or on a member, and cannot confirm the
//!   old one's "Always allow".

#[path = "support/hook.rs"]
mod hook;
mod support;

use std::time::{Duration, Instant};

use hook::Hook;
use serde_json::{json, Value};
use support::{crew_bridge, procs, wait_for, Opts, TestBridge};

/// A bridge without tmux, logging to a file.
fn bridge() -> TestBridge {
    TestBridge::start_with(Opts {
        log_to_file: true,
        ..Opts::default()
    })
}

/// `POST /api/tools/{name}` with `args`.
fn tool(b: &TestBridge, token: &str, name: &str, args: Value) -> (u16, Value) {
    b.post(&format!("/api/tools/{name}"), Some(token), &args)
}

/// One MCP `tools/call`: the status and the whole JSON answer.
fn mcp_call(b: &TestBridge, token: &str, name: &str, args: Value) -> (u16, Value) {
    let (status, _, text) = b.raw(
        "POST",
        "/mcp",
        Some(token),
        Some(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": name, "arguments": args}})),
        &[("Accept", "application/json, text/event-stream")],
    );
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// The process group of the live process whose command line holds `marker`, once there is one.
fn group_of(marker: &str) -> i32 {
    wait_for(Duration::from_secs(10), || {
        procs::all()
            .into_iter()
            .find(|p| p.state != 'Z' && procs::cmdline(p.pid).contains(marker))
            .map(|p| p.pgrp)
    })
    .unwrap_or_else(|| panic!("no process runs {marker}"))
}

/// Whether the group `pgrp` is gone within `within`.
fn gone(pgrp: i32, within: Duration) -> bool {
    wait_for(within, || {
        procs::live_in_group(pgrp).is_empty().then_some(())
    })
    .is_some()
}

/// A fresh marker, so a test finds its own processes only.
fn marker(what: &str) -> String {
    format!("{what}-{}-{}", std::process::id(), rand_suffix())
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// How long the commands below would run: every check must be done well before this.
const RUNS: Duration = Duration::from_secs(6);

/// Runs `call` on another thread while `cut` ends the device's authorization once the command
/// holding `marker` runs; returns what `call` answered and how long after the cut it came.
fn cut_while_running(
    call: impl FnOnce() -> (u16, Value) + Send,
    marker: &str,
    cut: impl FnOnce(),
) -> ((u16, Value), Duration, i32) {
    std::thread::scope(|s| {
        let started = Instant::now();
        let running = s.spawn(call);
        let group = group_of(marker);
        let cut_at = Instant::now();
        cut();
        let answer = running.join().expect("the call's thread");
        let after = cut_at.elapsed();
        assert!(
            started.elapsed() < RUNS,
            "the answer came only when the command would have ended: {answer:?}"
        );
        (answer, after, group)
    })
}

/// No string anywhere in `v` holds `needle`.
fn holds(v: &Value, needle: &str) -> bool {
    v.to_string().contains(needle)
}

#[test]
fn a_revoked_devices_exec_ends_at_once_and_delivers_nothing() {
    let b = bridge();
    let admin = b.pair("admin", "full");
    let phone = b.pair("phone", "full");
    let m = marker("exec");
    let command = format!("sleep 5; echo done-{m}");
    let ((status, body), after, group) = cut_while_running(
        || {
            tool(
                &b,
                &phone,
                "exec_command",
                json!({"command": command, "timeout_ms": 20000}),
            )
        },
        &m,
        || {
            let (s, v) = b.request("DELETE", "/api/devices/phone", Some(&admin), None, &[]);
            assert_eq!(s, 200, "{v}");
        },
    );
    assert_eq!(
        (status, &body),
        (403, &json!({"error": "device not paired"}))
    );
    assert!(!holds(&body, "done-"), "{body}");
    assert!(
        after < Duration::from_secs(3),
        "ended {after:?} after the revoke"
    );
    assert!(
        gone(group, Duration::from_secs(2)),
        "the command's group runs on"
    );
}

#[test]
fn an_mcp_call_ends_when_its_device_drops_to_read() {
    let b = bridge();
    let phone = b.pair("phone", "full");
    let m = marker("mcp");
    let command = format!("sleep 5; echo done-{m}");
    let ((status, body), after, group) = cut_while_running(
        || {
            mcp_call(
                &b,
                &phone,
                "exec_command",
                json!({"command": command, "timeout_ms": 20000}),
            )
        },
        &m,
        || {
            b.cli_ok(&["devices", "set-tier", "phone", "read"]);
        },
    );
    assert_eq!(status, 200, "{body}");
    assert!(!holds(&body, "done-"), "{body}");
    let refused = body["error"].is_object() || body["result"]["isError"] == true;
    assert!(refused, "an error, not a result: {body}");
    assert!(holds(&body, "insufficient tier"), "{body}");
    assert!(
        after < Duration::from_secs(3),
        "ended {after:?} after the cut"
    );
    assert!(
        gone(group, Duration::from_secs(2)),
        "the command's group runs on"
    );
}

#[test]
fn interact_and_sessions_end_with_the_device_and_are_audited() {
    let b = bridge();
    let phone = b.pair("phone", "full");
    let m = marker("interact");
    // Answers each line 5 s later.
    let script = format!("while read l; do sleep 5; echo done-$l; done # {m}");
    let (status, started) = tool(&b, &phone, "start_process", json!({"command": script}));
    assert_eq!(status, 200, "{started}");
    let session = started["session"].as_str().expect("session").to_owned();
    let idle = marker("idle");
    let (status, other) = tool(
        &b,
        &phone,
        "start_process",
        json!({"command": format!("sleep 300 # {idle}"), "timeout_ms": 100}),
    );
    assert_eq!(status, 200, "{other}");
    let idle_group = group_of(&idle);
    let ((status, body), after, group) = cut_while_running(
        || {
            tool(
                &b,
                &phone,
                "interact_with_process",
                json!({"session": session, "input": "x", "timeout_ms": 20000}),
            )
        },
        &m,
        || {
            b.cli_ok(&["devices", "revoke", "phone"]);
        },
    );
    assert_eq!(
        (status, &body),
        (403, &json!({"error": "device not paired"}))
    );
    assert!(
        after < Duration::from_secs(3),
        "ended {after:?} after the revoke"
    );
    // Both sessions are killed with their groups, and each kill is audited with its device.
    assert!(
        gone(group, Duration::from_secs(3)),
        "the interacted session runs on"
    );
    assert!(
        gone(idle_group, Duration::from_secs(3)),
        "the idle session runs on"
    );
    let killed = wait_for(Duration::from_secs(3), || {
        let lines: Vec<Value> = b
            .audit_lines()
            .into_iter()
            .filter(|l| l["event"] == "tool.force_terminate" && l["device"] == "phone")
            .collect();
        (lines.len() >= 2).then_some(lines)
    })
    .expect("two audited kills");
    assert!(killed
        .iter()
        .all(|l| l["detail"]["reason"] == "authorization ended"));
}

/// A lead with member `web-1`; both without tmux.
fn crew() -> (TestBridge, TestBridge) {
    let lead = crew_bridge(false, &[]);
    let member = crew_bridge(false, &[]);
    lead.cli_ok(&["crew", "init"]);
    member.cli_ok(&["crew", "join", &lead.invite(), "--name", "web-1"]);
    lead.wait_member_online("web-1");
    (lead, member)
}

/// A tool on the member through the lead, once the member answers.
fn relayed(lead: &TestBridge, token: &str, name: &str, args: Value) -> (u16, Value) {
    let mut args = args;
    args["machine"] = json!("web-1");
    wait_for(Duration::from_secs(10), || {
        let (status, body) = tool(lead, token, name, args.clone());
        (body["error"] != "member unreachable").then_some((status, body))
    })
    .expect("the member came online")
}

#[test]
fn a_relayed_call_and_the_members_sessions_end_with_the_device() {
    let (lead, member) = crew();
    let phone = lead.pair("phone", "full");
    let idle = marker("member-idle");
    let (status, started) = relayed(
        &lead,
        &phone,
        "start_process",
        json!({"command": format!("sleep 300 # {idle}"), "timeout_ms": 100}),
    );
    assert_eq!(status, 200, "{started}");
    let idle_group = group_of(&idle);

    // An exec in flight on the member when the device is revoked on the lead: it ends there too,
    // and what it would have done after is never done.
    let m = marker("member-exec");
    let flag = member.dir.path().join("home").join(&m);
    let command = format!("sleep 4; touch {}", flag.display());
    let ((status, body), _, group) = cut_while_running(
        || {
            let mut args = json!({"command": command, "timeout_ms": 20000});
            args["machine"] = json!("web-1");
            tool(&lead, &phone, "exec_command", args)
        },
        &flag.display().to_string(),
        || {
            lead.cli_ok(&["devices", "revoke", "phone"]);
        },
    );
    assert!(status >= 400, "{body}");
    assert!(
        gone(group, Duration::from_secs(2)),
        "the member's exec runs on"
    );
    assert!(
        gone(idle_group, Duration::from_secs(3)),
        "the member's session runs on"
    );
    assert!(
        wait_for(Duration::from_secs(5), || flag.exists().then_some(())).is_none(),
        "the relayed command ran to its end"
    );
    let killed = member
        .audit_lines()
        .into_iter()
        .any(|l| l["event"] == "tool.force_terminate" && l["device"] == "phone");
    assert!(killed, "the member audits the kill");
}

#[test]
fn a_device_paired_again_under_the_same_label_owns_nothing_of_the_old_one() {
    let (lead, _member) = crew();
    let old = lead.pair("phone", "full");
    let here = marker("old-here");
    let there = marker("old-there");
    let (status, a) = tool(
        &lead,
        &old,
        "start_process",
        json!({"command": format!("sleep 300 # {here}"), "timeout_ms": 100}),
    );
    assert_eq!(status, 200, "{a}");
    let (status, b) = relayed(
        &lead,
        &old,
        "start_process",
        json!({"command": format!("sleep 300 # {there}"), "timeout_ms": 100}),
    );
    assert_eq!(status, 200, "{b}");
    lead.cli_ok(&["devices", "revoke", "phone"]);
    let new = lead.pair("phone", "full");
    for (machine, session) in [(None, &a["session"]), (Some("web-1"), &b["session"])] {
        let with = |mut args: Value| {
            if let Some(m) = machine {
                args["machine"] = json!(m);
            }
            args
        };
        let (status, list) = tool(&lead, &new, "list_sessions", with(json!({})));
        assert_eq!(status, 200, "{list}");
        assert_eq!(list["sessions"], json!([]), "{machine:?}: {list}");
        for name in [
            "read_process_output",
            "kill_process",
            "interact_with_process",
        ] {
            let mut args = json!({"session": session});
            if name == "interact_with_process" {
                args["input"] = json!("x");
            }
            let (status, body) = tool(&lead, &new, name, with(args));
            assert_eq!(
                (status, &body),
                (404, &json!({"error": "no such session"})),
                "{machine:?} {name}"
            );
        }
    }
}

/// Claude Code's PermissionRequest for a Bash call of `command` that suggests a rule (so the card
/// offers "Always allow").
fn always_request(command: &str) -> Value {
    json!({
        "session_id": "relabel-session",
        "transcript_path": "/tmp/none.jsonl",
        "cwd": "/tmp",
        "permission_mode": "default",
        "hook_event_name": "PermissionRequest",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "Publish"},
        "permission_suggestions": [
            {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": command}],
             "behavior": "allow", "destination": "localSettings"}
        ]
    })
}

#[test]
fn an_always_allow_token_is_refused_to_a_device_paired_again_under_its_label() {
    let b = TestBridge::start();
    let old = b.pair("pixel", "full");
    let hook = Hook::start(&b, "relabel", &always_request("cargo publish"));
    let card = wait_for(Duration::from_secs(10), || {
        let (_, list) = b.get("/api/cards", Some(&old));
        list["cards"]
            .as_array()?
            .iter()
            .find(|c| c["state"] == "waiting")
            .cloned()
    })
    .expect("a waiting card");
    let path = format!("/api/cards/{}/answer", card["id"].as_str().expect("id"));
    let (status, first) = b.post(
        &path,
        Some(&old),
        &json!({"option": "always", "shown": card["shown"]}),
    );
    assert_eq!(status, 200, "{first}");
    let token = first["confirm"]
        .as_str()
        .expect("a confirm token")
        .to_owned();
    b.cli_ok(&["devices", "revoke", "pixel"]);
    let new = b.pair("pixel", "full");
    let (status, second) = b.post(
        &path,
        Some(&new),
        &json!({"option": "always", "shown": card["shown"], "confirm": token}),
    );
    // A first tap of its own, not the old device's confirmation.
    assert_eq!(status, 200, "{second}");
    assert!(second["confirm"].is_string(), "{second}");
    assert!(hook.running(), "nothing was decided");
    assert!(!b
        .audit_lines()
        .iter()
        .any(|l| l["event"] == "card.answered"));
}

#[test]
fn a_devices_end_is_audited_on_the_lead_and_relayed_to_the_member_under_one_request_id() {
    let (lead, member) = crew();
    let phone = lead.pair("phone", "full");
    let here = marker("lead-idle");
    let (status, started) = tool(
        &lead,
        &phone,
        "start_process",
        json!({"command": format!("sleep 300 # {here}"), "timeout_ms": 100}),
    );
    assert_eq!(status, 200, "{started}");
    let there = marker("member-idle");
    let (status, started) = relayed(
        &lead,
        &phone,
        "start_process",
        json!({"command": format!("sleep 300 # {there}"), "timeout_ms": 100}),
    );
    assert_eq!(status, 200, "{started}");
    let (here_group, there_group) = (group_of(&here), group_of(&there));

    lead.cli_ok(&["devices", "revoke", "phone"]);
    assert!(
        gone(here_group, Duration::from_secs(3)),
        "the lead's session runs on"
    );
    assert!(
        gone(there_group, Duration::from_secs(3)),
        "the member's session runs on"
    );
    let kill = |b: &TestBridge| {
        wait_for(Duration::from_secs(3), || {
            b.audit_lines()
                .into_iter()
                .find(|l| l["event"] == "tool.force_terminate" && l["device"] == "phone")
        })
        .expect("an audited kill")
    };
    let (on_lead, on_member) = (kill(&lead), kill(&member));
    assert_eq!(on_lead["detail"]["via"], "bridge", "{on_lead}");
    assert_eq!(on_member["detail"]["via"], "relay", "{on_member}");
    assert!(on_member["detail"]["lead"].is_string(), "{on_member}");
    for l in [&on_lead, &on_member] {
        assert_eq!(l["detail"]["reason"], "authorization ended", "{l}");
    }
    assert_eq!(on_lead["request_id"], on_member["request_id"]);
}
