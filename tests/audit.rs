//! Black-box tests of the audit log's evidence (SPEC §7): a real bridge, the real CLI, and the log
//! tampered with the way someone holding the state dir would — while the bridge is stopped, with
//! hashes recomputed where that helps the attacker. A break must never be laundered: recorded in
//! the store, an `audit.break` line, `verify` failing and naming it, `doctor` red, `/api/health`
//! counting it, until `collie audit acknowledge SEQ`.

mod support;

use std::time::Duration;

use serde_json::Value;
use sha2::{Digest, Sha256};
use support::{json_of, wait_for, Opts, TestBridge};

fn bridge() -> TestBridge {
    TestBridge::start_with(Opts::default())
}

fn log_path(b: &TestBridge) -> std::path::PathBuf {
    b.state().join("audit.log")
}

fn log_lines(b: &TestBridge) -> Vec<String> {
    std::fs::read_to_string(log_path(b))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// `collie audit verify`: exit code and stdout.
fn verify(b: &TestBridge) -> (i32, String) {
    let out = b.cli(&["audit", "verify"]);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// One audited write through the CLI.
fn write(b: &TestBridge, label: &str) {
    b.cli_ok(&["devices", "set-expiry", label, "30d"]);
}

fn open_breaks(b: &TestBridge) -> u64 {
    let (s, v) = b.get("/api/health", None);
    assert_eq!(s, 200, "{v}");
    v["audit_breaks"]
        .as_u64()
        .expect("audit_breaks in /api/health")
}

/// The line the hash rule makes of `body` (a line without its `hash` member) after `prev`.
fn with_hash(body: &str) -> String {
    let prev = json_of(body)["prev"].as_str().expect("prev").to_owned();
    let hash = hex::encode(
        Sha256::new()
            .chain_update(prev)
            .chain_update(body)
            .finalize(),
    );
    format!("{},\"hash\":\"{hash}\"}}", &body[..body.len() - 1])
}

/// The body (without `hash`) of a whole line.
fn body_of(line: &str) -> String {
    let at = line.rfind(",\"hash\":\"").expect("hash member");
    format!("{}}}", &line[..at])
}

/// The `seq` of the one `audit.break` line, checking it is there once.
fn break_seq(b: &TestBridge) -> u64 {
    let breaks: Vec<Value> = log_lines(b)
        .iter()
        .map(|l| json_of(l))
        .filter(|v| v["event"] == "audit.break")
        .collect();
    assert_eq!(breaks.len(), 1, "one audit.break line: {breaks:?}");
    breaks[0]["seq"].as_u64().expect("seq")
}

#[test]
fn a_truncated_log_is_a_recorded_break_until_acknowledged() {
    let mut b = bridge();
    b.pair("phone", "full");
    for _ in 0..3 {
        write(&b, "phone");
    }
    let (code, out) = verify(&b);
    assert_eq!(code, 0, "{out}");
    let before = log_lines(&b);
    let last_seq = json_of(before.last().expect("lines"))["seq"]
        .as_u64()
        .expect("seq");
    assert_eq!(last_seq, 4);

    // Cut the log to its first line while the bridge is stopped.
    b.stop();
    std::fs::write(log_path(&b), format!("{}\n", before[0])).expect("truncate");
    let (code, out) = verify(&b);
    assert_eq!(code, 1, "the store knows the log was longer: {out}");
    assert!(out.contains("truncated"), "{out}");

    // Restart and make one write: the restarted bridge must not launder the cut.
    b.launch();
    write(&b, "phone");
    let seq = break_seq(&b);
    assert!(
        seq > last_seq,
        "a break's seq is past every seq used: {seq}"
    );
    let lines = log_lines(&b);
    let brk = lines
        .iter()
        .map(|l| json_of(l))
        .find(|v| v["event"] == "audit.break")
        .expect("break line");
    assert_eq!(brk["detail"]["expected_seq"], 4);
    assert!(
        brk["detail"]["found"]
            .as_str()
            .is_some_and(|f| f.contains("ends at seq 1")),
        "{brk}"
    );
    let (code, out) = verify(&b);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!("BROKEN: break at seq {seq}")),
        "{out}"
    );
    assert!(out.contains("truncated"), "{out}");
    assert!(
        out.contains(&format!("collie audit acknowledge {seq}")),
        "{out}"
    );
    assert_eq!(open_breaks(&b), 1);
    let doctor = b.cli(&["doctor"]);
    assert_eq!(doctor.status.code(), Some(1));
    let doctor = String::from_utf8_lossy(&doctor.stdout).into_owned();
    assert!(
        doctor.contains(&format!("FAIL  audit log break at seq {seq}")),
        "{doctor}"
    );

    // Only acknowledging it, on the machine, turns it from an error into a listed break.
    let wrong = b.cli(&["audit", "acknowledge", "999"]);
    assert_eq!(wrong.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("no recorded break at seq 999"));
    b.cli_ok(&["audit", "acknowledge", &seq.to_string()]);
    let acknowledged: Vec<Value> = log_lines(&b)
        .iter()
        .map(|l| json_of(l))
        .filter(|v| v["event"] == "audit.acknowledged")
        .collect();
    assert_eq!(acknowledged.len(), 1);
    assert_eq!(acknowledged[0]["detail"]["break_seq"], seq);
    let (code, out) = verify(&b);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!("acknowledged break at seq {seq}")),
        "{out}"
    );
    assert_eq!(open_breaks(&b), 0);
    let doctor = String::from_utf8_lossy(&b.cli(&["doctor"]).stdout).into_owned();
    assert!(!doctor.contains("FAIL  audit"), "{doctor}");
    assert!(doctor.contains("1 acknowledged audit break"), "{doctor}");

    // It stays on record, and a clean restart finds nothing new.
    b.stop();
    b.launch();
    write(&b, "phone");
    let (code, out) = verify(&b);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!("acknowledged break at seq {seq}")),
        "{out}"
    );
    assert_eq!(break_seq(&b), seq);
}

#[test]
fn a_deleted_log_and_a_changed_last_line_are_breaks() {
    let mut b = bridge();
    b.pair("phone", "full");
    write(&b, "phone");

    // Deleted.
    b.stop();
    std::fs::remove_file(log_path(&b)).expect("delete");
    let (code, out) = verify(&b);
    assert_eq!(code, 1, "{out}");
    b.launch();
    write(&b, "phone");
    let seq = break_seq(&b);
    assert_eq!(seq, 3, "past the 2 lines the store knew");
    let (code, out) = verify(&b);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("deleted"), "{out}");
    assert_eq!(open_breaks(&b), 1);
    b.cli_ok(&["audit", "acknowledge", &seq.to_string()]);
    assert_eq!(verify(&b).0, 0);

    // The last line changed, its hash recomputed so the line checks out on its own.
    b.stop();
    let mut lines = log_lines(&b);
    let last = lines.pop().expect("a last line");
    let body = body_of(&last).replacen("\"via\":\"cli\"", "\"via\":\"phone\"", 1);
    assert_ne!(body, body_of(&last), "the test changes something: {last}");
    lines.push(with_hash(&body));
    std::fs::write(log_path(&b), lines.join("\n") + "\n").expect("rewrite");
    let (code, out) = verify(&b);
    assert_eq!(
        code, 1,
        "a rewritten last line verifies only against the store: {out}"
    );
    assert!(out.contains("rewritten log"), "{out}");
    b.launch();
    write(&b, "phone");
    let (code, out) = verify(&b);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("changed last line"), "{out}");
    assert_eq!(open_breaks(&b), 1);
}

#[test]
fn a_line_forged_onto_the_end_or_a_cut_last_line_is_a_break() {
    let mut b = bridge();
    b.pair("phone", "full");
    write(&b, "phone");
    b.stop();

    // The next seq and a recomputed hash: the chain alone cannot tell it from a real line.
    let lines = log_lines(&b);
    let last = json_of(lines.last().expect("lines"));
    let body = format!(
        concat!(
            r#"{{"v":1,"seq":{},"ts":"2026-12-01T00:00:00.000Z","event":"device.tier","#,
            r#""machine":"testbox","session":null,"device":null,"request_id":null,"#,
            r#""detail":{{"label":"phone","new_tier":"full"}},"prev":"{}"}}"#
        ),
        last["seq"].as_u64().expect("seq") + 1,
        last["hash"].as_str().expect("hash")
    );
    let forged = with_hash(&body);
    let mut text = std::fs::read_to_string(log_path(&b)).expect("log");
    text.push_str(&forged);
    text.push('\n');
    std::fs::write(log_path(&b), &text).expect("append");
    let (code, out) = verify(&b);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("lines added"), "{out}");
    b.launch();
    write(&b, "phone");
    let (code, out) = verify(&b);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("past what the store vouches for"), "{out}");
    let seq = break_seq(&b);
    b.cli_ok(&["audit", "acknowledge", &seq.to_string()]);

    // A last line cut short is a break too, never dropped silently.
    b.stop();
    let mut text = std::fs::read_to_string(log_path(&b)).expect("log");
    text.push_str(r#"{"v":1,"seq":99,"ts":"2026-12-01T00:0"#);
    std::fs::write(log_path(&b), &text).expect("append");
    let (code, out) = verify(&b);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("cut short"), "{out}");
    b.launch();
    write(&b, "phone");
    let (code, out) = verify(&b);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("cut short (a partial line)"), "{out}");
    assert_eq!(open_breaks(&b), 1);
}

#[test]
fn a_log_changed_under_a_running_bridge_is_a_break() {
    let b = bridge();
    b.pair("phone", "full");
    write(&b, "phone");
    write(&b, "phone");
    let lines = log_lines(&b);
    std::fs::write(log_path(&b), format!("{}\n", lines[0])).expect("truncate");
    write(&b, "phone");
    let seq = break_seq(&b);
    let (code, out) = verify(&b);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("while the bridge ran"), "{out}");
    assert!(out.contains(&format!("break at seq {seq}")), "{out}");
}

#[test]
fn a_revocation_takes_effect_while_the_log_cannot_be_written() {
    let b = bridge();
    let token = b.pair("phone", "full");
    b.pair("other", "full");
    assert_eq!(b.get("/api/devices", Some(&token)).0, 200);
    std::fs::remove_file(log_path(&b)).expect("remove log");
    std::fs::create_dir(log_path(&b)).expect("a directory in the log's place");

    // Other writes fail closed…
    let refused = b.cli(&["devices", "set-expiry", "other", "1d"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("audit unavailable"));
    // …a revocation never does: a stolen token must stop working now.
    b.cli_ok(&["devices", "revoke", "phone"]);
    let (s, v) = b.get("/api/devices", Some(&token));
    assert_eq!((s, v["error"].as_str()), (403, Some("device not paired")));

    // Its line waits in the store and is appended once the log can be written.
    std::fs::remove_dir(log_path(&b)).expect("remove the directory");
    let revoked = wait_for(Duration::from_secs(10), || {
        log_lines(&b)
            .iter()
            .map(|l| json_of(l))
            .find(|v| v["event"] == "device.revoked" && v["detail"]["label"] == "phone")
    })
    .expect("the kept revocation line reaches the log");
    let seq = break_seq(&b);
    assert!(
        revoked["seq"].as_u64().expect("seq") > seq,
        "the audit.break line comes first"
    );
    // The moved log is a break on record; once acknowledged the chain verifies.
    b.cli_ok(&["audit", "acknowledge", &seq.to_string()]);
    let (code, out) = verify(&b);
    assert_eq!(code, 0, "{out}");
}
