//! Black-box tests of the crew (SPEC §8): a lead and members as real `collie bridge` processes,
//! each with its own state dir, linked over QUIC on loopback.

mod support;

use std::time::{Duration, Instant};

use serde_json::Value;
use support::{wait_for, Opts, TestBridge};

/// A bridge whose crew port is chosen by the OS.
fn bridge() -> TestBridge {
    TestBridge::start_with(Opts {
        with_tmux: false,
        env: vec![("COLLIE_CREW_PORT".into(), "0".into())],
    })
}

fn json_of(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

fn status(b: &TestBridge) -> Value {
    json_of(&b.cli_ok(&["crew", "status", "--json"]))
}

fn invite(lead: &TestBridge) -> String {
    let v = json_of(&lead.cli_ok(&["crew", "invite", "--json"]));
    v["invite"].as_str().expect("invite string").to_string()
}

/// The lead's view of member `name`: `Some(online)` if it is a member.
fn member_online(lead: &TestBridge, name: &str) -> Option<bool> {
    status(lead)["members"]
        .as_array()?
        .iter()
        .find(|m| m["name"] == name)
        .map(|m| m["online"] == true)
}

fn lead_online(member: &TestBridge) -> bool {
    status(member)["lead"]["online"] == true
}

fn machine<'a>(machines: &'a Value, name: &str) -> Option<&'a Value> {
    machines["machines"]
        .as_array()?
        .iter()
        .find(|m| m["name"] == name)
}

/// A join that must fail: exit 1, the message on stderr, and no crew state left on the member.
fn refused_join(member: &TestBridge, invite: &str, name: &str) -> String {
    let out = member.cli(&["crew", "join", invite, "--name", name]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "join should fail: {stderr}");
    assert!(
        !member.state().join("crew").exists(),
        "a refused join left an identity behind"
    );
    assert_eq!(status(member)["role"], "solo");
    stderr
}

#[test]
fn a_member_joins_links_reconnects_and_is_removed() {
    let lead = bridge();
    let mut member = bridge();
    let init = json_of(&lead.cli_ok(&["crew", "init", "--json"]));
    assert_eq!(init["role"], "lead");
    assert_eq!(init["pin"].as_str().map(str::len), Some(64));
    let inv = invite(&lead);
    member.cli_ok(&["crew", "join", &inv, "--name", "web-1"]);

    // Both sides see each other, online.
    let seen = wait_for(Duration::from_secs(10), || {
        (member_online(&lead, "web-1") == Some(true) && lead_online(&member)).then_some(())
    });
    assert!(seen.is_some(), "the link did not come up");
    let ms = status(&member);
    assert_eq!(ms["role"], "member");
    assert_eq!(ms["name"], "web-1");
    assert_eq!(ms["lead"]["pin"], init["pin"]);
    let members = json_of(&lead.cli_ok(&["crew", "members", "--json"]));
    assert_eq!(members["members"][0]["name"], "web-1");
    assert_eq!(members["members"][0]["pin"], ms["pin"]);
    let theirs = json_of(&member.cli_ok(&["crew", "members", "--json"]));
    assert_eq!(theirs["members"][0]["role"], "lead");
    assert_eq!(theirs["members"][0]["pin"], init["pin"]);

    // The phone API of the lead lists the member; health shows the roles.
    let token = lead.pair("phone", "read");
    let (code, machines) = lead.get("/api/machines", Some(&token));
    assert_eq!(code, 200, "{machines}");
    assert_eq!(machine(&machines, "testbox").expect("lead")["role"], "lead");
    let m = machine(&machines, "web-1").expect("member listed");
    assert_eq!(m["role"], "member");
    assert_eq!(m["online"], true);
    assert_eq!(m["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(lead.get("/api/health", None).1["crew_mode"], "lead");
    assert_eq!(member.get("/api/health", None).1["crew_mode"], "member");

    // SIGKILL the member: the lead shows it offline within a few seconds.
    member.kill_hard();
    let offline = wait_for(Duration::from_secs(8), || {
        (member_online(&lead, "web-1") == Some(false)).then_some(())
    });
    assert!(offline.is_some(), "the lead did not notice the member die");
    let (_, machines) = lead.get("/api/machines", Some(&token));
    assert_eq!(
        machine(&machines, "web-1").expect("still a member")["online"],
        false
    );

    // Restart it: back online without any command.
    member.launch();
    let back = wait_for(Duration::from_secs(10), || {
        (member_online(&lead, "web-1") == Some(true)).then_some(())
    });
    assert!(back.is_some(), "the member did not reconnect by itself");

    // Remove it: the connection closes at once and it cannot come back.
    lead.cli_ok(&["crew", "remove", "web-1"]);
    assert_eq!(member_online(&lead, "web-1"), None);
    let dropped = wait_for(Duration::from_secs(8), || {
        (!lead_online(&member)).then_some(())
    });
    assert!(dropped.is_some(), "the member's link was not closed");
    // The member keeps retrying with backoff; none of its attempts may succeed.
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        assert!(!lead_online(&member), "a removed member reconnected");
        assert_eq!(member_online(&lead, "web-1"), None);
        std::thread::sleep(Duration::from_millis(100));
    }
    let (_, machines) = lead.get("/api/machines", Some(&token));
    assert!(machine(&machines, "web-1").is_none());

    let log = std::fs::read_to_string(lead.state().join("audit.log")).expect("audit log");
    assert!(log.contains("\"event\":\"crew.joined\""), "{log}");
    assert!(log.contains("\"event\":\"crew.removed\""), "{log}");
}

#[test]
fn refused_joins_leave_no_state_on_either_side() {
    let lead = bridge();
    let first = bridge();
    let fresh = bridge();
    lead.cli_ok(&["crew", "init"]);
    let inv = invite(&lead);
    first.cli_ok(&["crew", "join", &inv, "--name", "web-1"]);

    // Replaying the used invite from a fresh state dir: with no open invite, the lead's TLS
    // refuses the unknown certificate; with one open, the lead refuses the used secret.
    let err = refused_join(&fresh, &inv, "web-2");
    assert!(err.contains("the invite is used or expired"), "{err}");
    let good = invite(&lead);
    let err = refused_join(&fresh, &inv, "web-2");
    assert!(err.contains("invite already used"), "{err}");

    // A lead pin that is not the lead's: the member refuses the lead.
    let prefix = "collie-crew:";
    let pin_at = prefix.len();
    let flipped = if &good[pin_at..pin_at + 1] == "0" {
        "1"
    } else {
        "0"
    };
    let bad_pin = format!("{}{flipped}{}", &good[..pin_at], &good[pin_at + 1..]);
    let err = refused_join(&fresh, &bad_pin, "web-2");
    assert!(err.contains("does not have the pin in the invite"), "{err}");

    // A wrong join secret.
    let secret_at = pin_at + 65;
    let flipped = if &good[secret_at..secret_at + 1] == "0" {
        "1"
    } else {
        "0"
    };
    let bad_secret = format!("{}{flipped}{}", &good[..secret_at], &good[secret_at + 1..]);
    let err = refused_join(&fresh, &bad_secret, "web-2");
    assert!(err.contains("wrong join secret"), "{err}");

    // A name already taken.
    let err = refused_join(&fresh, &good, "web-1");
    assert!(err.contains("already taken"), "{err}");

    // The lead changed nothing: one member, and the invite still works.
    let members = status(&lead)["members"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(members.len(), 1);
    fresh.cli_ok(&["crew", "join", &good, "--name", "web-2"]);
    let both = wait_for(Duration::from_secs(10), || {
        (member_online(&lead, "web-1") == Some(true) && member_online(&lead, "web-2") == Some(true))
            .then_some(())
    });
    assert!(both.is_some(), "both members should be online");
    let log = std::fs::read_to_string(lead.state().join("audit.log")).expect("audit log");
    assert_eq!(log.matches("\"event\":\"crew.joined\"").count(), 2);
}
