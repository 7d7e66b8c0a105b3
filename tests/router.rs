//! The phone API's `Router`, called in-process with `oneshot` over an `App` built from the real
//! actors in a temp dir (STYLE.md, test layer 3): one test per route group, each with its tier gate
//! or its JSON refusal. No socket: what is under test is the router, its middlewares and the
//! application behind them — the black-box tests (`api.rs`, `hardening.rs`) cover the server.

mod support;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, Method, Request, StatusCode};
use axum::Router;
use collie::bridge::RunningBridge;
use collie::config::{Overrides, Settings};
use serde_json::{json, Value};
use support::Tmux;
use tower::ServiceExt;

/// A bridge of real actors in `dir`; its HTTP server runs too, but these tests never use it.
async fn bridge(dir: &Path, tmux: Option<&Tmux>) -> RunningBridge {
    // The default tmux socket is a directory with no server in it, the same for every test of
    // this file (they may run as threads of one process).
    let no_server = std::env::temp_dir().join("collie-router-tests-no-tmux");
    std::fs::create_dir_all(&no_server).expect("mkdir");
    std::env::set_var("TMUX_TMPDIR", &no_server);
    let mut env = std::collections::BTreeMap::new();
    let path = |p: PathBuf| p.display().to_string();
    env.insert("HOME".to_owned(), path(dir.join("home")));
    env.insert("COLLIE_STATE_DIR".to_owned(), path(dir.join("state")));
    env.insert("COLLIE_CONFIG_DIR".to_owned(), path(dir.join("config")));
    if let Some(tmux) = tmux {
        env.insert("COLLIE_TMUX_SOCKETS".to_owned(), path(tmux.socket.clone()));
    }
    let overrides = Overrides {
        port: Some(0),
        name: Some("routed".into()),
        host: None,
    };
    let settings = Settings::resolve(&overrides, &env).expect("settings");
    collie::bridge::start(settings).await.expect("start")
}

/// One request through the router, from a phone on this machine.
async fn call(
    router: &Router,
    method: Method,
    uri: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut req = Request::builder()
        .method(method)
        .uri(uri)
        .header(header::HOST, "127.0.0.1");
    if let Some(token) = token {
        req = req.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let body = match body {
        Some(v) => {
            req = req.header(header::CONTENT_TYPE, "application/json");
            Body::from(v.to_string())
        }
        None => Body::empty(),
    };
    let mut req = req.body(body).expect("request");
    let peer: SocketAddr = "127.0.0.1:50000".parse().expect("addr");
    req.extensions_mut().insert(ConnectInfo(peer));
    let resp = router.clone().oneshot(req).await.expect("infallible");
    let status = resp.status();
    // A stream that opened never ends on its own: say so instead of reading it.
    let streaming = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if streaming {
        return (status, json!("event-stream"));
    }
    let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
        .await
        .expect("body");
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// Pairs a device of `tier` through the router; its token.
async fn pair(bridge: &RunningBridge, router: &Router, label: &str, tier: &str) -> String {
    let code = bridge.ctx.new_code(tier, None, None).await.expect("code");
    let (status, v) = call(
        router,
        Method::POST,
        "/api/pair",
        None,
        Some(json!({ "code": code.code, "label": label })),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    v["token"].as_str().expect("a token").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn meta_routes_name_no_one_and_need_a_device() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bridge = bridge(dir.path(), None).await;
    let router = collie::http::router(bridge.ctx.clone());

    let (status, health) = call(&router, Method::GET, "/api/health", None, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(health["crew_mode"], "solo");
    assert_eq!(health["audit_breaks"], 0);

    let (status, v) = call(&router, Method::GET, "/api/machines", None, None).await;
    assert_eq!(
        (status, v),
        (
            StatusCode::FORBIDDEN,
            json!({ "error": "device not paired" })
        )
    );
    let token = pair(&bridge, &router, "phone", "read").await;
    let (status, v) = call(&router, Method::GET, "/api/machines", Some(&token), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v["machines"][0]["name"], "routed");
    let (status, v) = call(&router, Method::GET, "/api/settings", Some(&token), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v["tiers"], json!(["read", "files", "full"]));
    bridge.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn device_routes_pair_list_and_keep_others_for_full() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bridge = bridge(dir.path(), None).await;
    let router = collie::http::router(bridge.ctx.clone());
    let reader = pair(&bridge, &router, "reader", "read").await;
    let admin = pair(&bridge, &router, "admin", "full").await;

    let (status, v) = call(&router, Method::GET, "/api/devices", Some(&reader), None).await;
    assert_eq!(status, StatusCode::OK);
    let labels: Vec<&str> = v["devices"]
        .as_array()
        .expect("devices")
        .iter()
        .filter_map(|d| d["label"].as_str())
        .collect();
    assert_eq!(labels.len(), 2, "{v}");

    // A read device may not revoke another.
    let (status, v) = call(
        &router,
        Method::DELETE,
        "/api/devices/admin",
        Some(&reader),
        None,
    )
    .await;
    assert_eq!(
        (status, v),
        (
            StatusCode::FORBIDDEN,
            json!({ "error": "insufficient tier" })
        )
    );
    // A full one may; the revoked token is refused at once.
    let (status, _) = call(
        &router,
        Method::DELETE,
        "/api/devices/reader",
        Some(&admin),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, v) = call(&router, Method::GET, "/api/devices", Some(&reader), None).await;
    assert_eq!(
        (status, v),
        (
            StatusCode::FORBIDDEN,
            json!({ "error": "device not paired" })
        )
    );
    // A bad code is the exact refusal, in JSON.
    let (status, v) = call(
        &router,
        Method::POST,
        "/api/pair",
        None,
        Some(json!({ "code": "XXXX-XXXX", "label": "x" })),
    )
    .await;
    assert_eq!(
        (status, v),
        (
            StatusCode::FORBIDDEN,
            json!({ "error": "invalid or expired code" })
        )
    );
    bridge.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pane_routes_read_a_real_pane_and_gate_writes_by_tier() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tmux = Tmux::start(dir.path());
    let bridge = bridge(dir.path(), Some(&tmux)).await;
    let router = collie::http::router(bridge.ctx.clone());
    let reader = pair(&bridge, &router, "reader", "read").await;

    // The mirror finds the tmux pane (the first scan may take a moment).
    let mut pane = None;
    for _ in 0..100 {
        let (_, v) = call(&router, Method::GET, "/api/panes", Some(&reader), None).await;
        pane = v["panes"][0]["pane"].as_str().map(str::to_owned);
        if pane.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let pane = pane.expect("the tmux pane is listed");
    let (status, screen) = call(
        &router,
        Method::GET,
        &format!("/api/panes/local/{pane}?scrollback=5"),
        Some(&reader),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(screen["lines"].is_array(), "{screen}");

    // The tier gate runs before the handler: a read device typing gets `insufficient tier`,
    // even for a pane that does not exist.
    for target in [pane.as_str(), "t9-99"] {
        let (status, v) = call(
            &router,
            Method::POST,
            &format!("/api/panes/local/{target}/input"),
            Some(&reader),
            Some(json!({ "text": "ls" })),
        )
        .await;
        assert_eq!(
            (status, v),
            (
                StatusCode::FORBIDDEN,
                json!({ "error": "insufficient tier" })
            )
        );
    }
    // A bad query answers in JSON.
    let (status, v) = call(
        &router,
        Method::GET,
        &format!("/api/panes/local/{pane}?scrollback=lots"),
        Some(&reader),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("invalid query string")),
        "{v}"
    );
    bridge.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_route_opens_for_a_reader_and_refuses_a_stranger() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bridge = bridge(dir.path(), None).await;
    let router = collie::http::router(bridge.ctx.clone());
    let (status, v) = call(
        &router,
        Method::GET,
        "/api/panes/local/p1/stream",
        None,
        None,
    )
    .await;
    assert_eq!(
        (status, v),
        (
            StatusCode::FORBIDDEN,
            json!({ "error": "device not paired" })
        )
    );
    let reader = pair(&bridge, &router, "reader", "read").await;
    let (status, v) = call(
        &router,
        Method::GET,
        "/api/panes/local/p1/stream",
        Some(&reader),
        None,
    )
    .await;
    assert_eq!(
        (status, v),
        (StatusCode::NOT_FOUND, json!({ "error": "no such pane" }))
    );
    bridge.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn walky_routes_list_cards_and_refuse_a_malformed_id() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bridge = bridge(dir.path(), None).await;
    let router = collie::http::router(bridge.ctx.clone());
    let reader = pair(&bridge, &router, "reader", "read").await;
    let (status, v) = call(&router, Method::GET, "/api/walky", Some(&reader), None).await;
    assert_eq!((status, v), (StatusCode::OK, json!({ "messages": [] })));
    let (status, v) = call(
        &router,
        Method::GET,
        "/api/walky/not-an-id",
        Some(&reader),
        None,
    )
    .await;
    assert_eq!(
        (status, v),
        (
            StatusCode::BAD_REQUEST,
            json!({ "error": "invalid message id: 32 hex digits" })
        )
    );
    let (status, v) = call(
        &router,
        Method::GET,
        "/api/walky/00000000000000000000000000000000?machine=local&extra=1",
        Some(&reader),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("invalid query string")),
        "{v}"
    );
    bridge.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn card_routes_list_and_refuse_answers_to_no_card_and_bad_bodies() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bridge = bridge(dir.path(), None).await;
    let router = collie::http::router(bridge.ctx.clone());
    let reader = pair(&bridge, &router, "reader", "read").await;
    let owner = pair(&bridge, &router, "owner", "full").await;
    let (status, v) = call(&router, Method::GET, "/api/cards", Some(&reader), None).await;
    assert_eq!(
        (status, v),
        (StatusCode::OK, json!({ "cards": [], "receipts": [] }))
    );
    let (status, v) = call(
        &router,
        Method::GET,
        "/api/cards/stream",
        Some(&reader),
        None,
    )
    .await;
    assert_eq!((status, v), (StatusCode::OK, json!("event-stream")));
    let (status, v) = call(&router, Method::GET, "/api/cards/stream", None, None).await;
    assert_eq!(
        (status, v),
        (
            StatusCode::FORBIDDEN,
            json!({ "error": "device not paired" })
        )
    );
    let answer = json!({ "option": "allow", "shown": "00" });
    let uri = "/api/cards/0123456789abcdef0123456789abcdef/answer";
    let (status, v) = call(
        &router,
        Method::POST,
        uri,
        Some(&reader),
        Some(answer.clone()),
    )
    .await;
    assert_eq!(
        (status, v),
        (
            StatusCode::FORBIDDEN,
            json!({ "error": "insufficient tier" })
        )
    );
    let (status, v) = call(&router, Method::POST, uri, Some(&owner), Some(answer)).await;
    assert_eq!(
        (status, v),
        (StatusCode::GONE, json!({ "error": "card closed" }))
    );
    let (status, v) = call(
        &router,
        Method::POST,
        uri,
        Some(&owner),
        Some(json!({ "option": "allow" })),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");
    assert!(
        v["error"].as_str().is_some_and(|e| e.contains("shown")),
        "{v}"
    );
    bridge.shutdown().await;
}

/// A concrete path for a registry pattern: placeholders become values no handler finds.
fn concrete(pattern: &str) -> String {
    pattern
        .replace("{m}", "local")
        .replace("{p}", "t0-99")
        .replace("{label}", "nobody")
        .replace("{id}", "00000000000000000000000000000000")
}

/// Every route of the tier registry (`src/http/tiers.rs`), tried by a device of each tier: one
/// below the route's tier is refused `403 insufficient tier` before any handler runs, and one at
/// it reaches the route's handler — the router serves every registered method and path (an
/// unrouted one would answer the fallback's `404 not found` or `405`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_registered_route_is_served_and_gated_by_its_tier() {
    use collie::http::tiers::{Access, ROUTES};
    use collie_actors::pairing::Tier;

    let dir = tempfile::tempdir().expect("tempdir");
    let bridge = bridge(dir.path(), None).await;
    let router = collie::http::router(bridge.ctx.clone());
    let tokens = [
        (Tier::Read, pair(&bridge, &router, "reader", "read").await),
        (Tier::Files, pair(&bridge, &router, "filer", "files").await),
        (Tier::Full, pair(&bridge, &router, "owner", "full").await),
    ];
    for (method, pattern, access) in ROUTES {
        let Access::Device(needed) = access else {
            continue;
        };
        let path = concrete(pattern);
        for (tier, token) in &tokens {
            let (status, v) = call(&router, method.clone(), &path, Some(token), None).await;
            if tier < needed {
                assert_eq!(
                    (status, &v),
                    (
                        StatusCode::FORBIDDEN,
                        &json!({ "error": "insufficient tier" })
                    ),
                    "{method} {pattern} as {tier:?}"
                );
            } else {
                assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {pattern}");
                assert_ne!(v, json!({ "error": "not found" }), "{method} {pattern}");
                // Revoking another device needs `full`: that handler refuses lower tiers itself.
                if *pattern != "/api/devices/{label}" || *tier == Tier::Full {
                    assert_ne!(
                        v,
                        json!({ "error": "insufficient tier" }),
                        "{method} {pattern}"
                    );
                }
            }
        }
    }
    bridge.shutdown().await;
}
