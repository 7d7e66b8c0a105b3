//! The local secret opens only what the CLI reads (SPEC §4.6): `Authorization: Local <secret>` is
//! accepted on an allow-list of GET routes — health, machines, panes and their snapshots, devices,
//! settings, cards — and nowhere else. The attack (issue 26, hole 6): anyone who can read
//! `<state>/local-secret` read the Files view, browse, the starters, the tmux sessions and the
//! recent one-shot commands with it, routes meant for a `files` or `full` device.

mod support;

use collie::http::tiers::{Access, ROUTES};
use support::{url_encode, Opts, TestBridge};

/// The GET routes the local secret may read.
const CLI_READS: &[&str] = &[
    "/api/machines",
    "/api/settings",
    "/api/devices",
    "/api/panes",
    "/api/panes/{m}/{p}",
    "/api/cards",
];

fn local_auth(b: &TestBridge) -> String {
    let secret = std::fs::read_to_string(b.state().join("local-secret")).expect("local secret");
    format!("Local {}", secret.trim())
}

fn get_local(b: &TestBridge, path: &str, auth: &str) -> (u16, serde_json::Value) {
    b.request("GET", path, None, None, &[("Authorization", auth)])
}

#[test]
fn the_files_view_browse_and_starters_refuse_the_local_secret() {
    let b = TestBridge::start_with(Opts::default());
    let auth = local_auth(&b);
    let home = b.dir.path().join("home");
    let file = home.join("notes.txt");
    std::fs::write(&file, "the plan for tomorrow\n").expect("write");
    std::fs::create_dir_all(home.join("project")).expect("mkdir");

    let path = url_encode(&file.display().to_string());
    for route in [
        format!("/api/files/local/read?path={path}"),
        format!(
            "/api/files/local/list?path={}",
            url_encode(&home.display().to_string())
        ),
        "/api/browse/local".to_owned(),
        "/api/starters/local".to_owned(),
        "/api/sessions/local".to_owned(),
        "/api/commands/recent".to_owned(),
        "/api/sent".to_owned(),
        "/api/durable".to_owned(),
        "/api/walky".to_owned(),
        "/api/push/key".to_owned(),
    ] {
        let (status, body) = get_local(&b, &route, &auth);
        assert_eq!(
            (status, body["error"].as_str()),
            (403, Some("device not paired")),
            "GET {route} with the local secret: {body}"
        );
        assert!(
            !body.to_string().contains("the plan for tomorrow"),
            "{route}"
        );
    }
    // A device of the Files view's tier reads the same file: the refusal above is the secret's.
    let files = b.pair("files-phone", "files");
    let (status, body) = b.get(&format!("/api/files/local/read?path={path}"), Some(&files));
    assert_eq!(status, 200, "{body}");
    assert!(body.to_string().contains("the plan for tomorrow"));
    // The refusals are audited as denials.
    assert!(
        b.audit_lines().iter().any(
            |l| l["event"] == "security.denied" && l["detail"]["reason"] == "device not paired"
        ),
        "a security.denied line"
    );
}

#[test]
fn every_get_route_but_the_cli_reads_refuses_the_local_secret() {
    let b = TestBridge::start_with(Opts::default());
    let auth = local_auth(&b);
    let mut checked = 0;
    for (method, pattern, access) in ROUTES {
        if *method != axum::http::Method::GET || *access == Access::Open {
            continue;
        }
        let path = pattern
            .replace("{m}", "local")
            .replace("{p}", "p1")
            .replace("{label}", "phone")
            .replace("{id}", "00000000000000000000000000000000")
            .replace("{tool}", "read_file")
            .replace("{name}", "agent")
            .replace("{conversation}", "c1")
            .replace("{verb}", "answer");
        // Streams would stay open: only the gate's answer matters, so skip what it lets through.
        if path.ends_with("/stream") && CLI_READS.contains(pattern) {
            continue;
        }
        let (status, body) = get_local(&b, &path, &auth);
        let refused = (status, body["error"].as_str()) == (403, Some("device not paired"));
        if CLI_READS.contains(pattern) {
            assert!(!refused, "{pattern} is a CLI read: {status} {body}");
            assert_eq!(*access, Access::CliRead, "{pattern}");
        } else {
            assert!(
                refused,
                "{pattern} must refuse the local secret: {status} {body}"
            );
        }
        checked += 1;
    }
    assert!(
        checked >= 15,
        "the registry's GET routes were tried ({checked})"
    );
    // Every CLI read is in the registry as such, and nothing else is.
    let mut marked: Vec<&str> = ROUTES
        .iter()
        .filter(|(_, _, a)| *a == Access::CliRead)
        .map(|(_, p, _)| *p)
        .collect();
    marked.sort_unstable();
    let mut listed = CLI_READS.to_vec();
    listed.sort_unstable();
    assert_eq!(marked, listed);
}
