//! Black-box tests of the crew (SPEC §8): a lead and members as real `collie bridge` processes,
//! each with its own state dir, linked over QUIC on loopback.

mod support;

use std::time::{Duration, Instant};

use serde_json::Value;
use support::{crew_bridge, json_of, wait_for, TestBridge};

/// A bridge whose crew port is chosen by the OS.
fn bridge() -> TestBridge {
    crew_bridge(false, &[])
}

fn status(b: &TestBridge) -> Value {
    json_of(&b.cli_ok(&["crew", "status", "--json"]))
}

fn invite(lead: &TestBridge) -> String {
    lead.invite()
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

/// A member-to-be with a private tmux server (one pane) and the given extra environment.
fn member_bridge(env: &[(&str, &str)]) -> TestBridge {
    crew_bridge(true, env)
}

/// The id of `machine`'s tmux pane in the lead's `GET /api/panes`, once it is listed.
fn relayed_pane(lead: &TestBridge, token: &str, machine: &str) -> String {
    lead.tmux_pane_of(token, machine)
}

/// The snapshot's visible text once it contains `needle`.
fn screen_with(b: &TestBridge, token: &str, machine: &str, pane: &str, needle: &str) -> String {
    wait_for(Duration::from_secs(10), || {
        let (s, v) = b.get(&format!("/api/panes/{machine}/{pane}"), Some(token));
        (s == 200).then_some(())?;
        let text = v["lines"]
            .as_array()?
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("\n");
        text.contains(needle).then_some(text)
    })
    .unwrap_or_else(|| panic!("{needle:?} never appeared on {machine}/{pane}"))
}

/// The first event of a pane's stream.
fn first_event(b: &TestBridge, token: &str, machine: &str, pane: &str) -> Value {
    use std::io::BufRead;
    let resp = ureq::get(&b.url(&format!("/api/panes/{machine}/{pane}/stream")))
        .set("Authorization", &format!("Bearer {token}"))
        .timeout(Duration::from_secs(10))
        .call()
        .expect("stream");
    let mut reader = std::io::BufReader::new(resp.into_reader());
    let mut line = String::new();
    while reader.read_line(&mut line).expect("read the stream") > 0 {
        if let Some(d) = line.strip_prefix("data:") {
            return json_of(d.trim());
        }
        line.clear();
    }
    panic!("the stream ended without an event");
}

fn audit_lines(b: &TestBridge) -> Vec<Value> {
    b.audit_lines()
}

const SECRET: &str = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
/// Prints [`SECRET`] without it appearing whole in the typed command line.
const PRINT_SECRET: &str = "printf 'tok=%s%s\\n' ghp_abcdefghijklmnopq rstuvwxyz0123456789";

#[test]
fn the_lead_relays_reads_writes_and_streams_of_member_panes() {
    let lead = bridge();
    let mut web1 = member_bridge(&[]);
    // web-2 masks nothing itself: what the phone sees masked, the lead masked.
    let web2 = member_bridge(&[("COLLIE_REDACT", "off")]);
    lead.cli_ok(&["crew", "init"]);
    web1.cli_ok(&["crew", "join", &invite(&lead), "--name", "web-1"]);
    web2.cli_ok(&["crew", "join", &invite(&lead), "--name", "web-2"]);
    let phone = lead.pair("phone", "full");
    let p1 = relayed_pane(&lead, &phone, "web-1");
    let p2 = relayed_pane(&lead, &phone, "web-2");

    // Type into each member's pane through the lead; the secret it prints is masked either way.
    for (machine, pane) in [("web-1", &p1), ("web-2", &p2)] {
        let (s, body) = lead.post(
            &format!("/api/panes/{machine}/{pane}/input"),
            Some(&phone),
            &serde_json::json!({"text": PRINT_SECRET, "keys": ["Enter"]}),
        );
        assert_eq!(s, 200, "{body}");
        let text = screen_with(&lead, &phone, machine, pane, "tok=ghp");
        assert!(!text.contains(SECRET), "{machine}: secret relayed: {text}");
        assert!(text.contains("tok=ghp_a•••"), "{machine}: {text}");
        let event = first_event(&lead, &phone, machine, pane);
        let rows: String = event["rows"]
            .as_object()
            .expect("rows")
            .values()
            .filter_map(Value::as_str)
            .collect();
        assert!(rows.contains("tok=ghp_a•••"), "{machine} stream: {rows}");
        assert!(!rows.contains(SECRET), "{machine}: secret in the stream");
        assert_eq!(event["full"], true);
    }
    // web-2 itself shows the secret (its masking is off), so the lead's masking is what held.
    let own = web2.pair("own", "read");
    let text = screen_with(&web2, &own, "local", &p2, "tok=ghp");
    assert!(text.contains(SECRET), "web-2 masks nothing itself: {text}");

    // The write is audited on both sides with one request id; the member's line names the lead.
    let lead_line = audit_lines(&lead)
        .into_iter()
        .find(|l| l["event"] == "pane.input" && l["machine"] == "web-2")
        .expect("the lead audited the relayed input");
    assert_eq!(lead_line["device"], "phone");
    let member_line = audit_lines(&web2)
        .into_iter()
        .find(|l| l["event"] == "pane.input")
        .expect("the member audited the relayed input");
    assert_eq!(member_line["request_id"], lead_line["request_id"]);
    assert_eq!(member_line["device"], "phone");
    assert_eq!(member_line["detail"]["via"], "relay");
    assert_eq!(member_line["detail"]["lead"], "testbox");
    assert!(
        !serde_json::to_string(&member_line)
            .unwrap()
            .contains("printf"),
        "typed text is never written to the audit log"
    );

    // Create, rename and close a hosted pane on a member through the lead.
    let (s, created) = lead.post(
        "/api/panes",
        Some(&phone),
        &serde_json::json!({"machine": "web-1", "name": "relayed"}),
    );
    assert_eq!(s, 200, "{created}");
    assert_eq!(created["machine"], "web-1");
    let hosted = created["pane"].as_str().expect("pane id").to_owned();
    let (s, body) = lead.post(
        &format!("/api/panes/web-1/{hosted}/rename"),
        Some(&phone),
        &serde_json::json!({"name": "renamed"}),
    );
    assert_eq!(s, 200, "{body}");
    let (_, panes) = web1.get("/api/panes", Some(&web1.pair("own", "read")));
    assert!(
        panes["panes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["pane"] == hosted.as_str() && p["name"] == "renamed"),
        "{panes}"
    );
    let (s, body) = lead.request(
        "DELETE",
        &format!("/api/panes/web-1/{hosted}"),
        Some(&phone),
        None,
        &[],
    );
    assert_eq!(s, 200, "{body}");
    let events: Vec<String> = audit_lines(&web1)
        .iter()
        .filter_map(|l| l["event"].as_str().map(str::to_owned))
        .collect();
    for e in ["pane.create", "pane.rename", "pane.close"] {
        assert!(
            events.iter().any(|x| x == e),
            "{e} not audited on the member"
        );
    }

    // Errors keep their meaning through the relay, and the tier gate runs before routing.
    let (s, body) = lead.get("/api/panes/web-1/t9-99", Some(&phone));
    assert_eq!((s, body["error"].as_str()), (404, Some("no such pane")));
    let (s, body) = lead.get("/api/panes/nowhere/t0-0", Some(&phone));
    assert_eq!((s, body["error"].as_str()), (404, Some("no such machine")));
    let (s, body) = lead.post(
        &format!("/api/panes/web-1/{p1}/input"),
        Some(&phone),
        &serde_json::json!({"keys": ["NoSuchKey"]}),
    );
    assert_eq!(s, 400, "{body}");
    let reader = lead.pair("reader", "read");
    let (s, body) = lead.post(
        &format!("/api/panes/web-1/{p1}/input"),
        Some(&reader),
        &serde_json::json!({"text": "x"}),
    );
    assert_eq!(
        (s, body["error"].as_str()),
        (403, Some("insufficient tier"))
    );

    // Kill web-1: its requests answer 502 `member unreachable` within 2 s, before and after the
    // lead notices; its panes are missing from the list and it shows offline.
    web1.kill_hard();
    let asked = Instant::now();
    let (s, body) = lead.get(&format!("/api/panes/web-1/{p1}"), Some(&phone));
    let took = asked.elapsed();
    assert_eq!(
        (s, body["error"].as_str()),
        (502, Some("member unreachable"))
    );
    assert!(took < Duration::from_secs(2), "answered after {took:?}");
    let offline = wait_for(Duration::from_secs(8), || {
        (member_online(&lead, "web-1") == Some(false)).then_some(())
    });
    assert!(offline.is_some(), "the lead did not notice web-1 die");
    let (s, body) = lead.get(&format!("/api/panes/web-1/{p1}"), Some(&phone));
    assert_eq!(
        (s, body["error"].as_str()),
        (502, Some("member unreachable"))
    );
    let (s, list) = lead.get("/api/panes", Some(&phone));
    assert_eq!(s, 200);
    assert_eq!(list["unreachable"], serde_json::json!(["web-1"]));
    assert!(list["panes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["machine"] == "web-2"));

    // Restarted, it serves again without any command.
    web1.launch();
    let back = relayed_pane(&lead, &phone, "web-1");
    let text = screen_with(&lead, &phone, "web-1", &back, "tok=ghp");
    assert!(!text.contains(SECRET));
}

#[test]
fn pins_hold_in_both_directions_after_joining() {
    let mut lead = bridge();
    let mut member = bridge();
    let other = bridge();
    lead.cli_ok(&["crew", "init"]);
    member.cli_ok(&["crew", "join", &invite(&lead), "--name", "web-1"]);
    other.cli_ok(&["crew", "join", &invite(&lead), "--name", "web-2"]);
    let up = wait_for(Duration::from_secs(10), || {
        (member_online(&lead, "web-1") == Some(true) && lead_online(&other)).then_some(())
    });
    assert!(up.is_some(), "the links did not come up");

    // The member comes back with a new identity (its pinned certificate is gone): the lead
    // refuses it, so it never comes online.
    member.stop();
    let gone = wait_for(Duration::from_secs(10), || {
        (member_online(&lead, "web-1") == Some(false)).then_some(())
    });
    assert!(gone.is_some(), "the lead did not notice the member stop");
    std::fs::remove_dir_all(member.state().join("crew")).expect("remove the identity");
    member.launch();
    // Something that must never happen has no condition to wait for: watch for a while (longer
    // than the member's first reconnect attempts, which start 250 ms apart) and check every time.
    let until = Instant::now() + Duration::from_secs(4);
    while Instant::now() < until {
        assert_eq!(
            member_online(&lead, "web-1"),
            Some(false),
            "an unpinned member got in"
        );
        assert!(!lead_online(&member));
        std::thread::sleep(Duration::from_millis(200));
    }

    // The lead comes back with a new identity on the same address: members refuse it.
    lead.stop();
    let gone = wait_for(Duration::from_secs(10), || {
        (!lead_online(&other)).then_some(())
    });
    assert!(gone.is_some(), "the member did not notice the lead stop");
    std::fs::remove_dir_all(lead.state().join("crew")).expect("remove the identity");
    lead.launch();
    // As above: watch the member's reconnect attempts for a while; none may succeed.
    let until = Instant::now() + Duration::from_secs(4);
    while Instant::now() < until {
        assert!(!lead_online(&other), "a member accepted an unpinned lead");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(member_online(&lead, "web-2"), Some(false));
}

/// A test key block; its body lines are base64, as a real key's are.
const KEY_BLOCK: &str = "-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW
QyNTUxOQAAACDTestKeyBodyLineTwoOnlyForCollieTestsAAAAAAAAAAAAAAAAAAAAA
-----END OPENSSH PRIVATE KEY-----
";

/// Every row text of a snapshot or of a stream event, joined.
fn all_rows(v: &Value) -> String {
    let mut out = String::new();
    for key in ["scrollback", "lines"] {
        for l in v[key].as_array().into_iter().flatten() {
            out.push_str(l.as_str().unwrap_or(""));
            out.push('\n');
        }
    }
    if let Some(rows) = v["rows"].as_object() {
        for l in rows.values() {
            out.push_str(l.as_str().unwrap_or(""));
            out.push('\n');
        }
    }
    out
}

/// Reads the stream of `pane` on the bridge at `base` (its URL) until an event's rows contain
/// `needle`; returns every event read.
fn stream_until(base: &str, token: &str, machine: &str, pane: &str, needle: &str) -> Vec<Value> {
    use std::io::BufRead;
    let resp = ureq::get(&format!("{base}/api/panes/{machine}/{pane}/stream"))
        .set("Authorization", &format!("Bearer {token}"))
        .timeout(Duration::from_secs(20))
        .call()
        .expect("stream");
    let mut reader = std::io::BufReader::new(resp.into_reader());
    let mut events = Vec::new();
    let mut line = String::new();
    while reader.read_line(&mut line).unwrap_or(0) > 0 {
        if let Some(d) = line.strip_prefix("data:") {
            let event = json_of(d.trim());
            let done = all_rows(&event).contains(needle);
            events.push(event);
            if done {
                return events;
            }
        }
        line.clear();
    }
    panic!("{needle:?} never appeared in the stream: {events:?}");
}

#[test]
fn the_lead_masks_a_members_screen_as_a_whole() {
    let lead = bridge();
    // web-2 masks nothing itself (off, or old, or broken): whatever the phone sees masked, the
    // lead masked, and it must catch what only the whole screen shows. web-1 masks as it should.
    let web1 = member_bridge(&[]);
    let web2 = member_bridge(&[("COLLIE_REDACT", "off")]);
    lead.cli_ok(&["crew", "init"]);
    web1.cli_ok(&["crew", "join", &invite(&lead), "--name", "web-1"]);
    web2.cli_ok(&["crew", "join", &invite(&lead), "--name", "web-2"]);
    let phone = lead.pair("phone", "full");
    for (member, name) in [(&web1, "web-1"), (&web2, "web-2")] {
        screen_is_masked_as_a_whole(&lead, &phone, member, name);
    }
    // web-2 itself showed the key in clear (its masking is off): the lead's masking held.
    let own = web2.pair("own", "read");
    let pane = relayed_pane(&lead, &phone, "web-2");
    let mine = screen_with(&web2, &own, "local", &pane, "DONE-2-MARK");
    assert!(
        mine.contains(&KEY_BLOCK.lines().nth(1).expect("body")[..20]),
        "{mine}"
    );
}

/// Prints a wrapped token and a key block on `member`'s tmux pane and checks what the lead's
/// phone gets of it: snapshot, scrollback, a stream's updates and a new stream's first event.
fn screen_is_masked_as_a_whole(lead: &TestBridge, phone: &str, member: &TestBridge, name: &str) {
    let pane = relayed_pane(lead, phone, name);
    let key = member.dir.path().join("id_test");
    std::fs::write(&key, KEY_BLOCK).expect("key file");

    // Follow the stream from before the screen changes, so updates are checked too.
    let watcher = {
        let (lead_url, phone, pane, name) = (
            lead.url(""),
            phone.to_owned(),
            pane.clone(),
            name.to_owned(),
        );
        std::thread::spawn(move || {
            use std::io::BufRead;
            let resp = ureq::get(&format!("{lead_url}/api/panes/{name}/{pane}/stream"))
                .set("Authorization", &format!("Bearer {phone}"))
                .timeout(Duration::from_secs(20))
                .call()
                .expect("stream");
            let mut reader = std::io::BufReader::new(resp.into_reader());
            let mut seen = String::new();
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap_or(0) > 0 {
                if let Some(d) = line.strip_prefix("data:") {
                    seen.push_str(&all_rows(&json_of(d.trim())));
                    if seen.contains("DONE-2-MARK") {
                        break;
                    }
                }
                line.clear();
            }
            seen
        })
    };
    // A token the terminal wraps at the pane's 100 columns (the command line does not hold it
    // whole), then a key block printed from a file, then a marker.
    let command = format!(
        "printf '%90s%s%s\\n' '' ghp_abcdefghijklmnopq rstuvwxyz0123456789; cat {}; echo DONE-$((1+1))-MARK",
        key.display()
    );
    let (s, body) = lead.post(
        &format!("/api/panes/{name}/{pane}/input"),
        Some(phone),
        &serde_json::json!({"text": command, "keys": ["Enter"]}),
    );
    assert_eq!(s, 200, "{body}");
    let streamed = watcher.join().expect("watcher");
    let snapshot_text = screen_with(lead, phone, name, &pane, "DONE-2-MARK");
    let (_, snap) = lead.get(
        &format!("/api/panes/{name}/{pane}?scrollback=200"),
        Some(phone),
    );
    let first = stream_until(&lead.url(""), phone, name, &pane, "DONE-2-MARK");
    for (what, text) in [
        ("snapshot", snapshot_text),
        ("snapshot with scrollback", all_rows(&snap)),
        ("stream updates", streamed),
        (
            "first stream event",
            all_rows(first.last().expect("an event")),
        ),
    ] {
        // The token's first row: 90 blanks, then `ghp_a` and bullets to the edge.
        assert!(
            text.lines()
                .any(|l| l.starts_with(&" ".repeat(90)) && l.trim() == "ghp_a•••••"),
            "{name} {what}: the wrapped token's first half is masked:\n{text}"
        );
        // `pqrstu` spans the two printf arguments: only the printed token holds it.
        assert!(
            !text.contains("pqrstu"),
            "{name} {what}: the token's second half leaked:\n{text}"
        );
        assert!(
            text.contains("-----BEGIN OPENSSH PRIVATE KEY-----"),
            "{name} {what}: {text}"
        );
        for body in KEY_BLOCK.lines().skip(1).take(2) {
            assert!(
                !text.contains(&body[..20]),
                "{name} {what}: key body leaked:\n{text}"
            );
        }
    }
}

#[test]
fn a_member_has_one_name_everywhere_and_keeps_it() {
    let lead = bridge();
    let mut member = member_bridge(&[]);
    lead.cli_ok(&["crew", "init"]);
    // The member was started as `testbox`; it joins as `web-1`.
    member.cli_ok(&["crew", "join", &invite(&lead), "--name", "web-1"]);
    let own = member.pair("own", "full");
    let check_everywhere = |member: &TestBridge| {
        // (A restarted bridge lists its tmux panes once it has attached to the server.)
        let panes = wait_for(Duration::from_secs(10), || {
            let (_, v) = member.get("/api/panes", Some(&own));
            let panes = v["panes"].as_array()?.clone();
            panes
                .iter()
                .any(|p| p["backend"] == "tmux")
                .then_some(panes)
        })
        .expect("the member lists its panes");
        assert!(panes.iter().all(|p| p["machine"] == "web-1"), "{panes:?}");
        assert_eq!(status(member)["name"], "web-1");
        let lines = audit_lines(member);
        let last = lines.last().expect("audit lines");
        assert_eq!(last["machine"], "web-1", "{last}");
    };
    check_everywhere(&member);
    // A hosted pane's COLLIE_PANE names the machine the same way, and walky from it works.
    let sender = member.hosted("sender", &["sh"]);
    let receiver = member.hosted("receiver", &["cat"]);
    let sender_pane = sender["pane"].as_str().expect("pane").to_owned();
    let to = format!(
        "web-1/{}#{}",
        receiver["pane"].as_str().expect("pane"),
        receiver["token"].as_str().expect("token")
    );
    let line = format!(
        "echo PANE=$COLLIE_PANE; COLLIE_STATE_DIR={} COLLIE_CONFIG_DIR={} {} walky send {to} hi; echo SENT $? | tr A-Z a-z",
        member.state().display(),
        member.dir.path().join("config").display(),
        support::collie_bin().display()
    );
    let (s, _) = member.post(
        &format!("/api/panes/local/{sender_pane}/input"),
        Some(&own),
        &serde_json::json!({"text": line, "keys": ["Enter"]}),
    );
    assert_eq!(s, 200);
    let text = screen_with(&member, &own, "local", &sender_pane, "sent ");
    assert!(
        text.contains(&format!("PANE=web-1/{sender_pane}#")),
        "COLLIE_PANE names web-1: {text}"
    );
    assert!(text.contains("sent 0"), "walky from a hosted pane: {text}");
    assert!(text.contains("delivered"), "{text}");

    // Kept across a restart, though the bridge is still started with `--name testbox`.
    member.stop();
    member.launch();
    check_everywhere(&member);
}
