//! Black-box tests of the witnessed audit log (issue 28): a lead and a member as real `collie
//! bridge` processes over QUIC on loopback. The member's audit chain head reaches the lead; a
//! history rewritten on the stopped member — every hash recomputed and the store's anchor with
//! them, as someone holding the state dir could — passes the plain `collie audit verify` and
//! fails `collie audit verify --witnessed`.

mod support;

use std::path::Path;
use std::time::Duration;

use collie_actors::audit::stored::anchor_change;
use collie_actors::audit::{Anchor, ChainTail};
use collie_actors::store::{Store, Table};
use serde_json::Value;
use sha2::{Digest, Sha256};
use support::{crew_bridge, json_of, wait_for, TestBridge};

/// A lead and a member called `web-1`, linked.
fn crew() -> (TestBridge, TestBridge) {
    let lead = crew_bridge(false, &[]);
    let member = crew_bridge(false, &[]);
    lead.cli_ok(&["crew", "init"]);
    let invite = lead.invite();
    member.cli_ok(&["crew", "join", &invite, "--name", "web-1"]);
    lead.wait_member_online("web-1");
    (lead, member)
}

/// `n` audited writes on `b`: the pairing of `p1` (a `device.paired` line), then changes of its
/// expiry (a `device.expiry` line each; pairings are rate-limited, these are not).
fn write_lines(b: &TestBridge, n: usize) {
    b.pair("p1", "read");
    for _ in 1..n {
        b.cli_ok(&["devices", "set-expiry", "p1", "30d"]);
    }
}

/// `collie audit verify ARGS` on `b`: exit code, stdout and stderr.
fn verify(b: &TestBridge, args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["audit", "verify"];
    all.extend_from_slice(args);
    let out = b.cli(&all);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The lead's `audit.witnessed` lines about `member`.
fn witnessed_lines(lead: &TestBridge, member: &str) -> Vec<Value> {
    lead.audit_lines()
        .into_iter()
        .filter(|l| l["event"] == "audit.witnessed" && l["detail"]["member"] == member)
        .collect()
}

fn lead_online(member: &TestBridge) -> bool {
    json_of(&member.cli_ok(&["crew", "status", "--json"]))["lead"]["online"] == true
}

/// The line the hash rule makes of `body` (a line without its `hash` member) after `prev`.
fn with_hash(prev: &str, body: &str) -> (String, String) {
    let hash = hex::encode(
        Sha256::new()
            .chain_update(prev)
            .chain_update(body)
            .finalize(),
    );
    let line = format!("{},\"hash\":\"{hash}\"}}", &body[..body.len() - 1]);
    (line, hash)
}

/// What someone holding the stopped member's state dir can do: change one line (the pairing of
/// `p1` becomes `pX`), recompute the hash of it and of every line after it, add `forged` lines
/// (so the log is longer than the lead saw), and make the store's anchor vouch for the new last
/// line — with the crate's own store code, as the bridge would.
fn rewrite_history(state: &Path, forged: u64) {
    let path = state.join("audit.log");
    let text = std::fs::read_to_string(&path).expect("audit.log");
    let mut prev = "0".repeat(64);
    let mut lines = Vec::new();
    let mut changed = false;
    let mut last = None;
    for line in text.lines() {
        let v = json_of(line);
        let old_prev = v["prev"].as_str().expect("prev").to_owned();
        let at = line.rfind(",\"hash\":\"").expect("hash member");
        let mut body = format!("{}}}", &line[..at]);
        body = body.replace(
            &format!("\"prev\":\"{old_prev}\""),
            &format!("\"prev\":\"{prev}\""),
        );
        if v["event"] == "device.paired" && v["detail"]["label"] == "p1" {
            body = body.replace("\"label\":\"p1\"", "\"label\":\"pX\"");
            changed = true;
        }
        let (new_line, hash) = with_hash(&prev, &body);
        last = Some(ChainTail {
            seq: v["seq"].as_u64().expect("seq"),
            hash: hash.clone(),
        });
        prev = hash;
        lines.push(new_line);
    }
    assert!(changed, "no pairing of p1 to rewrite: {text}");
    let template = text.lines().last().expect("a last line").to_owned();
    let seq = json_of(&template)["seq"].as_u64().expect("seq");
    for n in 1..=forged {
        let at = template.rfind(",\"hash\":\"").expect("hash member");
        let old_prev = json_of(&template)["prev"]
            .as_str()
            .expect("prev")
            .to_owned();
        let body = format!("{}}}", &template[..at])
            .replace(&format!("\"seq\":{seq},"), &format!("\"seq\":{},", seq + n))
            .replace(
                &format!("\"prev\":\"{old_prev}\""),
                &format!("\"prev\":\"{prev}\""),
            );
        let (new_line, hash) = with_hash(&prev, &body);
        last = Some(ChainTail {
            seq: seq + n,
            hash: hash.clone(),
        });
        prev = hash;
        lines.push(new_line);
    }
    std::fs::write(&path, lines.join("\n") + "\n").expect("rewrite the log");
    let store = Store::open(&state.join("db")).expect("the stopped member's store");
    let anchor = Anchor {
        last,
        pending: None,
    };
    store
        .apply(Table::Audit, &[anchor_change(&anchor).expect("anchor")])
        .expect("rewrite the anchor");
    store.flush().expect("flush");
}

#[test]
fn a_history_rewritten_on_a_stopped_member_fails_only_the_witnessed_verify() {
    let (lead, mut member) = crew();
    write_lines(&member, 12);

    // A clean stop sends the last head; the lead keeps it and writes it down.
    member.stop();
    let last = member
        .audit_lines()
        .last()
        .cloned()
        .expect("the member's log");
    let stopping = wait_for(Duration::from_secs(10), || {
        witnessed_lines(&lead, "web-1")
            .into_iter()
            .find(|l| l["detail"]["stopping"] == true)
    })
    .expect("the lead wrote down the member's last head as it stopped");
    assert_eq!(stopping["detail"]["seq"], last["seq"], "{stopping}");
    assert_eq!(stopping["detail"]["hash"], last["hash"], "{stopping}");

    rewrite_history(&member.state(), 2);
    let (code, out, _) = verify(&member, &[]);
    assert_eq!(
        code, 0,
        "the rewrite is consistent, the plain verify passes: {out}"
    );

    member.launch();
    let up = wait_for(Duration::from_secs(15), || {
        lead_online(&member).then_some(())
    });
    assert!(up.is_some(), "the member did not reconnect");
    let (code, out, _) = verify(&member, &[]);
    assert_eq!(code, 0, "the running bridge finds no break either: {out}");

    let (code, out, err) = verify(&member, &["--witnessed"]);
    assert_eq!(code, 1, "the witness must see the rewrite: {out}{err}");
    assert!(out.contains("NOT witnessed"), "{out}");
    assert!(out.contains("history rewritten"), "{out}");
    assert!(
        out.contains(&format!("seq {}", last["seq"])),
        "names the witnessed head: {out}"
    );

    // The restarted member checked its log against the lead's heads as it sent its first head
    // (a longer log: the seqs alone would look like progress); the lead wrote down what it
    // contradicts, and holds it.
    let contradiction = wait_for(Duration::from_secs(15), || {
        witnessed_lines(&lead, "web-1")
            .into_iter()
            .find(|l| l["detail"]["contradicts"].is_array())
    })
    .expect("the lead wrote down the contradiction");
    let against = contradiction["detail"]["contradicts"]
        .as_array()
        .expect("contradicts");
    assert!(
        against.iter().any(|h| h["hash"] == last["hash"]),
        "{contradiction}"
    );
    assert!(
        contradiction["detail"]["seq"].as_u64() > last["seq"].as_u64(),
        "the forged lines made the log longer: {contradiction}"
    );

    let (code, out, _) = verify(&member, &["--witnessed", "--json"]);
    assert_eq!(code, 1);
    let v = json_of(&out);
    assert_eq!(v["ok"], false, "{v}");
    assert_eq!(v["witnessed"]["ok"], false, "{v}");
}

#[test]
fn an_honest_member_passes_the_witnessed_verify_and_an_unreachable_lead_fails_it() {
    let (mut lead, member) = crew();
    write_lines(&member, 12);

    // The first line after the join sends a head; wait until the lead holds one.
    let witnessed = wait_for(Duration::from_secs(20), || {
        let (code, out, _) = verify(&member, &["--witnessed", "--json"]);
        let v = json_of(&out);
        let any = !v["witnessed"]["heads"].as_array()?.is_empty();
        (any && code == 0).then_some(v)
    })
    .expect("the honest member's log is witnessed");
    assert_eq!(witnessed["ok"], true, "{witnessed}");
    let (code, out, _) = verify(&member, &["--witnessed"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("witnessed: the lead's"), "{out}");

    // No lead: an error, never a pass.
    lead.stop();
    let (code, out, err) = verify(&member, &["--witnessed"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("lead"), "{err}");
    assert!(!out.contains("witnessed: the lead's"), "{out}");

    // No bridge: an error too.
    drop(lead);
    let mut member = member;
    member.stop();
    let (code, _, err) = verify(&member, &["--witnessed"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("collie bridge"), "{err}");
}
