//! The update check (SPEC §17) against a local release host: HTTPS on loopback with a certificate
//! from a throwaway CA, answering GitHub's `releases/latest` document, reached through the
//! bridge's own HTTPS client. The host's address reaches the bridge only through the test-only
//! `fault-injection` feature (`COLLIE_TEST_UPDATE_URL`, `COLLIE_TEST_UPDATE_CA`); a shipped build
//! asks the release host Cargo.toml names. Every other test bridge runs with the check off.
#![cfg(feature = "fault-injection")]

#[path = "support/durable_agent.rs"]
mod durable_agent;
mod support;
#[path = "support/test_ca.rs"]
mod test_ca;

use std::time::Duration;

use durable_agent::{Answer, ScriptedAgent};
use serde_json::json;
use support::{wait_for, Opts, TestBridge};

fn release_host(dir: &std::path::Path, tag: &'static str) -> ScriptedAgent {
    ScriptedAgent::https(dir, &["127.0.0.1"], move |_| Answer::Reply {
        status: 200,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: serde_json::to_vec(&json!({"tag_name": tag, "name": tag, "body": "notes"}))
            .expect("json"),
        wire: false,
    })
}

fn bridge_asking(host: &ScriptedAgent, check: &str) -> TestBridge {
    let ca = host.ca_file.as_ref().expect("an HTTPS host");
    TestBridge::start_with(Opts {
        env: vec![
            ("COLLIE_UPDATE_CHECK".into(), check.into()),
            (
                "COLLIE_TEST_UPDATE_URL".into(),
                format!("{}/repos/collie-dev/collie/releases/latest", host.url()),
            ),
            ("COLLIE_TEST_UPDATE_CA".into(), ca.display().to_string()),
        ],
        ..Opts::default()
    })
}

#[test]
fn the_bridge_asks_once_anonymously_and_everyone_is_told() {
    let dir = tempfile::tempdir().expect("tempdir");
    let host = release_host(dir.path(), "v9.9.9");
    let b = bridge_asking(&host, "on");
    let got = wait_for(Duration::from_secs(10), || {
        let got = host.got();
        (!got.is_empty()).then_some(got)
    })
    .expect("the bridge asked the release host at start");
    assert_eq!(got.len(), 1, "{got:?}");
    let req = &got[0];
    assert_eq!(req.method, "GET");
    // Nothing about the machine: the fixed path (no query), the fixed user agent, and only the
    // headers HTTP needs.
    assert_eq!(req.path, "/repos/collie-dev/collie/releases/latest");
    assert_eq!(req.header("user-agent"), Some("collie-update-check"));
    let mut names: Vec<String> = req.headers.iter().map(|(k, _)| k.to_lowercase()).collect();
    names.sort();
    assert_eq!(
        names,
        ["accept", "connection", "host", "user-agent"],
        "{req:?}"
    );
    assert!(req.body.is_empty());

    // The phone's Settings, `collie version` and `collie doctor` say a release is available.
    let token = b.pair("phone", "read");
    let settings = wait_for(Duration::from_secs(10), || {
        let (_, s) = b.get("/api/settings", Some(&token));
        (s["update"]["latest"] == "v9.9.9").then_some(s)
    })
    .expect("settings show the latest release");
    assert_eq!(settings["update"]["check"], "on");
    assert_eq!(settings["update"]["newer"], true);
    let version = b.cli_ok(&["version"]);
    assert!(version.starts_with("collie 0."), "{version}");
    assert!(version.contains("release v9.9.9 is available"), "{version}");
    let doctor = b.cli_ok(&["doctor"]);
    assert!(doctor.contains("release v9.9.9 is available"), "{doctor}");
}

#[test]
fn an_older_or_equal_release_is_up_to_date() {
    let dir = tempfile::tempdir().expect("tempdir");
    let host = release_host(dir.path(), "v0.0.1");
    let b = bridge_asking(&host, "on");
    let token = b.pair("phone", "read");
    let settings = wait_for(Duration::from_secs(10), || {
        let (_, s) = b.get("/api/settings", Some(&token));
        (s["update"]["latest"] == "v0.0.1").then_some(s)
    })
    .expect("settings show the latest release");
    assert_eq!(settings["update"]["newer"], false);
    assert!(b.cli_ok(&["version"]).contains("up to date"));
}

#[test]
fn with_the_check_off_nothing_is_sent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let host = release_host(dir.path(), "v9.9.9");
    let b = bridge_asking(&host, "off");
    let token = b.pair("phone", "read");
    let (_, settings) = b.get("/api/settings", Some(&token));
    assert_eq!(settings["update"]["check"], "off");
    assert!(settings["update"]["latest"].is_null());
    // What the phone's Settings and its Report a problem link show (decision 0082).
    assert_eq!(settings["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(settings["crew_mode"], "solo");
    assert_eq!(
        settings["new_issue"],
        concat!(env!("CARGO_PKG_REPOSITORY"), "/issues/new")
    );
    let version = b.cli_ok(&["version"]);
    assert!(version.contains("update check off"), "{version}");
    // The check would have been the bridge's first act; give a running bridge time to misbehave.
    let sent = wait_for(Duration::from_secs(3), || {
        (!host.got().is_empty()).then_some(())
    });
    assert!(sent.is_none(), "sent with the check off: {:?}", host.got());
    assert!(!b.state().join("update-check.json").exists());
}
