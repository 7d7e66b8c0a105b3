//! Black-box tests of the phone API against a real `collie bridge` and a real tmux server.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{wait_for, TestBridge};

fn screen_text(v: &Value) -> String {
    v["lines"]
        .as_array()
        .map(|l| {
            l.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

fn wait_screen(b: &TestBridge, token: &str, pane: &str, needle: &str) -> String {
    let mut last = String::new();
    wait_for(Duration::from_secs(10), || {
        let (s, v) = b.get(&format!("/api/panes/local/{pane}"), Some(token));
        last = screen_text(&v);
        (s == 200 && last.contains(needle)).then(|| last.clone())
    })
    .unwrap_or_else(|| panic!("{needle:?} never appeared on {pane}; screen:\n{last}"))
}

#[test]
fn pair_read_type_and_see_the_echo() {
    let b = TestBridge::start();
    let token = b.pair("phone", "full");
    assert!(
        token.starts_with("collie_"),
        "device tokens carry the prefix"
    );
    let pane = b.first_tmux_pane(&token);

    let (s, list) = b.get("/api/panes", Some(&token));
    assert_eq!(s, 200);
    let p = &list["panes"][0];
    assert_eq!(
        p["machine"], "testbox",
        "data carries the real machine name"
    );
    assert_eq!(p["token"].as_str().map(str::len), Some(4));

    let (s, _) = b.post(
        &format!("/api/panes/local/{pane}/input"),
        Some(&token),
        &json!({"text": "echo hello-$((6*7))", "keys": ["Enter"]}),
    );
    assert_eq!(s, 200);
    let text = wait_screen(&b, &token, &pane, "hello-42");
    assert!(text.contains("echo hello-$((6*7))"));
    // What tmux itself shows agrees.
    let tmux = b.tmux.as_ref().expect("tmux");
    assert!(tmux.capture("main").contains("hello-42"));

    // The machine's real name works as well as `local`.
    let (s, _) = b.get(&format!("/api/panes/testbox/{pane}"), Some(&token));
    assert_eq!(s, 200);
}

#[test]
fn secrets_are_masked_in_snapshot_and_stream() {
    let b = TestBridge::start();
    let token = b.pair("phone", "full");
    let pane = b.first_tmux_pane(&token);
    let secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    // Print the secret without it appearing in the typed command line.
    let (s, _) = b.post(
        &format!("/api/panes/local/{pane}/input"),
        Some(&token),
        &json!({"text": "printf 'tok=%s%s\\n' ghp_abcdefghijklmnopq rstuvwxyz0123456789", "keys": ["Enter"]}),
    );
    assert_eq!(s, 200);
    let text = wait_screen(&b, &token, &pane, "tok=ghp");
    assert!(!text.contains(secret), "secret leaked in snapshot: {text}");
    assert!(text.contains("tok=ghp_a•••"), "masked form shown: {text}");

    // The stream's first event carries all rows, masked.
    let resp = ureq::get(&b.url(&format!("/api/panes/local/{pane}/stream")))
        .set("Authorization", &format!("Bearer {token}"))
        .timeout(Duration::from_secs(10))
        .call()
        .expect("stream");
    assert_eq!(resp.header("content-type"), Some("text/event-stream"));
    let mut reader = std::io::BufReader::new(resp.into_reader());
    let mut data = String::new();
    let mut line = String::new();
    use std::io::BufRead;
    while reader.read_line(&mut line).expect("read") > 0 {
        if let Some(d) = line.strip_prefix("data:") {
            data = d.trim().to_string();
            break;
        }
        line.clear();
    }
    let ev: Value = serde_json::from_str(&data).expect("event json");
    let rows = ev["rows"].as_object().expect("rows");
    let all: String = rows.values().filter_map(Value::as_str).collect();
    assert!(all.contains("tok=ghp_a•••"), "stream shows masked secret");
    assert!(!all.contains(secret), "secret leaked in stream");
    assert!(ev["seq"].as_u64().is_some());
}

#[test]
fn stream_follows_changes() {
    let b = TestBridge::start();
    let token = b.pair("phone", "full");
    let pane = b.first_tmux_pane(&token);
    let resp = ureq::get(&b.url(&format!("/api/panes/local/{pane}/stream")))
        .set("Authorization", &format!("Bearer {token}"))
        .timeout(Duration::from_secs(15))
        .call()
        .expect("stream");
    let mut reader = std::io::BufReader::new(resp.into_reader());
    let (s, _) = b.post(
        &format!("/api/panes/local/{pane}/input"),
        Some(&token),
        &json!({"text": "echo streamed-$((40+2))", "keys": ["Enter"]}),
    );
    assert_eq!(s, 200);
    use std::io::BufRead;
    let mut line = String::new();
    let mut ids = Vec::new();
    let mut seen = false;
    while reader.read_line(&mut line).unwrap_or(0) > 0 {
        if let Some(id) = line.strip_prefix("id:") {
            ids.push(id.trim().parse::<u64>().expect("numeric id"));
        }
        if line.starts_with("data:") && line.contains("streamed-42") {
            seen = true;
            break;
        }
        line.clear();
    }
    assert!(seen, "the echo arrived on the stream");
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids grow: {ids:?}");
}

#[test]
fn error_strings_of_the_api() {
    let b = TestBridge::start();
    let full = b.pair("phone", "full");
    let pane = b.first_tmux_pane(&full);

    // No token, unknown token.
    let (s, v) = b.get("/api/panes", None);
    assert_eq!((s, v["error"].as_str()), (403, Some("device not paired")));
    let (s, v) = b.get(
        "/api/panes",
        Some("collie_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
    );
    assert_eq!((s, v["error"].as_str()), (403, Some("device not paired")));

    // Unknown machine and pane.
    let (s, v) = b.get("/api/panes/elsewhere/t0-1", Some(&full));
    assert_eq!((s, v["error"].as_str()), (404, Some("no such machine")));
    let (s, v) = b.get("/api/panes/local/t9-99", Some(&full));
    assert_eq!((s, v["error"].as_str()), (404, Some("no such pane")));

    // Bad input.
    let input = format!("/api/panes/local/{pane}/input");
    let (s, v) = b.post(&input, Some(&full), &json!({"keys": ["Hyper"]}));
    assert_eq!((s, v["error"].as_str()), (400, Some("unknown key: Hyper")));
    let (s, v) = b.post(&input, Some(&full), &json!({"text": "x".repeat(65 * 1024)}));
    assert_eq!((s, v["error"].as_str()), (400, Some("text too long")));
    let (s, v) = b.post(&input, Some(&full), &json!({"txt": "x"}));
    assert_eq!(s, 400);
    assert!(
        v["error"].as_str().unwrap_or("").contains("txt"),
        "names the bad field: {v}"
    );

    // Pairing errors.
    let code = b.code("full");
    let (s, v) = b.post(
        "/api/pair",
        None,
        &json!({"code": code, "label": "bad label!"}),
    );
    assert_eq!((s, v["error"].as_str()), (400, Some("invalid label")));
    let (s, v) = b.post("/api/pair", None, &json!({"code": code, "label": "phone"}));
    assert_eq!((s, v["error"].as_str()), (409, Some("label in use")));
    let (s, v) = b.post(
        "/api/pair",
        None,
        &json!({"code": "AAAA-AAAA", "label": "x"}),
    );
    assert_eq!(
        (s, v["error"].as_str()),
        (403, Some("invalid or expired code"))
    );

    // A used code is refused.
    let (s, _) = b.post("/api/pair", None, &json!({"code": code, "label": "tablet"}));
    assert_eq!(s, 200, "the code survives a label-in-use refusal");
    let (s, v) = b.post("/api/pair", None, &json!({"code": code, "label": "laptop"}));
    assert_eq!(
        (s, v["error"].as_str()),
        (403, Some("invalid or expired code"))
    );

    // Unknown route.
    let (s, _) = b.get("/api/nothing-here", Some(&full));
    assert_eq!(s, 404);
}

#[test]
fn five_wrong_codes_invalidate_the_code() {
    let b = TestBridge::start_with(support::Opts::default());
    let code = b.code("full");
    for _ in 0..5 {
        let (s, _) = b.post(
            "/api/pair",
            None,
            &json!({"code": "ZZZZ-ZZZZ", "label": "p"}),
        );
        assert_eq!(s, 403);
    }
    let (s, v) = b.post("/api/pair", None, &json!({"code": code, "label": "p"}));
    assert_eq!(
        (s, v["error"].as_str()),
        (403, Some("invalid or expired code"))
    );
    // Codes are case-insensitive and dashes are ignored.
    let code = b.code("full").to_lowercase().replace('-', "");
    let (s, _) = b.post("/api/pair", None, &json!({"code": code, "label": "p"}));
    assert_eq!(s, 200);
}

#[test]
fn eleven_attempts_a_minute_get_429_per_source() {
    let b = TestBridge::start_with(support::Opts::default());
    let attempt = |xff: Option<&str>| {
        let headers: Vec<(&str, &str)> = xff
            .map(|x| vec![("X-Forwarded-For", x)])
            .unwrap_or_default();
        b.raw(
            "POST",
            "/api/pair",
            None,
            Some(&json!({"code": "ZZZZ-ZZZZ", "label": "p"})),
            &headers,
        )
    };
    for i in 0..10 {
        let (s, _, _) = attempt(Some("198.51.100.7"));
        assert_eq!(s, 403, "attempt {i}");
    }
    let (s, headers, body) = attempt(Some("198.51.100.7"));
    assert_eq!(s, 429);
    assert!(body.contains("too many attempts"));
    let retry = headers
        .iter()
        .find(|(k, _)| k == "retry-after")
        .map(|(_, v)| v.as_str());
    assert_eq!(retry, Some("60"));
    // The last X-Forwarded-For entry is the source when the peer is loopback.
    let (s, _, _) = attempt(Some("198.51.100.7, 203.0.113.9"));
    assert_eq!(s, 403, "a different source is not limited");
    // Without the header the source is the loopback peer itself, a different source again.
    let (s, _, _) = attempt(None);
    assert_eq!(s, 403);
}

#[test]
fn read_tier_can_watch_but_not_write_and_denials_are_audited() {
    let mut b = TestBridge::start();
    let full = b.pair("phone", "full");
    let read = b.pair("watcher", "read");
    let pane = b.first_tmux_pane(&read);
    let (s, _) = b.get(&format!("/api/panes/local/{pane}"), Some(&read));
    assert_eq!(s, 200);
    let writes = [
        (
            "POST",
            format!("/api/panes/local/{pane}/input"),
            Some(json!({"text": "echo no"})),
        ),
        (
            "POST",
            "/api/panes".to_string(),
            Some(json!({"machine": "local"})),
        ),
        (
            "POST",
            format!("/api/panes/local/{pane}/rename"),
            Some(json!({"name": "x"})),
        ),
        ("DELETE", format!("/api/panes/local/{pane}"), None),
        // The tier gate runs before routing: a missing pane still says `insufficient tier`.
        (
            "POST",
            "/api/panes/local/t9-9/input".to_string(),
            Some(json!({"text": "x"})),
        ),
    ];
    for (m, path, body) in &writes {
        let (s, v) = b.request(m, path, Some(&read), body.as_ref(), &[]);
        assert_eq!(
            (s, v["error"].as_str()),
            (403, Some("insufficient tier")),
            "{m} {path}"
        );
    }
    // set-tier promotes at the next request, without restart. (Its line is written after the
    // refusals' — the audit actor takes them in order — so the log below holds all of them.)
    b.cli_ok(&["devices", "set-tier", "watcher", "full"]);
    // Audited at most once a minute per source and reason (SPEC §7): the first refusal now…
    let log = std::fs::read_to_string(b.state().join("audit.log")).expect("audit log");
    let denied: Vec<Value> = log
        .lines()
        .filter(|l| l.contains("\"security.denied\"") && l.contains("watcher"))
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(denied.len(), 1, "one line for the minute: {denied:?}");
    assert_eq!(denied[0]["detail"]["count"], 1);
    assert_eq!(denied[0]["detail"]["reason"], "insufficient tier");
    assert_eq!(denied[0]["detail"]["source"], "127.0.0.1");

    let (s, _) = b.post(
        &format!("/api/panes/local/{pane}/input"),
        Some(&read),
        &json!({"text": "echo promoted"}),
    );
    assert_eq!(s, 200);
    assert!(
        log.len()
            < std::fs::read_to_string(b.state().join("audit.log"))
                .expect("log")
                .len()
    );
    let _ = full;
    // …and the rest are counted, written when the window closes or the bridge stops: every
    // refusal is accounted for.
    b.stop();
    let counted: u64 = std::fs::read_to_string(b.state().join("audit.log"))
        .expect("audit log")
        .lines()
        .filter(|l| l.contains("\"security.denied\"") && l.contains("watcher"))
        .map(|l| {
            serde_json::from_str::<Value>(l).expect("json")["detail"]["count"]
                .as_u64()
                .expect("count")
        })
        .sum();
    assert_eq!(counted, writes.len() as u64, "each denial is counted");
}

#[test]
fn revoke_then_403_and_last_device_does_not_open_collie() {
    let b = TestBridge::start_with(support::Opts::default());
    let token = b.pair("phone", "full");
    let (s, _) = b.get("/api/panes", Some(&token));
    assert_eq!(s, 200);
    b.cli_ok(&["devices", "revoke", "phone"]);
    let (s, v) = b.get("/api/panes", Some(&token));
    assert_eq!((s, v["error"].as_str()), (403, Some("device not paired")));
    let (s, v) = b.get("/api/panes", None);
    assert_eq!((s, v["error"].as_str()), (403, Some("device not paired")));
    let out = b.cli_ok(&["devices", "list", "--json"]);
    let v: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["devices"].as_array().map(Vec::len), Some(0));
}

#[test]
fn a_device_may_revoke_itself_but_only_full_may_revoke_others() {
    let b = TestBridge::start_with(support::Opts::default());
    let full = b.pair("phone", "full");
    let read = b.pair("watcher", "read");
    let (s, v) = b.request("DELETE", "/api/devices/phone", Some(&read), None, &[]);
    assert_eq!((s, v["error"].as_str()), (403, Some("insufficient tier")));
    let (s, v) = b.get("/api/devices", Some(&full));
    assert_eq!(s, 200);
    let me = v["devices"]
        .as_array()
        .expect("devices")
        .iter()
        .find(|d| d["label"] == "phone")
        .cloned();
    assert_eq!(me.expect("phone listed")["current"], true);
    let (s, _) = b.request("DELETE", "/api/devices/watcher", Some(&read), None, &[]);
    assert_eq!(s, 200);
    let (s, _) = b.get("/api/panes", Some(&read));
    assert_eq!(s, 403);
}

#[test]
fn local_secret_reads_only() {
    let b = TestBridge::start_with(support::Opts::default());
    let secret = std::fs::read_to_string(b.state().join("local-secret")).expect("secret");
    let auth = format!("Local {}", secret.trim());
    let (s, _) = b.request("GET", "/api/panes", None, None, &[("Authorization", &auth)]);
    assert_eq!(s, 200, "GET with the local secret");
    let (s, v) = b.request(
        "POST",
        "/api/panes",
        None,
        Some(&json!({"machine": "local"})),
        &[("Authorization", &auth)],
    );
    assert_eq!(
        (s, v["error"].as_str()),
        (403, Some("device not paired")),
        "never a write credential"
    );
    for h in ["X-Forwarded-For", "Forwarded", "X-Real-IP"] {
        let (s, v) = b.request(
            "GET",
            "/api/panes",
            None,
            None,
            &[("Authorization", &auth), (h, "127.0.0.1")],
        );
        assert_eq!(
            (s, v["error"].as_str()),
            (403, Some("device not paired")),
            "{h}"
        );
    }
    let (s, _) = b.request(
        "GET",
        "/api/panes",
        None,
        None,
        &[("Authorization", "Local wrong")],
    );
    assert_eq!(s, 403);
}

#[test]
fn health_headers_host_and_origin() {
    let b = TestBridge::start_with(support::Opts::default());
    let (s, h, body) = b.raw("GET", "/api/health", None, None, &[]);
    assert_eq!(s, 200);
    let v: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(v["crew_mode"], "solo");
    for k in ["reads", "writes", "denied"] {
        assert!(v["counts_7d"][k].is_u64(), "{k}");
    }
    let get = |name: &str| h.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    assert_eq!(get("x-content-type-options").as_deref(), Some("nosniff"));
    assert_eq!(get("referrer-policy").as_deref(), Some("no-referrer"));
    assert_eq!(
        get("permissions-policy").as_deref(),
        Some("camera=(), geolocation=(), microphone=(self), payment=(), usb=()")
    );
    assert_eq!(get("cache-control").as_deref(), Some("private, no-store"));
    assert_eq!(
        get("strict-transport-security"),
        None,
        "no HSTS over plain HTTP"
    );

    let (_, h, _) = b.raw("GET", "/", None, None, &[]);
    let csp = h
        .iter()
        .find(|(k, _)| k == "content-security-policy")
        .map(|(_, v)| v.clone());
    assert_eq!(
        csp.as_deref(),
        Some("default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; object-src 'none'; form-action 'self'; frame-ancestors 'none'")
    );
    let (_, h, _) = b.raw(
        "GET",
        "/api/health",
        None,
        None,
        &[("X-Forwarded-Proto", "https")],
    );
    let hsts = h
        .iter()
        .find(|(k, _)| k == "strict-transport-security")
        .map(|(_, v)| v.clone());
    assert_eq!(hsts.as_deref(), Some("max-age=31536000"));

    let (s, _) = b.request(
        "GET",
        "/api/health",
        None,
        None,
        &[("Host", "evil.example")],
    );
    assert_eq!(s, 403, "foreign Host refused");
    let (s, _) = b.request(
        "POST",
        "/api/pair",
        None,
        Some(&json!({"code": "x", "label": "y"})),
        &[("Origin", "http://evil.example")],
    );
    assert_eq!(s, 403, "cross-origin write refused");
    let origin = format!("http://127.0.0.1:{}", b.port);
    let (s, v) = b.request(
        "POST",
        "/api/pair",
        None,
        Some(&json!({"code": "AAAA-AAAA", "label": "y"})),
        &[("Origin", &origin)],
    );
    assert_eq!(
        (s, v["error"].as_str()),
        (403, Some("invalid or expired code")),
        "same origin passes the check"
    );
}

#[test]
fn the_app_s_files_are_gzipped_and_api_answers_never_are() {
    // Decision 0046: an answer that mixes a secret with text someone else chose must not be
    // compressed (its length would tell the secret, BREACH); the app's own files may be.
    let b = TestBridge::start();
    let token = b.pair("phone", "full");
    let gz = [("Accept-Encoding", "gzip, deflate, br")];
    let get = |h: &[(String, String)], name: &str| {
        h.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    };
    let (s, h, _) = b.raw("GET", "/app.js", None, None, &gz);
    assert_eq!(s, 200);
    assert_eq!(get(&h, "content-encoding").as_deref(), Some("gzip"));
    assert_eq!(get(&h, "vary").as_deref(), Some("accept-encoding"));
    let (_, h, body) = b.raw("GET", "/app.js", None, None, &[]);
    assert_eq!(get(&h, "content-encoding"), None, "no gzip unasked");
    assert!(body.contains("import"), "the script itself");
    assert!(
        !body.lines().any(|l| l.trim_start().starts_with("//")),
        "served without its comments"
    );
    for path in ["/api/health", "/api/panes", "/api/devices"] {
        let (s, h, _) = b.raw("GET", path, Some(&token), None, &gz);
        assert_eq!(s, 200, "{path}");
        assert_eq!(
            get(&h, "content-encoding"),
            None,
            "{path} is never compressed"
        );
    }
}

#[test]
fn a_secret_wrapped_across_rows_leaks_neither_half() {
    let b = TestBridge::start();
    let token = b.pair("phone", "full");
    let pane = b.first_tmux_pane(&token);
    let tmux = b.tmux.as_ref().expect("tmux");
    let out = tmux
        .cmd()
        .args(["resize-window", "-t", "main", "-x", "24"])
        .output()
        .expect("resize");
    assert!(out.status.success(), "{out:?}");
    let secret_tail = "abcdefghijklmnopqrstuvwxyz0123456789";
    let (s, _) = b.post(
        &format!("/api/panes/local/{pane}/input"),
        Some(&token),
        &json!({"text": "clear; printf '%s%s\\n' ghp_ abcdefghijklmnopqrstuvwxyz0123456789", "keys": ["Enter"]}),
    );
    assert_eq!(s, 200);
    let lines = wait_for(Duration::from_secs(10), || {
        let (_, v) = b.get(&format!("/api/panes/local/{pane}"), Some(&token));
        let lines: Vec<String> = v["lines"]
            .as_array()?
            .iter()
            .filter_map(|l| l.as_str().map(str::to_string))
            .collect();
        lines.iter().any(|l| l.starts_with("ghp_")).then_some(lines)
    })
    .expect("the printed token shows (wrapped) on the 24-column pane");
    let start = lines
        .iter()
        .position(|l| l.starts_with("ghp_"))
        .expect("row");
    assert!(
        lines[start].chars().count() == 24,
        "the token wraps: {lines:?}"
    );
    // Neither row holds a run of the secret's characters: both halves are masked.
    for row in &lines[start..=start + 1] {
        for window in secret_tail.as_bytes().windows(6) {
            let w = std::str::from_utf8(window).expect("ascii");
            assert!(!row.contains(w), "row {row:?} leaks {w:?}");
        }
    }
}

#[test]
fn pair_prints_a_code_and_a_qr_link() {
    let b = TestBridge::start_with(support::Opts::default());
    let out = b.cli_ok(&["pair"]);
    assert!(out.contains("Pairing code: "), "{out}");
    let code = out
        .lines()
        .find_map(|l| l.strip_prefix("Pairing code: "))
        .expect("code line")
        .trim()
        .to_string();
    assert_eq!(code.len(), 9, "XXXX-XXXX: {code}");
    assert!(
        out.contains(&format!("/#pair={}", code.replace('-', ""))),
        "{out}"
    );
    assert!(
        out.contains('█') || out.contains('▀') || out.contains('▄'),
        "a terminal QR code"
    );
    let (s, _) = b.post(
        "/api/pair",
        None,
        &json!({"code": code, "label": "qr-phone"}),
    );
    assert_eq!(s, 200);
}

#[test]
fn a_private_key_block_on_screen_is_masked_across_lines() {
    let b = TestBridge::start();
    let token = b.pair("phone", "full");
    let pane = b.first_tmux_pane(&token);
    let body = [
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj",
        "MzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu",
        "NMoSfm76oqFvAp8Gy0iz5sxjZmSnXyCdPEovGhLa0VzMaQ8s+CLOyS56YyCFGeJZ",
    ];
    let key = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        body.join("\n")
    );
    let file = b.dir.path().join("key.pem");
    std::fs::write(&file, key).expect("write key");
    let (s, _) = b.post(
        &format!("/api/panes/local/{pane}/input"),
        Some(&token),
        &json!({"text": format!("clear; cat {}", file.display()), "keys": ["Enter"]}),
    );
    assert_eq!(s, 200);
    let text = wait_screen(&b, &token, &pane, "-----END PRIVATE KEY-----");
    assert!(text.contains("-----BEGIN PRIVATE KEY-----"), "{text}");
    for line in body {
        assert!(!text.contains(&line[8..24]), "key body leaked: {text}");
    }
    assert!(text.contains("••••••••"), "{text}");
}

#[test]
fn the_language_files_are_app_files_open_to_any_caller_of_this_host_and_hold_nothing_private() {
    // Decision 0081: `/lang/` serves the phone app's translations — static files built into the
    // binary, like the shell (no tier: a phone needs them before it is paired). They pass the
    // same Host check and carry the same security headers as every answer.
    let b = TestBridge::start();
    let (s, h, body) = b.raw("GET", "/lang/index.json", None, None, &[]);
    assert_eq!(s, 200);
    assert!(
        h.iter().any(|(k, _)| k == "content-security-policy"),
        "the security headers: {h:?}"
    );
    let index: Value = serde_json::from_str(&body).expect("a JSON list");
    let codes: Vec<&str> = index
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|l| l["code"].as_str())
        .collect();
    assert_eq!(codes, ["de", "ja"]);
    let (s, _, de) = b.raw("GET", "/lang/de.json", None, None, &[]);
    assert_eq!(s, 200);
    let de: Value = serde_json::from_str(&de).expect("de.json");
    assert_eq!(de["name"], "Deutsch");
    // Nothing but the app's own words: no name of this machine, no path of its state.
    let text = de.to_string();
    assert!(!text.contains("testbox"));
    assert!(!text.contains(&b.dir.path().display().to_string()));
    for path in ["/lang/fr.json", "/lang/de", "/lang/DE.json"] {
        let (s, _, _) = b.raw("GET", path, None, None, &[]);
        assert_eq!(s, 404, "{path}");
    }
    let (s, _) = b.request(
        "GET",
        "/lang/de.json",
        None,
        None,
        &[("Host", "evil.example")],
    );
    assert_eq!(s, 403, "a foreign Host is refused here too");
}
