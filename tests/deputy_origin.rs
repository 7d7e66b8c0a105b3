//! The one cross origin the phone's failover opens (SPEC §13, decision 0069), black-box: a real
//! lead and a real member on loopback with real QUIC. Only a bridge holding a deputy's registry
//! copy answers CORS, only for the lead's origin, only on the API, never with a wildcard or
//! credentials; the lead's page may connect to the deputy's origin and nowhere else new. Every
//! other origin, a bridge without a copy, and a deputy whose copy was taken back open nothing.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{crew_bridge, json_of, wait_for, TestBridge};

/// `collie crew status --json`'s deputy, if any.
fn deputy_of(b: &TestBridge) -> Value {
    json_of(&b.cli_ok(&["crew", "status", "--json"]))["deputy"].clone()
}

/// Header `name` of an answer.
fn header<'a>(h: &'a [(String, String)], name: &str) -> Option<&'a str> {
    h.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// A browser's preflight for a GET with a token from `origin`.
fn preflight(b: &TestBridge, path: &str, origin: &str) -> (u16, Vec<(String, String)>) {
    let (s, h, _) = b.raw(
        "OPTIONS",
        path,
        None,
        None,
        &[
            ("Origin", origin),
            ("Access-Control-Request-Method", "GET"),
            ("Access-Control-Request-Headers", "authorization"),
        ],
    );
    (s, h)
}

/// No CORS header at all in `h` (what a browser reads as "refused").
fn closed(h: &[(String, String)], what: &str) {
    for (k, v) in h {
        assert!(
            !k.starts_with("access-control-"),
            "{what}: {k}: {v} opens a cross origin"
        );
    }
}

#[test]
fn only_a_deputy_answers_the_lead_s_origin_across_origins_and_nothing_else_opens() {
    let lead = crew_bridge(false, &[]);
    let web1 = crew_bridge(true, &[]);
    lead.cli_ok(&["crew", "init"]);
    let phone = lead.pair("phone", "full");
    web1.cli_ok(&["crew", "join", &lead.invite(), "--name", "web-1"]);
    lead.wait_online(&phone, &["web-1"]);
    let lead_origin = lead.url("");
    let web1_origin = web1.url("");

    // Before any deputy: no bridge answers another origin, and the lead's page connects to itself.
    let (_, h) = preflight(&web1, "/api/panes", &lead_origin);
    closed(&h, "a member without a copy, asked from the lead's origin");
    let (_, h) = preflight(&lead, "/api/panes", &web1_origin);
    closed(&h, "the lead, asked from a member's origin");
    let (s, v) = web1.request(
        "POST",
        "/api/panes",
        Some(&phone),
        Some(&json!({})),
        &[("Origin", &lead_origin)],
    );
    assert_eq!(
        (s, v["error"].as_str()),
        (403, Some("origin not allowed")),
        "a write from the lead's page is refused by a member without a copy"
    );
    let (_, h, _) = lead.raw("GET", "/", None, None, &[]);
    assert!(
        header(&h, "content-security-policy").is_some_and(|p| p.contains("connect-src 'self';")),
        "{h:?}"
    );

    lead.cli_ok(&["crew", "deputy", "set", "web-1"]);
    wait_for(Duration::from_secs(20), || {
        let on_lead = deputy_of(&lead);
        let version = deputy_of(&web1)["version"].as_u64()?;
        (on_lead["acknowledged"].as_u64() == Some(version)).then_some(())
    })
    .expect("the deputy holds the copy");

    // The lead's page may now connect to the deputy's origin, and to nothing else new.
    let policy = wait_for(Duration::from_secs(10), || {
        let (_, h, _) = lead.raw("GET", "/", None, None, &[]);
        header(&h, "content-security-policy")
            .filter(|p| p.contains(&web1_origin))
            .map(str::to_owned)
    })
    .expect("the shell's policy names the deputy once it reported its URL");
    assert_eq!(
        policy,
        format!("default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self' {web1_origin}; img-src 'self' data:; base-uri 'none'; object-src 'none'; form-action 'self'; frame-ancestors 'none'")
    );

    // The deputy answers the lead's origin's preflight, exactly.
    let (s, h) = preflight(&web1, "/api/panes", &lead_origin);
    assert_eq!(s, 204, "{h:?}");
    assert_eq!(
        header(&h, "access-control-allow-origin"),
        Some(lead_origin.as_str())
    );
    assert!(header(&h, "vary").is_some_and(|v| v.to_ascii_lowercase().contains("origin")));
    let allowed = header(&h, "access-control-allow-headers").unwrap_or("");
    for name in ["Authorization", "Content-Type"] {
        assert!(allowed.contains(name), "{allowed}");
    }
    assert!(header(&h, "access-control-allow-methods").is_some_and(|m| m.contains("POST")));
    assert_eq!(header(&h, "access-control-allow-credentials"), None);

    // The real answer names the lead's origin (here: the lead is up, so `standby`, readable by the
    // lead's page so it goes back).
    let (s, h, body) = web1.raw(
        "GET",
        "/api/panes",
        Some(&phone),
        None,
        &[("Origin", &lead_origin)],
    );
    let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    assert_eq!(
        (s, v["error"].as_str()),
        (503, Some("standby: the lead is up"))
    );
    assert_eq!(v["lead"], lead_origin);
    assert_eq!(
        header(&h, "access-control-allow-origin"),
        Some(lead_origin.as_str())
    );
    // A write from the lead's page passes the Origin check (and meets the standby rule).
    let (s, v) = web1.request(
        "POST",
        "/api/panes",
        Some(&phone),
        Some(&json!({})),
        &[("Origin", &lead_origin)],
    );
    assert_ne!(v["error"], "origin not allowed", "{s} {v}");

    // Every other origin: no CORS, writes refused. Another port of the lead's host, another
    // scheme, `null`, a suffix, a wildcard-looking one.
    let port = lead.port.wrapping_add(1);
    let others = [
        "http://evil.example".to_owned(),
        format!("http://127.0.0.1:{port}"),
        lead_origin.replace("http://", "https://"),
        format!("{lead_origin}.evil.example"),
        "null".to_owned(),
        "*".to_owned(),
    ];
    for other in &others {
        let (s, h) = preflight(&web1, "/api/panes", other);
        closed(&h, &format!("preflight from {other}"));
        assert_ne!(s, 204, "preflight from {other}");
        let (_, h, _) = web1.raw(
            "GET",
            "/api/machines",
            Some(&phone),
            None,
            &[("Origin", other)],
        );
        closed(&h, &format!("GET from {other}"));
        let (s, v) = web1.request(
            "POST",
            "/api/panes",
            Some(&phone),
            Some(&json!({})),
            &[("Origin", other)],
        );
        assert_eq!(
            (s, v["error"].as_str()),
            (403, Some("origin not allowed")),
            "a write from {other}"
        );
    }
    // Only the API: the app's files and `/mcp` open to no other origin.
    let (_, h, _) = web1.raw("GET", "/", None, None, &[("Origin", &lead_origin)]);
    closed(&h, "the deputy's own shell");
    let (_, h) = preflight(&web1, "/mcp", &lead_origin);
    closed(&h, "/mcp");
    // The lead itself holds no copy: it answers no cross origin, not even its deputy's.
    let (_, h, _) = lead.raw(
        "GET",
        "/api/machines",
        Some(&phone),
        None,
        &[("Origin", &web1_origin)],
    );
    closed(&h, "the lead, asked from the deputy's origin");

    // Taking the deputy back closes the door to the lead's origin, and the lead's policy.
    lead.cli_ok(&["crew", "deputy", "clear"]);
    wait_for(Duration::from_secs(20), || {
        let (_, h) = preflight(&web1, "/api/panes", &lead_origin);
        (!h.iter().any(|(k, _)| k.starts_with("access-control-"))).then_some(())
    })
    .expect("a member no longer the deputy answers no cross origin");
    let (_, h, _) = lead.raw("GET", "/", None, None, &[]);
    assert!(
        header(&h, "content-security-policy").is_some_and(|p| p.contains("connect-src 'self';")),
        "{h:?}"
    );
}
