//! Black-box tests of uploads, the sent log and one-shot commands on a crew member through its lead
//! (SPEC §11, §8; decision 0036): two real `collie bridge` processes, a real crew over QUIC on
//! loopback, real hosted panes on the member. Each test checks the lead's gate (nothing reaches
//! the member when it refuses), the member's own rules, the audit on both machines with one
//! request id, and what the lead masks again.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{json, Value};
use support::{wait_for, TestBridge};

/// How long a test waits for something the bridges do on their own (a member coming online, a
/// pane listed, a command's file appearing).
const WAIT: Duration = Duration::from_secs(15);

/// A GitHub-token-shaped string (the masker keeps `ghp_` and one more character).
const TOKEN: &str = "ghp_Abcdefghijklmnopqrstuvwxyz0123456789";

/// A lead and a member `web-1` with `member_config` as the member's `config.toml`, once the lead
/// lists the member online.
fn crew(member_env: &[(&str, &str)], member_config: Option<&str>) -> (TestBridge, TestBridge) {
    let lead = support::crew_bridge(false, &[]);
    let mut member = support::crew_bridge(false, member_env);
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

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).expect("exists").permissions().mode() & 0o777
}

fn audit_of(b: &TestBridge, event: &str) -> Vec<Value> {
    b.audit_lines()
        .into_iter()
        .filter(|l| l["event"] == event)
        .collect()
}

/// A hosted pane on the member whose foreground process sits in `dir`; its id once the lead
/// lists it for `web-1`.
fn member_pane_in(lead: &TestBridge, member: &TestBridge, token: &str, dir: &Path) -> String {
    // A duration no other process of this machine has, so the pane's process can be found.
    static PANES: AtomicUsize = AtomicUsize::new(0);
    let tag = format!(
        "600.{}{}",
        std::process::id(),
        PANES.fetch_add(1, Ordering::Relaxed)
    );
    let script = format!("cd '{}' && exec sleep {tag}", dir.display());
    let info = member.hosted("work", &["sh", "-c", &script]);
    let pane = info["pane"].as_str().expect("pane id").to_owned();
    // The pane's folder is read when a file comes: wait until its shell has changed folder.
    let real = std::fs::canonicalize(dir).expect("canonical");
    let moved = wait_for(WAIT, || {
        std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let wanted = format!("sleep\0{tag}\0");
            (cmdline == wanted.as_bytes() && std::fs::read_link(e.path().join("cwd")).ok()? == real)
                .then_some(())
        })
    });
    assert!(
        moved.is_some(),
        "the pane's shell never reached {}",
        dir.display()
    );
    let listed = wait_for(WAIT, || {
        let (s, v) = lead.get("/api/panes", Some(token));
        (s == 200).then_some(())?;
        v["panes"]
            .as_array()?
            .iter()
            .any(|p| p["machine"] == "web-1" && p["pane"] == pane.as_str())
            .then_some(())
    });
    assert!(listed.is_some(), "the lead does not list web-1's {pane}");
    pane
}

/// What a folder holds (none when it does not exist).
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn an_upload_lands_in_the_member_panes_folder_and_is_audited_on_both() {
    let (lead, member) = crew(&[], None);
    let proj = member.dir.path().join("home/proj");
    std::fs::create_dir_all(&proj).expect("set up the test");
    let files = lead.pair("phone", "files");
    let read = lead.pair("watch", "read");
    let pane = member_pane_in(&lead, &member, &files, &proj);
    let uploads = std::fs::canonicalize(&proj)
        .expect("canonical")
        .join(".collie-uploads");

    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDRsecret-pixels";
    let (status, up) = lead.upload(&files, "web-1", &pane, "shot.png", png);
    assert_eq!(status, 200, "{up}");
    let path = uploads.join("shot.png");
    assert_eq!(up["path"], path.display().to_string(), "{up}");
    assert_eq!(
        (up["name"].clone(), up["size"].clone()),
        (json!("shot.png"), json!(png.len()))
    );
    assert_eq!(std::fs::read(&path).expect("the member has the file"), png);
    assert_eq!((mode(&uploads), mode(&path)), (0o700, 0o600));
    // The kept copy is the member's, not the lead's.
    let id = up["id"].as_str().expect("id");
    assert_eq!(mode(&member.state().join("blobs").join(id)), 0o600);
    assert!(!lead.state().join("blobs").join(id).exists());

    // Audited on both machines with the lead's request id; the bytes in neither.
    let on_lead = audit_of(&lead, "tool.upload");
    let on_member = audit_of(&member, "tool.upload");
    assert_eq!(on_lead.len(), 2, "before and done: {on_lead:?}");
    assert_eq!(on_member.len(), 2, "before and done: {on_member:?}");
    let request = on_lead[0]["request_id"].clone();
    assert!(request.is_string(), "{on_lead:?}");
    assert_eq!(on_lead[0]["device"], "phone");
    assert_eq!(on_lead[0]["detail"]["machine"], "web-1");
    assert_eq!(on_lead[0]["detail"]["size"], json!(png.len()));
    assert_eq!(on_member[0]["request_id"], request);
    assert_eq!(on_member[0]["device"], "phone");
    assert_eq!(on_member[0]["detail"]["via"], "relay");
    assert_eq!(on_member[0]["detail"]["name"], "shot.png");
    assert_eq!(on_member[1]["detail"]["phase"], "done");
    for line in on_lead.iter().chain(&on_member) {
        assert!(!line.to_string().contains("secret-pixels"), "{line}");
    }

    // A `read` device is refused at the lead: nothing relayed, nothing written, no member line.
    let (status, body) = lead.upload(&read, "web-1", &pane, "r.txt", b"from a read device");
    assert_eq!(
        (status, body["error"].as_str()),
        (403, Some("insufficient tier"))
    );
    // A name the rules refuse is refused at the lead too.
    let (status, body) = lead.upload(&files, "web-1", &pane, "../x.txt", b"x");
    assert_eq!(status, 400, "{body}");
    // Over 10 MiB: refused by the lead's body limit, from the declared length, before a byte of
    // the body is read or anything relayed.
    let (status, answer) = lead.declare_only(
        &format!(
            "/api/blobs?machine=web-1&pane={}&name=big.bin",
            support::url_encode(&pane)
        ),
        &files,
        (10 << 20) + 1,
    );
    assert_eq!(status, 413, "{answer}");
    assert_eq!(entries(&uploads), ["shot.png"]);
    assert_eq!(audit_of(&member, "tool.upload").len(), 2, "nothing relayed");

    // Exactly 10 MiB fits one relay frame and arrives whole.
    let most: Vec<u8> = (0..(10usize << 20)).map(|i| (i % 251) as u8).collect();
    let (status, body) = lead.upload(&files, "web-1", &pane, "most.bin", &most);
    assert_eq!(status, 200, "{body}");
    assert!(std::fs::read(uploads.join("most.bin")).expect("written") == most);

    // The member's own rules: an unknown pane, a pane outside its workspace (home).
    let (status, body) = lead.upload(&files, "web-1", "p999", "a.txt", b"x");
    assert_eq!(
        (status, body["error"].as_str()),
        (404, Some("no such pane"))
    );
    let outside = member_pane_in(&lead, &member, &files, Path::new("/"));
    let (status, body) = lead.upload(&files, "web-1", &outside, "a.txt", b"x");
    assert_eq!(
        (status, body["error"].as_str()),
        (403, Some("path outside the workspace"))
    );
    assert!(!Path::new("/.collie-uploads").exists());
}

#[test]
fn a_member_that_turns_tools_off_declines_uploads() {
    let (lead, member) = crew(&[], Some("\n[crew]\ntools = false\n"));
    let proj = member.dir.path().join("home/proj");
    std::fs::create_dir_all(&proj).expect("set up the test");
    let files = lead.pair("phone", "files");
    let pane = member_pane_in(&lead, &member, &files, &proj);
    let (status, body) = lead.upload(&files, "web-1", &pane, "a.txt", b"x");
    assert_eq!(
        (status, body["error"].as_str()),
        (501, Some("capability missing"))
    );
    assert!(entries(&proj).is_empty(), "{:?}", entries(&proj));
    assert!(audit_of(&lead, "tool.upload").is_empty());
    assert!(audit_of(&member, "tool.upload").is_empty());
}

fn sent_path(b: &TestBridge) -> PathBuf {
    b.state().join("sent.jsonl")
}

fn sent_lines(b: &TestBridge) -> Vec<String> {
    std::fs::read_to_string(sent_path(b))
        .unwrap_or_default()
        .lines()
        .map(|l| {
            support::json_of(l)["line"]
                .as_str()
                .expect("line")
                .to_owned()
        })
        .collect()
}

fn delete(b: &TestBridge, path: &str, token: &str) -> (u16, Value) {
    b.request("DELETE", path, Some(token), None, &[])
}

#[test]
fn a_members_sent_log_is_listed_masked_discarded_and_cleared_through_the_lead() {
    // The member does not mask (`COLLIE_REDACT=off`), so what the phone sees masked the lead
    // masked.
    let (lead, mut member) = crew(&[("COLLIE_REDACT", "off")], None);
    // A log from before, as the bridge writes it; the hand-edited second line holds a token.
    let old = [
        (1, "2026-01-01T00:00:01Z", "echo one".to_owned()),
        (2, "2026-01-01T00:00:02Z", format!("echo {TOKEN}")),
        (3, "2026-01-01T00:00:03Z", "echo three".to_owned()),
    ]
    .map(|(id, ts, line)| {
        json!({"id": id, "ts": ts, "machine": "web-1", "pane": "p1", "line": line}).to_string()
    })
    .join("\n");
    std::fs::write(sent_path(&member), format!("{old}\n")).expect("write");
    // One of the lead's own, written between the member's second and third (fractional seconds:
    // the lines are ordered by time, not by text).
    let own = json!({"id": 1, "ts": "2026-01-01T00:00:02.5Z", "machine": "testbox", "pane": "t0-0", "line": "echo lead"});
    std::fs::write(sent_path(&lead), format!("{own}\n")).expect("write");
    let read = lead.pair("watch", "read");
    let files = lead.pair("tablet", "files");

    let (status, list) = lead.get("/api/sent", Some(&read));
    assert_eq!(status, 200, "{list}");
    let theirs: Vec<(u64, String)> = list["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .filter(|l| l["machine"] == "web-1")
        .map(|l| {
            (
                l["id"].as_u64().expect("id"),
                l["line"].as_str().expect("line").to_owned(),
            )
        })
        .collect();
    assert_eq!(theirs.len(), 3, "{list}");
    assert_eq!(theirs[0], (3, "echo three".to_owned()), "newest first");
    let all: Vec<&str> = list["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .filter_map(|l| l["line"].as_str())
        .collect();
    assert_eq!(
        all[..2],
        ["echo three", "echo lead"],
        "newest first across machines"
    );
    assert_eq!(all.len(), 4, "{list}");
    assert!(!list.to_string().contains(TOKEN), "{list}");
    assert!(theirs[1].1.starts_with("echo ghp_A•"), "{theirs:?}");
    assert_eq!(list["unavailable"], json!([]), "{list}");

    // A `read` device may not discard; nothing reaches the member.
    let (status, body) = delete(&lead, "/api/sent/web-1/2", &read);
    assert_eq!(
        (status, body["error"].as_str()),
        (403, Some("insufficient tier"))
    );
    assert_eq!(sent_lines(&member).len(), 3);

    let (status, body) = delete(&lead, "/api/sent/web-1/2", &files);
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (body["machine"].clone(), body["discarded"].clone()),
        (json!("web-1"), json!(1))
    );
    assert_eq!(sent_lines(&member), ["echo one", "echo three"]);
    let (status, body) = delete(&lead, "/api/sent/web-1/99", &files);
    assert_eq!(
        (status, body["error"].as_str()),
        (404, Some("no such line"))
    );
    let (status, body) = delete(&lead, "/api/sent/web-1", &files);
    assert_eq!((status, body["discarded"].clone()), (200, json!(2)));
    assert!(sent_lines(&member).is_empty());

    // The member audits each by count, never the line, with the lead's request ids.
    let on_member = audit_of(&member, "sent.discard");
    let counts: Vec<Value> = on_member
        .iter()
        .map(|l| l["detail"]["count"].clone())
        .collect();
    assert_eq!(counts, [json!(1), json!(2)]);
    assert_eq!(on_member[0]["detail"]["via"], "relay");
    let on_lead = audit_of(&lead, "sent.discard");
    let requests =
        |lines: &[Value]| -> Vec<Value> { lines.iter().map(|l| l["request_id"].clone()).collect() };
    // The lead writes its line once the member answered that it is done (decision 0052): the
    // 404 leaves a line on neither machine.
    assert_eq!(on_lead.len(), 2, "{on_lead:?}");
    assert_eq!(on_lead[0]["detail"]["machine"], "web-1");
    assert_eq!(on_lead[1]["detail"]["scope"], "machine");
    assert_eq!(requests(&on_member), requests(&on_lead));
    for line in on_lead.iter().chain(&on_member) {
        assert!(!line.to_string().contains("echo"), "{line}");
    }

    // A member that is gone: the list still answers, naming it; a discard is `member unreachable`.
    member.kill_hard();
    let (status, list) = lead.get("/api/sent", Some(&read));
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["unavailable"], json!(["web-1"]), "{list}");
    let (status, body) = delete(&lead, "/api/sent/web-1", &files);
    assert_eq!(
        (status, body["error"].as_str()),
        (502, Some("member unreachable"))
    );
}

#[test]
fn a_one_shot_command_runs_on_the_member_under_its_own_run_setting() {
    let (lead, mut member) = crew(&[], None);
    let full = lead.pair("phone", "full");
    let files = lead.pair("tablet", "files");
    let marker = member.dir.path().join("ran-on-member");
    let command = format!("touch {}", marker.display());

    let (status, body) = lead.post(
        "/api/commands",
        Some(&files),
        &json!({"machine": "web-1", "command": command}),
    );
    assert_eq!(
        (status, body["error"].as_str()),
        (403, Some("insufficient tier"))
    );
    assert!(
        audit_of(&member, "command.run").is_empty(),
        "nothing relayed"
    );

    let (status, ran) = lead.post(
        "/api/commands",
        Some(&full),
        &json!({"machine": "web-1", "command": command}),
    );
    assert_eq!(status, 200, "{ran}");
    assert_eq!(ran["machine"], "web-1");
    assert_eq!(ran["pane"]["machine"], "web-1");
    assert!(
        ran["pane"]["pane"]
            .as_str()
            .is_some_and(|p| p.starts_with('p')),
        "{ran}"
    );
    assert!(
        wait_for(WAIT, || marker.exists().then_some(())).is_some(),
        "the command ran on the member"
    );

    // Audited on both with one request id: the first word and the length, never the line.
    let on_lead = audit_of(&lead, "command.run");
    let on_member = audit_of(&member, "command.run");
    assert_eq!((on_lead.len(), on_member.len()), (1, 1));
    assert_eq!(on_lead[0]["detail"]["machine"], "web-1");
    assert_eq!(on_member[0]["request_id"], on_lead[0]["request_id"]);
    assert_eq!(on_member[0]["detail"]["via"], "relay");
    for line in [&on_lead[0], &on_member[0]] {
        assert_eq!(line["detail"]["word"], "touch");
        assert!(!line.to_string().contains("ran-on-member"), "{line}");
    }
    // The member keeps it in its own sent log and recent list; the lead keeps nothing.
    assert_eq!(sent_lines(&member), [command]);
    assert!(!sent_path(&lead).exists());
    assert!(member.state().join("commands-recent.json").exists());
    assert!(!lead.state().join("commands-recent.json").exists());

    // The member's `[phone] run = false` refuses, in its own words, and runs nothing.
    member.stop();
    member.configure("[phone]\nrun = false\n");
    member.launch();
    lead.wait_member_online("web-1");
    let marker2 = member.dir.path().join("must-not-run");
    let (status, body) = lead.post(
        "/api/commands",
        Some(&full),
        &json!({"machine": "web-1", "command": format!("touch {}", marker2.display())}),
    );
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        body["error"],
        "one-shot commands are off on this machine ([phone] run = false)"
    );
    assert_eq!(
        audit_of(&member, "command.run").len(),
        1,
        "no second run on the member"
    );
    assert!(!marker2.exists());
}
