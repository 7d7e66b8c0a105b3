//! The deputy's standby door (SPEC §13), black-box: a real lead and a real member on loopback with
//! real QUIC. The lead names the member its deputy and pushes it the device registry; while the
//! lead is up the deputy sends the lead's phones back to it, and once the lead has been gone for
//! the standby bound the deputy serves them by the copy — same tiers, expiries and revocations —
//! until the lead returns.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use collie_actors::pairing::Device;
use collie_actors::store::{Store, Table};
use serde_json::{json, Value};
use support::{crew_bridge, json_of, wait_for, TestBridge};

/// The standby bound (`STAND_IN_AFTER`); a phone must be served within twice it.
const STAND_IN_AFTER: Duration = Duration::from_secs(10);

/// `collie crew status --json`'s deputy, if any.
fn deputy_of(b: &TestBridge) -> Value {
    json_of(&b.cli_ok(&["crew", "status", "--json"]))["deputy"].clone()
}

/// Moves device `label`'s expiry into the past in a stopped bridge's store.
fn expire_in_store(b: &TestBridge, label: &str) {
    let store = Store::open(&b.state().join("db")).expect("store");
    let raw = store
        .get(Table::Devices, label)
        .expect("get")
        .expect("device");
    let mut d: Device = serde_json::from_slice(&raw).expect("device json");
    d.expires_at = Some(time::OffsetDateTime::now_utc() - time::Duration::minutes(1));
    let bytes = serde_json::to_vec(&d).expect("json");
    store.put(Table::Devices, label, &bytes).expect("put");
}

#[test]
fn the_deputy_stands_in_for_a_dead_lead_by_its_registry_copy_and_steps_back() {
    let mut lead = crew_bridge(false, &[]);
    let web1 = crew_bridge(true, &[]);
    lead.cli_ok(&["crew", "init"]);
    let phone = lead.pair("phone", "full");
    let reader = lead.pair("reader", "read");
    let tablet = lead.pair("tablet", "full");
    let stolen = lead.pair("stolen", "full");
    lead.cli_ok(&["devices", "set-expiry", "tablet", "1h"]);
    lead.stop();
    expire_in_store(&lead, "tablet");
    lead.launch();
    lead.cli_ok(&["devices", "revoke", "stolen"]);
    web1.cli_ok(&["crew", "join", &lead.invite(), "--name", "web-1"]);
    lead.wait_online(&phone, &["web-1"]);

    // Naming a member that does not exist changes nothing.
    let out = lead.cli(&["crew", "deputy", "set", "web-9"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no member named web-9"));

    lead.cli_ok(&["crew", "deputy", "set", "web-1"]);
    let held = wait_for(Duration::from_secs(10), || {
        let on_lead = deputy_of(&lead);
        let on_web1 = deputy_of(&web1);
        let version = on_web1["version"].as_u64()?;
        (on_lead["name"] == "web-1" && on_lead["acknowledged"].as_u64() == Some(version))
            .then_some(version)
    })
    .expect("the deputy holds the lead's registry copy, and both machines show its version");
    assert_eq!(deputy_of(&web1)["state"], "standing by");
    let line = lead
        .audit_lines()
        .into_iter()
        .rev()
        .find(|l| l["event"] == "crew.deputy");
    assert_eq!(
        line.expect("the naming is audited")["detail"]["member"],
        "web-1"
    );

    // The copy is private and holds hashes, never a token.
    let file = web1.state().join("deputy-registry.json");
    let mode = std::fs::metadata(&file)
        .expect("the copy is kept")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let kept = std::fs::read_to_string(&file).expect("read the copy");
    for token in [&phone, &reader, &tablet, &stolen] {
        assert!(
            !kept.contains(token.as_str()),
            "a token in the deputy's copy"
        );
    }
    assert!(
        !kept.contains("\"stolen\""),
        "a revoked device is not copied"
    );

    // The deputy never pairs: phones pair on the lead.
    let out = web1.cli(&["pair", "--json"]);
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("standby: devices are changed on the lead"),
        "{said}"
    );

    // While the lead is up, the deputy sends the lead's phones back to it.
    let (s, v) = web1.get("/api/panes", Some(&phone));
    assert_eq!(
        (s, v["error"].as_str()),
        (503, Some("standby: the lead is up"))
    );
    assert_eq!(v["lead"], lead.url(""), "{v}");

    // A device changed on the lead reaches the deputy as a new version.
    lead.cli_ok(&["devices", "set-tier", "reader", "read"]);
    let extra = lead.pair("extra", "read");
    wait_for(Duration::from_secs(10), || {
        let v = deputy_of(&web1)["version"].as_u64()?;
        (v > held).then_some(())
    })
    .expect("a new pairing reaches the deputy");

    // The lead dies.
    lead.kill_hard();
    let died = Instant::now();
    let pane = wait_for(STAND_IN_AFTER * 2, || {
        let (s, v) = web1.get("/api/panes", Some(&phone));
        (s == 200).then_some(())?;
        v["panes"]
            .as_array()?
            .iter()
            .find(|p| p["backend"] == "tmux")
            .and_then(|p| p["pane"].as_str().map(str::to_owned))
    })
    .expect("the deputy serves the lead's phone within twice the standby bound");
    println!(
        "the deputy stood in {:?} after the lead died",
        died.elapsed()
    );
    assert_eq!(deputy_of(&web1)["state"], "standing in");

    // Reads and writes by the copy's tiers; the write is audited here, naming the device.
    let (s, snap) = web1.get(&format!("/api/panes/local/{pane}"), Some(&phone));
    assert_eq!(s, 200, "{snap}");
    let body = json!({"text": "echo via-deputy", "keys": ["Enter"]});
    let (s, v) = web1.post(
        &format!("/api/panes/local/{pane}/input"),
        Some(&phone),
        &body,
    );
    assert_eq!(s, 200, "{v}");
    let line = web1
        .audit_lines()
        .into_iter()
        .rev()
        .find(|l| l["event"] == "pane.input")
        .expect("the write is audited on the deputy");
    assert_eq!(line["device"], "phone", "{line}");
    assert_eq!(line["detail"]["via"], "deputy", "{line}");
    assert_eq!(line["detail"]["lead"], "testbox", "{line}");
    let (s, v) = web1.post(
        &format!("/api/panes/local/{pane}/input"),
        Some(&reader),
        &body,
    );
    assert_eq!((s, v["error"].as_str()), (403, Some("insufficient tier")));
    let (s, _) = web1.get("/api/panes", Some(&extra));
    assert_eq!(s, 200, "a device paired after the naming is in the copy");

    // Expired and revoked devices stay out; devices are the lead's to change.
    let (s, v) = web1.get("/api/panes", Some(&tablet));
    assert_eq!((s, v["error"].as_str()), (403, Some("device expired")));
    let (s, v) = web1.get("/api/panes", Some(&stolen));
    assert_eq!((s, v["error"].as_str()), (403, Some("device not paired")));
    let (s, v) = web1.get("/api/devices", Some(&phone));
    let changed_on_lead = Some("standby: devices are changed on the lead");
    assert_eq!((s, v["error"].as_str()), (503, changed_on_lead));
    let (s, v) = web1.request("DELETE", "/api/devices/reader", Some(&phone), None, &[]);
    assert_eq!((s, v["error"].as_str()), (503, changed_on_lead));

    // A stream served by the deputy ends once the lead is back, saying where the phone belongs.
    let stream = web1.sse(&format!("/api/panes/local/{pane}/stream"), &phone);
    let first = stream
        .recv_timeout(Duration::from_secs(10))
        .expect("the stream's first event");
    assert_eq!(first.1["full"], true, "{first:?}");

    // The lead returns: the deputy steps back within the bound and sends the phone to it again.
    lead.launch();
    let closed = wait_for(STAND_IN_AFTER, || {
        let (name, data) = stream.recv_timeout(Duration::from_millis(100)).ok()?;
        (name == "closed").then_some(data)
    })
    .expect("the deputy's stream closes when the lead is back");
    assert_eq!(closed["error"], "standby: the lead is up", "{closed}");
    let back = Instant::now();
    wait_for(STAND_IN_AFTER, || {
        let (s, v) = web1.get("/api/panes", Some(&phone));
        (s == 503 && v["error"] == "standby: the lead is up").then_some(())
    })
    .expect("the deputy steps back once the lead is back");
    println!(
        "the deputy stepped back {:?} after the lead's restart",
        back.elapsed()
    );
    assert_eq!(lead.get("/api/panes", Some(&phone)).0, 200);

    // The lead keeps what the deputy wrote standing in, in its own chain.
    let kept = wait_for(Duration::from_secs(10), || {
        let out = lead.cli_ok(&["audit", "tail", "--crew"]);
        out.lines()
            .find(|l| l.starts_with("web-1 ") && l.contains("pane.input"))
            .map(str::to_owned)
    })
    .expect("the lead shows the deputy's stand-in write");
    assert!(
        kept.contains("\"via\":\"deputy\"") && kept.contains("phone"),
        "{kept}"
    );
    lead.cli_ok(&["audit", "verify"]);

    // Cleared: the deputy forgets its copy and the lead's tokens name nothing there.
    lead.cli_ok(&["crew", "deputy", "clear"]);
    wait_for(Duration::from_secs(10), || (!file.exists()).then_some(()))
        .expect("the cleared deputy removes its copy");
    let (s, v) = web1.get("/api/panes", Some(&phone));
    assert_eq!((s, v["error"].as_str()), (403, Some("device not paired")));
    assert!(deputy_of(&web1).is_null());
}

#[test]
fn standing_in_the_deputy_relays_to_the_other_members_who_say_who_asked() {
    let mut lead = crew_bridge(false, &[]);
    let web1 = crew_bridge(false, &[]);
    let web2 = crew_bridge(true, &[]);
    lead.cli_ok(&["crew", "init"]);
    web1.cli_ok(&["crew", "join", &lead.invite(), "--name", "web-1"]);
    web2.cli_ok(&["crew", "join", &lead.invite(), "--name", "web-2"]);
    let phone = lead.pair("phone", "full");
    let local = web1.pair("web1-own", "full");
    lead.wait_online(&phone, &["web-1", "web-2"]);
    let pane = lead.tmux_pane_of(&phone, "web-2");
    lead.cli_ok(&["crew", "deputy", "set", "web-1"]);
    // Every member learns who the deputy is from the lead.
    wait_for(Duration::from_secs(10), || {
        (deputy_of(&web2)["name"] == "web-1" && deputy_of(&web1)["version"].is_u64()).then_some(())
    })
    .expect("web-2 is told that web-1 is the deputy");

    lead.kill_hard();
    let died = Instant::now();
    let path = format!("/api/panes/web-2/{pane}");
    wait_for(STAND_IN_AFTER * 2, || {
        (web1.get(&path, Some(&phone)).0 == 200).then_some(())
    })
    .expect("through the deputy the phone reads web-2's pane within twice the bound");
    println!(
        "web-2's pane through the deputy {:?} after the lead died",
        died.elapsed()
    );
    let (s, list) = web1.get("/api/panes", Some(&phone));
    assert_eq!(s, 200);
    let listed = list["panes"].as_array().expect("panes");
    assert!(listed.iter().any(|p| p["machine"] == "web-2"), "{list}");

    // A write through the deputy: audited on the deputy and on web-2 with one request id, and
    // web-2 says who asked.
    let body = json!({"text": "echo through-the-deputy", "keys": ["Enter"]});
    let (s, v) = web1.post(&format!("{path}/input"), Some(&phone), &body);
    assert_eq!(s, 200, "{v}");
    let on_deputy = web1
        .audit_lines()
        .into_iter()
        .rev()
        .find(|l| l["event"] == "pane.input")
        .expect("the deputy audits the write");
    let on_member = web2
        .audit_lines()
        .into_iter()
        .rev()
        .find(|l| l["event"] == "pane.input")
        .expect("web-2 audits the write");
    assert_eq!(on_deputy["device"], "phone", "{on_deputy}");
    assert_eq!(on_deputy["detail"]["via"], "deputy", "{on_deputy}");
    assert_eq!(on_member["device"], "phone", "{on_member}");
    assert_eq!(on_member["detail"]["deputy"], "web-1", "{on_member}");
    assert_eq!(on_member["detail"]["lead"], "testbox", "{on_member}");
    assert_eq!(
        on_deputy["request_id"], on_member["request_id"],
        "one request id"
    );
    let shown = wait_for(Duration::from_secs(10), || {
        let (_, snap) = web1.get(&path, Some(&phone));
        snap["lines"]
            .as_array()?
            .iter()
            .any(|l| l.as_str().is_some_and(|l| l.contains("through-the-deputy")))
            .then_some(())
    });
    assert!(shown.is_some(), "the input reached web-2's pane");

    // The deputy's own device does not reach the other members through the door.
    let (s, v) = web1.get(&path, Some(&local));
    assert_ne!(s, 200, "{v}");

    // The lead returns: web-2 goes back to it, and the deputy no longer relays.
    lead.launch();
    lead.wait_online(&phone, &["web-2"]);
    let (s, _) = lead.get(&path, Some(&phone));
    assert_eq!(s, 200);
    wait_for(STAND_IN_AFTER, || {
        let (s, v) = web1.get(&path, Some(&phone));
        (s == 503 && v["error"] == "standby: the lead is up").then_some(())
    })
    .expect("the deputy steps back once it reaches the lead again");
}

/// Split brain (decision 0068): the lead and the deputy both up but apart, the phone reaching
/// both. The deputy stands in for what reaches it; a member still linked to the lead follows the
/// lead only, so the deputy cannot serve it; a device revoked on the lead meanwhile is served by
/// the deputy until the two reach each other again — the bound is the partition — and the
/// revocation reaches the deputy the moment they do.
#[test]
fn split_brain_the_deputy_serves_only_itself_and_learns_the_revocation_on_reconnect() {
    let lead = crew_bridge(false, &[]);
    let web1 = crew_bridge(true, &[]);
    let web2 = crew_bridge(true, &[]);
    lead.cli_ok(&["crew", "init"]);
    let crew_addr: std::net::SocketAddr = json_of(&lead.cli_ok(&["crew", "status", "--json"]))
        ["address"]
        .as_str()
        .expect("the lead's crew address")
        .parse()
        .expect("an address");
    // web-1 reaches the lead through a relay the test can cut; web-2 directly.
    let relay = support::udp_relay::UdpRelay::to(crew_addr);
    let through = relay.front.to_string();
    let invite = json_of(&lead.cli_ok(&["crew", "invite", "--json", "--address", &through]));
    let invite = invite["invite"].as_str().expect("invite").to_owned();
    web1.cli_ok(&["crew", "join", &invite, "--name", "web-1"]);
    web2.cli_ok(&["crew", "join", &lead.invite(), "--name", "web-2"]);
    let phone = lead.pair("phone", "full");
    let tablet = lead.pair("tablet", "full");
    lead.wait_online(&phone, &["web-1", "web-2"]);
    let web2_pane = lead.tmux_pane_of(&phone, "web-2");
    lead.cli_ok(&["crew", "deputy", "set", "web-1"]);
    wait_for(Duration::from_secs(10), || {
        deputy_of(&web1)["version"].is_u64().then_some(())
    })
    .expect("the deputy holds the copy");

    relay.cut();
    let cut_at = Instant::now();
    let own_pane = wait_for(STAND_IN_AFTER * 2, || {
        let (s, v) = web1.get("/api/panes", Some(&tablet));
        (s == 200).then_some(())?;
        v["panes"]
            .as_array()?
            .iter()
            .find(|p| p["machine"] == "web-1" && p["backend"] == "tmux")
            .and_then(|p| p["pane"].as_str().map(str::to_owned))
    })
    .expect("cut off from the lead, the deputy stands in");
    println!(
        "split: the deputy stood in {:?} after the cut",
        cut_at.elapsed()
    );

    // Both doors answer the phone; the lead still serves everything.
    assert_eq!(lead.get("/api/panes", Some(&phone)).0, 200);
    let web2_path = format!("/api/panes/web-2/{web2_pane}");
    assert_eq!(lead.get(&web2_path, Some(&phone)).0, 200);
    // web-2 follows the lead it reaches: the deputy cannot serve it, so no request is served by
    // both.
    let (s, v) = web1.get(&web2_path, Some(&phone));
    assert_eq!((s, v["error"].as_str()), (502, Some("member unreachable")));

    // A revocation on the lead during the split: the deputy does not know it yet (the window
    // is the partition itself)…
    lead.cli_ok(&["devices", "revoke", "tablet"]);
    assert_eq!(lead.get("/api/panes", Some(&tablet)).0, 403);
    let (s, _) = web1.get(&format!("/api/panes/local/{own_pane}"), Some(&tablet));
    assert_eq!(
        s, 200,
        "served by the deputy's copy until the two reach each other"
    );

    // …and learns it the moment they reconnect.
    relay.mend();
    let mended = Instant::now();
    let file = web1.state().join("deputy-registry.json");
    wait_for(Duration::from_secs(15), || {
        let kept = std::fs::read_to_string(&file).ok()?;
        (!kept.contains("\"tablet\"")).then_some(())
    })
    .expect("the revocation reaches the deputy once they reconnect");
    println!(
        "split: the revocation reached the deputy {:?} after the mend",
        mended.elapsed()
    );
    // (The copy is written to disk before the door holds it: asked again until it does.)
    let mut last = Value::Null;
    wait_for(Duration::from_secs(5), || {
        let (s, v) = web1.get("/api/panes", Some(&tablet));
        last = json!([s, v]);
        (s == 403 && v["error"] == "device not paired").then_some(())
    })
    .unwrap_or_else(|| panic!("the revoked tablet is still known to the deputy: {last}"));
    let (s, v) = web1.get("/api/panes", Some(&phone));
    assert_eq!(
        (s, v["error"].as_str()),
        (503, Some("standby: the lead is up"))
    );
}
