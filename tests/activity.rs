//! What each pane is doing, on `GET /api/panes` (SPEC §3.2, issue 33): `waiting` while a real
//! held-permission hook's card names the pane, `working` while its screen changes, `idle`
//! otherwise — on a lead's own panes and on a member's, decided where the pane is.

#[path = "support/hook.rs"]
mod hook;
mod support;

use std::time::Duration;

use hook::{bash_request, card_named, Hook};
use serde_json::Value;
use support::{crew_bridge, wait_for, TestBridge};

/// The activity of the pane named `name` on `machine`, once it is `want`.
fn becomes(b: &TestBridge, token: &str, machine: &str, name: &str, want: &str) -> Value {
    wait_for(Duration::from_secs(15), || {
        let (_, list) = b.get("/api/panes", Some(token));
        list["panes"]
            .as_array()?
            .iter()
            .find(|p| p["machine"] == machine && p["name"] == name && p["activity"] == want)
            .cloned()
    })
    .unwrap_or_else(|| {
        let (_, list) = b.get("/api/panes", Some(token));
        panic!("{machine}/{name} never became {want}: {list}")
    })
}

#[test]
fn a_hook_card_makes_its_pane_wait_and_output_makes_one_work() {
    let b = TestBridge::start();
    let token = b.pair("phone", "full");
    b.hosted(
        "ticker",
        &["sh", "-c", "while :; do date +%N; sleep 0.2; done"],
    );
    b.hosted("quiet", &["sleep", "1000"]);
    becomes(&b, &token, "testbox", "ticker", "working");
    becomes(&b, &token, "testbox", "quiet", "idle");

    let hook = Hook::start(&b, "asking", &bash_request("s-1", "rm -rf build"));
    card_named(&b, &token, "asking");
    becomes(&b, &token, "testbox", "asking", "waiting");
    // Answered, the card is gone: the pane stops waiting.
    let card = card_named(&b, &token, "asking");
    let (status, v) = b.post(
        &format!("/api/cards/{}/answer", card["id"].as_str().expect("id")),
        Some(&token),
        &serde_json::json!({"option": "deny", "shown": card["shown"]}),
    );
    assert_eq!(status, 200, "{v}");
    hook.finished();
}

#[test]
fn a_member_s_panes_carry_the_member_s_activity() {
    let lead = crew_bridge(false, &[]);
    let member = crew_bridge(false, &[]);
    lead.cli_ok(&["crew", "init"]);
    member.cli_ok(&["crew", "join", &lead.invite(), "--name", "web-1"]);
    lead.wait_member_online("web-1");
    member.hosted(
        "ticker",
        &["sh", "-c", "while :; do date +%N; sleep 0.2; done"],
    );
    member.hosted("quiet", &["sleep", "1000"]);
    let token = lead.pair("phone", "full");
    becomes(&lead, &token, "web-1", "ticker", "working");
    becomes(&lead, &token, "web-1", "quiet", "idle");
}
