//! A relayed tool call is answered when the tool is done, not at the relay's usual deadline. The
//! attack (issue 26, hole 10): an `exec_command` on a member that ran longer than 1.5 s answered
//! `502 member unreachable` on the lead while the command went on running on the member — the
//! phone was told the member was gone and never saw the command's end. A real lead and member on
//! loopback QUIC.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{crew_bridge, wait_for, TestBridge};

fn tool(b: &TestBridge, token: &str, name: &str, args: &Value) -> (u16, Value) {
    b.post(&format!("/api/tools/{name}"), Some(token), args)
}

#[test]
fn a_relayed_command_longer_than_the_relay_deadline_answers_its_output() {
    let lead = crew_bridge(false, &[]);
    let member = crew_bridge(false, &[]);
    lead.cli_ok(&["crew", "init"]);
    member.cli_ok(&["crew", "join", &lead.invite(), "--name", "web-1"]);
    lead.wait_member_online("web-1");
    let phone = lead.pair("phone", "full");

    // A quick call first, until the member answers tools (it joined a moment ago).
    let quick = json!({"command": "echo ready", "machine": "web-1"});
    wait_for(Duration::from_secs(15), || {
        let (status, body) = tool(&lead, &phone, "exec_command", &quick);
        (status == 200).then_some(body)
    })
    .expect("the member runs a quick command");

    // 3 s: twice the relay's usual answer deadline, well inside the command's own time limit.
    let slow = json!({
        "command": "sleep 3; echo finished-on-the-member",
        "timeout_ms": 10_000,
        "machine": "web-1"
    });
    let (status, body) = tool(&lead, &phone, "exec_command", &slow);
    assert_eq!(status, 200, "{body}");
    assert!(
        body.to_string().contains("finished-on-the-member"),
        "the phone gets the command's output: {body}"
    );
    assert_eq!(body["exit_code"], 0, "{body}");

    // A member that is gone is still refused: the longer deadline is for a call being worked on.
    drop(member);
    let answer = wait_for(Duration::from_secs(15), || {
        let (status, body) = tool(&lead, &phone, "exec_command", &slow);
        (status != 200).then_some((status, body))
    })
    .expect("the lead notices the member left");
    assert_eq!(answer.0, 502, "{}", answer.1);
}
