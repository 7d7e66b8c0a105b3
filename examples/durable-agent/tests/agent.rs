//! The reference durable agent, black-box: the real binary on a unix socket in a temp dir and on
//! HTTPS on loopback, driven over HTTP/1.1 with the wire's own types (`collie_actors::durable::
//! wire`): what it serves must parse as the bridge parses it, and its writes are the bridge's.

mod support;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::time::Duration;

use collie_actors::durable::wire::{self, Write};
use support::{wait_for, Agent, Answer};

fn conversation<'a>(state: &'a wire::State, id: &str) -> &'a wire::Conversation {
    state
        .conversations
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no conversation {id} in {state:?}"))
}

fn texts(c: &wire::Conversation) -> Vec<(&str, &str)> {
    c.items
        .iter()
        .map(|i| (i.role.as_str(), i.text.as_str()))
        .collect()
}

fn assert_refused(a: &Answer, status: u16, error: &str) {
    assert_eq!(a.status, status, "{}", a.text());
    assert_eq!(
        a.header("collie-wire"),
        Some("1"),
        "every answer carries the wire version"
    );
    assert_eq!(a.json()["error"], error, "{}", a.text());
}

/// Starts a deploy and returns the new conversation's id.
async fn start_deploy(agent: &Agent) -> String {
    let starter = Write::Starter {
        starter: "deploy".into(),
    };
    let a = agent.write("", &starter, &[]).await;
    assert_eq!(a.status, 200, "{}", a.text());
    let started: wire::Started = serde_json::from_slice(&a.body).expect("wire::Started");
    started
        .conversation
        .expect("the starter names its conversation")
}

#[tokio::test]
async fn socket_state_etag_and_not_modified() {
    let agent = Agent::socket(&["--conversations", "3"]);
    // The agent made the missing folder 0700 and its socket 0600, both the user's.
    let socket = agent.socket.clone().expect("socket");
    let folder = std::fs::metadata(socket.parent().expect("folder")).expect("folder");
    assert_eq!(folder.permissions().mode() & 0o777, 0o700);
    let sock = std::fs::symlink_metadata(&socket).expect("socket");
    assert_eq!(sock.permissions().mode() & 0o777, 0o600);
    assert_eq!(sock.uid(), nix::unistd::getuid().as_raw());

    let first = agent.call("GET", "/v1/state", &[], None).await;
    assert_eq!(first.status, 200);
    assert_eq!(first.header("collie-wire"), Some("1"));
    let etag = first.header("etag").expect("an ETag").to_owned();
    let state: wire::State = serde_json::from_slice(&first.body).expect("wire::State");
    assert_eq!(state.conversations.len(), 3);
    assert_eq!(
        state.starters,
        vec![wire::Button {
            id: "deploy".into(),
            label: "Start a deploy".into()
        }]
    );
    let kinds: Vec<&str> = state.conversations[0]
        .items
        .iter()
        .map(|i| i.kind.as_str())
        .collect();
    assert_eq!(kinds, ["text", "markdown", "tool", "link"]);
    assert!(state
        .conversations
        .iter()
        .all(|c| c.state == "idle" && c.updated.is_some()));

    // The same ETag: 304, no body, the wire header and the ETag again.
    let same = agent
        .call("GET", "/v1/state", &[("if-none-match", &etag)], None)
        .await;
    assert_eq!(same.status, 304);
    assert!(same.body.is_empty());
    assert_eq!(same.header("collie-wire"), Some("1"));
    assert_eq!(same.header("etag"), Some(etag.as_str()));

    // A write that changes nothing (reopening an open conversation) keeps the ETag…
    let id = state.conversations[0].id.clone();
    assert_eq!(agent.write(&id, &Write::Reopen, &[]).await.status, 200);
    let (_, unchanged) = agent.state(&[]).await;
    assert_eq!(unchanged, etag);
    // …and one that changes the state moves it: the old ETag now gets the whole state.
    let rename = Write::Rename {
        title: "Renamed".into(),
    };
    assert_eq!(agent.write(&id, &rename, &[]).await.status, 200);
    let stale = agent
        .call("GET", "/v1/state", &[("if-none-match", &etag)], None)
        .await;
    assert_eq!(stale.status, 200);
    assert_ne!(stale.header("etag"), Some(etag.as_str()));
    let state: wire::State = serde_json::from_slice(&stale.body).expect("wire::State");
    assert_eq!(conversation(&state, &id).title, "Renamed");
}

#[tokio::test]
async fn starter_question_and_answers() {
    let agent = Agent::socket(&[]);
    let id = start_deploy(&agent).await;
    let (state, _) = agent.state(&[]).await;
    let c = conversation(&state, &id);
    assert_eq!(c.title, "Deploy");
    assert_eq!(c.items[0].role, "agent");
    let q = &c.questions[0];
    assert_eq!(q.title, "Deploy to production?");
    assert!(
        q.reason.contains('\n'),
        "a multi-line reason: {:?}",
        q.reason
    );
    assert_eq!(q.items[0].kind, "code");
    let options: Vec<(&str, &str)> = q
        .options
        .iter()
        .map(|o| (o.id.as_str(), o.label.as_str()))
        .collect();
    assert_eq!(options, [("yes", "Deploy"), ("no", "Cancel")]);

    // An option the question does not offer: 400, and the question stays.
    let bad = Write::Answer {
        question: q.id.clone(),
        option: "maybe".into(),
    };
    assert_refused(&agent.write(&id, &bad, &[]).await, 400, "no such option");
    let yes = Write::Answer {
        question: q.id.clone(),
        option: "yes".into(),
    };
    assert_eq!(agent.write(&id, &yes, &[]).await.status, 200);
    let (state, _) = agent.state(&[]).await;
    let c = conversation(&state, &id);
    assert!(c.questions.is_empty());
    assert_eq!(c.state, "working");
    assert_eq!(texts(c)[1..], [("user", "Deploy"), ("agent", "Deploying…")]);
    // Answered already: 409, nothing added.
    assert_refused(
        &agent.write(&id, &yes, &[]).await,
        409,
        "the question is already answered",
    );
    let (again, _) = agent.state(&[]).await;
    assert_eq!(conversation(&again, &id).items.len(), 3);

    // A second deploy, cancelled.
    let other = start_deploy(&agent).await;
    assert_ne!(other, id);
    let (state, _) = agent.state(&[]).await;
    let no = Write::Answer {
        question: conversation(&state, &other).questions[0].id.clone(),
        option: "no".into(),
    };
    assert_eq!(agent.write(&other, &no, &[]).await.status, 200);
    let (state, _) = agent.state(&[]).await;
    let c = conversation(&state, &other);
    assert_eq!(texts(c)[1..], [("user", "Cancel"), ("agent", "Cancelled")]);
    assert_eq!(c.state, "idle");

    // Unknown ids: 404.
    assert_refused(
        &agent.write("nope", &yes, &[]).await,
        404,
        "no such conversation",
    );
    let unknown = Write::Starter {
        starter: "nope".into(),
    };
    assert_refused(
        &agent.write("", &unknown, &[]).await,
        404,
        "no such starter",
    );
}

#[tokio::test]
async fn send_ask_abort_action_rename_close_reopen() {
    let agent = Agent::socket(&["--ask"]);
    let (state, _) = agent.state(&[]).await;
    let id = state.conversations[0].id.clone();
    assert_eq!(
        state.conversations[0].questions.len(),
        1,
        "--ask opens a question"
    );

    // send: the text as a user item, and a reply that says its length, never the text.
    let text = "<b>hello</b>";
    let send = Write::Send { text: text.into() };
    assert_eq!(agent.write(&id, &send, &[]).await.status, 200);
    let (state, _) = agent.state(&[]).await;
    let c = conversation(&state, &id);
    let last: Vec<_> = c.items.iter().rev().take(2).rev().collect();
    assert_eq!(
        (last[0].role.as_str(), last[0].text.as_str()),
        ("user", text)
    );
    assert_eq!(
        (last[1].role.as_str(), last[1].kind.as_str()),
        ("agent", "text")
    );
    assert_eq!(last[1].text, "Got 12 bytes.");

    // send `ask …`: a new question titled with the rest; answering it records the choice.
    let ask = Write::Send {
        text: "ask Ship it?".into(),
    };
    assert_eq!(agent.write(&id, &ask, &[]).await.status, 200);
    let (state, _) = agent.state(&[]).await;
    let c = conversation(&state, &id);
    assert_eq!(c.questions.len(), 2);
    let q = &c.questions[1];
    assert_eq!(q.title, "Ship it?");
    let answer = Write::Answer {
        question: q.id.clone(),
        option: "yes".into(),
    };
    assert_eq!(agent.write(&id, &answer, &[]).await.status, 200);
    let (state, _) = agent.state(&[]).await;
    let c = conversation(&state, &id);
    assert_eq!(c.questions.len(), 1);
    assert_eq!(
        c.items.last().map(|i| i.text.as_str()),
        Some("You said: Yes")
    );

    // The deploy question: yes sets the conversation working; abort stops it.
    let deploy = Write::Answer {
        question: c.questions[0].id.clone(),
        option: "yes".into(),
    };
    assert_eq!(agent.write(&id, &deploy, &[]).await.status, 200);
    let (state, _) = agent.state(&[]).await;
    assert_eq!(conversation(&state, &id).state, "working");
    assert_eq!(agent.write(&id, &Write::Abort, &[]).await.status, 200);
    let (state, _) = agent.state(&[]).await;
    let c = conversation(&state, &id);
    assert_eq!(c.state, "idle");
    assert_eq!(c.items.last().map(|i| i.text.as_str()), Some("Stopped"));

    // action: the conversation's own button only.
    assert_eq!(c.actions[0].id, "retry");
    let retry = Write::Action {
        action: "retry".into(),
    };
    assert_eq!(agent.write(&id, &retry, &[]).await.status, 200);
    let (state, _) = agent.state(&[]).await;
    let after = conversation(&state, &id);
    assert_eq!(after.items.len(), c.items.len() + 1);
    let other = Write::Action {
        action: "launch".into(),
    };
    assert_refused(&agent.write(&id, &other, &[]).await, 404, "no such action");

    // rename, through a path whose every byte is percent-encoded (the agent decodes segments).
    let encoded: String = id.bytes().map(|b| format!("%{b:02X}")).collect();
    let body = br#"{"title":"Release 1.4"}"#;
    let path = format!("/v1/conversations/{encoded}/rename");
    assert_eq!(agent.call("POST", &path, &[], Some(body)).await.status, 200);
    let empty = Write::Rename { title: " ".into() };
    assert_refused(
        &agent.write(&id, &empty, &[]).await,
        400,
        "title must be 1 to 256 bytes",
    );
    let (state, _) = agent.state(&[]).await;
    assert_eq!(conversation(&state, &id).title, "Release 1.4");

    // close, then a send is refused until reopen.
    assert_eq!(agent.write(&id, &Write::Close, &[]).await.status, 200);
    let (state, _) = agent.state(&[]).await;
    assert_eq!(conversation(&state, &id).state, "closed");
    assert_refused(
        &agent.write(&id, &send, &[]).await,
        409,
        "the conversation is closed",
    );
    assert_eq!(agent.write(&id, &Write::Reopen, &[]).await.status, 200);
    let (state, _) = agent.state(&[]).await;
    assert_eq!(conversation(&state, &id).state, "idle");
    assert_eq!(agent.write(&id, &send, &[]).await.status, 200);
}

#[tokio::test]
async fn bad_requests_and_repeated_writes() {
    let agent = Agent::socket(&["--conversations", "1"]);
    let (state, _) = agent.state(&[]).await;
    let id = state.conversations[0].id.clone();

    // No wire header, or another version: 400, still with the header on the answer.
    let none = agent.raw("GET", "/v1/state", &[], None).await;
    assert_refused(&none, 400, "send Collie-Wire: 1");
    let two = agent
        .raw("GET", "/v1/state", &[("collie-wire", "2")], None)
        .await;
    assert_refused(&two, 400, "send Collie-Wire: 1");

    let send = format!("/v1/conversations/{id}/send");
    for body in [&b"{not json"[..], b"[1,2]", br#"{"text":7}"#, br#"{}"#] {
        let a = agent.call("POST", &send, &[], Some(body)).await;
        assert_eq!(
            a.status,
            400,
            "{}: {}",
            String::from_utf8_lossy(body),
            a.text()
        );
    }
    let huge = vec![b' '; 600 * 1024];
    assert_eq!(
        agent.call("POST", &send, &[], Some(&huge)).await.status,
        413
    );
    let too_long = Write::Send {
        text: "x".repeat(wire::MAX_SEND + 1),
    };
    assert_eq!(agent.write(&id, &too_long, &[]).await.status, 400);
    assert_eq!(agent.call("GET", "/v1/other", &[], None).await.status, 404);
    let verb = format!("/v1/conversations/{id}/starter");
    assert_refused(
        &agent.call("POST", &verb, &[], Some(b"{}")).await,
        404,
        "no such verb",
    );
    assert_eq!(agent.call("POST", "/v1/state", &[], None).await.status, 405);
    let (after, _) = agent.state(&[]).await;
    assert_eq!(after, state, "no refused write changed anything");

    // The same Collie-Request twice: applied once, answered the same.
    let write = Write::Send {
        text: "once".into(),
    };
    let first = agent.write(&id, &write, &[("collie-request", "r-1")]).await;
    let again = agent.write(&id, &write, &[("collie-request", "r-1")]).await;
    assert_eq!((first.status, &first.body), (again.status, &again.body));
    let (state, _) = agent.state(&[]).await;
    let count = conversation(&state, &id)
        .items
        .iter()
        .filter(|i| i.text == "once")
        .count();
    assert_eq!(count, 1);
    let other = agent.write(&id, &write, &[("collie-request", "r-2")]).await;
    assert_eq!(other.status, 200);
    let (state, _) = agent.state(&[]).await;
    let count = conversation(&state, &id)
        .items
        .iter()
        .filter(|i| i.text == "once")
        .count();
    assert_eq!(count, 2);
}

const TOKEN: &str = "4f8a1c0e9b7d6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a19";
const NEXT: &str = "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9";

#[tokio::test]
async fn https_bearer_token_and_rotation() {
    let env = [("DURABLE_TOKEN", TOKEN)];
    let agent = Agent::https(&["--token-env", "DURABLE_TOKEN", "--ask"], &env).expect("starts");
    let bearer = format!("Bearer {TOKEN}");

    let none = agent.call("GET", "/v1/state", &[], None).await;
    assert_refused(&none, 401, "token refused");
    assert_eq!(none.header("www-authenticate"), Some("Bearer"));
    let wrong = format!("Bearer {NEXT}");
    let refused = agent
        .call("GET", "/v1/state", &[("authorization", &wrong)], None)
        .await;
    assert_refused(&refused, 401, "token refused");
    let prefix = format!("Bearer {}", &TOKEN[..40]);
    let short = agent
        .call("GET", "/v1/state", &[("authorization", &prefix)], None)
        .await;
    assert_eq!(short.status, 401, "a prefix of the token is not the token");
    // Authentication comes first: a request without the token learns nothing, not even 400.
    let bare = agent.raw("GET", "/v1/state", &[], None).await;
    assert_eq!(bare.status, 401);

    let (state, _) = agent.state(&[("authorization", &bearer)]).await;
    let c = &state.conversations[0];
    let answer = Write::Answer {
        question: c.questions[0].id.clone(),
        option: "no".into(),
    };
    let write = agent
        .write(&c.id, &answer, &[("authorization", &wrong)])
        .await;
    assert_eq!(write.status, 401);
    assert_eq!(
        agent
            .write(&c.id, &answer, &[("authorization", &bearer)])
            .await
            .status,
        200
    );
    assert!(
        !agent.stderr().contains(TOKEN),
        "the token never reaches the log"
    );
    drop(agent);

    // Rotation: with `<VAR>_NEXT` set, both tokens open the door.
    let env = [("DURABLE_TOKEN", TOKEN), ("DURABLE_TOKEN_NEXT", NEXT)];
    let agent = Agent::https(&["--token-env", "DURABLE_TOKEN"], &env).expect("starts");
    for token in [TOKEN, NEXT] {
        let bearer = format!("Bearer {token}");
        let a = agent
            .call("GET", "/v1/state", &[("authorization", &bearer)], None)
            .await;
        assert_eq!(a.status, 200, "{}", a.text());
    }
    drop(agent);

    // A short token, or none, and the agent does not start (and does not print it).
    let short = Agent::https(
        &["--token-env", "DURABLE_TOKEN"],
        &[("DURABLE_TOKEN", "abc123")],
    )
    .err()
    .expect("a short token is refused");
    assert!(
        short.stderr.contains("shorter than 32 bytes"),
        "{}",
        short.stderr
    );
    assert!(!short.stderr.contains("abc123"));
    let unset = Agent::https(&["--token-env", "DURABLE_TOKEN_UNSET"], &[])
        .err()
        .expect("a missing token is refused");
    assert!(unset.stderr.contains("is not set"), "{}", unset.stderr);
}

#[tokio::test]
async fn socket_folder_rules() {
    // A folder other users may enter: refused at start, the folder left as it was.
    let dir = tempfile::tempdir().expect("temp dir");
    let open = dir.path().join("open");
    std::fs::create_dir(&open).expect("folder");
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let socket = open.join("agent.sock");
    let failed = Agent::start_in(dir, &socket, &[])
        .err()
        .expect("a 0755 folder is refused");
    assert!(!failed.status.expect("exited").success());
    assert!(
        failed.stderr.contains("has mode 0755; it must be 0700"),
        "{}",
        failed.stderr
    );

    // A symlink in the folder's place is not followed.
    let dir = tempfile::tempdir().expect("temp dir");
    let real = dir.path().join("real");
    std::fs::create_dir(&real).expect("folder");
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    let failed = Agent::start_in(dir, &link.join("agent.sock"), &[])
        .err()
        .expect("a symlinked folder is refused");
    assert!(
        failed.stderr.contains("is not a directory"),
        "{}",
        failed.stderr
    );

    // A file that is not a socket is never removed.
    let dir = tempfile::tempdir().expect("temp dir");
    let private = dir.path().join("run");
    std::fs::create_dir(&private).expect("folder");
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let file = private.join("agent.sock");
    std::fs::write(&file, "notes").expect("file");
    let failed = Agent::start_in(dir, &file, &[])
        .err()
        .expect("a plain file is refused");
    assert!(
        failed.stderr.contains("is not a socket"),
        "{}",
        failed.stderr
    );

    // A stale socket (nobody listening) is replaced; a live one is not taken over.
    let dir = tempfile::tempdir().expect("temp dir");
    let private = dir.path().join("run");
    std::fs::create_dir(&private).expect("folder");
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let socket = private.join("agent.sock");
    drop(std::os::unix::net::UnixListener::bind(&socket).expect("a stale socket"));
    let first = Agent::start_in(dir, &socket, &[]).expect("a stale socket is replaced");
    assert_eq!(first.call("GET", "/v1/state", &[], None).await.status, 200);
    let other = tempfile::tempdir().expect("temp dir");
    let failed = Agent::start_in(other, &socket, &[])
        .err()
        .expect("a live socket is kept");
    assert!(
        failed.stderr.contains("another agent is listening"),
        "{}",
        failed.stderr
    );
    assert_eq!(first.call("GET", "/v1/state", &[], None).await.status, 200);
}

#[tokio::test]
async fn sigterm_stops_and_removes_the_socket() {
    let mut agent = Agent::socket(&[]);
    let socket = agent.socket.clone().expect("socket");
    assert!(socket.exists());
    agent.terminate();
    let status = agent
        .wait_exit(Duration::from_secs(10))
        .expect("exits after SIGTERM");
    assert!(status.success(), "{status:?}");
    assert!(!socket.exists(), "the socket is removed on a clean exit");
}

/// The agent's tool writes to the agent's own socket: `--deploy-command` runs `sh -c` with
/// `curl` (a real client; this test needs curl installed), a grandchild of the agent, under a
/// name chosen to confuse the parent walk. With `--refuse-descendants` the tool's write is
/// refused with 403 while the test's own writes (not a descendant) pass; without it, the same
/// tool's write is taken — the socket alone lets every process of the user in.
#[tokio::test]
async fn refuse_descendants_refuses_the_agents_own_tools() {
    let which = std::process::Command::new("sh")
        .args(["-c", "command -v curl"])
        .output()
        .expect("sh runs");
    let curl = String::from_utf8_lossy(&which.stdout).trim().to_owned();
    assert!(
        which.status.success() && !curl.is_empty(),
        "this test needs curl"
    );
    for refuse in [true, false] {
        let dir = tempfile::tempdir().expect("temp dir");
        let socket = dir.path().join("run").join("agent.sock");
        let out = dir.path().join("tool-status");
        // The tool names itself to fool a parser of `/proc/<pid>/stat` that ends the name at the
        // first `)`: its stat line reads `<pid> (x) S 1 () S <real parent> …`, where such a
        // parser finds the parent 1 (no descendant) instead of the agent's shell.
        let tool = dir.path().join("x) S 1 (");
        std::fs::copy(&curl, &tool).expect("copy curl");
        // The conversation made by `--ask` is the first: `c1`.
        let command = format!(
            "'{}' -s -o /dev/null -w '%{{http_code}}' --unix-socket '{}' -H 'Collie-Wire: 1' \
             -H 'Content-Type: application/json' -d '{{\"text\":\"from the tool\"}}' \
             http://agent/v1/conversations/c1/send > '{}'",
            tool.display(),
            socket.display(),
            out.display()
        );
        let mut args = vec!["--ask", "--deploy-command", &command];
        if refuse {
            args.push("--refuse-descendants");
        }
        let agent = Agent::start_in(dir, &socket, &args).expect("starts");
        let (state, _) = agent.state(&[]).await;
        let c = &state.conversations[0];
        assert_eq!(c.id, "c1");
        let yes = Write::Answer {
            question: c.questions[0].id.clone(),
            option: "yes".into(),
        };
        // The test process is no descendant of the agent: its answer is taken either way.
        assert_eq!(agent.write(&c.id, &yes, &[]).await.status, 200);
        let me = std::process::id();
        assert!(
            agent
                .stderr()
                .contains(&format!("write answer from pid {me}")),
            "{}",
            agent.stderr()
        );

        // Waits for the deploy (the tool) to finish: the agent then says so in the conversation.
        let finished = wait_for(Duration::from_secs(20), || async {
            let (state, _) = agent.state(&[]).await;
            let c = state.conversations.into_iter().next()?;
            c.items
                .iter()
                .any(|i| i.text.starts_with("Deploy finished"))
                .then_some(c)
        })
        .await
        .expect("the deploy command finishes");
        let status = std::fs::read_to_string(&out).expect("the tool wrote its status");
        let from_tool = finished.items.iter().any(|i| i.text == "from the tool");
        if refuse {
            assert_eq!(status, "403", "the agent's own tool is refused");
            assert!(!from_tool, "a refused write changes nothing");
        } else {
            assert_eq!(
                status, "200",
                "without the check the socket lets the tool in"
            );
            assert!(from_tool);
        }
    }
}
