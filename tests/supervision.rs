//! The supervision tree keeps the bridge serving when a child fails (SPEC §1).
//!
//! The fault is injected in-process through the test-only `fault-injection` cargo feature (the
//! shipped binary has no such switch): the Panes actor is told to fail while answering the next
//! snapshot request.
#![cfg(feature = "fault-injection")]

mod support;

use std::time::Duration;

use collie::config::{Overrides, Settings};
use serde_json::Value;
use support::{wait_for, Tmux};

fn get(url: &str, token: &str) -> (u16, Value) {
    let r = ureq::get(url)
        .set("Authorization", &format!("Bearer {token}"))
        .timeout(Duration::from_secs(15))
        .call();
    let resp = match r {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{url}: {e}"),
    };
    let status = resp.status();
    (status, resp.into_json().unwrap_or(Value::Null))
}

fn settings(dir: &std::path::Path, tmux: &Tmux) -> Settings {
    let mut env = std::collections::BTreeMap::new();
    env.insert("HOME".to_string(), dir.join("home").display().to_string());
    env.insert(
        "COLLIE_STATE_DIR".into(),
        dir.join("state").display().to_string(),
    );
    env.insert(
        "COLLIE_CONFIG_DIR".into(),
        dir.join("config").display().to_string(),
    );
    env.insert(
        "COLLIE_TMUX_SOCKETS".into(),
        tmux.socket.display().to_string(),
    );
    Settings::resolve(
        &Overrides {
            port: Some(0),
            name: Some("supervised".into()),
            host: None,
        },
        &env,
    )
    .expect("settings")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_child_is_restarted_and_the_in_flight_request_is_told() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Keep the default tmux socket away from any real server of the user.
    std::env::set_var("TMUX_TMPDIR", dir.path().join("tmuxdefault"));
    std::fs::create_dir_all(dir.path().join("tmuxdefault")).expect("mkdir");
    let tmux = Tmux::start(dir.path());
    let bridge = collie::bridge::start(settings(dir.path(), &tmux))
        .await
        .expect("start");
    let base = format!("http://{}", bridge.http_addr);

    let code = bridge.ctx.new_code("full", None, None).await.expect("code");
    let claimed = bridge
        .ctx
        .claim(code.code, "phone".into(), "127.0.0.1".parse().expect("ip"))
        .await
        .expect("claim");
    let token = claimed.token.expose_secret().to_string();

    let (b2, t2) = (base.clone(), token.clone());
    let pane = tokio::task::spawn_blocking(move || {
        wait_for(Duration::from_secs(10), || {
            let (_, v) = get(&format!("{b2}/api/panes"), &t2);
            v["panes"].as_array()?.first()?["pane"]
                .as_str()
                .map(str::to_string)
        })
    })
    .await
    .expect("join")
    .expect("a tmux pane");

    // Arm the fault, then make the request that trips it.
    assert!(
        bridge.ctx.fail_next_snapshot().await,
        "the panes actor runs"
    );
    let url = format!("{base}/api/panes/local/{pane}");
    let (u, t) = (url.clone(), token.clone());
    let (s, v) = tokio::task::spawn_blocking(move || get(&u, &t))
        .await
        .expect("join");
    assert_eq!(
        (s, v["error"].as_str()),
        (503, Some("restarting, try again"))
    );

    // The restarted child serves the next request.
    let (u, t) = (url.clone(), token.clone());
    let served = tokio::task::spawn_blocking(move || {
        wait_for(Duration::from_secs(10), || {
            let (s, _) = get(&u, &t);
            (s == 200).then_some(())
        })
    })
    .await
    .expect("join");
    assert!(
        served.is_some(),
        "the bridge kept serving after the restart"
    );
    let restarts = bridge.restarts().await;
    assert!(
        restarts.iter().any(|(name, n)| *name == "panes" && *n == 1),
        "{restarts:?}"
    );
    bridge.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_than_five_failures_in_a_minute_stop_the_bridge() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::env::set_var("TMUX_TMPDIR", dir.path().join("tmuxdefault"));
    std::fs::create_dir_all(dir.path().join("tmuxdefault")).expect("mkdir");
    let tmux = Tmux::start(dir.path());
    let bridge = collie::bridge::start(settings(dir.path(), &tmux))
        .await
        .expect("start");
    let ctx = bridge.ctx.clone();
    for _ in 0..6 {
        // Wait for a live child, arm the fault, trip it.
        if !ctx.fail_next_snapshot().await {
            break;
        }
        let r = ctx
            .snapshot(&collie::app::Caller::cli(), "local", "t1-0".into(), 0)
            .await;
        assert!(r.is_err());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let why = tokio::time::timeout(Duration::from_secs(10), bridge.run_until_signal())
        .await
        .expect("the bridge stopped by itself")
        .expect("run");
    let why = why.expect("a give-up reason");
    assert!(why.contains("panes"), "names the child: {why}");
}
