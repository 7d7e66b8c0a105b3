//! Black-box tests of durable agents (SPEC §10.3): a real bridge reading agents over a private
//! unix socket and over HTTPS, the phone's view and writes through the API, questions as cards,
//! and every kind of bad agent and bad path the issue lists — each gets a clear error and changes
//! nothing else. The agents here are scripted real HTTP servers (`support/durable_agent.rs`) so
//! they can misbehave on cue.

#[path = "support/durable_agent.rs"]
mod durable_agent;
mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use durable_agent::{Answer, Got, ScriptedAgent};
use serde_json::{json, Value};
use support::{wait_for, Opts, TestBridge};

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

fn attach_socket(b: &TestBridge, name: &str, socket: &Path) {
    let out = b.cli_ok(&["durable", "attach", name, "--socket", &socket.display().to_string()]);
    assert!(out.contains(&format!("attached {name}")), "{out}");
}

#[test]
fn a_socket_agent_shows_its_conversations_and_a_tap_answers_its_question() {
    let b = bridge();
    let dir = private_dir(&b, "agent");
    let socket = dir.join("app.sock");
    let agent = ScriptedAgent::socket(&socket, serving(asking("Deploy to production?")));
    chmod(&socket, 0o600);
    attach_socket(&b, "ops", &socket);
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
    assert_eq!(get.header("authorization"), None, "a socket carries no token");

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
    let write = agent
        .got()
        .into_iter()
        .find(|g| g.method == "POST")
        .expect("the agent got the answer");
    assert_eq!(write.path, "/v1/conversations/c1/answer");
    let body: Value = serde_json::from_slice(&write.body).expect("json body");
    assert_eq!(body, json!({"question": "q1", "option": "yes"}));
    assert_eq!(write.header("collie-wire"), Some("1"));
    let request_id = write.header("collie-request").expect("request id").to_owned();
    let line = b
        .audit_lines()
        .into_iter()
        .find(|l| l["event"] == "durable.answer")
        .expect("durable.answer audited");
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
    let dir = private_dir(&b, "agent");
    let socket = dir.join("app.sock");
    let agent = ScriptedAgent::socket(&socket, serving(asking("Ship?")));
    chmod(&socket, 0o600);
    attach_socket(&b, "ops", &socket);
    let phone = b.pair("phone", "full");
    let reader = b.pair("reader", "read");
    agent_when(&b, &phone, "ops", |a| a["status"] == "up");

    let secret_text = "please deploy the thing now";
    let writes: [(&str, Value, &str, Value); 7] = [
        ("send", json!({"text": secret_text}), "/v1/conversations/c1/send", json!({"text": secret_text})),
        ("abort", json!({}), "/v1/conversations/c1/abort", json!({})),
        ("action", json!({"action": "retry"}), "/v1/conversations/c1/action", json!({"action": "retry"})),
        ("rename", json!({"title": "Deploy api"}), "/v1/conversations/c1/rename", json!({"title": "Deploy api"})),
        ("close", json!({}), "/v1/conversations/c1/close", json!({})),
        ("reopen", json!({}), "/v1/conversations/c1/reopen", json!({})),
        ("starter", json!({"starter": "deploy"}), "/v1/starters/deploy", json!({"starter": "deploy"})),
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
        let got = agent
            .got()
            .into_iter()
            .find(|g| g.method == "POST")
            .unwrap_or_else(|| panic!("{verb} never reached the agent"));
        assert_eq!(got.path, *path);
        assert_eq!(serde_json::from_slice::<Value>(&got.body).expect("json"), *sent);
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
        ("/api/durable/ops/c1/send", json!({"text": "x", "title": "y"}), 400),
        ("/api/durable/ops/c1/fly", json!({}), 400),
        ("/api/durable/ops/c%201/send", json!({"text": "x"}), 400),
        ("/api/durable/ops/c1/rename", json!({"title": "a\u{1b}[2Jb"}), 400),
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
        cards["cards"].as_array().expect("cards").iter().any(|c| c["id"] == id),
        "the card still waits: {cards}"
    );
    let (status, v) = b.post("/api/durable/ops/c1/send", Some(&phone), &json!({"text": "hi"}));
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
        receipts
            .into_iter()
            .find(|r| r["card"] == second["id"])
    })
    .expect("the gone question's card closed");
    assert_eq!(gone["state"], "answered elsewhere");
}
