//! Black-box tests of the sent log and one-shot commands (SPEC §11, seed 002) against a real
//! bridge and a real tmux server: each exclusion rule with a secret trying to slip past it,
//! `COLLIE_SENT=off`, discarding and clearing (the file, its mode, the audit lines), the CLI with
//! the bridge running and stopped, a one-shot command that really runs, the recent list, and
//! the refusals (`[phone] run = false`, a device below the route's tier).

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use support::{wait_for, Opts, TestBridge};

const WAIT: Duration = Duration::from_secs(15);

/// A bridge with a private tmux server whose pane runs `sh`, logging to a file.
fn bridge(env: &[(&str, &str)]) -> TestBridge {
    TestBridge::start_with(Opts {
        with_tmux: true,
        log_to_file: true,
        env: env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        config: None,
    })
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).expect("meta").permissions().mode() & 0o777
}

fn sent_path(b: &TestBridge) -> PathBuf {
    b.state().join("sent.jsonl")
}

/// The sent log's entries as the file holds them (none when it does not exist).
fn sent_file(b: &TestBridge) -> Vec<Value> {
    std::fs::read_to_string(sent_path(b))
        .unwrap_or_default()
        .lines()
        .map(support::json_of)
        .collect()
}

fn sent_lines(b: &TestBridge) -> Vec<String> {
    sent_file(b)
        .iter()
        .map(|e| e["line"].as_str().expect("line").to_owned())
        .collect()
}

/// Waits until `pane`'s foreground is a shell at its prompt (the bridge's own view, `at_shell`),
/// so a line sent next reaches a shell rather than the previous command.
fn at_prompt(b: &TestBridge, token: &str, pane: &str) {
    let ready = wait_for(WAIT, || {
        let (_, v) = b.get("/api/panes", Some(token));
        v["panes"]
            .as_array()?
            .iter()
            .find(|p| p["pane"] == pane && p["at_shell"] == true)
            .map(|_| ())
    });
    assert!(ready.is_some(), "pane {pane} never came back to its prompt");
}

/// Types `text` and Enter into `pane` once its shell is at the prompt.
fn send_line(b: &TestBridge, token: &str, pane: &str, text: &str) {
    at_prompt(b, token, pane);
    let (s, v) = b.post(
        &format!("/api/panes/local/{pane}/input"),
        Some(token),
        &json!({"text": text, "keys": ["Enter"]}),
    );
    assert_eq!(s, 200, "{v}");
}

fn delete(b: &TestBridge, path: &str, token: &str) -> (u16, Value) {
    b.request("DELETE", path, Some(token), None, &[])
}

fn audit_of(b: &TestBridge, event: &str) -> Vec<Value> {
    b.audit_lines()
        .into_iter()
        .filter(|l| l["event"] == event)
        .collect()
}

/// Every place a sent line could leak to on this machine: the sent log, the audit log, the
/// bridge's log, and what the API answers.
fn leaks(b: &TestBridge, token: &str, needle: &str) -> Vec<&'static str> {
    let mut found = Vec::new();
    let read = |p: PathBuf| std::fs::read_to_string(p).unwrap_or_default();
    if read(sent_path(b)).contains(needle) {
        found.push("sent.jsonl");
    }
    if read(b.state().join("audit.log")).contains(needle) {
        found.push("audit.log");
    }
    if b.log().contains(needle) {
        found.push("bridge log");
    }
    if b.get("/api/sent", Some(token))
        .1
        .to_string()
        .contains(needle)
    {
        found.push("GET /api/sent");
    }
    found
}

#[test]
fn each_rule_keeps_its_secret_out_and_plain_lines_are_kept() {
    let b = bridge(&[]);
    let full = b.pair("phone", "full");
    let pane = b.first_tmux_pane(&full);
    let long = format!("echo {}", "L".repeat(4100));
    // (line sent, a piece of it that must not be kept anywhere)
    let secrets: Vec<(String, &str)> = vec![
        (" echo spacedout-7731".into(), "spacedout-7731"),
        ("\techo tabbedout-7732".into(), "tabbedout-7732"),
        ("TOKEN=qzv7733 true".into(), "qzv7733"),
        ("export AWS_SECRET_ACCESS_KEY=wJalq7734".into(), "wJalq7734"),
        ("echo qz7735 && KEY7735=v true".into(), "qz7735"),
        (
            "echo https://alice:hunter7736@example.org/r".into(),
            "hunter7736",
        ),
        ("echo my PassWord is qz7737".into(), "qz7737"),
        ("echo secretive-7738".into(), "secretive-7738"),
        ("echo the-token-7739".into(), "the-token-7739"),
        ("echo Bearer-7740".into(), "Bearer-7740"),
        ("echo AUTHORIZATION-qz7741".into(), "qz7741"),
        (
            "echo ghp_0123456789abcdefghijABCDEFGHIJ017742".into(),
            "0123456789abcdefghijABCDEFGHIJ017742",
        ),
        (
            long.clone(),
            "LLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLL",
        ),
    ];
    for (i, (line, needle)) in secrets.iter().enumerate() {
        send_line(&b, &full, &pane, line);
        // A plain line after each: it is kept, so the one before it reached a shell at its
        // prompt too and was left out by its rule, not by chance.
        let plain = format!("echo plain-{i}");
        send_line(&b, &full, &pane, &plain);
        let kept = wait_for(WAIT, || sent_lines(&b).contains(&plain).then_some(()));
        assert!(kept.is_some(), "the plain line after {needle:?} is kept");
        assert_eq!(leaks(&b, &full, needle), Vec::<&str>::new(), "{line:.60}");
    }
    let lines = sent_lines(&b);
    assert_eq!(
        lines.len(),
        secrets.len(),
        "only the plain lines: {lines:?}"
    );
    let entries = sent_file(&b);
    let e = &entries[0];
    assert_eq!(e["machine"], "testbox");
    assert_eq!(e["pane"], pane.as_str());
    assert!(e["ts"].as_str().is_some_and(|t| t.ends_with('Z')), "{e}");
    assert_eq!(mode(&sent_path(&b)), 0o600);
    // The API lists them newest first.
    let (s, v) = b.get("/api/sent", Some(&full));
    assert_eq!(s, 200, "{v}");
    let listed: Vec<&str> = v["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .map(|l| l["line"].as_str().expect("line"))
        .collect();
    assert_eq!(
        listed.first(),
        Some(&format!("echo plain-{}", secrets.len() - 1).as_str())
    );
    assert_eq!(v["recording"], true);
}

#[test]
fn lines_to_a_non_shell_and_text_without_enter_are_not_kept() {
    let b = bridge(&[]);
    let full = b.pair("phone", "full");
    let pane = b.first_tmux_pane(&full);
    // `cat` in the foreground: what is typed goes to cat, not to a shell.
    send_line(&b, &full, &pane, "cat");
    let in_cat = wait_for(WAIT, || {
        let (_, v) = b.get("/api/panes", Some(&full));
        v["panes"]
            .as_array()?
            .iter()
            .find(|p| p["pane"] == pane.as_str() && p["at_shell"] == false)
            .map(|_| ())
    });
    assert!(in_cat.is_some(), "cat runs in the foreground");
    let (s, _) = b.post(
        &format!("/api/panes/local/{pane}/input"),
        Some(&full),
        &json!({"text": "typed-to-cat-5511", "keys": ["Enter"]}),
    );
    assert_eq!(s, 200);
    let (s, _) = b.post(
        &format!("/api/panes/local/{pane}/input"),
        Some(&full),
        &json!({"keys": ["C-d"]}),
    );
    assert_eq!(s, 200);
    // Text without Enter is no line either.
    at_prompt(&b, &full, &pane);
    let (s, _) = b.post(
        &format!("/api/panes/local/{pane}/input"),
        Some(&full),
        &json!({"text": "unfinished-5512"}),
    );
    assert_eq!(s, 200);
    let (s, _) = b.post(
        &format!("/api/panes/local/{pane}/input"),
        Some(&full),
        &json!({"keys": ["C-u"]}),
    );
    assert_eq!(s, 200);
    send_line(&b, &full, &pane, "echo after-5513");
    assert!(wait_for(WAIT, || sent_lines(&b)
        .contains(&"echo after-5513".to_owned())
        .then_some(()))
    .is_some());
    assert_eq!(sent_lines(&b), ["cat", "echo after-5513"]);
}

#[test]
fn collie_sent_off_keeps_nothing_but_discard_and_clear_still_work() {
    let b = bridge(&[("COLLIE_SENT", "off")]);
    let full = b.pair("phone", "full");
    let pane = b.first_tmux_pane(&full);
    let marker = b.dir.path().join("ran-off");
    send_line(&b, &full, &pane, &format!("touch {}", marker.display()));
    assert!(
        wait_for(WAIT, || marker.exists().then_some(())).is_some(),
        "the line ran"
    );
    // A one-shot command is not kept either.
    let marker2 = b.dir.path().join("ran-off-2");
    let (s, v) = b.post(
        "/api/commands",
        Some(&full),
        &json!({"command": format!("touch {}", marker2.display())}),
    );
    assert_eq!(s, 200, "{v}");
    assert!(
        wait_for(WAIT, || marker2.exists().then_some(())).is_some(),
        "the command ran"
    );
    assert!(
        !sent_path(&b).exists(),
        "COLLIE_SENT=off writes no sent log"
    );
    let (_, v) = b.get("/api/sent", Some(&full));
    assert_eq!(v["recording"], false);
    assert_eq!(v["lines"], json!([]));
    let (_, settings) = b.get("/api/settings", Some(&full));
    assert_eq!(settings["sent"], false);

    // A log from before (written the way the bridge writes it) can still be discarded.
    let old = [1, 2, 3]
        .map(|i| json!({"id": i, "ts": "2026-01-01T00:00:00Z", "machine": "testbox", "pane": "t1-0", "line": format!("echo old-{i}")}).to_string())
        .join("\n");
    std::fs::write(sent_path(&b), format!("{old}\n")).expect("write");
    let files = b.pair("tablet", "files");
    let (s, v) = delete(&b, "/api/sent/testbox/2", &files);
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["discarded"], 1);
    assert_eq!(sent_lines(&b), ["echo old-1", "echo old-3"]);
    let (s, v) = delete(&b, "/api/sent/local", &files);
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["discarded"], 2);
    assert!(sent_file(&b).is_empty());
    let counts: Vec<Value> = audit_of(&b, "sent.discard")
        .iter()
        .map(|l| l["detail"]["count"].clone())
        .collect();
    assert_eq!(counts, [json!(1), json!(2)]);
}

#[test]
fn discard_and_clear_rewrite_the_file_and_audit_a_count() {
    let b = bridge(&[]);
    let full = b.pair("phone", "full");
    let files = b.pair("tablet", "files");
    let read = b.pair("watch", "read");
    let pane = b.first_tmux_pane(&full);
    for i in 1..=3 {
        send_line(&b, &full, &pane, &format!("echo keep-{i}"));
    }
    assert!(wait_for(WAIT, || (sent_file(&b).len() == 3).then_some(())).is_some());
    // A wide mode is tightened at the next write.
    std::fs::set_permissions(sent_path(&b), std::fs::Permissions::from_mode(0o644)).expect("chmod");
    send_line(&b, &full, &pane, "echo keep-4");
    assert!(wait_for(WAIT, || (sent_file(&b).len() == 4).then_some(())).is_some());
    assert_eq!(mode(&sent_path(&b)), 0o600);
    let ids: Vec<u64> = sent_file(&b)
        .iter()
        .map(|e| e["id"].as_u64().expect("id"))
        .collect();

    // Tiers: reading is for any device, discarding needs `files`.
    assert_eq!(b.get("/api/sent", Some(&read)).0, 200);
    let (s, v) = delete(&b, &format!("/api/sent/testbox/{}", ids[0]), &read);
    assert_eq!((s, v["error"].as_str()), (403, Some("insufficient tier")));
    let (s, v) = delete(&b, "/api/sent/testbox", &read);
    assert_eq!((s, v["error"].as_str()), (403, Some("insufficient tier")));
    assert_eq!(sent_file(&b).len(), 4, "a refused discard changes nothing");

    let (s, v) = delete(&b, &format!("/api/sent/testbox/{}", ids[1]), &files);
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        sent_lines(&b),
        ["echo keep-1", "echo keep-3", "echo keep-4"]
    );
    assert_eq!(mode(&sent_path(&b)), 0o600);
    let (s, v) = delete(&b, &format!("/api/sent/testbox/{}", ids[1]), &files);
    assert_eq!((s, v["error"].as_str()), (404, Some("no such line")));
    let (s, v) = delete(&b, "/api/sent/testbox/x", &files);
    assert_eq!(s, 400, "{v}");
    let (s, v) = delete(&b, "/api/sent/nowhere", &files);
    assert_eq!((s, v["error"].as_str()), (404, Some("no such machine")));

    // The CLI through the running bridge: list, discard (audited as the CLI).
    let listed = support::json_of(&b.cli_ok(&["sent", "list", "--json"]));
    assert_eq!(listed["lines"][0]["line"], "echo keep-4");
    b.cli_ok(&["sent", "discard", &ids[0].to_string()]);
    assert_eq!(sent_lines(&b), ["echo keep-3", "echo keep-4"]);
    let out = b.cli(&["sent", "discard", &ids[0].to_string()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such line"));

    let (s, v) = delete(&b, "/api/sent/testbox", &full);
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["discarded"], 2);
    assert!(sent_file(&b).is_empty());
    assert_eq!(mode(&sent_path(&b)), 0o600);

    let discards = audit_of(&b, "sent.discard");
    let summary: Vec<(Value, Value, Value)> = discards
        .iter()
        .map(|l| {
            (
                l["detail"]["count"].clone(),
                l["detail"]["scope"].clone(),
                l["device"].clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (json!(1), json!("line"), json!("tablet")),
            (json!(1), json!("line"), Value::Null),
            (json!(2), json!("machine"), json!("phone")),
        ]
    );
    let all = std::fs::read_to_string(b.state().join("audit.log")).expect("audit");
    assert!(!all.contains("keep-"), "no audit line holds a sent line");
}

#[test]
fn the_cli_edits_the_file_itself_while_the_bridge_is_stopped() {
    let mut b = bridge(&[]);
    let full = b.pair("phone", "full");
    let pane = b.first_tmux_pane(&full);
    for i in 1..=3 {
        send_line(&b, &full, &pane, &format!("echo stopped-{i}"));
    }
    assert!(wait_for(WAIT, || (sent_file(&b).len() == 3).then_some(())).is_some());
    let audit_before = b.audit_lines().len();
    b.stop();
    let listed = b.cli_ok(&["sent", "list"]);
    assert!(
        listed.contains("testbox/") && listed.contains("echo stopped-3"),
        "{listed}"
    );
    let first = sent_file(&b)[0]["id"].as_u64().expect("id");
    b.cli_ok(&["sent", "discard", &first.to_string()]);
    assert_eq!(sent_lines(&b), ["echo stopped-2", "echo stopped-3"]);
    assert_eq!(mode(&sent_path(&b)), 0o600);
    let out = b.cli(&["sent", "discard", "999"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such line"));
    assert!(b.cli_ok(&["sent", "clear"]).contains("discarded 2 lines"));
    assert!(sent_file(&b).is_empty());
    assert_eq!(mode(&sent_path(&b)), 0o600);
    assert_eq!(
        b.audit_lines().len(),
        audit_before,
        "no bridge, no audit line"
    );
}

#[test]
fn a_one_shot_command_runs_in_a_fresh_shell_and_is_remembered() {
    let b = bridge(&[]);
    let full = b.pair("phone", "full");
    let marker = b.dir.path().join("one-shot-ran");
    let command = format!("touch {}", marker.display());
    let (s, v) = b.post("/api/commands", Some(&full), &json!({"command": command}));
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["machine"], "testbox");
    let pane = v["pane"]["pane"].as_str().expect("pane").to_owned();
    assert!(pane.starts_with('p'), "a hosted pane: {pane}");
    assert!(
        wait_for(WAIT, || marker.exists().then_some(())).is_some(),
        "the command ran"
    );

    // The audit keeps the first word and the length, never the line.
    let runs = audit_of(&b, "command.run");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["detail"]["word"], "touch");
    assert_eq!(runs[0]["detail"]["length"], json!(command.chars().count()));
    assert_eq!(runs[0]["device"], "phone");
    assert!(!runs[0].to_string().contains("one-shot-ran"));
    assert!(audit_of(&b, "pane.create")
        .iter()
        .any(|l| l["detail"]["pane"] == pane.as_str()));

    // The sent log has it under `command`, the recent list too (0600 both).
    let entries = sent_file(&b);
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0]["pane"], "command");
    assert_eq!(entries[0]["line"], command.as_str());
    let (s, recent) = b.get("/api/commands/recent", Some(&full));
    assert_eq!(s, 200, "{recent}");
    assert_eq!(recent["commands"], json!([command]));
    assert_eq!(mode(&b.state().join("commands-recent.json")), 0o600);

    // A line that looks like it holds a secret runs, but is kept nowhere.
    let marker2 = b.dir.path().join("secret-ran");
    let secret = format!("TOKEN=zq9981 touch {}", marker2.display());
    let (s, v) = b.post("/api/commands", Some(&full), &json!({"command": secret}));
    assert_eq!(s, 200, "{v}");
    assert!(wait_for(WAIT, || marker2.exists().then_some(())).is_some());
    assert_eq!(audit_of(&b, "command.run")[1]["detail"]["word"], "TOKEN=");
    assert_eq!(leaks(&b, &full, "zq9981"), Vec::<&str>::new());
    let (_, recent) = b.get("/api/commands/recent", Some(&full));
    assert_eq!(recent["commands"], json!([command]));

    // Twelve distinct lines at most, newest first, a repeat moved to the front.
    for i in 0..12 {
        let (s, v) = b.post(
            "/api/commands",
            Some(&full),
            &json!({"command": format!("true {i}")}),
        );
        assert_eq!(s, 200, "{v}");
    }
    let (s, v) = b.post("/api/commands", Some(&full), &json!({"command": "true 3"}));
    assert_eq!(s, 200, "{v}");
    let (_, recent) = b.get("/api/commands/recent", Some(&full));
    let list: Vec<&str> = recent["commands"]
        .as_array()
        .expect("commands")
        .iter()
        .map(|c| c.as_str().expect("str"))
        .collect();
    assert_eq!(list.len(), 12);
    assert_eq!(list[0], "true 3");
    assert_eq!(list[1], "true 11");
    assert!(!list.contains(&command.as_str()), "the oldest went");

    // Bad lines are refused before anything runs.
    let panes_before = b.get("/api/panes", Some(&full)).1["panes"]
        .as_array()
        .map(Vec::len);
    for bad in [
        json!({"command": ""}),
        json!({"command": "a\nb"}),
        json!({"command": "x".repeat(4097)}),
        json!({"cmd": "ls"}),
    ] {
        let (s, v) = b.post("/api/commands", Some(&full), &bad);
        assert_eq!(s, 400, "{bad}: {v}");
    }
    assert_eq!(
        b.get("/api/panes", Some(&full)).1["panes"]
            .as_array()
            .map(Vec::len),
        panes_before
    );

    // Unpairing leaves the list.
    let (s, _) = delete(&b, "/api/devices/phone", &full);
    assert_eq!(s, 200);
    let other = b.pair("phone2", "full");
    let (_, recent) = b.get("/api/commands/recent", Some(&other));
    assert_eq!(recent["commands"].as_array().map(Vec::len), Some(12));
}

#[test]
fn one_shot_commands_are_refused_below_full_and_when_run_is_off() {
    let mut b = bridge(&[]);
    let files = b.pair("tablet", "files");
    let read = b.pair("watch", "read");
    let marker = b.dir.path().join("must-not-run");
    let body = json!({"command": format!("touch {}", marker.display())});
    for token in [&files, &read] {
        let (s, v) = b.post("/api/commands", Some(token), &body);
        assert_eq!((s, v["error"].as_str()), (403, Some("insufficient tier")));
        let (s, _) = b.get("/api/commands/recent", Some(token));
        assert_eq!(s, 403);
    }
    let (_, settings) = b.get("/api/settings", Some(&read));
    assert_eq!(
        (settings["run"].clone(), settings["sent"].clone()),
        (json!(true), json!(true))
    );

    b.stop();
    b.configure("[phone]\nrun = false\n");
    b.launch();
    let full = b.pair("phone", "full");
    let (s, v) = b.post("/api/commands", Some(&full), &body);
    assert_eq!(s, 403, "{v}");
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.contains("[phone] run = false")),
        "{v}"
    );
    let (_, settings) = b.get("/api/settings", Some(&full));
    assert_eq!(settings["run"], false);
    assert!(audit_of(&b, "command.run").is_empty());
    assert!(!marker.exists());
    let hosted = b.get("/api/panes", Some(&full)).1["panes"]
        .as_array()
        .map(|p| p.iter().filter(|p| p["backend"] == "pty").count());
    assert_eq!(hosted, Some(0), "no pane was opened");
}
