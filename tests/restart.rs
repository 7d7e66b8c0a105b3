//! `collie restart` (SPEC §17, decision 0077) for a bridge started by hand: the bridge stops as on
//! SIGTERM and executes itself again, same pid, same port (the one the OS chose for `--port 0`),
//! same state — the phone's token still works, the same panes are listed, the open stream ends and
//! a new one on the same URL follows the pane, as the phone's EventSource does by reconnecting.
//! Real `collie` processes, real tmux on a private socket.

mod support;

use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use serde_json::json;
use support::{wait_for, TestBridge};

#[test]
fn a_restarted_bridge_answers_on_the_same_port_with_the_same_panes_and_streams_resume() {
    let mut b = TestBridge::start();
    let phone = b.pair("phone", "full");
    let pane = b.first_tmux_pane(&phone);
    let (_, before) = b.get("/api/panes", Some(&phone));
    let listed = |v: &serde_json::Value| -> Vec<String> {
        let mut ids: Vec<String> = v["panes"]
            .as_array()
            .expect("a pane list")
            .iter()
            .map(|p| p["pane"].as_str().expect("a pane id").to_owned())
            .collect();
        ids.sort();
        ids
    };
    let panes_before = listed(&before);
    let stream_url = format!("/api/panes/local/{pane}/stream");
    let old_stream = b.sse(&stream_url, &phone);
    let (_, first) = old_stream
        .recv_timeout(Duration::from_secs(10))
        .expect("the stream's first event, before the restart");
    let last_seq = first["seq"].as_u64().expect("an event has a seq");
    let pid = b.child.as_ref().expect("the bridge runs").id();
    let port = b.port;

    let out = b.cli_ok(&["restart"]);
    assert!(out.contains("restarted the bridge"), "{out}");

    // The old stream ends: the old bridge closed its connections as it stopped.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match old_stream.recv_timeout(Duration::from_millis(200)) {
            Err(RecvTimeoutError::Disconnected) => break,
            Ok(_) | Err(RecvTimeoutError::Timeout) => {
                assert!(Instant::now() < deadline, "the old stream did not end");
            }
        }
    }
    // The same process (execv keeps the pid; the test still holds it, and its drop stops it) ...
    let child = b.child.as_mut().expect("the bridge runs");
    assert_eq!(child.id(), pid);
    assert!(
        child.try_wait().expect("try_wait").is_none(),
        "the bridge exited instead of starting again"
    );
    // ... on the same port, with the same devices and panes.
    assert_eq!(b.port, port);
    let (status, _) = b.get("/api/health", None);
    assert_eq!(status, 200, "the same port answers");
    let after = wait_for(Duration::from_secs(10), || {
        let (s, v) = b.get("/api/panes", Some(&phone));
        (s == 200 && listed(&v) == panes_before).then_some(v)
    });
    assert!(
        after.is_some(),
        "the restarted bridge does not list the same panes ({panes_before:?}) to the same phone"
    );

    // A new stream on the same URL, with the `Last-Event-ID` the phone's client sends when it
    // reconnects (the old bridge's seq), follows the pane: what the phone types shows in it.
    let new_stream = resumed_sse(&b, &stream_url, &phone, last_seq);
    new_stream
        .recv_timeout(Duration::from_secs(10))
        .expect("the new stream's first event");
    let (status, body) = b.post(
        &format!("/api/panes/local/{pane}/input"),
        Some(&phone),
        &json!({"text": "echo after-restart-$((6*7))", "keys": ["Enter"]}),
    );
    assert_eq!(status, 200, "{body}");
    let seen = wait_for(Duration::from_secs(10), || {
        let (_, event) = new_stream.recv_timeout(Duration::from_millis(200)).ok()?;
        event.to_string().contains("after-restart-42").then_some(())
    });
    assert!(
        seen.is_some(),
        "the new stream does not show the typed line"
    );
}

/// `b.sse` with the `Last-Event-ID` header a reconnecting phone sends.
fn resumed_sse(
    b: &TestBridge,
    path: &str,
    token: &str,
    last_id: u64,
) -> std::sync::mpsc::Receiver<(String, serde_json::Value)> {
    use std::io::Write;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", b.port)).expect("connect");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {token}\r\n\
         Last-Event-ID: {last_id}\r\nConnection: close\r\n\r\n",
        b.port
    )
    .expect("write");
    s.set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    support::read_events(s)
}

#[test]
fn restart_without_a_running_bridge_says_how_to_start_one() {
    let mut b = TestBridge::start_with(support::Opts::default());
    b.stop();
    let out = b.cli(&["restart"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("collie bridge"), "{err}");
}

#[test]
fn a_new_start_reads_the_configuration_again_and_a_refused_one_is_reported_at_once() {
    let mut b = TestBridge::start_with(support::Opts {
        log_to_file: true,
        ..support::Opts::default()
    });
    // Changed after the bridge started and not applied: the next start must refuse (SPEC §12).
    std::fs::write(
        b.config_dir().join("config.toml"),
        "schema_version = 1\nworkspaces = [\"~\"]\n",
    )
    .expect("write config.toml");
    let out = b.cli(&["restart"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("did not start again"), "{err}");
    let child = b.child.as_mut().expect("the bridge ran");
    let exited = wait_for(Duration::from_secs(10), || child.try_wait().ok().flatten());
    assert_eq!(exited.and_then(|s| s.code()), Some(1));
    assert!(b.log().contains("has not been applied"), "{}", b.log());
}
