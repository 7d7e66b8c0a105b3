//! `POST /mcp` answers every refusal in JSON (SPEC §3.2). The attack (issue 26, hole 7): malformed
//! JSON, a batch, a missing `Accept`, a wrong `Content-Type`, GET and DELETE got rmcp's plain-text
//! 400/406/415/405 carrying its parser's text. Each is sent here by a paired device to a real bridge.

mod support;

use std::time::Duration;

use serde_json::Value;
use support::{Opts, TestBridge};

/// One request to `/mcp` with a raw body and exactly these headers (besides Authorization and Host).
fn send(
    b: &TestBridge,
    method: &str,
    token: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> (u16, Option<String>, String) {
    let mut req = ureq::request(method, &b.url("/mcp"))
        .timeout(Duration::from_secs(15))
        .set("Authorization", &format!("Bearer {token}"));
    for (k, v) in headers {
        req = req.set(k, v);
    }
    let result = match body {
        Some(text) => req.send_string(text),
        None => req.call(),
    };
    let resp = match result {
        Ok(r) | Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{method} /mcp: {e}"),
    };
    let status = resp.status();
    let kind = resp.header("content-type").map(str::to_owned);
    (status, kind, resp.into_string().unwrap_or_default())
}

const JSON: (&str, &str) = ("Content-Type", "application/json");

/// One refused request: method, headers, body, the status it must get.
type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, Option<&'a str>, u16);
const ACCEPT: (&str, &str) = ("Accept", "application/json, text/event-stream");

#[test]
fn every_refusal_of_mcp_is_json_without_the_transport_s_words() {
    let b = TestBridge::start_with(Opts::default());
    let full = b.pair("agent-phone", "full");
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let batch = format!("[{list},{list}]");
    let cases: Vec<Case> = vec![
        (
            "POST",
            vec![JSON, ACCEPT],
            Some("{\"jsonrpc\": \"2.0\", "),
            400,
        ),
        ("POST", vec![JSON, ACCEPT], Some(&batch), 400),
        ("POST", vec![JSON, ACCEPT], Some("null"), 400),
        ("POST", vec![JSON], Some(list), 406),
        (
            "POST",
            vec![("Content-Type", "text/plain"), ACCEPT],
            Some(list),
            415,
        ),
        ("GET", vec![ACCEPT], None, 405),
        ("DELETE", vec![ACCEPT], None, 405),
    ];
    for (method, headers, body, status) in cases {
        let (got, kind, text) = send(&b, method, &full, &headers, body);
        let what = format!("{method} {headers:?} {body:?} → {got} {kind:?} {text}");
        assert_eq!(got, status, "{what}");
        assert_eq!(kind.as_deref(), Some("application/json"), "{what}");
        let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {what}"));
        let message = v["error"]
            .as_str()
            .or_else(|| v["error"]["message"].as_str())
            .unwrap_or_else(|| panic!("an error string: {what}"));
        for transport_words in [
            "Not Acceptable:",
            "Unsupported Media Type:",
            "expected",
            "line ",
        ] {
            assert!(!message.contains(transport_words), "{what}");
        }
        if status == 400 {
            assert_eq!(v["jsonrpc"], "2.0", "a JSON-RPC error object: {what}");
            assert_eq!(v["error"]["code"], -32700, "{what}");
        }
    }
    // The same door still serves a well-formed request.
    let (got, _, text) = send(&b, "POST", &full, &[JSON, ACCEPT], Some(list));
    assert_eq!(got, 200, "{text}");
    assert!(text.contains("read_file"), "{text}");
}
