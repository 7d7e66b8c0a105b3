//! Black-box attacks on the phone API's edges (issue 9, holes 6, 8, 13, 14, 15, 17): a real
//! `collie bridge`, raw TCP where an HTTP client would be too polite, and the audit log and the
//! bridge's own log read back to check what was (and was not) written.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{wait_for, Opts, TestBridge};

fn bridge_with_log() -> TestBridge {
    TestBridge::start_with(Opts {
        with_tmux: true,
        log_to_file: true,
        ..Opts::default()
    })
}

fn connect(b: &TestBridge) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", b.port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    s
}

/// Sends raw bytes and reads the whole answer (the bridge closes after it, or the read times out).
fn raw_exchange(b: &TestBridge, request: &str) -> String {
    let mut s = connect(b);
    s.write_all(request.as_bytes()).expect("write");
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(5) {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                out.extend_from_slice(&buf[..n]);
                if out.windows(4).any(|w| w == b"\r\n\r\n") && body_complete(&out) {
                    break;
                }
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn body_complete(resp: &[u8]) -> bool {
    let text = String::from_utf8_lossy(resp);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return false;
    };
    let len = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().to_owned())
        })
        .and_then(|v| v.parse::<usize>().ok());
    len.is_none_or(|n| body.len() >= n)
}

fn status_and_error(resp: &str) -> (u16, Option<String>) {
    let status = resp
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = resp.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let error = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v["error"].as_str().map(str::to_owned));
    (status, error)
}

/// Whether the bridge closed `s` (a read returns end of file) within `within`.
fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    s.set_read_timeout(Some(within)).expect("timeout");
    let mut buf = [0u8; 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

fn audit_lines(b: &TestBridge) -> Vec<Value> {
    b.audit_lines()
}

#[test]
fn every_rejection_is_json_and_internals_stay_in_the_log() {
    let mut b = TestBridge::start_with(Opts {
        with_tmux: true,
        log_to_file: true,
        // A shell that does not exist: the pty's spawn error is the bridge's problem, not the
        // phone's to read.
        env: vec![("SHELL".into(), "/nonexistent/collie-test-shell".into())],
        config: None,
    });
    let token = b.pair("phone", "full");
    // A walky day file the bridge will find at start (and that the test breaks later).
    b.stop();
    let day = b.state().join("walky").join("2020-01-01.jsonl");
    std::fs::create_dir_all(day.parent().expect("dir")).expect("walky dir");
    std::fs::write(&day, "").expect("day file");
    b.launch();
    let pane = b.first_tmux_pane(&token);

    let (s, headers, text) = b.raw(
        "POST",
        "/api/panes",
        Some(&token),
        Some(&json!({"machine": "local"})),
        &[],
    );
    let v: Value = serde_json::from_str(&text).expect("JSON body");
    assert_eq!(
        (s, v["error"].as_str()),
        (500, Some("internal error")),
        "{text}"
    );
    assert!(headers
        .iter()
        .any(|(k, v)| k == "content-type" && v.contains("json")));
    assert!(!text.contains("nonexistent"), "{text}");
    assert!(
        b.log().contains("nonexistent/collie-test-shell"),
        "the detail is logged"
    );

    // The walky log unreadable (a directory in a day file's place): internal, not 400 with text.
    std::fs::remove_file(&day).expect("remove the day file");
    std::fs::create_dir(&day).expect("a directory as a day file");
    let (s, v) = b.get("/api/walky", Some(&token));
    assert_eq!(
        (s, v["error"].as_str()),
        (500, Some("internal error")),
        "{v}"
    );

    // A malformed query string, a bad path parameter, an unknown query member.
    let (s, v) = b.get(
        &format!("/api/panes/local/{pane}?scrollback=abc"),
        Some(&token),
    );
    assert_eq!(s, 400, "{v}");
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("invalid query string: scrollback")),
        "{v}"
    );
    let (s, v) = b.get(&format!("/api/panes/local/{pane}?nope=1"), Some(&token));
    assert_eq!(s, 400, "{v}");
    let (s, v) = b.get("/api/panes/local/%FF%FE", Some(&token));
    assert_eq!(s, 400, "{v}");
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("invalid path")),
        "{v}"
    );

    // An oversized body: 413, in JSON, refused on its declared length before it is read.
    let resp = raw_exchange(
        &b,
        &format!(
            "POST /api/panes/local/{pane}/input HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\
             Authorization: Bearer {token}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{{\"text\":\"",
            b.port,
            600 * 1024
        ),
    );
    assert_eq!(
        status_and_error(&resp),
        (413, Some("request body too large: at most 512 KiB".into())),
        "{resp}"
    );
    // An unknown method on a known route, for a paired device.
    let (s, v) = b.request("PUT", "/api/devices", Some(&token), None, &[]);
    assert_eq!((s, v["error"].as_str()), (405, Some("method not allowed")));
}

#[test]
fn requests_without_a_paired_device_get_device_not_paired_first_and_quietly() {
    let mut b = bridge_with_log();
    let token = b.pair("phone", "full");
    let probes = [
        ("GET", "/api/nope"),
        ("GET", "/api/panes/local/t0-0/nothing"),
        ("PUT", "/api/panes"),
        ("DELETE", "/api/health"),
        ("POST", "/api/machines"),
        ("GET", "/api/devices"),
    ];
    let before = b.get("/api/health", None).1["counts_7d"]["denied"]
        .as_u64()
        .expect("denied count");
    for _ in 0..20 {
        for (m, path) in probes {
            let (s, v) = b.request(m, path, None, None, &[]);
            assert_eq!(
                (s, v["error"].as_str()),
                (403, Some("device not paired")),
                "{m} {path}"
            );
            let (s, v) = b.request(m, path, Some("collie_not-a-token"), None, &[]);
            assert_eq!(
                (s, v["error"].as_str()),
                (403, Some("device not paired")),
                "{m} {path}"
            );
        }
    }
    // A paired device learns what does not exist.
    let (s, v) = b.request("GET", "/api/nope", Some(&token), None, &[]);
    assert_eq!((s, v["error"].as_str()), (404, Some("not found")));
    let (s, _) = b.request("PUT", "/api/panes", Some(&token), None, &[]);
    assert_eq!(s, 405);

    let after = b.get("/api/health", None).1["counts_7d"]["denied"]
        .as_u64()
        .expect("denied count");
    assert_eq!(after - before, 240, "each refusal is counted");
    // Quietly: no log line per request…
    let log = b.log();
    assert!(!log.contains("ERROR"), "{log}");
    assert!(!log.contains("tier registry"), "{log}");
    // …and one audit line a minute per source and reason, standing for all of them.
    let lines: Vec<Value> = wait_for(Duration::from_secs(5), || {
        let l: Vec<Value> = audit_lines(&b)
            .into_iter()
            .filter(|l| {
                l["event"] == "security.denied" && l["detail"]["reason"] == "device not paired"
            })
            .collect();
        (!l.is_empty()).then_some(l)
    })
    .expect("the first refusal is audited");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["detail"]["count"], 1);
    b.stop();
    let total: u64 = audit_lines(&b)
        .iter()
        .filter(|l| l["event"] == "security.denied" && l["detail"]["reason"] == "device not paired")
        .map(|l| l["detail"]["count"].as_u64().expect("count"))
        .sum();
    assert_eq!(total, 240, "every refusal is accounted for");
}

#[test]
fn slow_and_idle_clients_are_closed_and_connections_are_capped() {
    let b = TestBridge::start_with(Opts::default());
    let host = format!("Host: 127.0.0.1:{}\r\n", b.port);
    let token = b.pair("phone", "full");

    // All at once, so the timers run side by side: clients dribbling headers one byte a second,
    // an idle connection, a keep-alive connection after its answer, a body that dribbles.
    let mut dribblers: Vec<TcpStream> = (0..20).map(|_| connect(&b)).collect();
    let mut idle = connect(&b);
    let mut kept = connect(&b);
    kept.write_all(format!("GET /api/health HTTP/1.1\r\n{host}\r\n").as_bytes())
        .expect("write");
    let mut buf = [0u8; 2048];
    let n = kept.read(&mut buf).expect("answer");
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    let mut slow = connect(&b);
    slow.write_all(
        format!(
            "POST /api/panes HTTP/1.1\r\n{host}Authorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"mach"
        )
        .as_bytes(),
    )
    .expect("write");

    let started = Instant::now();
    let request = format!("GET /api/health HTTP/1.1\r\n{host}X-Slow: ");
    let mut sent = 0;
    let mut all_closed = false;
    while started.elapsed() < Duration::from_secs(25) {
        let byte = request.as_bytes().get(sent).copied().unwrap_or(b'a');
        let still_open: Vec<bool> = dribblers
            .iter_mut()
            .map(|s| s.write_all(&[byte]).is_ok() && !closed_within(s, Duration::from_millis(1)))
            .collect();
        sent += 1;
        if still_open.iter().all(|open| !open) {
            all_closed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(1000));
    }
    assert!(
        all_closed,
        "dribbling clients are still connected after {:?}",
        started.elapsed()
    );
    assert!(
        started.elapsed() >= Duration::from_secs(9),
        "closed too early: {:?}",
        started.elapsed()
    );
    assert!(
        closed_within(&mut idle, Duration::from_secs(5)),
        "an idle connection stays open"
    );
    assert!(
        closed_within(&mut kept, Duration::from_secs(5)),
        "keep-alive idles forever"
    );
    let mut answer = Vec::new();
    let _ = slow.read_to_end(&mut answer);
    let (s, e) = status_and_error(&String::from_utf8_lossy(&answer));
    assert_eq!((s, e.as_deref()), (408, Some("request body too slow")));

    // At most 512 connections: the next is closed at once, and others are served again once
    // some close.
    let held: Vec<TcpStream> = (0..512).map(|_| connect(&b)).collect();
    let mut one_more = connect(&b);
    assert!(
        closed_within(&mut one_more, Duration::from_secs(3)),
        "connection 513 was kept"
    );
    drop(held);
    // The bridge notices the closed ones on its own time; until it has, a new connection is still
    // one too many and is reset — the cap at work, not a failure — so each try may fail quietly.
    let served = || -> Option<()> {
        let mut s = TcpStream::connect(("127.0.0.1", b.port)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        let request = format!("GET /api/health HTTP/1.1\r\n{host}Connection: close\r\n\r\n");
        s.write_all(request.as_bytes()).ok()?;
        let mut answer = Vec::new();
        s.read_to_end(&mut answer).ok()?;
        (status_and_error(&String::from_utf8_lossy(&answer)).0 == 200).then_some(())
    };
    let ok = wait_for(Duration::from_secs(5), served);
    assert!(ok.is_some(), "served again below the cap");
}

/// Opens the SSE stream of `pane`; the first event is read, the connection kept.
fn open_stream(
    b: &TestBridge,
    token: &str,
    path: &str,
) -> Result<TcpStream, (u16, Option<String>)> {
    let mut s = connect(b);
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {token}\r\n\r\n",
        b.port
    );
    s.write_all(req.as_bytes()).expect("write");
    let mut buf = [0u8; 4096];
    let mut got = Vec::new();
    loop {
        let n = s.read(&mut buf).expect("read");
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got);
        if text.starts_with("HTTP/1.1 200") && text.contains("data:") {
            return Ok(s);
        }
        if !text.starts_with("HTTP/1.1 200") && body_complete(&got) && text.contains("\r\n\r\n") {
            break;
        }
    }
    Err(status_and_error(&String::from_utf8_lossy(&got)))
}

#[test]
fn streams_are_capped_per_device_and_in_all() {
    let b = TestBridge::start();
    let tokens: Vec<String> = (0..9).map(|i| b.pair(&format!("dev{i}"), "read")).collect();
    let pane = b.first_tmux_pane(&tokens[0]);
    let path = format!("/api/panes/local/{pane}/stream");
    let mine: Vec<TcpStream> = (0..32)
        .map(|_| open_stream(&b, &tokens[0], &path).expect("under the device cap"))
        .collect();
    assert_eq!(
        open_stream(&b, &tokens[0], &path).err(),
        Some((503, Some("resource limit".into())))
    );
    let mut others = Vec::new();
    for t in &tokens[1..8] {
        for _ in 0..32 {
            others.push(open_stream(&b, t, &path).expect("under the caps"));
        }
    }
    assert_eq!(
        open_stream(&b, &tokens[8], &path).err(),
        Some((503, Some("resource limit".into()))),
        "256 in all"
    );
    drop(mine);
    let again = wait_for(Duration::from_secs(5), || {
        open_stream(&b, &tokens[8], &path).ok()
    });
    assert!(again.is_some(), "closed streams give their place back");
    // Refusals are audited as resource.denied naming the device, with a request id.
    let denied: Vec<Value> = audit_lines(&b)
        .into_iter()
        .filter(|l| l["event"] == "resource.denied")
        .collect();
    assert!(
        denied.iter().any(|l| l["device"] == "dev0"
            && l["request_id"].as_str().is_some_and(|r| r.len() == 32)
            && l["detail"]["reason"] == "stream limit"),
        "{denied:?}"
    );
}

#[test]
fn request_shapes_that_could_fool_a_proxy_are_refused() {
    let b = TestBridge::start();
    let token = b.pair("phone", "full");
    let pane = b.first_tmux_pane(&token);
    let port = b.port;

    // An absolute-form target naming a foreign host.
    let resp = raw_exchange(
        &b,
        &format!("GET http://evil.example/api/health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"),
    );
    assert_eq!(
        status_and_error(&resp),
        (403, Some("host not allowed".into())),
        "{resp}"
    );
    let resp = raw_exchange(
        &b,
        &format!(
            "GET http://127.0.0.1:{port}/api/health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"
        ),
    );
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    // Two Host headers; two Origin headers.
    let resp = raw_exchange(
        &b,
        &format!(
            "GET /api/health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nHost: evil.example\r\n\r\n"
        ),
    );
    assert_eq!(status_and_error(&resp).0, 400, "{resp}");
    let body = r#"{"keys":["Enter"]}"#;
    let resp = raw_exchange(
        &b,
        &format!(
            "POST /api/panes/local/{pane}/input HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
             Authorization: Bearer {token}\r\nOrigin: http://127.0.0.1:{port}\r\n\
             Origin: http://evil.example\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        ),
    );
    assert_eq!(
        status_and_error(&resp),
        (403, Some("origin not allowed".into())),
        "{resp}"
    );
    // Host and Origin refusals are audited like any refusal (once a minute per source and reason).
    for reason in ["host not allowed", "origin not allowed"] {
        let line = wait_for(Duration::from_secs(5), || {
            audit_lines(&b)
                .into_iter()
                .find(|l| l["event"] == "security.denied" && l["detail"]["reason"] == reason)
        });
        assert!(line.is_some(), "no security.denied for {reason}");
    }

    // Pane ids that alias a real pane are no pane at all, and never reach an audit line.
    let (i, n) = pane
        .strip_prefix('t')
        .and_then(|r| r.split_once('-'))
        .expect("a tmux id");
    for alias in [format!("t0{i}-{n}"), format!("t{i}-0{n}")] {
        let (s, v) = b.get(&format!("/api/panes/local/{alias}"), Some(&token));
        assert_eq!(
            (s, v["error"].as_str()),
            (404, Some("no such pane")),
            "{alias}"
        );
        let (s, _) = b.post(
            &format!("/api/panes/local/{alias}/input"),
            Some(&token),
            &json!({"keys": ["Enter"]}),
        );
        assert_eq!(s, 404, "{alias}");
        let log = std::fs::read_to_string(b.state().join("audit.log")).expect("log");
        assert!(!log.contains(&alias), "{alias} echoed into the audit log");
    }
}

#[test]
fn audit_events_say_what_happened() {
    let mut b = TestBridge::start();
    let full = b.pair("phone", "full");
    let read = b.pair("watcher", "read");
    let pane = b.first_tmux_pane(&full);

    // A tmux pane's name is its window's: renaming it is a tab rename.
    let (s, _) = b.post(
        &format!("/api/panes/local/{pane}/rename"),
        Some(&full),
        &json!({"name": "build"}),
    );
    assert_eq!(s, 200);
    let (s, hosted) = b.post(
        "/api/panes",
        Some(&full),
        &json!({"machine": "local", "name": "h"}),
    );
    assert_eq!(s, 200, "{hosted}");
    let hosted_id = hosted["pane"].as_str().expect("pane").to_owned();
    let (s, _) = b.post(
        &format!("/api/panes/local/{hosted_id}/rename"),
        Some(&full),
        &json!({"name": "h2"}),
    );
    assert_eq!(s, 200);
    let lines = audit_lines(&b);
    let event_of = |pane: &str| {
        lines
            .iter()
            .find(|l| {
                l["detail"]["pane"] == pane
                    && l["detail"]["name"].is_string()
                    && l["event"] != "pane.create"
            })
            .map(|l| l["event"].clone())
    };
    assert_eq!(event_of(&pane), Some(json!("tab.rename")));
    assert_eq!(event_of(&hosted_id), Some(json!("pane.rename")));
    // pane.create names the pane it made: it was written once the pane existed.
    let created = lines
        .iter()
        .find(|l| l["event"] == "pane.create")
        .expect("pane.create");
    assert_eq!(created["detail"]["pane"], hosted_id.as_str());
    assert_eq!(created["device"], "phone");

    // A read device reaching for another device's token.
    let (s, v) = b.request("DELETE", "/api/devices/phone", Some(&read), None, &[]);
    assert_eq!((s, v["error"].as_str()), (403, Some("insufficient tier")));
    let denied = wait_for(Duration::from_secs(5), || {
        audit_lines(&b)
            .into_iter()
            .find(|l| l["event"] == "security.denied" && l["device"] == "watcher")
    })
    .expect("security.denied for the read device");
    assert_eq!(denied["detail"]["label"], "phone");
    assert_eq!(denied["detail"]["reason"], "insufficient tier");

    // counts_7d survives a restart.
    for _ in 0..5 {
        assert_eq!(b.get("/api/panes", Some(&full)).0, 200);
    }
    let counts = b.get("/api/health", None).1["counts_7d"].clone();
    assert!(counts["reads"].as_u64().expect("reads") >= 5, "{counts}");
    b.stop();
    b.launch();
    let after = b.get("/api/health", None).1["counts_7d"].clone();
    assert_eq!(after["reads"], counts["reads"], "{after} vs {counts}");
    assert!(after["writes"].as_u64() >= counts["writes"].as_u64());
    assert!(after["denied"].as_u64() >= counts["denied"].as_u64());
}

#[test]
fn one_duration_grammar_for_every_command() {
    let lead = support::crew_bridge(false, &[]);
    lead.pair("phone", "full");
    // Minutes are a unit now, everywhere.
    lead.cli_ok(&["devices", "set-expiry", "phone", "1m"]);
    lead.cli_ok(&["pair", "--json", "--expires", "30m"]);
    lead.cli_ok(&["crew", "init"]);
    lead.cli_ok(&["crew", "invite", "--expires", "45m"]);
    // The same refusals, with the same words, everywhere.
    for args in [
        vec!["devices", "set-expiry", "phone", "30s"],
        vec!["pair", "--expires", "30s"],
        vec!["crew", "invite", "--expires", "30s"],
    ] {
        let out = lead.cli(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("use Nm, Nh, Nd or Nw"), "{args:?}: {err}");
    }
    let out = lead.cli(&["devices", "set-expiry", "phone", "3651d"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("at most 3650d"));
    let out = lead.cli(&["crew", "invite", "--expires", "8d"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("at most 7d"));
}
