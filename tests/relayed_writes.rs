//! Black-box tests of when a write relayed to a crew member is audited on the lead (SPEC §7;
//! decision 0052): two real `collie bridge` processes, a real crew over QUIC on loopback, a real
//! tmux server on the member. The lead writes its line only once the member answered that the
//! write happened, with the request id of the member's own line; a refused write leaves on the
//! lead what §7 says for its refusal — nothing for a plain one (`no such pane`, bad input,
//! `capability missing`, a member whose own audit fails), `resource.denied` for a cap, on both
//! machines alike.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{wait_for, TestBridge};

/// How long a test waits for something the bridges do on their own.
const WAIT: Duration = Duration::from_secs(15);

/// The events a pane write leaves.
const PANE_EVENTS: &[&str] = &[
    "pane.input",
    "pane.create",
    "pane.close",
    "pane.rename",
    "tab.rename",
];

/// A lead and a member `web-1` (with its own tmux server when `member_tmux`), `member_config`
/// applied on the member, once the lead lists the member online.
fn crew(member_tmux: bool, member_config: Option<&str>) -> (TestBridge, TestBridge) {
    let lead = support::crew_bridge(false, &[]);
    let mut member = support::crew_bridge(member_tmux, &[]);
    lead.cli_ok(&["crew", "init"]);
    member.cli_ok(&["crew", "join", &lead.invite(), "--name", "web-1"]);
    if let Some(config) = member_config {
        // The setting is read at start: restart the member with it.
        member.stop();
        member.configure(config);
        member.launch();
    }
    lead.wait_member_online("web-1");
    (lead, member)
}

/// The lines of `b`'s audit log whose event is one of `events`.
fn audit_of(b: &TestBridge, events: &[&str]) -> Vec<Value> {
    b.audit_lines()
        .into_iter()
        .filter(|l| events.iter().any(|e| l["event"] == *e))
        .collect()
}

/// Opens hosted panes on `b` as `token` until its cap refuses one (`503 resource limit`).
fn fill_hosted_panes(b: &TestBridge, token: &str) {
    for i in 0..70 {
        let (s, v) = b.post(
            "/api/panes",
            Some(token),
            &json!({"machine": "local", "name": format!("n{i}")}),
        );
        if s != 200 {
            assert_eq!((s, v["error"].as_str()), (503, Some("resource limit")));
            return;
        }
    }
    panic!("70 panes opened without reaching the cap");
}

fn input(lead: &TestBridge, phone: &str, pane: &str, body: &Value) -> (u16, Value) {
    lead.post(&format!("/api/panes/web-1/{pane}/input"), Some(phone), body)
}

fn rename(lead: &TestBridge, phone: &str, pane: &str, name: &str) -> (u16, Value) {
    lead.post(
        &format!("/api/panes/web-1/{pane}/rename"),
        Some(phone),
        &json!({ "name": name }),
    )
}

fn close(lead: &TestBridge, phone: &str, pane: &str) -> (u16, Value) {
    lead.request(
        "DELETE",
        &format!("/api/panes/web-1/{pane}"),
        Some(phone),
        None,
        &[],
    )
}

fn error(answer: &(u16, Value)) -> (u16, Option<&str>) {
    (answer.0, answer.1["error"].as_str())
}

/// A lead line and a member line for one write: same event, same request id; the lead's names
/// the member (as `machine` and in the details); the member's names the relay and the device.
fn same_write(on_lead: &Value, on_member: &Value) {
    assert_eq!(
        on_lead["event"], on_member["event"],
        "{on_lead} {on_member}"
    );
    assert!(on_lead["request_id"].is_string(), "{on_lead}");
    assert_eq!(on_lead["request_id"], on_member["request_id"]);
    assert_eq!(on_lead["machine"], "web-1", "{on_lead}");
    assert_eq!(on_lead["detail"]["machine"], "web-1", "{on_lead}");
    assert_eq!(on_member["detail"]["via"], "relay", "{on_member}");
    assert_eq!(on_member["device"], "phone", "{on_member}");
}

#[test]
fn a_refused_relayed_pane_write_leaves_no_line_on_the_lead() {
    let (lead, member) = crew(true, None);
    let phone = lead.pair("phone", "full");
    let pane = lead.tmux_pane_of(&phone, "web-1");

    // Refused by the member: no such pane. Old code wrote the lead's line before relaying.
    assert_eq!(
        error(&input(&lead, &phone, "p999", &json!({"text": "x"}))),
        (404, Some("no such pane"))
    );
    assert_eq!(
        error(&rename(&lead, &phone, "p999", "nope")),
        (404, Some("no such pane"))
    );
    assert_eq!(
        error(&close(&lead, &phone, "p999")),
        (404, Some("no such pane"))
    );
    // Refused by the member: a starter it does not have (bad input, in its own words).
    let (s, v) = lead.post(
        "/api/panes",
        Some(&phone),
        &json!({"machine": "web-1", "starter": "Nope"}),
    );
    assert_eq!(s, 400, "{v}");
    // Refused at the lead: bad input.
    assert_eq!(
        input(&lead, &phone, &pane, &json!({"keys": ["Nope"]})).0,
        400
    );
    assert_eq!(
        input(
            &lead,
            &phone,
            &pane,
            &json!({"text": "x".repeat(65 * 1024)})
        )
        .0,
        400
    );
    assert!(
        audit_of(&lead, PANE_EVENTS).is_empty(),
        "a refused write leaves no line on the lead: {:?}",
        audit_of(&lead, PANE_EVENTS)
    );
    assert!(
        audit_of(&member, PANE_EVENTS).is_empty(),
        "nor on the member: {:?}",
        audit_of(&member, PANE_EVENTS)
    );

    // Done: both machines carry the line, with one request id.
    assert_eq!(
        input(
            &lead,
            &phone,
            &pane,
            &json!({"text": "echo hi", "keys": ["Enter"]})
        )
        .0,
        200
    );
    assert_eq!(rename(&lead, &phone, &pane, "renamed").0, 200);
    let on_lead = audit_of(&lead, PANE_EVENTS);
    let on_member = audit_of(&member, PANE_EVENTS);
    assert_eq!((on_lead.len(), on_member.len()), (2, 2), "{on_lead:?}");
    for (l, m) in on_lead.iter().zip(&on_member) {
        same_write(l, m);
    }
    assert_eq!(on_lead[0]["event"], "pane.input");
    assert_eq!(on_lead[1]["event"], "tab.rename");
    // The lead's line holds no more of the typed text than the member's.
    assert!(
        !on_lead[0].to_string().contains("echo hi"),
        "{}",
        on_lead[0]
    );
}

#[test]
fn a_member_whose_audit_fails_refuses_and_the_lead_writes_nothing() {
    let (lead, member) = crew(true, None);
    let phone = lead.pair("phone", "full");
    let pane = lead.tmux_pane_of(&phone, "web-1");
    let log = member.state().join("audit.log");
    if log.exists() {
        std::fs::remove_file(&log).expect("remove the member's log");
    }
    std::fs::create_dir(&log).expect("a directory in the log's place");

    let unavailable = (503, Some("audit unavailable"));
    assert_eq!(
        error(&input(&lead, &phone, &pane, &json!({"text": "x"}))),
        unavailable
    );
    assert_eq!(error(&rename(&lead, &phone, &pane, "n")), unavailable);
    assert_eq!(
        error(&lead.post("/api/panes", Some(&phone), &json!({"machine": "web-1"}))),
        unavailable
    );
    // A new window of the member's session: the same create path.
    assert_eq!(
        error(&lead.post(
            "/api/panes",
            Some(&phone),
            &json!({"machine": "web-1", "session": "t1:main"})
        )),
        unavailable
    );
    assert_eq!(error(&close(&lead, &phone, &pane)), unavailable);
    assert!(
        audit_of(&lead, PANE_EVENTS).is_empty(),
        "{:?}",
        audit_of(&lead, PANE_EVENTS)
    );
    std::fs::remove_dir(&log).expect("remove the directory");
}

#[test]
fn a_member_s_window_is_audited_on_both_once_it_exists() {
    let (lead, member) = crew(true, None);
    let phone = lead.pair("phone", "full");
    let (s, v) = lead.post(
        "/api/panes",
        Some(&phone),
        &json!({"machine": "web-1", "session": "t1:main", "name": "win"}),
    );
    assert_eq!(s, 200, "{v}");
    let pane = v["pane"].as_str().expect("pane").to_owned();
    let on_lead = audit_of(&lead, &["pane.create"]);
    let on_member = audit_of(&member, &["pane.create"]);
    assert_eq!((on_lead.len(), on_member.len()), (1, 1), "{on_lead:?}");
    same_write(&on_lead[0], &on_member[0]);
    for line in [&on_lead[0], &on_member[0]] {
        assert_eq!(line["detail"]["session"], "t1:main", "{line}");
        assert_eq!(line["detail"]["pane"], pane.as_str(), "{line}");
    }
    // An unknown session is the member's refusal: no line anywhere.
    let (s, v) = lead.post(
        "/api/panes",
        Some(&phone),
        &json!({"machine": "web-1", "session": "t1:nope"}),
    );
    assert_eq!((s, v["error"].as_str()), (404, Some("no such session")));
    assert_eq!(audit_of(&lead, PANE_EVENTS).len(), 1);
    assert_eq!(audit_of(&member, PANE_EVENTS).len(), 1);
}

#[test]
fn a_member_at_its_pane_cap_is_resource_denied_on_both_machines() {
    let (lead, member) = crew(false, None);
    let phone = lead.pair("phone", "full");
    // Fill the member's hosted panes from its own phone, then ask through the lead.
    let local = member.pair("own", "full");
    fill_hosted_panes(&member, &local);
    let before = audit_of(&member, &["resource.denied"]).len();

    let (s, v) = lead.post(
        "/api/panes",
        Some(&phone),
        &json!({"machine": "web-1", "name": "one-more"}),
    );
    assert_eq!((s, v["error"].as_str()), (503, Some("resource limit")));
    let on_lead = audit_of(&lead, &["resource.denied"]);
    let on_member = audit_of(&member, &["resource.denied"]);
    assert_eq!((on_lead.len(), on_member.len()), (1, before + 1));
    same_write(&on_lead[0], on_member.last().expect("the member's line"));
    assert_eq!(on_lead[0]["device"], "phone");
    assert!(
        audit_of(&lead, PANE_EVENTS).is_empty(),
        "no pane.create for a refused create"
    );
}

#[test]
fn a_member_lacking_a_capability_leaves_no_line_on_the_lead() {
    let (lead, member) = crew(false, Some("\n[crew]\ntools = false\n"));
    let phone = lead.pair("phone", "full");
    let pane = member.hosted("work", &["sleep", "600"])["pane"]
        .as_str()
        .expect("pane")
        .to_owned();
    let listed = wait_for(WAIT, || {
        let (_, v) = lead.get("/api/panes", Some(&phone));
        v["panes"]
            .as_array()?
            .iter()
            .any(|p| p["pane"] == pane.as_str())
            .then_some(())
    });
    assert!(listed.is_some());
    let (s, v) = lead.upload(&phone, "web-1", &pane, "a.txt", b"x");
    assert_eq!((s, v["error"].as_str()), (501, Some("capability missing")));
    let (s, v) = lead.post(
        "/api/tools/exec_command",
        Some(&phone),
        &json!({"machine": "web-1", "command": "true"}),
    );
    assert_eq!((s, v["error"].as_str()), (501, Some("capability missing")));
    for b in [&lead, &member] {
        let lines: Vec<Value> = b
            .audit_lines()
            .into_iter()
            .filter(|l| {
                l["event"]
                    .as_str()
                    .is_some_and(|e| e.starts_with("tool.") || e == "resource.denied")
            })
            .collect();
        assert!(lines.is_empty(), "{lines:?}");
    }
}

#[test]
fn a_refused_relayed_discard_or_command_leaves_no_line_on_the_lead() {
    let (lead, member) = crew(false, Some("\n[phone]\nrun = false\n"));
    let phone = lead.pair("phone", "full");
    let (s, v) = lead.request("DELETE", "/api/sent/web-1/99", Some(&phone), None, &[]);
    assert_eq!((s, v["error"].as_str()), (404, Some("no such line")));
    let (s, _) = lead.post(
        "/api/commands",
        Some(&phone),
        &json!({"machine": "web-1", "command": "touch x"}),
    );
    assert_eq!(s, 403);
    for b in [&lead, &member] {
        assert!(audit_of(b, &["sent.discard", "command.run"]).is_empty());
    }
    // A discard that happens: on both, with one request id and the member's count.
    let (s, v) = lead.request("DELETE", "/api/sent/web-1", Some(&phone), None, &[]);
    assert_eq!(s, 200, "{v}");
    let on_lead = audit_of(&lead, &["sent.discard"]);
    let on_member = audit_of(&member, &["sent.discard"]);
    assert_eq!((on_lead.len(), on_member.len()), (1, 1));
    assert_eq!(on_lead[0]["request_id"], on_member[0]["request_id"]);
    assert_eq!(
        on_lead[0]["detail"]["count"],
        on_member[0]["detail"]["count"]
    );
}

#[test]
fn the_two_lines_of_one_exec_name_the_command_alike() {
    let b = TestBridge::start_with(support::Opts {
        log_to_file: true,
        ..support::Opts::default()
    });
    let phone = b.pair("phone", "full");
    let (s, v) = b.post(
        "/api/tools/exec_command",
        Some(&phone),
        &json!({"command": "TOKEN=zq4417 true"}),
    );
    assert_eq!(s, 200, "{v}");
    let lines = audit_of(&b, &["tool.exec_command"]);
    assert_eq!(lines.len(), 2, "the request and its outcome: {lines:?}");
    assert_eq!(lines[0]["detail"]["command_first_word"], "TOKEN=");
    assert_eq!(lines[1]["detail"]["command"], "TOKEN=", "{}", lines[1]);
    let log = std::fs::read_to_string(b.state().join("audit.log")).expect("audit.log");
    assert!(!log.contains("zq4417"));
}

#[test]
fn a_relayed_tool_is_audited_on_the_lead_once_the_member_ran_it() {
    let (lead, member) = crew(false, None);
    let phone = lead.pair("phone", "full");
    // The member's own rule refuses: its security.denied (and its tool line, written before a
    // tool runs on the machine that runs it), nothing on the lead.
    let (s, v) = lead.post(
        "/api/tools/write_file",
        Some(&phone),
        &json!({"path": "/etc/collie-nope", "content": "x", "machine": "web-1"}),
    );
    assert_eq!(
        (s, v["error"].as_str()),
        (403, Some("path outside the workspace"))
    );
    // A denial line is written without holding the refusal up (SPEC §7): wait for it.
    let denied = support::wait_for(Duration::from_secs(5), || {
        let lines = audit_of(&member, &["security.denied"]);
        (!lines.is_empty()).then_some(lines.len())
    });
    assert_eq!(denied, Some(1));
    assert!(audit_of(&lead, &["tool.write_file", "security.denied"]).is_empty());

    // Done: the lead's line and the member's two carry one request id and one first word.
    let (s, v) = lead.post(
        "/api/tools/exec_command",
        Some(&phone),
        &json!({"command": "TOKEN=zq5521 true", "machine": "web-1"}),
    );
    assert_eq!(s, 200, "{v}");
    let on_lead = audit_of(&lead, &["tool.exec_command"]);
    let on_member = audit_of(&member, &["tool.exec_command"]);
    assert_eq!((on_lead.len(), on_member.len()), (1, 2), "{on_member:?}");
    assert_eq!(on_lead[0]["detail"]["machine"], "web-1");
    for line in &on_member {
        assert_eq!(line["request_id"], on_lead[0]["request_id"], "{line}");
    }
    assert_eq!(on_lead[0]["detail"]["command_first_word"], "TOKEN=");
    assert_eq!(on_member[0]["detail"]["command_first_word"], "TOKEN=");
    assert_eq!(on_member[1]["detail"]["command"], "TOKEN=");
    for b in [&lead, &member] {
        let log = std::fs::read_to_string(b.state().join("audit.log")).expect("audit.log");
        assert!(!log.contains("zq5521"));
    }
}

#[test]
fn a_done_write_whose_lead_line_cannot_be_written_is_kept_until_it_can() {
    let (lead, member) = crew(true, None);
    let phone = lead.pair("phone", "full");
    let pane = lead.tmux_pane_of(&phone, "web-1");
    let log = lead.state().join("audit.log");
    std::fs::remove_file(&log).expect("remove the lead's log");
    std::fs::create_dir(&log).expect("a directory in the log's place");

    // The member typed it and wrote its line: the lead keeps its own and answers as it happened.
    assert_eq!(
        input(
            &lead,
            &phone,
            &pane,
            &json!({"text": "echo kept", "keys": ["Enter"]})
        )
        .0,
        200
    );
    let on_member = audit_of(&member, &["pane.input"]);
    assert_eq!(on_member.len(), 1);
    // A create can be taken back: refused, and the member's pane closed again.
    let (s, v) = lead.post("/api/panes", Some(&phone), &json!({"machine": "web-1"}));
    assert_eq!((s, v["error"].as_str()), (503, Some("audit unavailable")));
    let closed = wait_for(WAIT, || {
        (audit_of(&member, &["pane.close"]).len() == 1).then_some(())
    });
    assert!(closed.is_some(), "{:?}", audit_of(&member, PANE_EVENTS));
    let created = audit_of(&member, &["pane.create"]);
    let closed = audit_of(&member, &["pane.close"]);
    assert_eq!(created[0]["detail"]["pane"], closed[0]["detail"]["pane"]);

    // Once the log can be written again, the kept line is in it, with the member's request id.
    std::fs::remove_dir(&log).expect("remove the directory");
    let kept = wait_for(WAIT, || {
        audit_of(&lead, &["pane.input"])
            .into_iter()
            .find(|l| l["request_id"] == on_member[0]["request_id"])
    });
    let kept = kept.expect("the kept line reached the lead's log");
    same_write(&kept, &on_member[0]);
    assert!(audit_of(&lead, &["pane.create"]).is_empty());
}

#[test]
fn a_local_one_shot_command_refused_at_the_pane_cap_leaves_no_command_run_line() {
    // SPEC §7: a line for what happened, never for what was refused before it happened. The
    // command's pane is refused at the cap, so nothing ran: `resource.denied`, no `command.run`.
    let b = TestBridge::start_with(support::Opts::default());
    let phone = b.pair("phone", "full");
    fill_hosted_panes(&b, &phone);
    let (s, v) = b.post("/api/commands", Some(&phone), &json!({"command": "true"}));
    assert_eq!((s, v["error"].as_str()), (503, Some("resource limit")));
    assert!(
        audit_of(&b, &["command.run"]).is_empty(),
        "{:?}",
        audit_of(&b, &["command.run"])
    );
}

#[test]
fn a_local_write_refused_outside_the_workspace_leaves_a_denial_and_no_tool_line() {
    // SPEC §7 on this machine's own arm: the write never happened, so no `tool.write_file`.
    let b = TestBridge::start_with(support::Opts {
        log_to_file: true,
        ..support::Opts::default()
    });
    let phone = b.pair("phone", "full");
    let outside = b.dir.path().join("outside-the-workspace");
    let (s, v) = b.post(
        "/api/tools/write_file",
        Some(&phone),
        &json!({"path": outside.display().to_string(), "content": "x"}),
    );
    assert_eq!(
        (s, v["error"].as_str()),
        (403, Some("path outside the workspace"))
    );
    assert!(!outside.exists());
    let denied = support::wait_for(Duration::from_secs(5), || {
        let lines = audit_of(&b, &["security.denied"]);
        (!lines.is_empty()).then_some(lines.len())
    });
    assert_eq!(denied, Some(1));
    assert!(
        audit_of(&b, &["tool.write_file"]).is_empty(),
        "{:?}",
        audit_of(&b, &["tool.write_file"])
    );
}

/// The tools that name a process session, and the events they leave.
const SESSION_EVENTS: &[&str] = &[
    "tool.interact_with_process",
    "tool.kill_process",
    "tool.force_terminate",
    "tool.read_process_output",
];

/// Every tool that names `session`, with arguments that would do something to it.
fn session_calls(session: &str, machine: Option<&str>) -> Vec<(&'static str, Value)> {
    let mut calls = vec![
        (
            "interact_with_process",
            json!({"session": session, "input": "hello"}),
        ),
        ("read_process_output", json!({"session": session})),
        ("kill_process", json!({"session": session})),
        ("force_terminate", json!({"session": session})),
    ];
    if let Some(m) = machine {
        for (_, args) in &mut calls {
            args["machine"] = json!(m);
        }
    }
    calls
}

/// `POST /api/tools/{tool}` on `b`.
fn tool(b: &TestBridge, token: &str, name: &str, args: &Value) -> (u16, Value) {
    b.post(&format!("/api/tools/{name}"), Some(token), args)
}

/// The session lines of `b` that name `session` or come from `device`.
fn session_lines_of(b: &TestBridge, session: &str, device: &str) -> Vec<Value> {
    audit_of(b, SESSION_EVENTS)
        .into_iter()
        .filter(|l| l["detail"]["session"] == session || l["device"] == device)
        .collect()
}

/// A 32-hex-digit id no session has.
const NO_SESSION: &str = "0123456789abcdef0123456789abcdef";

#[test]
fn a_session_tool_naming_no_session_of_the_device_leaves_no_tool_line() {
    // SPEC §7: a call refused before it happened (no such session, another device's session, a
    // session whose process has exited) is no line; old code wrote `tool.<name>` first.
    let b = TestBridge::start_with(support::Opts {
        log_to_file: true,
        ..support::Opts::default()
    });
    let alice = b.pair("alice", "full");
    let bob = b.pair("bob", "full");
    let (s, started) = tool(&b, &alice, "start_process", &json!({"command": "cat"}));
    assert_eq!(s, 200, "{started}");
    let session = started["session"].as_str().expect("session").to_owned();

    for (name, args) in session_calls(&session, None) {
        assert_eq!(
            error(&tool(&b, &bob, name, &args)),
            (404, Some("no such session")),
            "bob {name}"
        );
    }
    for (name, args) in session_calls(NO_SESSION, None) {
        assert_eq!(
            error(&tool(&b, &alice, name, &args)),
            (404, Some("no such session")),
            "{name}"
        );
    }
    // Not a session id at all, and a field the tool does not take.
    let bad = tool(&b, &alice, "kill_process", &json!({"session": "1"}));
    assert_eq!(bad.0, 400, "{bad:?}");
    let bad = tool(
        &b,
        &alice,
        "interact_with_process",
        &json!({"session": session, "input": "x", "risk": "high"}),
    );
    assert_eq!(bad.0, 400, "{bad:?}");
    // A session whose process has exited takes no input.
    let (_, done) = tool(&b, &alice, "start_process", &json!({"command": "true"}));
    let exited = done["session"].as_str().expect("session").to_owned();
    let ended = wait_for(WAIT, || {
        let (_, out) = tool(
            &b,
            &alice,
            "read_process_output",
            &json!({"session": exited}),
        );
        (out["running"] == false).then_some(())
    });
    assert!(ended.is_some(), "`true` never ended");
    let refused = tool(
        &b,
        &alice,
        "interact_with_process",
        &json!({"session": exited, "input": "x"}),
    );
    assert_eq!(refused.0, 400, "{refused:?}");

    // The real calls write their lines (before they answer); then the refused ones have none.
    let (s, v) = tool(
        &b,
        &alice,
        "interact_with_process",
        &json!({"session": session, "input": "hello"}),
    );
    assert_eq!(s, 200, "{v}");
    let (s, v) = tool(&b, &alice, "kill_process", &json!({"session": session}));
    assert_eq!(s, 200, "{v}");
    let lines = audit_of(&b, SESSION_EVENTS);
    // The line each call writes before it runs (its outcome follows with `phase`).
    let before: Vec<(&str, &str, &str)> = lines
        .iter()
        .filter(|l| l["event"] != "tool.read_process_output" && l["detail"]["phase"].is_null())
        .map(|l| {
            (
                l["event"].as_str().unwrap_or_default(),
                l["detail"]["session"].as_str().unwrap_or_default(),
                l["device"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        before,
        [
            ("tool.interact_with_process", session.as_str(), "alice"),
            ("tool.kill_process", session.as_str(), "alice"),
        ],
        "{lines:?}"
    );
    assert!(
        session_lines_of(&b, NO_SESSION, "bob").is_empty(),
        "{lines:?}"
    );
    // Only the reads that ran (of the exited session) are audited.
    assert!(
        audit_of(&b, &["tool.read_process_output"])
            .iter()
            .all(|l| l["detail"]["session"] == exited.as_str()),
        "{lines:?}"
    );
}

#[test]
fn a_relayed_session_tool_naming_no_session_of_the_device_leaves_no_line_on_either_machine() {
    let (lead, member) = crew(false, None);
    let alice = lead.pair("alice", "full");
    let bob = lead.pair("bob", "full");
    let (s, started) = tool(
        &lead,
        &alice,
        "start_process",
        &json!({"command": "cat", "machine": "web-1"}),
    );
    assert_eq!(s, 200, "{started}");
    let session = started["session"].as_str().expect("session").to_owned();

    for (name, args) in session_calls(&session, Some("web-1")) {
        assert_eq!(
            error(&tool(&lead, &bob, name, &args)),
            (404, Some("no such session")),
            "bob {name}"
        );
    }
    for (name, args) in session_calls(NO_SESSION, Some("web-1")) {
        assert_eq!(
            error(&tool(&lead, &alice, name, &args)),
            (404, Some("no such session")),
            "{name}"
        );
    }

    // The real calls: audited on the member before they run, on the lead once the member
    // answered; then the refused ones have no line on either machine.
    let (s, v) = tool(
        &lead,
        &alice,
        "interact_with_process",
        &json!({"session": session, "input": "hello", "machine": "web-1"}),
    );
    assert_eq!(s, 200, "{v}");
    let (s, v) = tool(
        &lead,
        &alice,
        "kill_process",
        &json!({"session": session, "machine": "web-1"}),
    );
    assert_eq!(s, 200, "{v}");
    for (b, at) in [(&lead, "lead"), (&member, "member")] {
        let lines = audit_of(b, SESSION_EVENTS);
        let before: Vec<&str> = lines
            .iter()
            .filter(|l| l["detail"]["phase"].is_null())
            .map(|l| l["event"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(
            before,
            ["tool.interact_with_process", "tool.kill_process"],
            "{at}: {lines:?}"
        );
        assert!(
            lines
                .iter()
                .all(|l| l["detail"]["session"] == session.as_str() && l["device"] == "alice"),
            "{at}: {lines:?}"
        );
    }
}

#[test]
fn a_new_process_refused_before_it_starts_leaves_its_denial_and_no_tool_line() {
    // SPEC §7 for `start_process` and `exec_command`: a cap, a folder outside the workspaces or
    // a bad argument refuses the process before it exists, so no `tool.<name>` line — the cap
    // and the folder leave their `resource.denied` / `security.denied`.
    let b = TestBridge::start_with(support::Opts {
        log_to_file: true,
        ..support::Opts::default()
    });
    let phone = b.pair("phone", "full");
    let start = json!({"command": "cat", "timeout_ms": 50});
    let mut started = 0;
    let refused = loop {
        let (s, v) = tool(&b, &phone, "start_process", &start);
        if s != 200 {
            break (s, v);
        }
        started += 1;
        assert!(started < 50, "no cap refused a session");
    };
    assert_eq!(error(&refused), (503, Some("resource limit")));
    let outside = b.dir.path().join("outside-the-workspace");
    std::fs::create_dir_all(&outside).expect("a folder outside");
    assert_eq!(
        error(&tool(
            &b,
            &phone,
            "exec_command",
            &json!({"command": "touch x", "cwd": outside.display().to_string()}),
        )),
        (403, Some("path outside the workspace"))
    );
    assert!(!outside.join("x").exists());
    for bad in [
        json!({"command": "true", "timeout_ms": 0}),
        json!({"command": "  "}),
        json!({"command": "true", "risk": "high"}),
    ] {
        assert_eq!(tool(&b, &phone, "exec_command", &bad).0, 400, "{bad}");
    }

    let denials = wait_for(WAIT, || {
        let resource = audit_of(&b, &["resource.denied"]);
        let security = audit_of(&b, &["security.denied"]);
        (!resource.is_empty() && !security.is_empty()).then_some((resource, security))
    });
    let (resource, security) = denials.expect("the cap's and the folder's denials");
    assert_eq!(
        resource[0]["detail"]["tool"], "start_process",
        "{resource:?}"
    );
    assert_eq!(
        security[0]["detail"]["tool"], "exec_command",
        "{security:?}"
    );
    // One line before each process that started, and nothing for the refused ones.
    let before = |event: &str| {
        audit_of(&b, &[event])
            .into_iter()
            .filter(|l| l["detail"]["phase"].is_null())
            .count()
    };
    assert_eq!(before("tool.start_process"), started);
    assert_eq!(before("tool.exec_command"), 0);
    // A real one still writes its line.
    let (s, v) = tool(&b, &phone, "exec_command", &json!({"command": "true"}));
    assert_eq!(s, 200, "{v}");
    assert_eq!(before("tool.exec_command"), 1);
}

#[test]
fn a_write_tool_whose_arguments_do_not_read_leaves_no_tool_line() {
    // SPEC §7: a write refused before it happened leaves no `tool.<name>` line — also when what
    // refuses it is the arguments (an unknown field, a missing one, a wrong type), which the tool
    // would refuse before touching anything.
    let b = TestBridge::start();
    let phone = b.pair("phone", "full");
    let inside = b.dir.path().join("home").join("notes.txt");
    let path = inside.display().to_string();
    for (tool, args) in [
        (
            "write_file",
            json!({"path": path, "content": "x", "risk": "high"}),
        ),
        ("write_file", json!({"path": path})),
        (
            "edit_block",
            json!({"file_path": path, "old_string": 3, "new_string": "y"}),
        ),
        ("create_directory", json!({"path": path, "mode": "0777"})),
        ("move_file", json!({"source": path})),
    ] {
        let (s, v) = b.post(&format!("/api/tools/{tool}"), Some(&phone), &args);
        assert_eq!(s, 400, "{tool} {args}: {v}");
    }
    assert!(!inside.exists());
    // A call that reads writes its line: the log is being written.
    let (s, v) = b.post(
        "/api/tools/write_file",
        Some(&phone),
        &json!({"path": path, "content": "x"}),
    );
    assert_eq!(s, 200, "{v}");
    let lines = audit_of(
        &b,
        &[
            "tool.write_file",
            "tool.edit_block",
            "tool.create_directory",
            "tool.move_file",
        ],
    );
    // Its request line and its outcome, one request id: nothing of the refused calls.
    assert_eq!(lines.len(), 2, "only the write that happened: {lines:?}");
    assert_eq!(lines[0]["request_id"], lines[1]["request_id"], "{lines:?}");
    assert_eq!(lines[1]["detail"]["phase"], "done");
}
