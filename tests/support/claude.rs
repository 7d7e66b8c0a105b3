#![allow(dead_code, unreachable_pub)]
//! The real Claude Code (installed from the npm registry into `agent-tests/` by `scripts/test`) in
//! a tmux window of a test bridge's server, against the scripted loopback model stand-in
//! (`support::model_api`): started at its prompt, asked for something, and its permission dialog
//! on the screen.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use crate::support::model_api::ModelApi;
use crate::support::{wait_for, TestBridge};

/// The question of Claude Code's permission dialog.
pub const DIALOG: &str = "Do you want to proceed?";

/// The native Claude Code binary of the pinned npm package for this machine.
pub fn binary() -> PathBuf {
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
pub const API_KEY: &str = "sk-ant-api03-collie-standin-0123456789abcdef";

/// A home `<test dir>/<name>` for Claude Code in which it starts straight at its prompt in
/// `work`: onboarding done, the key approved, the folder trusted, the default permission mode.
pub fn home(b: &TestBridge, name: &str, work: &Path) -> PathBuf {
    let home = b.dir.path().join(name);
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

/// Claude Code in window `window` of `b`'s tmux server, working in `work`.
pub struct Claude<'a> {
    b: &'a TestBridge,
    /// The tmux target of its window (`main:<window>`).
    pub target: String,
}

impl<'a> Claude<'a> {
    /// Starts Claude Code in a new window `window` of `b`'s tmux server, in `work` (onboarding
    /// done, the key approved, the folder trusted, the default permission mode, no Collie hook),
    /// against `model`, and waits for its prompt.
    pub fn start(b: &'a TestBridge, window: &str, work: &Path, model: &ModelApi) -> Claude<'a> {
        let home = home(b, &format!("{window}-home"), work);
        let env = format!(
            "env -i PATH={path} HOME={home} TERM=xterm-256color ANTHROPIC_BASE_URL={url} \
             ANTHROPIC_API_KEY={API_KEY} DISABLE_TELEMETRY=1 \
             CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 {claude}",
            path = std::env::var("PATH").unwrap_or_default(),
            home = home.display(),
            url = model.url(),
            claude = binary().display(),
        );
        let started = b
            .tmux
            .as_ref()
            .expect("tmux")
            .cmd()
            .args(["new-window", "-d", "-n", window, "-c"])
            .arg(work)
            .arg(&env)
            .status()
            .expect("tmux new-window");
        assert!(started.success());
        let claude = Claude {
            b,
            target: format!("main:{window}"),
        };
        wait_for(Duration::from_secs(60), || {
            claude.screen().contains("for shortcuts").then_some(())
        })
        .unwrap_or_else(|| panic!("Claude Code did not reach its prompt:\n{}", claude.screen()));
        claude
    }

    /// What its window shows.
    pub fn screen(&self) -> String {
        self.b.tmux.as_ref().expect("tmux").capture(&self.target)
    }

    /// Types `prompt` into its window and sends it; both agents take text arriving all at once
    /// for a paste, so Enter comes once the text shows in the input, as a person's would.
    pub fn ask(&self, prompt: &str) {
        let tmux = self.b.tmux.as_ref().expect("tmux");
        let typed = tmux
            .cmd()
            .args(["send-keys", "-t", &self.target, "-l", prompt])
            .status()
            .expect("send-keys");
        assert!(typed.success());
        wait_for(Duration::from_secs(10), || {
            self.screen().contains(prompt).then_some(())
        })
        .unwrap_or_else(|| panic!("the prompt did not show:\n{}", self.screen()));
        let entered = tmux
            .cmd()
            .args(["send-keys", "-t", &self.target, "Enter"])
            .status()
            .expect("send-keys");
        assert!(entered.success());
    }

    /// Asks for something the model answers with a Bash call, and waits for the permission
    /// dialog to show.
    pub fn ask_until_dialog(&self, prompt: &str) {
        self.ask(prompt);
        wait_for(Duration::from_secs(60), || {
            self.screen().contains(DIALOG).then_some(())
        })
        .unwrap_or_else(|| panic!("no permission dialog:\n{}", self.screen()));
    }
}
