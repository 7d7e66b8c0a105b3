//! Red-team item 8 of seed 003 §8.13: a store write that fails must never publish a new policy,
//! and the audit log must never claim a change that did not happen.
//!
//! The first test makes the lead's device store refuse writes. That fault is the one mock of the
//! file: it is injected through the test-only `fault-injection` cargo feature (a control request
//! the shipped binary does not have), because no real disk failure can be produced here for
//! sled's already open files without privileges — the tests run as root in CI, so `chmod` stops
//! nothing, and a full file system needs a mount (decision 0037). Everything else is real: a lead
//! and a member on loopback, the CLI's `devices set-tier` and `revoke`, the pairing API, and the
//! three doors that must all keep the old tier. The second test's fault is real: a directory in
//! the audit log's place, so the change the store already holds must be undone.
// The helpers of the injected-fault test are unused without the feature.
#![cfg_attr(not(feature = "fault-injection"), allow(dead_code, unused_imports))]

mod support;

use std::io::{BufRead, BufReader, Write};
use std::time::Duration;

use serde_json::{json, Value};
use support::{json_of, wait_for, Opts, TestBridge};

/// A crew bridge whose log goes to a file.
fn crew_bridge() -> TestBridge {
    TestBridge::start_with(Opts {
        env: vec![("COLLIE_CREW_PORT".into(), "0".into())],
        log_to_file: true,
        ..Opts::default()
    })
}

/// Tells the bridge's store to fail (or stop failing) every durable write of a device record,
/// over its control socket.
#[cfg(feature = "fault-injection")]
fn fail_device_writes(b: &TestBridge, fail: bool) {
    let mut s = std::os::unix::net::UnixStream::connect(b.state().join("bridge.sock"))
        .expect("control socket");
    writeln!(
        s,
        "{}",
        json!({"cmd": "test-fail-device-writes", "fail": fail})
    )
    .expect("write");
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).expect("reply");
    assert_eq!(json_of(&line)["ok"], true, "{line}");
}

fn tool(b: &TestBridge, token: &str, name: &str, args: Value) -> (u16, Value) {
    b.post(&format!("/api/tools/{name}"), Some(token), &args)
}

/// The names MCP's `tools/list` shows the device.
fn mcp_tools(b: &TestBridge, token: &str) -> Vec<String> {
    let (status, _, text) = b.raw(
        "POST",
        "/mcp",
        Some(token),
        Some(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})),
        &[("Accept", "application/json, text/event-stream")],
    );
    assert_eq!(status, 200, "{text}");
    json_of(&text)["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("tools/list: {text}"))
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

/// The device's tier as the CLI lists it.
fn listed_tier(b: &TestBridge, label: &str) -> Option<String> {
    json_of(&b.cli_ok(&["devices", "list", "--json"]))["devices"]
        .as_array()?
        .iter()
        .find(|d| d["label"] == label)
        .and_then(|d| d["tier"].as_str().map(str::to_owned))
}

fn events(b: &TestBridge, event: &str) -> Vec<Value> {
    b.audit_lines()
        .into_iter()
        .filter(|l| l["event"] == event)
        .collect()
}

/// Asserts `phone` is a `read` device at every door of `lead`: the phone API, MCP and the relay to
/// `member` (named `web-1`). `round` tells the files apart.
fn every_door_says_read(lead: &TestBridge, member: &TestBridge, phone: &str, round: &str) {
    let file = format!("{round}.txt");
    let (status, body) = tool(
        lead,
        phone,
        "write_file",
        json!({"path": file, "content": "x"}),
    );
    assert_eq!(
        (status, body["error"].as_str()),
        (403, Some("insufficient tier")),
        "{round}: the phone API"
    );
    let names = mcp_tools(lead, phone);
    assert_eq!(
        names.len(),
        11,
        "{round}: MCP shows a read device's tools: {names:?}"
    );
    assert!(!names
        .iter()
        .any(|n| n == "write_file" || n == "exec_command"));
    let (status, body) = tool(
        lead,
        phone,
        "write_file",
        json!({"path": file, "content": "x", "machine": "web-1"}),
    );
    assert_eq!(
        (status, body["error"].as_str()),
        (403, Some("insufficient tier")),
        "{round}: the relay"
    );
    assert!(!lead.dir.path().join("home").join(&file).exists());
    assert!(!member.dir.path().join("home").join(&file).exists());
    assert_eq!(listed_tier(lead, "phone").as_deref(), Some("read"));
}

#[cfg(feature = "fault-injection")]
#[test]
fn a_tier_change_the_store_refused_is_never_published_nor_audited_and_a_later_one_works() {
    let lead = crew_bridge();
    let member = crew_bridge();
    lead.cli_ok(&["crew", "init"]);
    member.cli_ok(&["crew", "join", &lead.invite(), "--name", "web-1"]);
    let phone = lead.pair("phone", "read");
    // The member is reachable (it joined a moment ago): a relayed read goes through.
    std::fs::write(member.dir.path().join("home/m.txt"), "on the member\n").expect("write");
    let reached = wait_for(Duration::from_secs(15), || {
        let (status, _) = tool(
            &lead,
            &phone,
            "read_file",
            json!({"path": "m.txt", "machine": "web-1"}),
        );
        (status == 200).then_some(())
    });
    assert!(reached.is_some(), "the member never came online");
    every_door_says_read(&lead, &member, &phone, "before");

    fail_device_writes(&lead, true);

    // The attack: raise the tier while the store cannot make it durable.
    let out = lead.cli(&["devices", "set-tier", "phone", "full"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "set-tier succeeded on a failing store"
    );
    assert!(stderr.contains("pairing unavailable"), "{stderr}");
    every_door_says_read(&lead, &member, &phone, "refused");
    // No line claims the change: the log holds what happened, and nothing did.
    assert!(
        events(&lead, "device.tier").is_empty(),
        "{:?}",
        events(&lead, "device.tier")
    );
    assert!(
        lead.log().contains("injected write failure"),
        "the bridge's log names why: {}",
        lead.log()
    );

    // The same holds for the store's other device changes: a revocation and a new pairing.
    std::fs::write(lead.dir.path().join("home/l.txt"), "on the lead\n").expect("write");
    let out = lead.cli(&["devices", "revoke", "phone"]);
    assert!(!out.status.success());
    assert!(events(&lead, "device.revoked").is_empty());
    let (status, body) = tool(&lead, &phone, "read_file", json!({"path": "l.txt"}));
    assert_eq!(status, 200, "the phone is still paired: {body}");
    let code = lead.code("full");
    let (status, body) = lead.post("/api/pair", None, &json!({"code": code, "label": "tablet"}));
    assert_eq!(
        (status, body["error"].as_str()),
        (503, Some("pairing unavailable")),
        "{body}"
    );
    assert!(
        events(&lead, "device.paired")
            .iter()
            .all(|l| l["detail"]["label"] != "tablet"),
        "{:?}",
        events(&lead, "device.paired")
    );
    assert_eq!(listed_tier(&lead, "tablet"), None);

    // A restart reads the store: none of the refused changes is there (the injected fault is
    // memory only, so it ends with the process).
    let mut lead = lead;
    lead.stop();
    lead.launch();
    every_door_says_read(&lead, &member, &phone, "restarted");
    assert_eq!(listed_tier(&lead, "tablet"), None);

    // Fail again, then let the store recover in the running bridge: nothing refused shows up
    // late, and a new change works at every door and is audited once with old tier, new tier
    // and version.
    fail_device_writes(&lead, true);
    assert!(!lead
        .cli(&["devices", "set-tier", "phone", "full"])
        .status
        .success());
    fail_device_writes(&lead, false);
    every_door_says_read(&lead, &member, &phone, "recovered");
    lead.cli_ok(&["devices", "set-tier", "phone", "files"]);
    assert_eq!(listed_tier(&lead, "phone").as_deref(), Some("files"));
    assert_eq!(mcp_tools(&lead, &phone).len(), 15);
    let (status, body) = tool(
        &lead,
        &phone,
        "write_file",
        json!({"path": "after.txt", "content": "here"}),
    );
    assert_eq!(status, 200, "{body}");
    let relayed = wait_for(Duration::from_secs(15), || {
        let (status, body) = tool(
            &lead,
            &phone,
            "write_file",
            json!({"path": "after.txt", "content": "there", "machine": "web-1"}),
        );
        (body["error"] != "member unreachable").then_some((status, body))
    })
    .expect("the member came back after the lead's restart");
    assert_eq!(relayed.0, 200, "{}", relayed.1);
    assert_eq!(
        std::fs::read_to_string(member.dir.path().join("home/after.txt")).expect("relayed"),
        "there"
    );
    let (status, body) = tool(&lead, &phone, "exec_command", json!({"command": "true"}));
    assert_eq!(
        (status, body["error"].as_str()),
        (403, Some("insufficient tier")),
        "the refused `full` never took effect"
    );
    let tiers = events(&lead, "device.tier");
    assert_eq!(tiers.len(), 1, "{tiers:?}");
    assert_eq!(tiers[0]["detail"]["label"], "phone");
    assert_eq!(tiers[0]["detail"]["old_tier"], "read");
    assert_eq!(tiers[0]["detail"]["new_tier"], "files");
    assert!(
        tiers[0]["detail"]["version"].as_u64().is_some(),
        "{tiers:?}"
    );
    // The chain is whole: the refused changes left no gap and no stray line.
    lead.cli_ok(&["audit", "verify"]);
}

#[test]
fn a_tier_change_that_cannot_be_audited_is_undone_in_the_store() {
    let mut b = TestBridge::start_with(Opts {
        log_to_file: true,
        ..Opts::default()
    });
    let phone = b.pair("phone", "read");
    // The phone's first request records when it was last seen (a lazy store write of the whole
    // record, at most once a minute); made now, it cannot later write the old record back and
    // hide a missing undo.
    assert_eq!(mcp_tools(&b, &phone).len(), 11);
    let log = b.state().join("audit.log");
    let kept = std::fs::read(&log).expect("audit.log");
    std::fs::remove_file(&log).expect("remove the log");
    std::fs::create_dir(&log).expect("a directory in the log's place");

    // The store takes the change first; the line cannot be appended; the change is refused.
    let out = b.cli(&["devices", "set-tier", "phone", "full"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "an unaudited change went through");
    assert!(stderr.contains("audit unavailable"), "{stderr}");
    let (status, body) = tool(&b, &phone, "exec_command", json!({"command": "true"}));
    assert_eq!(
        (status, body["error"].as_str()),
        (403, Some("insufficient tier"))
    );
    assert_eq!(mcp_tools(&b, &phone).len(), 11);

    // The store was put back: after a restart (with the log restored) the phone is still `read`.
    b.stop();
    std::fs::remove_dir(&log).expect("remove the directory");
    std::fs::write(&log, kept).expect("restore the log");
    b.launch();
    assert_eq!(listed_tier(&b, "phone").as_deref(), Some("read"));
    let (status, _) = tool(&b, &phone, "exec_command", json!({"command": "true"}));
    assert_eq!(status, 403);
    assert!(events(&b, "device.tier").is_empty());
    // With the log writable the same change works and is audited.
    b.cli_ok(&["devices", "set-tier", "phone", "full"]);
    let (status, body) = tool(&b, &phone, "exec_command", json!({"command": "true"}));
    assert_eq!(status, 200, "{body}");
    assert_eq!(events(&b, "device.tier").len(), 1);
}
