//! The chat view's refusals (SPEC §3.3, §6): a pane with no agent has no chat (`agent: null`),
//! and a program that calls itself `claude` and points its `HOME` at a crafted folder reads
//! nothing the folder rules refuse — a symlinked transcript, a symlinked `.claude`, a hard link, a
//! FIFO — while a plain transcript there is read (so the refusals are the rules, not a failure to
//! look). A member's chat comes through the lead masked again. The real agents' chats are in
//! `tests/agents.rs`.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use support::{wait_for, TestBridge};

/// A line of a Claude Code transcript: the user saying `text`.
fn user_line(text: &str) -> String {
    format!(
        "{}\n",
        json!({"type": "user", "timestamp": "2026-12-02T10:00:00Z",
               "message": {"role": "user", "content": text}})
    )
}

fn chat(b: &TestBridge, token: &str, pane: &str) -> (u16, Value) {
    b.get(&format!("/api/panes/local/{pane}/chat"), Some(token))
}

#[test]
fn a_pane_without_an_agent_has_no_chat() {
    let b = TestBridge::start();
    let phone = b.pair("pixel", "read");
    let pane = b.first_tmux_pane(&phone);
    assert_eq!(
        chat(&b, &phone, &pane),
        (
            200,
            json!({"agent": null, "session": null, "turns": [], "cursor": ""})
        )
    );
    assert_eq!(
        b.get("/api/panes/local/t9-9/chat", Some(&phone)),
        (404, json!({"error": "no such pane"}))
    );
    let (status, _) = b.get(&format!("/api/panes/local/{pane}/chat"), None);
    assert_eq!(status, 403, "a device is needed");
}

/// Where a fake Claude Code runs: the test's folder, its crafted home, and its project folder
/// name.
struct Fake {
    root: PathBuf,
    home: PathBuf,
    folder: String,
}

impl Fake {
    /// The folder where Claude Code would write this fake's transcripts.
    fn project(&self) -> PathBuf {
        self.home.join(".claude/projects").join(&self.folder)
    }
}

/// A script named `claude` (`sh` runs it under that name, waiting on its terminal) in tmux
/// window `fake` of `b`, in a folder `work`, with a crafted HOME.
fn fake_claude(b: &TestBridge) -> Fake {
    let root = b.dir.path().canonicalize().expect("canonical");
    let work = root.join("work");
    let home = root.join("crafted-home");
    for d in [&work, &home] {
        std::fs::create_dir_all(d).expect("dir");
    }
    let program = root.join("bin/claude");
    std::fs::create_dir_all(program.parent().expect("bin")).expect("bin");
    std::fs::write(&program, "#!/bin/sh\nwhile read -r line; do :; done\n").expect("script");
    let mut perms = std::fs::metadata(&program).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&program, perms).expect("chmod");
    start_fake(b, &program, &work, &home);
    let folder = work
        .to_string_lossy()
        .replace(|c: char| !c.is_ascii_alphanumeric(), "-");
    Fake { root, home, folder }
}

/// Starts `program` (an executable named `claude`) in tmux window `fake`, in `work`, with
/// `home` as its HOME.
fn start_fake(b: &TestBridge, program: &Path, work: &Path, home: &Path) {
    let started = b
        .tmux
        .as_ref()
        .expect("tmux")
        .cmd()
        .args(["new-window", "-d", "-n", "fake", "-c"])
        .arg(work)
        .arg(format!(
            "env -i PATH=/usr/bin:/bin HOME={} {}",
            home.display(),
            program.display()
        ))
        .status()
        .expect("tmux new-window");
    assert!(started.success());
}

#[test]
fn a_fake_claude_with_a_crafted_home_reads_nothing_outside_its_folder() {
    let b = TestBridge::start();
    let phone = b.pair("pixel", "read");
    let fake = fake_claude(&b);
    let (root, home, folder) = (&fake.root, &fake.home, &fake.folder);
    let outside = root.join("outside");
    std::fs::create_dir_all(&outside).expect("outside");
    let pane = b.pane_named(&phone, None, "fake");

    // The agent is recognised; it has written nothing.
    let empty = wait_for(Duration::from_secs(10), || {
        let (s, v) = chat(&b, &phone, &pane);
        (s == 200).then_some(v)
    })
    .expect("the fake claude is recognised");
    assert_eq!(empty["agent"], "claude");
    assert_eq!(empty["turns"], json!([]));

    // A secret transcript outside, and the crafted folder's ways to it.
    let secret_file = outside.join("secret.jsonl");
    std::fs::write(&secret_file, user_line("OUTSIDE-SECRET")).expect("outside");
    let nothing = |what: &str| {
        let (status, v) = chat(&b, &phone, &pane);
        assert_eq!(status, 200, "{what}: {v}");
        assert_eq!(v["turns"], json!([]), "{what}: {v}");
        assert!(!v.to_string().contains("OUTSIDE"), "{what}: {v}");
    };

    // 1. `.claude` itself a symlink to a folder outside holding a transcript.
    std::fs::create_dir_all(outside.join("projects").join(folder)).expect("outside projects");
    std::fs::copy(
        &secret_file,
        outside.join("projects").join(folder).join("a.jsonl"),
    )
    .expect("copy");
    std::os::unix::fs::symlink(&outside, home.join(".claude")).expect("symlink .claude");
    nothing("a symlinked .claude");
    std::fs::remove_file(home.join(".claude")).expect("unlink");

    // 2. The transcript a symlink to a file outside.
    let project = fake.project();
    std::fs::create_dir_all(&project).expect("project");
    std::os::unix::fs::symlink(&secret_file, project.join("b.jsonl")).expect("symlink file");
    nothing("a symlinked transcript");
    std::fs::remove_file(project.join("b.jsonl")).expect("unlink");

    // 3. The transcript a hard link to the file outside.
    std::fs::hard_link(&secret_file, project.join("c.jsonl")).expect("hard link");
    nothing("a hard-linked transcript");
    std::fs::remove_file(project.join("c.jsonl")).expect("unlink");

    // 4. A FIFO named like a transcript does not hang the read.
    nix::unistd::mkfifo(&project.join("d.jsonl"), nix::sys::stat::Mode::S_IRWXU).expect("fifo");
    nothing("a FIFO");
    std::fs::remove_file(project.join("d.jsonl")).expect("unlink");

    // A plain transcript of this user's in the folder is read, masked, junk lines skipped.
    let secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    let body = format!(
        "{}not json\n{}{{\"type\":\"user\"}}\n",
        user_line("<b>x</b>"),
        user_line(&format!("token {secret}"))
    );
    std::fs::write(project.join("e.jsonl"), body).expect("transcript");
    let (status, v) = chat(&b, &phone, &pane);
    assert_eq!(status, 200);
    assert_eq!(v["session"], "e");
    let turns: Vec<&str> = v["turns"]
        .as_array()
        .expect("turns")
        .iter()
        .filter_map(|t| t["text"].as_str())
        .collect();
    assert_eq!(turns.len(), 2, "{v:#}");
    assert_eq!(turns[0], "<b>x</b>");
    assert!(turns[1].starts_with("token ghp_a•••"), "{}", turns[1]);
    assert!(!v.to_string().contains(secret));
}

/// A member's chat through the lead: relayed under the `chat` capability and masked again by the
/// lead — the member here masks nothing itself (`COLLIE_REDACT=off`), and its own phone API shows
/// the key in clear.
#[test]
fn a_member_s_chat_comes_through_the_lead_masked_again() {
    let lead = support::crew_bridge(false, &[]);
    let member = support::crew_bridge(true, &[("COLLIE_REDACT", "off")]);
    lead.cli_ok(&["crew", "init"]);
    member.cli_ok(&["crew", "join", &lead.invite(), "--name", "web-1"]);
    lead.wait_member_online("web-1");
    let phone = lead.pair("phone", "read");
    let own = member.pair("own", "read");

    let fake = fake_claude(&member);
    let secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    std::fs::create_dir_all(fake.project()).expect("project");
    std::fs::write(
        fake.project().join("s1.jsonl"),
        user_line(&format!("use {secret} please")),
    )
    .expect("transcript");

    let local = member.pane_named(&own, None, "fake");
    let (status, v) = chat(&member, &own, &local);
    assert_eq!(status, 200, "{v}");
    assert!(
        v.to_string().contains(secret),
        "the member masks nothing: {v}"
    );

    let relayed = lead.pane_named(&phone, Some("web-1"), "fake");
    let (status, v) = lead.get(&format!("/api/panes/web-1/{relayed}/chat"), Some(&phone));
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["agent"], "claude");
    assert_eq!(v["session"], "s1");
    let text = v["turns"][0]["text"].as_str().expect("a turn");
    assert!(text.starts_with("use ghp_a•••"), "{text}");
    assert!(!v.to_string().contains(secret), "{v}");

    // Following from the relayed cursor.
    let cursor = v["cursor"].as_str().expect("cursor");
    let path = format!(
        "/api/panes/web-1/{relayed}/chat?after={}",
        support::url_encode(cursor)
    );
    assert_eq!(lead.get(&path, Some(&phone)).1["turns"], json!([]));
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(fake.project().join("s1.jsonl"))
        .expect("append");
    std::io::Write::write_all(&mut f, user_line("next").as_bytes()).expect("write");
    let (_, v) = lead.get(&path, Some(&phone));
    assert_eq!(v["turns"][0]["text"], "next", "{v}");
    assert_eq!(v["turns"].as_array().map(Vec::len), Some(1));

    // No agent in the member's first pane: no chat there either.
    let first = lead.tmux_pane_of(&phone, "web-1");
    let first = if first == relayed {
        wait_for(Duration::from_secs(5), || {
            let (_, v) = lead.get("/api/panes", Some(&phone));
            v["panes"]
                .as_array()?
                .iter()
                .find(|p| p["machine"] == "web-1" && p["name"] != "fake")
                .and_then(|p| p["pane"].as_str().map(str::to_owned))
        })
        .expect("the member's other pane")
    } else {
        first
    };
    let (status, v) = lead.get(&format!("/api/panes/web-1/{first}/chat"), Some(&phone));
    assert_eq!(
        (status, &v["agent"], &v["turns"]),
        (200, &json!(null), &json!([]))
    );
}
