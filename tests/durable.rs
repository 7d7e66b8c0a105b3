//! Black-box tests of durable agents (SPEC §10.3): a real bridge reading agents over a private
//! unix socket and over HTTPS, the phone's view and writes through the API, questions as cards,
//! and every kind of bad agent and bad path the issue lists — each gets a clear error and changes
//! nothing else. The agents here are scripted real HTTP servers (`support/durable_agent.rs`) so
//! they can misbehave on cue.

#[path = "support/durable_agent.rs"]
mod durable_agent;
#[path = "support/push_service.rs"]
mod push_service;
mod support;
#[path = "support/test_ca.rs"]
mod test_ca;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use durable_agent::{Answer, Got, ScriptedAgent};
use serde_json::{json, Value};
use support::{wait_for, Opts, TestBridge};
use test_ca::TestCa;

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// A private folder for an agent's socket under the bridge's temp dir (itself 0700).
fn private_dir(b: &TestBridge, name: &str) -> PathBuf {
    let dir = b.dir.path().join(name);
    std::fs::create_dir_all(&dir).expect("mkdir");
    chmod(b.dir.path(), 0o700);
    chmod(&dir, 0o700);
    dir
}

/// A bridge without tmux, logging to a file.
fn bridge() -> TestBridge {
    TestBridge::start_with(Opts {
        log_to_file: true,
        env: vec![("COLLIE_LOG".into(), "info".into())],
        ..Opts::default()
    })
}

/// One conversation with one question.
fn asking(question_title: &str) -> Value {
    json!({
        "conversations": [{
            "id": "c1",
            "title": "Deploy web",
            "state": "working",
            "updated": 1_800_000_000_000u64,
            "items": [
                {"id": "i1", "kind": "text", "role": "user", "text": "deploy web please"},
                {"id": "i2", "kind": "markdown", "role": "agent", "text": "**Plan**: build, then ship"}
            ],
            "questions": [{
                "id": "q1",
                "title": question_title,
                "reason": "The build passed.\nShip it?",
                "items": [{"id": "x", "kind": "code", "text": "kubectl rollout restart deploy/web"}],
                "options": [{"id": "yes", "label": "Deploy"}, {"id": "no", "label": "Cancel"}]
            }],
            "actions": [{"id": "retry", "label": "Retry"}]
        }],
        "starters": [{"id": "deploy", "label": "Start a deploy"}]
    })
}

/// An agent that serves `state` to reads and 200 to every write.
fn serving(state: Value) -> impl Fn(&Got) -> Answer + Send + Sync + 'static {
    move |got: &Got| {
        if got.method == "GET" {
            Answer::json(&state)
        } else if got.path.starts_with("/v1/starters/") {
            Answer::json(&json!({"conversation": "c9"}))
        } else {
            Answer::json(&json!({}))
        }
    }
}

/// The agent `name` as `GET /api/durable` shows it, once `ready` holds for it.
fn agent_when(b: &TestBridge, token: &str, name: &str, ready: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    wait_for(Duration::from_secs(20), || {
        let (status, v) = b.get("/api/durable", Some(token));
        assert_eq!(status, 200, "{v}");
        let agent = v["agents"]
            .as_array()
            .and_then(|a| a.iter().find(|a| a["name"] == name).cloned())?;
        last = agent.clone();
        ready(&agent).then_some(agent)
    })
    .unwrap_or_else(|| panic!("agent {name} never got ready: {last}"))
}

/// The waiting card of durable agent `name`.
fn durable_card(b: &TestBridge, token: &str, name: &str) -> Value {
    wait_for(Duration::from_secs(20), || {
        let (_, v) = b.get("/api/cards", Some(token));
        v["cards"].as_array().and_then(|c| {
            c.iter()
                .find(|c| c["source"] == format!("durable:{name}"))
                .cloned()
        })
    })
    .unwrap_or_else(|| panic!("no card from durable:{name}"))
}

/// The first write (a POST) the agent got.
fn first_write(agent: &ScriptedAgent, what: &str) -> Got {
    agent
        .got()
        .into_iter()
        .find(|g| g.method == "POST")
        .unwrap_or_else(|| panic!("{what}"))
}

/// The first audit line of `event` on `b`.
fn audited(b: &TestBridge, event: &str, what: &str) -> Value {
    b.audit_lines()
        .into_iter()
        .find(|l| l["event"] == event)
        .unwrap_or_else(|| panic!("{what}"))
}

/// A scripted agent on a private socket (`<dir>/agent/app.sock`, 0600), attached as `name`.
fn attached(
    b: &TestBridge,
    name: &str,
    script: impl Fn(&Got) -> Answer + Send + Sync + 'static,
) -> ScriptedAgent {
    let socket = private_dir(b, "agent").join("app.sock");
    let agent = ScriptedAgent::socket(&socket, script);
    chmod(&socket, 0o600);
    attach_socket(b, name, &socket);
    agent
}

fn attach_socket(b: &TestBridge, name: &str, socket: &Path) {
    let out = b.cli_ok(&[
        "durable",
        "attach",
        name,
        "--socket",
        &socket.display().to_string(),
    ]);
    assert!(out.contains(&format!("attached {name}")), "{out}");
}

#[test]
fn a_socket_agent_shows_its_conversations_and_a_tap_answers_its_question() {
    let b = bridge();
    let agent = attached(&b, "ops", serving(asking("Deploy to production?")));
    let phone = b.pair("phone", "full");
    let reader = b.pair("reader", "read");

    let shown = agent_when(&b, &reader, "ops", |a| a["status"] == "up");
    assert_eq!(shown["machine"], "testbox");
    assert_eq!(shown["transport"], "socket");
    let conversation = &shown["conversations"][0];
    assert_eq!(conversation["title"], "Deploy web");
    assert_eq!(conversation["state"], "working");
    assert_eq!(conversation["items"][1]["kind"], "markdown");
    assert_eq!(shown["starters"][0]["label"], "Start a deploy");
    let get = &agent.got()[0];
    assert_eq!(get.path, "/v1/state");
    assert_eq!(get.header("collie-wire"), Some("1"));
    assert_eq!(
        get.header("authorization"),
        None,
        "a socket carries no token"
    );

    // The question is a card like any other.
    let card = durable_card(&b, &phone, "ops");
    assert_eq!(card["title"], "Deploy to production?");
    assert_eq!(card["conversation"], "c1");
    assert_eq!(card["question"], "q1");
    assert_eq!(card["items"][0]["text"], "The build passed.\nShip it?");
    assert_eq!(card["items"][1]["kind"], "code");
    assert_eq!(card["options"][0]["label"], "Deploy");
    let question = &agent_when(&b, &reader, "ops", |a| {
        a["conversations"][0]["questions"][0]["card"].is_string()
    })["conversations"][0]["questions"][0];
    assert_eq!(question["card"], card["id"]);

    // A read device cannot answer; a full device's tap reaches the agent, audited.
    let id = card["id"].as_str().expect("id");
    let answer = json!({"option": "yes", "shown": card["shown"]});
    let (status, _) = b.post(&format!("/api/cards/{id}/answer"), Some(&reader), &answer);
    assert_eq!(status, 403);
    agent.clear();
    let (status, v) = b.post(&format!("/api/cards/{id}/answer"), Some(&phone), &answer);
    assert_eq!(status, 200, "{v}");
    let write = first_write(&agent, "the agent got the answer");
    assert_eq!(write.path, "/v1/conversations/c1/answer");
    let body: Value = serde_json::from_slice(&write.body).expect("json body");
    assert_eq!(body, json!({"question": "q1", "option": "yes"}));
    assert_eq!(write.header("collie-wire"), Some("1"));
    let request_id = write
        .header("collie-request")
        .expect("request id")
        .to_owned();
    let line = audited(&b, "durable.answer", "durable.answer audited");
    assert_eq!(line["device"], "phone");
    assert_eq!(line["request_id"], request_id.as_str());
    assert_eq!(line["detail"]["source"], "durable:ops");
    assert_eq!(line["detail"]["option"], "yes");
    // A second tap on the same card: closed.
    let (status, _) = b.post(&format!("/api/cards/{id}/answer"), Some(&phone), &answer);
    assert_eq!(status, 410);
}

#[test]
fn the_phone_writes_to_a_conversation_audited_with_receipts_without_text() {
    let b = bridge();
    let agent = attached(&b, "ops", serving(asking("Ship?")));
    let phone = b.pair("phone", "full");
    let reader = b.pair("reader", "read");
    agent_when(&b, &phone, "ops", |a| a["status"] == "up");

    let secret_text = "please deploy the thing now";
    let writes: [(&str, Value, &str, Value); 7] = [
        (
            "send",
            json!({"text": secret_text}),
            "/v1/conversations/c1/send",
            json!({"text": secret_text}),
        ),
        ("abort", json!({}), "/v1/conversations/c1/abort", json!({})),
        (
            "action",
            json!({"action": "retry"}),
            "/v1/conversations/c1/action",
            json!({"action": "retry"}),
        ),
        (
            "rename",
            json!({"title": "Deploy api"}),
            "/v1/conversations/c1/rename",
            json!({"title": "Deploy api"}),
        ),
        ("close", json!({}), "/v1/conversations/c1/close", json!({})),
        (
            "reopen",
            json!({}),
            "/v1/conversations/c1/reopen",
            json!({}),
        ),
        (
            "starter",
            json!({"starter": "deploy"}),
            "/v1/starters/deploy",
            json!({"starter": "deploy"}),
        ),
    ];
    for (verb, body, path, sent) in &writes {
        let conversation = if *verb == "starter" { "-" } else { "c1" };
        let url = format!("/api/durable/ops/{conversation}/{verb}");
        let (status, _) = b.post(&url, Some(&reader), body);
        assert_eq!(status, 403, "{verb} from a read device");
        agent.clear();
        let (status, v) = b.post(&url, Some(&phone), body);
        assert_eq!(status, 200, "{verb}: {v}");
        if *verb == "starter" {
            assert_eq!(v["conversation"], "c9");
        }
        let got = first_write(&agent, &format!("{verb} never reached the agent"));
        assert_eq!(got.path, *path);
        assert_eq!(
            serde_json::from_slice::<Value>(&got.body).expect("json"),
            *sent
        );
        let line = b
            .audit_lines()
            .into_iter()
            .rev()
            .find(|l| l["event"] == format!("durable.{verb}"))
            .unwrap_or_else(|| panic!("durable.{verb} not audited"));
        assert_eq!(line["device"], "phone");
        assert_eq!(line["detail"]["agent"], "ops");
    }
    let (_, v) = b.get("/api/durable", Some(&phone));
    let receipts = v["receipts"].as_array().expect("receipts");
    assert_eq!(receipts.len(), writes.len());
    assert_eq!(receipts[0]["verb"], "starter");
    assert_eq!(receipts[0]["conversation"], "c9");
    assert!(
        !v["receipts"].to_string().contains(secret_text),
        "receipts keep no typed text"
    );

    // Bad writes change nothing and reach no agent.
    agent.clear();
    for (url, body, want) in [
        ("/api/durable/ops/c1/answer", json!({}), 400),
        ("/api/durable/ops/c1/send", json!({}), 400),
        (
            "/api/durable/ops/c1/send",
            json!({"text": "x", "title": "y"}),
            400,
        ),
        ("/api/durable/ops/c1/fly", json!({}), 400),
        ("/api/durable/ops/c%201/send", json!({"text": "x"}), 400),
        (
            "/api/durable/ops/c1/rename",
            json!({"title": "a\u{1b}[2Jb"}),
            400,
        ),
        ("/api/durable/nope/c1/send", json!({"text": "x"}), 404),
    ] {
        let (status, v) = b.post(url, Some(&phone), &body);
        assert_eq!(status, want, "{url} {body}: {v}");
        assert!(v["error"].is_string(), "{v}");
    }
    assert!(
        agent.got().iter().all(|g| g.method == "GET"),
        "no bad write reached the agent"
    );
}

#[test]
fn an_agent_that_refuses_gets_its_refusal_shown_and_the_card_keeps_waiting() {
    let b = bridge();
    let dir = private_dir(&b, "agent");
    let socket = dir.join("app.sock");
    let state = asking("Ship?");
    let _agent = ScriptedAgent::socket(&socket, move |got: &Got| {
        if got.method == "GET" {
            Answer::json(&state)
        } else if got.path.ends_with("/send") {
            Answer::status(404)
        } else {
            // The seed's descendant check: `caller-refused`.
            Answer::Reply {
                status: 403,
                headers: vec![],
                body: b"caller-refused".to_vec(),
                wire: true,
            }
        }
    });
    chmod(&socket, 0o600);
    attach_socket(&b, "ops", &socket);
    let phone = b.pair("phone", "full");
    let card = durable_card(&b, &phone, "ops");
    let id = card["id"].as_str().expect("id");
    let (status, v) = b.post(
        &format!("/api/cards/{id}/answer"),
        Some(&phone),
        &json!({"option": "yes", "shown": card["shown"]}),
    );
    assert_eq!(status, 409, "{v}");
    assert_eq!(v["error"], "the durable agent refused it (caller-refused)");
    let (_, cards) = b.get("/api/cards", Some(&phone));
    assert!(
        cards["cards"]
            .as_array()
            .expect("cards")
            .iter()
            .any(|c| c["id"] == id),
        "the card still waits: {cards}"
    );
    let (status, v) = b.post(
        "/api/durable/ops/c1/send",
        Some(&phone),
        &json!({"text": "hi"}),
    );
    assert_eq!(status, 409, "{v}");
    assert_eq!(
        v["error"],
        "the durable agent has no such conversation, question or starter"
    );
}

#[test]
fn a_question_that_leaves_the_agent_closes_its_card_and_a_changed_one_replaces_it() {
    let b = bridge();
    let dir = private_dir(&b, "agent");
    let socket = dir.join("app.sock");
    let version = Arc::new(AtomicU64::new(0));
    let v = Arc::clone(&version);
    let _agent = ScriptedAgent::socket(&socket, move |_: &Got| match v.load(Ordering::SeqCst) {
        0 => Answer::json(&asking("Deploy?")),
        1 => Answer::json(&asking("Deploy now?")),
        _ => Answer::json(&json!({"conversations": []})),
    });
    chmod(&socket, 0o600);
    attach_socket(&b, "ops", &socket);
    let phone = b.pair("phone", "full");
    let first = durable_card(&b, &phone, "ops");
    version.store(1, Ordering::SeqCst);
    let second = wait_for(Duration::from_secs(20), || {
        b.get("/api/durable", Some(&phone));
        let c = durable_card(&b, &phone, "ops");
        (c["title"] == "Deploy now?").then_some(c)
    })
    .expect("the changed question got a new card");
    assert_ne!(first["id"], second["id"]);
    // The old card's tap is refused: it stood for a question that moved.
    let (status, _) = b.post(
        &format!("/api/cards/{}/answer", first["id"].as_str().expect("id")),
        Some(&phone),
        &json!({"option": "yes", "shown": first["shown"]}),
    );
    assert_eq!(status, 410);
    version.store(2, Ordering::SeqCst);
    let gone = wait_for(Duration::from_secs(20), || {
        b.get("/api/durable", Some(&phone));
        let (_, v) = b.get("/api/cards", Some(&phone));
        let receipts = v["receipts"].as_array()?.clone();
        receipts.into_iter().find(|r| r["card"] == second["id"])
    })
    .expect("the gone question's card closed");
    assert_eq!(gone["state"], "answered elsewhere");
}

/// The agent `name`'s status and error, once its status is `status`.
fn status_when(b: &TestBridge, token: &str, name: &str, status: &str) -> Value {
    agent_when(b, token, name, |a| a["status"] == status)
}

#[test]
fn a_socket_path_that_is_not_private_is_never_connected() {
    let b = bridge();
    let phone = b.pair("phone", "full");
    let dir = private_dir(&b, "agent");
    let socket = dir.join("app.sock");
    let agent = ScriptedAgent::socket(&socket, serving(asking("Ship?")));
    chmod(&socket, 0o600);

    // Through a symlinked folder.
    let link = b.dir.path().join("link");
    std::os::unix::fs::symlink(&dir, &link).expect("symlink");
    attach_socket(&b, "linked", &link.join("app.sock"));
    let shown = status_when(&b, &phone, "linked", "private");
    assert!(
        shown["error"]
            .as_str()
            .expect("error")
            .contains("is a symlink"),
        "{shown}"
    );

    // A socket that is a symlink itself.
    let sock_link = dir.join("link.sock");
    std::os::unix::fs::symlink(&socket, &sock_link).expect("symlink");
    attach_socket(&b, "socklink", &sock_link);
    status_when(&b, &phone, "socklink", "private");

    // A regular file where the socket should be.
    let file = dir.join("plain.sock");
    std::fs::write(&file, b"").expect("file");
    chmod(&file, 0o600);
    attach_socket(&b, "plain", &file);
    let shown = status_when(&b, &phone, "plain", "private");
    assert!(
        shown["error"]
            .as_str()
            .expect("error")
            .contains("mode 0600"),
        "{shown}"
    );

    // Nothing there at all: not a privacy problem.
    let missing = dir.join("nobody.sock");
    attach_socket(&b, "missing", &missing);
    let shown = status_when(&b, &phone, "missing", "missing");
    assert_eq!(
        shown["error"],
        format!("no socket at {}", missing.display())
    );

    assert!(
        agent.got().is_empty(),
        "nothing connected to the real socket through a bad path"
    );

    // Another user's socket (the tests run as root: the file is handed to uid 4242).
    let other_dir = private_dir(&b, "other");
    let other = other_dir.join("app.sock");
    let theirs = ScriptedAgent::socket(&other, serving(asking("Ship?")));
    chmod(&other, 0o600);
    nix::unistd::chown(&other, Some(nix::unistd::Uid::from_raw(4242)), None).expect("chown");
    attach_socket(&b, "theirs", &other);
    let shown = status_when(&b, &phone, "theirs", "private");
    assert!(
        shown["error"]
            .as_str()
            .expect("error")
            .contains("owner 4242"),
        "{shown}"
    );
    assert!(theirs.got().is_empty());

    // A good path that becomes group-writable is unreachable at once, with no grace; doctor
    // names the fix.
    let doctor = String::from_utf8_lossy(&b.cli(&["doctor"]).stdout).into_owned();
    let missing_row = doctor
        .lines()
        .find(|l| l.contains("durable-socket missing"))
        .expect("missing row");
    assert!(
        missing_row.starts_with("warn") && missing_row.contains("no socket at"),
        "{missing_row}"
    );
    attach_socket(&b, "good", &socket);
    status_when(&b, &phone, "good", "up");
    chmod(b.dir.path(), 0o770);
    let shown = status_when(&b, &phone, "good", "private");
    assert!(
        shown["error"]
            .as_str()
            .expect("error")
            .contains("could be replaced by another user"),
        "{shown}"
    );
    let out = b.cli(&["doctor"]);
    let doctor = String::from_utf8_lossy(&out.stdout);
    let row = doctor
        .lines()
        .find(|l| l.contains("durable-socket good"))
        .unwrap_or_else(|| panic!("no durable-socket row: {doctor}"));
    assert!(row.starts_with("FAIL"), "{row}");
    assert!(
        row.contains(&format!("chmod go-w {}", b.dir.path().display())),
        "{row}"
    );
    chmod(b.dir.path(), 0o700);
    status_when(&b, &phone, "good", "up");
    // The other agents' paths never changed, so they stay unreachable.
    assert!(agent.got().iter().all(|g| g.method == "GET"));
}

/// An HTTPS agent attached with a token from the environment (and the test CA unless `trust`
/// is false); returns the agent's name.
fn attach_https(b: &TestBridge, name: &str, agent: &ScriptedAgent, token: &str, trust: bool) {
    let mut cmd = b.command();
    cmd.args([
        "durable",
        "attach",
        name,
        "--url",
        &agent.url(),
        "--token-env",
        "OPS_TOKEN",
    ]);
    if trust {
        cmd.args([
            "--ca-file",
            &agent.ca_file.as_ref().expect("ca").display().to_string(),
        ]);
    }
    let out = cmd.env("OPS_TOKEN", token).output().expect("run collie");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

const TOKEN: &str = "tok-3f9a6c1e0b7d4e28a5c3b1f0e9d8c7b6";

#[test]
fn an_https_agent_gets_the_bearer_token_which_is_never_shown() {
    let b = bridge();
    let dir = tempfile::tempdir().expect("tempdir");
    let state = asking("Ship?");
    let agent = ScriptedAgent::https(dir.path(), &["localhost", "127.0.0.1"], move |got: &Got| {
        if got.header("authorization") != Some(&format!("Bearer {TOKEN}")) {
            return Answer::status(401);
        }
        Answer::json_etag(&state, "\"v1\"")
    });
    attach_https(&b, "remote", &agent, TOKEN, true);
    let phone = b.pair("phone", "full");
    let shown = status_when(&b, &phone, "remote", "up");
    assert_eq!(shown["transport"], "https");
    assert_eq!(shown["conversations"][0]["id"], "c1");
    assert_eq!(agent.got()[0].header("collie-wire"), Some("1"));

    // The next reads carry the ETag.
    wait_for(Duration::from_secs(20), || {
        b.get("/api/durable", Some(&phone));
        agent
            .got()
            .iter()
            .any(|g| g.header("if-none-match") == Some("\"v1\""))
            .then_some(())
    })
    .expect("a read with If-None-Match");

    // Never printed: list, doctor, the file's mode, the log.
    let list = b.cli_ok(&["durable", "list"]);
    assert!(
        list.contains("(token set)") && !list.contains(TOKEN),
        "{list}"
    );
    let list_json = b.cli_ok(&["durable", "list", "--json"]);
    assert!(!list_json.contains(TOKEN), "{list_json}");
    let doctor = String::from_utf8_lossy(&b.cli(&["doctor"]).stdout).into_owned();
    assert!(
        doctor.contains(&format!("token set, {} bytes", TOKEN.len())) && !doctor.contains(TOKEN),
        "{doctor}"
    );
    let sources = b.state().join("sources.json");
    let meta = std::fs::metadata(&sources).expect("sources.json");
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let (_, api) = b.get("/api/durable", Some(&phone));
    assert!(!api.to_string().contains(TOKEN));
    assert!(!b.log().contains(TOKEN), "the log holds the token");

    // A token on the command line is not accepted.
    let out = b.cli(&[
        "durable",
        "attach",
        "x",
        "--url",
        &agent.url(),
        "--token",
        TOKEN,
    ]);
    assert_eq!(out.status.code(), Some(2), "clap refuses --token");
    let out = b.cli(&[
        "durable",
        "attach",
        "x",
        "--url",
        &agent.url(),
        "--token-env",
        "UNSET_VAR",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("UNSET_VAR is not set"));
}

#[test]
fn a_refused_token_or_a_bad_certificate_shows_and_slows_the_reads() {
    let b = bridge();
    let dir = tempfile::tempdir().expect("tempdir");
    let refusing = ScriptedAgent::https(dir.path(), &["127.0.0.1"], |_: &Got| Answer::status(401));
    attach_https(&b, "refusing", &refusing, "wrong-token", true);
    let untrusted_dir = tempfile::tempdir().expect("tempdir");
    let untrusted =
        ScriptedAgent::https(untrusted_dir.path(), &["127.0.0.1"], serving(asking("x")));
    attach_https(&b, "untrusted", &untrusted, TOKEN, false);
    let wrong_name_dir = tempfile::tempdir().expect("tempdir");
    let wrong_name = ScriptedAgent::https(
        wrong_name_dir.path(),
        &["example.org"],
        serving(asking("x")),
    );
    attach_https(&b, "wrongname", &wrong_name, TOKEN, true);
    let phone = b.pair("phone", "full");

    let shown = status_when(&b, &phone, "refusing", "refused");
    assert_eq!(shown["error"], "the agent refused the token");
    for name in ["untrusted", "wrongname"] {
        let shown = status_when(&b, &phone, name, "down");
        assert!(
            shown["error"].as_str().expect("error").contains("TLS"),
            "{shown}"
        );
    }
    assert!(
        untrusted.got().is_empty() && wrong_name.got().is_empty(),
        "nothing sent over bad TLS"
    );

    // While refused, a watching phone does not speed the reads up: at most one per 10 s. The
    // sleep is the phone's own cadence (a read every 250 ms, faster than any app's), not a wait.
    let before = refusing.got().len();
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        b.get("/api/durable", Some(&phone));
        std::thread::sleep(Duration::from_millis(250));
    }
    let during = refusing.got().len() - before;
    assert!(during <= 1, "{during} reads of a refusing agent in 5 s");
}

#[test]
fn a_hostile_agent_cannot_hang_flood_or_confuse_the_bridge() {
    let b = bridge();
    let phone = b.pair("phone", "full");
    let dir = private_dir(&b, "agents");
    let good_state = asking("Ship?");
    type Case = (
        &'static str,
        Arc<dyn Fn(&Got) -> Answer + Send + Sync>,
        &'static str,
    );
    let nested = "[".repeat(10_000) + &"]".repeat(10_000);
    let cases: Vec<Case> = vec![
        (
            "huge",
            Arc::new(|_: &Got| Answer::Huge {
                bytes: 100 << 20,
                declared: true,
            }),
            "too large",
        ),
        (
            "hugechunked",
            Arc::new(|_: &Got| Answer::Huge {
                bytes: 100 << 20,
                declared: false,
            }),
            "too large",
        ),
        (
            "notutf8",
            Arc::new(|_: &Got| Answer::Reply {
                status: 200,
                headers: vec![],
                body: b"{\"conversations\":[{\"id\":\"c\xff\xfe\"}]}".to_vec(),
                wire: true,
            }),
            "not valid",
        ),
        (
            "nested",
            Arc::new(move |_: &Got| Answer::Reply {
                status: 200,
                headers: vec![],
                body: format!("{{\"conversations\":{nested}}}").into_bytes(),
                wire: true,
            }),
            "not valid",
        ),
        (
            "nowire",
            Arc::new(move |_: &Got| Answer::Reply {
                status: 200,
                headers: vec![],
                body: b"{}".to_vec(),
                wire: false,
            }),
            "not Collie wire version 1",
        ),
        (
            "hang",
            Arc::new(|_: &Got| Answer::Hang),
            "did not answer in time",
        ),
    ];
    let mut agents = Vec::new();
    for (name, script, _) in cases.iter() {
        let socket = dir.join(format!("{name}.sock"));
        let script = Arc::clone(script);
        agents.push(ScriptedAgent::socket(&socket, move |g: &Got| script(g)));
        chmod(&socket, 0o600);
        attach_socket(&b, name, &socket);
    }
    let good_socket = dir.join("good.sock");
    let _good = ScriptedAgent::socket(&good_socket, serving(good_state));
    chmod(&good_socket, 0o600);
    attach_socket(&b, "good", &good_socket);

    for (name, _, error) in &cases {
        let shown = status_when(&b, &phone, name, "down");
        let said = shown["error"].as_str().expect("error");
        assert!(said.contains(error), "{name}: {said}");
        assert!(
            said.len() < 200 && !said.contains("[[["),
            "{name}: no agent bytes in errors"
        );
        assert!(shown["conversations"].as_array().expect("list").is_empty());
    }
    // The good agent is unaffected, and the phone's reads never waited for the hanging one.
    let start = std::time::Instant::now();
    let shown = status_when(&b, &phone, "good", "up");
    assert_eq!(shown["conversations"][0]["id"], "c1");
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "the list waited on an agent"
    );
    // The bridge is still whole.
    let (status, _) = b.get("/api/health", None);
    assert_eq!(status, 200);
}

#[test]
fn a_changed_state_shows_even_when_the_etag_never_changes() {
    let b = bridge();
    let phone = b.pair("phone", "full");
    let dir = private_dir(&b, "agent");
    let socket = dir.join("app.sock");
    let version = Arc::new(AtomicU64::new(0));
    let v = Arc::clone(&version);
    // The same ETag for every state, and 304 whenever it is sent back — a broken cache.
    let _agent = ScriptedAgent::socket(&socket, move |got: &Got| {
        if got.header("if-none-match") == Some("\"same\"") {
            return Answer::status(304);
        }
        let title = format!("Deploy v{}", v.load(Ordering::SeqCst));
        let mut state = asking("Ship?");
        state["conversations"][0]["title"] = Value::String(title);
        Answer::json_etag(&state, "\"same\"")
    });
    chmod(&socket, 0o600);
    attach_socket(&b, "ops", &socket);
    agent_when(&b, &phone, "ops", |a| {
        a["conversations"][0]["title"] == "Deploy v0"
    });
    version.store(1, Ordering::SeqCst);
    // Every sixth read goes without If-None-Match: at most ~12 s while the phone watches.
    agent_when(&b, &phone, "ops", |a| {
        a["conversations"][0]["title"] == "Deploy v1"
    });
}

#[test]
fn a_wide_sources_file_is_tightened_and_logged_and_detach_withdraws_the_questions() {
    let mut b = bridge();
    let agent = attached(&b, "ops", serving(asking("Ship?")));
    let phone = b.pair("phone", "full");
    let card = durable_card(&b, &phone, "ops");

    let out = b.cli_ok(&["durable", "detach", "ops"]);
    assert!(out.contains("detached ops"), "{out}");
    let closed = wait_for(Duration::from_secs(10), || {
        let (_, v) = b.get("/api/cards", Some(&phone));
        v["receipts"]
            .as_array()?
            .iter()
            .find(|r| r["card"] == card["id"])
            .cloned()
    })
    .expect("the card closed with the detach");
    assert_eq!(closed["state"], "withdrawn");
    let (_, v) = b.get("/api/durable", Some(&phone));
    assert_eq!(v["agents"], json!([]));
    let out = b.cli(&["durable", "detach", "ops"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no durable agent named ops"));

    // A hand-widened file: doctor shows it red and changes nothing; a restart tightens and logs.
    attach_socket(&b, "ops", agent.socket.as_ref().expect("a socket agent"));
    let sources = b.state().join("sources.json");
    chmod(&sources, 0o644);
    let doctor = String::from_utf8_lossy(&b.cli(&["doctor"]).stdout).into_owned();
    assert!(
        doctor
            .lines()
            .any(|l| l.starts_with("FAIL") && l.contains("sources:") && l.contains("644")),
        "{doctor}"
    );
    assert_eq!(
        std::fs::metadata(&sources)
            .expect("meta")
            .permissions()
            .mode()
            & 0o777,
        0o644
    );
    b.stop();
    b.launch();
    assert_eq!(
        std::fs::metadata(&sources)
            .expect("meta")
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
    let log = b.log();
    assert!(
        log.lines()
            .any(|l| l.contains("sources.json") && l.contains("644")),
        "the tightening is logged: {log}"
    );
    status_when(&b, &phone, "ops", "up");
}

/// A crew member that joined `lead` as `name` and is online.
fn joined(lead: &TestBridge, name: &str) -> TestBridge {
    let member = support::crew_bridge(false, &[]);
    member.cli_ok(&["crew", "join", &lead.invite(), "--name", name]);
    wait_for(Duration::from_secs(10), || {
        let status = support::json_of(&lead.cli_ok(&["crew", "status", "--json"]));
        status["members"]
            .as_array()?
            .iter()
            .any(|m| m["name"] == name && m["online"] == true)
            .then_some(())
    })
    .unwrap_or_else(|| panic!("{name} did not come online"));
    member
}

#[test]
fn a_members_agents_reach_the_leads_phone_through_the_relay() {
    let lead = support::crew_bridge(false, &[]);
    lead.cli_ok(&["crew", "init"]);
    let member = joined(&lead, "web-1");
    let agent = attached(&member, "ops", serving(asking("Deploy web-1?")));
    let phone = lead.pair("phone", "full");
    let reader = lead.pair("reader", "read");

    let shown = agent_when(&lead, &reader, "ops", |a| a["status"] == "up");
    assert_eq!(shown["machine"], "web-1");
    assert_eq!(shown["conversations"][0]["title"], "Deploy web");

    // A write through the lead: audited on both machines with one request id.
    agent.clear();
    let (status, _) = lead.post(
        "/api/durable/ops/c1/send",
        Some(&reader),
        &json!({"text": "hi", "machine": "web-1"}),
    );
    assert_eq!(status, 403);
    let (status, v) = lead.post(
        "/api/durable/ops/c1/send",
        Some(&phone),
        &json!({"text": "ship it", "machine": "web-1"}),
    );
    assert_eq!(status, 200, "{v}");
    let sent = first_write(&agent, "the member's agent got the send");
    assert_eq!(sent.path, "/v1/conversations/c1/send");
    let on_lead = audited(&lead, "durable.send", "audited on the lead");
    let on_member = audited(&member, "durable.send", "audited on the member");
    assert_eq!(on_lead["request_id"], on_member["request_id"]);
    assert_eq!(on_lead["detail"]["machine"], "web-1");
    assert_eq!(on_member["device"], "phone");

    // The question is a card on the lead; the tap reaches the member's agent.
    let card = wait_for(Duration::from_secs(20), || {
        let (_, v) = lead.get("/api/cards", Some(&phone));
        v["cards"]
            .as_array()?
            .iter()
            .find(|c| c["machine"] == "web-1" && c["source"] == "durable:ops")
            .cloned()
    })
    .expect("the member's durable card on the lead");
    agent.clear();
    let (status, v) = lead.post(
        &format!("/api/cards/{}/answer", card["id"].as_str().expect("id")),
        Some(&phone),
        &json!({"option": "no", "shown": card["shown"], "machine": "web-1"}),
    );
    assert_eq!(status, 200, "{v}");
    let answer = first_write(&agent, "the member's agent got the answer");
    assert_eq!(
        serde_json::from_slice::<Value>(&answer.body).expect("json"),
        json!({"question": "q1", "option": "no"})
    );
    let on_lead = audited(&lead, "durable.answer", "durable.answer on the lead");
    let on_member = audited(&member, "durable.answer", "durable.answer on the member");
    assert_eq!(on_lead["request_id"], on_member["request_id"]);
}

#[test]
fn a_durable_question_is_pushed_once_and_without_its_text() {
    let config = tempfile::tempdir().expect("tempdir");
    let service = push_service::PushService::start(config.path());
    let b = TestBridge::start_with(Opts {
        config: Some(format!(
            "[push]\nservices = [{{ host = \"127.0.0.1\", ca_file = \"{}\" }}]\n",
            service.ca_file.display()
        )),
        ..Opts::default()
    });
    let phone = b.pair("pixel", "read");
    let browser = push_service::Browser::new();
    let (status, v) = b.post(
        "/api/push/subscribe",
        Some(&phone),
        &browser.subscription(&service.endpoint("pixel")),
    );
    assert_eq!(status, 200, "{v}");

    let dir = private_dir(&b, "agent");
    let socket = dir.join("app.sock");
    let version = Arc::new(AtomicU64::new(0));
    let v = Arc::clone(&version);
    let _agent = ScriptedAgent::socket(&socket, move |_: &Got| {
        let mut state = asking("Deploy SECRET-HOST-7?");
        match v.load(Ordering::SeqCst) {
            0 => {}
            1 => {
                state["conversations"][0]["questions"][0]["title"] = json!("Deploy SECRET-HOST-8?")
            }
            _ => {
                state["conversations"][0]["questions"][0]["title"] = json!("Deploy SECRET-HOST-8?");
                let mut second = state["conversations"][0]["questions"][0].clone();
                second["id"] = json!("q2");
                second["title"] = json!("Also migrate?");
                state["conversations"][0]["questions"]
                    .as_array_mut()
                    .expect("questions")
                    .push(second);
            }
        }
        Answer::json(&state)
    });
    chmod(&socket, 0o600);
    attach_socket(&b, "ops", &socket);
    let posts = service.wait_for(1, "the question's push");
    let plain = String::from_utf8(browser.decrypt(&posts[0].body)).expect("utf-8");
    let payload: Value = serde_json::from_str(&plain).expect("json");
    assert_eq!(payload["kind"], "question", "{plain}");
    assert_eq!(payload["machine"], "testbox");
    for word in ["SECRET-HOST", "Deploy", "kubectl", "ops"] {
        assert!(!plain.contains(word), "the payload holds {word:?}: {plain}");
    }
    // The same question with new text gets a new card, not a new push.
    version.store(1, Ordering::SeqCst);
    wait_for(Duration::from_secs(20), || {
        b.get("/api/durable", Some(&phone));
        let c = durable_card(&b, &phone, "ops");
        (c["title"] == "Deploy SECRET-HOST-8?").then_some(())
    })
    .expect("the changed question's card");
    // A new question is pushed: the second post, and no third.
    version.store(2, Ordering::SeqCst);
    service.wait_for(2, "the second question's push");
    wait_for(Duration::from_secs(20), || {
        let (_, v) = b.get("/api/cards", Some(&phone));
        v["cards"]
            .as_array()?
            .iter()
            .any(|c| c["title"] == "Also migrate?")
            .then_some(())
    })
    .expect("the second question's card");
    assert_eq!(service.received().len(), 2, "one push per question");
}

/// The reference durable agent (`examples/durable-agent`), built beside `collie` by the
/// workspace's test run.
struct Reference {
    child: std::process::Child,
}

impl Reference {
    fn start(args: &[&str], env: &[(&str, &str)]) -> Reference {
        use std::io::BufRead;
        let bin = support::collie_bin().with_file_name("collie-durable-example");
        assert!(
            bin.exists(),
            "{} is missing: build it with `cargo build -p collie-durable-example` (scripts/test does)",
            bin.display()
        );
        let mut child = std::process::Command::new(bin)
            .args(args)
            .envs(env.iter().copied())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start the reference agent");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("its first line");
        assert!(line.starts_with("listening on"), "{line}");
        Reference { child }
    }
}

impl Drop for Reference {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts a deploy on the reference agent `name` from the phone, approves it with a tap, and
/// waits for the agent to say it deploys.
fn deploy_through(b: &TestBridge, phone: &str, name: &str) {
    status_when(b, phone, name, "up");
    let (status, v) = b.post(
        &format!("/api/durable/{name}/-/starter"),
        Some(phone),
        &json!({"starter": "deploy"}),
    );
    assert_eq!(status, 200, "{v}");
    let conversation = v["conversation"]
        .as_str()
        .expect("the new conversation")
        .to_owned();
    let card = durable_card(b, phone, name);
    assert_eq!(card["title"], "Deploy to production?");
    assert_eq!(card["conversation"], conversation.as_str());
    let (status, v) = b.post(
        &format!("/api/cards/{}/answer", card["id"].as_str().expect("id")),
        Some(phone),
        &json!({"option": "yes", "shown": card["shown"]}),
    );
    assert_eq!(status, 200, "{v}");
    agent_when(b, phone, name, |a| {
        a["conversations"].as_array().is_some_and(|cs| {
            cs.iter().any(|c| {
                c["id"] == conversation.as_str()
                    && c["questions"].as_array().is_some_and(Vec::is_empty)
                    && c["items"].to_string().contains("Deploying")
            })
        })
    });
}

#[test]
fn the_reference_agent_works_over_both_transports() {
    let b = bridge();
    let phone = b.pair("phone", "full");
    // Over a private socket (the agent makes its folder 0700 and its socket 0600).
    chmod(b.dir.path(), 0o700);
    let socket = b.dir.path().join("ref").join("agent.sock");
    let _local = Reference::start(&["--socket", &socket.display().to_string()], &[]);
    attach_socket(&b, "local", &socket);
    deploy_through(&b, &phone, "local");

    // Over HTTPS with a bearer token, trusting the test CA.
    let dir = tempfile::tempdir().expect("tempdir");
    let pki = TestCa::issue("collie test reference CA", &["localhost"]);
    let (ca_file, cert_file, key_file) = (
        dir.path().join("ca.pem"),
        dir.path().join("cert.pem"),
        dir.path().join("key.pem"),
    );
    pki.write_ca(&ca_file);
    std::fs::write(&cert_file, &pki.leaf_pem).expect("cert");
    std::fs::write(&key_file, &pki.leaf_key_pem).expect("key");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("a free port")
        .local_addr()
        .expect("addr")
        .port();
    let _remote = Reference::start(
        &[
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--cert",
            &cert_file.display().to_string(),
            "--key",
            &key_file.display().to_string(),
            "--token-env",
            "REF_TOKEN",
        ],
        &[("REF_TOKEN", TOKEN)],
    );
    let out = b
        .command()
        .args([
            "durable",
            "attach",
            "remote",
            "--url",
            &format!("https://localhost:{port}"),
            "--token-env",
            "REF_TOKEN",
            "--ca-file",
            &ca_file.display().to_string(),
        ])
        .env("REF_TOKEN", TOKEN)
        .output()
        .expect("attach");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    deploy_through(&b, &phone, "remote");
}

#[test]
fn what_an_agent_says_is_sanitized_before_anyone_reads_it() {
    let b = bridge();
    let phone = b.pair("phone", "full");
    let dir = private_dir(&b, "agent");
    let socket = dir.join("app.sock");
    // Ids with `/`, `?`, `#` or a space drop their object; a conversation title with a
    // right-to-left override, a zero-width space and an escape sequence; links with user info, a
    // zero-width space, `javascript:` and `http:`; a question whose title is over the limit; an
    // option whose label is only invisible characters.
    let long_title = format!("Deploy {}?", "x".repeat(600));
    let state = json!({
        "conversations": [
            {"id": "a/b", "title": "slash"},
            {"id": "a?b", "title": "query"},
            {"id": "a#b", "title": "fragment"},
            {"id": "a b", "title": "space"},
            {
                "id": "ok",
                "title": "Pay \u{202e}exe.txt\u{200b} \u{1b}[31mred",
                "items": [
                    {"id": "l1", "kind": "link", "url": "https://user@example.com/x"},
                    {"id": "l2", "kind": "link", "url": "https://exa\u{200b}mple.com/"},
                    {"id": "l3", "kind": "link", "url": "javascript:alert(1)"},
                    {"id": "l4", "kind": "link", "url": "http://example.com/"},
                    {"id": "l5", "kind": "link", "url": "https://example.com/ok"},
                    {"id": "t/1", "kind": "text", "text": "dropped"},
                    {"id": "t1", "kind": "text", "text": "line one\nline\ttwo\u{7}"}
                ],
                "questions": [{
                    "id": "q1",
                    "title": long_title,
                    "options": [
                        {"id": "yes", "label": "Yes"},
                        {"id": "ghost", "label": "\u{200b}\u{2060}\u{feff}"}
                    ]
                }]
            }
        ]
    });
    let _agent = ScriptedAgent::socket(&socket, serving(state));
    chmod(&socket, 0o600);
    attach_socket(&b, "ops", &socket);
    let shown = status_when(&b, &phone, "ops", "up");
    let conversations = shown["conversations"].as_array().expect("conversations");
    assert_eq!(conversations.len(), 1, "only the good id is kept: {shown}");
    let ok = &conversations[0];
    assert_eq!(ok["id"], "ok");
    assert_eq!(ok["title"], "Pay exe.txt [31mred");
    let items = ok["items"].as_array().expect("items");
    let ids: Vec<&str> = items.iter().filter_map(|i| i["id"].as_str()).collect();
    assert_eq!(ids, ["l5", "t1"], "bad links and bad ids dropped: {ok}");
    assert_eq!(items[1]["text"], "line one\nline\ttwo");
    let question = &ok["questions"][0];
    assert_eq!(question["shortened"], true);
    assert!(question["title"].as_str().expect("title").len() <= 512);
    assert!(question["title"].as_str().expect("title").ends_with('…'));
    assert_eq!(question["options"].as_array().expect("options").len(), 1);
    let card = durable_card(&b, &phone, "ops");
    assert_eq!(card["shortened"], true);
    assert_eq!(card["options"], json!([{"id": "yes", "label": "Yes"}]));
    // One log line per conversation for its dropped links, without the agent's text.
    let log = b.log();
    assert!(log.contains("links of conversation ok"), "{log}");
    assert!(!log.contains("javascript:alert"), "{log}");
}

#[test]
fn ten_thousand_conversations_are_bounded() {
    let b = bridge();
    let phone = b.pair("phone", "full");
    let dir = private_dir(&b, "agent");
    let socket = dir.join("app.sock");
    let conversations: Vec<Value> = (0..10_000u64)
        .map(|i| json!({"id": format!("c{i}"), "title": format!("Run {i}"), "updated": i}))
        .collect();
    let _agent = ScriptedAgent::socket(&socket, serving(json!({"conversations": conversations})));
    chmod(&socket, 0o600);
    attach_socket(&b, "ops", &socket);
    let shown = status_when(&b, &phone, "ops", "up");
    let kept = shown["conversations"].as_array().expect("conversations");
    assert_eq!(kept.len(), 500, "the newest 500 are kept");
    assert_eq!(kept[0]["id"], "c9999", "newest first");
    assert!(b.log().contains("dropped the 9500 oldest conversations"));
}

#[test]
fn reads_go_on_after_a_phone_stops_watching() {
    let b = bridge();
    let phone = b.pair("phone", "full");
    let agent = attached(&b, "ops", serving(asking("Ship?")));
    // The phone watches for a moment (reads every 2 s), then leaves.
    status_when(&b, &phone, "ops", "up");
    let left = std::time::Instant::now();
    // Watching lapses 6 s after the last look: from 8 s on only idle reads (every 10 s) remain,
    // and they must go on.
    let lapsed = wait_for(Duration::from_secs(10), || {
        (left.elapsed() > Duration::from_secs(8)).then(|| agent.got().len())
    })
    .expect("8 s pass");
    let later = wait_for(Duration::from_secs(15), || {
        (agent.got().len() > lapsed).then_some(())
    });
    assert!(
        later.is_some(),
        "no read in the {:?} after the phone left",
        left.elapsed()
    );
}
