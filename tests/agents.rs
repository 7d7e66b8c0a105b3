//! The real Claude Code (installed from the npm registry into `agent-tests/` by `scripts/test`)
//! asking for permission in a real tmux pane, its `PermissionRequest` hook installed with
//! `collie hooks install claude --hold-permissions`, and the phone API's tap deciding whether the
//! command runs (a marker file tells). The model is a scripted loopback stand-in
//! (`support::model_api`) — the one part that cannot run here.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use support::model_api::ModelApi;
use support::{wait_for, TestBridge};

/// The native Claude Code binary of the pinned npm package for this machine.
fn claude_binary() -> PathBuf {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => other,
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
        "agent-tests/node_modules/@anthropic-ai/claude-code-linux-{arch}/claude"
    ));
    assert!(
        path.exists(),
        "Claude Code is not installed at {}: run scripts/test (it installs agent-tests/ from the \
         npm registry) or `npm ci --prefix agent-tests --ignore-scripts`",
        path.display()
    );
    path
}

/// The API key the stand-in accepts (any works; Claude Code asks once whether to use it, which
/// `.claude.json` answers).
const API_KEY: &str = "sk-ant-api03-collie-standin-0123456789abcdef";

/// A home for Claude Code in which it starts straight at its prompt in `work`: onboarding done,
/// the key approved, the folder trusted, the default permission mode.
fn claude_home(b: &TestBridge, work: &Path) -> PathBuf {
    let home = b.dir.path().join("claude-home");
    std::fs::create_dir_all(home.join(".claude")).expect("claude home");
    let key_tail = &API_KEY[API_KEY.len() - 20..];
    let state = json!({
        "hasCompletedOnboarding": true,
        "hasSeenAutoDefaultNudge": true,
        "numStartups": 5,
        "customApiKeyResponses": {"approved": [key_tail], "rejected": []},
        "projects": {work.display().to_string(): {"hasTrustDialogAccepted": true, "allowedTools": []}},
    });
    std::fs::write(home.join(".claude.json"), state.to_string()).expect(".claude.json");
    std::fs::write(
        home.join(".claude/settings.json"),
        json!({"permissions": {"defaultMode": "default"}}).to_string(),
    )
    .expect("settings.json");
    home
}

/// Runs `collie ARGS` with `home` as HOME (for `hooks install`).
fn collie_in_home(b: &TestBridge, home: &Path, args: &[&str]) -> String {
    let out = b
        .command()
        .env("HOME", home)
        .args(args)
        .output()
        .expect("collie");
    assert!(
        out.status.success(),
        "collie {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn screen(b: &TestBridge) -> String {
    b.tmux.as_ref().expect("tmux").capture("main:claude")
}

fn the_card(b: &TestBridge, token: &str) -> Value {
    wait_for(Duration::from_secs(60), || {
        let (_, v) = b.get("/api/cards", Some(token));
        v["cards"].as_array().and_then(|c| c.first().cloned())
    })
    .unwrap_or_else(|| panic!("no card appeared; the pane shows:\n{}", screen(b)))
}

fn ask(b: &TestBridge, prompt: &str) {
    let tmux = b.tmux.as_ref().expect("tmux");
    let typed = tmux
        .cmd()
        .args(["send-keys", "-t", "main:claude", "-l", prompt])
        .status()
        .expect("send-keys");
    assert!(typed.success());
    // Claude Code takes text arriving all at once for a paste; Enter in the same burst would be
    // part of it. A person's Enter comes later: so does this one.
    std::thread::sleep(Duration::from_millis(300));
    let entered = tmux
        .cmd()
        .args(["send-keys", "-t", "main:claude", "Enter"])
        .status()
        .expect("send-keys");
    assert!(entered.success());
}

#[test]
fn a_tap_on_the_phone_decides_whether_claude_code_runs_the_command() {
    let claude = claude_binary();
    let b = TestBridge::start();
    let phone = b.pair("pixel", "full");
    let work = b.dir.path().join("work");
    std::fs::create_dir_all(&work).expect("work dir");
    let allowed = work.join("allowed-marker");
    let denied = work.join("denied-marker");
    let model = ModelApi::start(&format!("touch {}", allowed.display()));
    let home = claude_home(&b, &work);
    collie_in_home(
        &b,
        &home,
        &["hooks", "install", "claude", "--hold-permissions"],
    );

    // Claude Code in a tmux window of the bridge's server, with the bridge's state dir in its
    // environment (the hook it runs inherits it).
    let env = format!(
        "env -i PATH={path} HOME={home} TERM=xterm-256color COLLIE_STATE_DIR={state} \
         COLLIE_CONFIG_DIR={config} ANTHROPIC_BASE_URL={url} ANTHROPIC_API_KEY={API_KEY} \
         DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 {claude}",
        path = std::env::var("PATH").unwrap_or_default(),
        home = home.display(),
        state = b.state().display(),
        config = b.dir.path().join("config").display(),
        url = model.url(),
        claude = claude.display(),
    );
    let started = b
        .tmux
        .as_ref()
        .expect("tmux")
        .cmd()
        .args(["new-window", "-d", "-n", "claude", "-c"])
        .arg(&work)
        .arg(&env)
        .status()
        .expect("tmux new-window");
    assert!(started.success());
    wait_for(Duration::from_secs(60), || {
        screen(&b).contains("for shortcuts").then_some(())
    })
    .unwrap_or_else(|| panic!("Claude Code did not reach its prompt:\n{}", screen(&b)));

    // Allow: the command runs.
    ask(&b, "make the marker");
    let card = the_card(&b, &phone);
    assert_eq!(card["source"], "claude");
    assert_eq!(card["pane_name"], "claude");
    assert!(
        card["items"]
            .as_array()
            .expect("items")
            .iter()
            .any(|i| i["text"]
                .as_str()
                .is_some_and(|t| t.contains("allowed-marker"))),
        "the card shows the command: {card}"
    );
    assert!(!allowed.exists(), "nothing ran before the tap");
    let (status, v) = b.post(
        &format!("/api/cards/{}/answer", card["id"].as_str().expect("id")),
        Some(&phone),
        &json!({"option": "allow", "shown": card["shown"]}),
    );
    assert_eq!((status, v), (200, json!({"ok": true, "delivered": true})));
    wait_for(Duration::from_secs(30), || allowed.exists().then_some(()))
        .unwrap_or_else(|| panic!("the allowed command did not run:\n{}", screen(&b)));

    // Deny: it does not, and Claude Code says who denied it.
    wait_for(Duration::from_secs(30), || {
        let (_, v) = b.get("/api/cards", Some(&phone));
        (v["cards"] == json!([]) && screen(&b).contains("Done.")).then_some(())
    })
    .unwrap_or_else(|| panic!("the first turn did not end:\n{}", screen(&b)));
    model.set_command(&format!("touch {}", denied.display()));
    ask(&b, "make the other marker");
    let card = the_card(&b, &phone);
    let (status, _) = b.post(
        &format!("/api/cards/{}/answer", card["id"].as_str().expect("id")),
        Some(&phone),
        &json!({"option": "deny", "shown": card["shown"]}),
    );
    assert_eq!(status, 200);
    wait_for(Duration::from_secs(30), || {
        screen(&b)
            .contains("Denied from pixel via Collie")
            .then_some(())
    })
    .unwrap_or_else(|| panic!("Claude Code did not show the denial:\n{}", screen(&b)));
    assert!(!denied.exists(), "the denied command must not run");
}
