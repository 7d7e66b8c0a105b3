//! The real coding agents, installed from the npm registry into `agent-tests/` by
//! `scripts/test`, asking for permission in a real tmux pane with Collie's `PermissionRequest` hook
//! installed by `collie hooks install claude|codex --hold-permissions`, and the phone API's tap
//! deciding whether the command runs (a marker file tells): Claude Code against a scripted
//! loopback stand-in for Anthropic's Messages API (`support::model_api`), Codex against one for
//! OpenAI's Responses API (`support::responses_api`) — the model is the one part that cannot run
//! here.

#[path = "support/chat_view.rs"]
mod chat_view;
#[path = "support/claude.rs"]
mod claude;
mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use chat_view::{chat_when, texts};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use support::model_api::ModelApi;
use support::responses_api::ResponsesApi;
use support::{wait_for, TestBridge};

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

/// What the agent's tmux window (`main:<window>`) shows.
fn screen_of(b: &TestBridge, window: &str) -> String {
    b.tmux
        .as_ref()
        .expect("tmux")
        .capture(&format!("main:{window}"))
}

fn screen(b: &TestBridge) -> String {
    screen_of(b, "claude")
}

/// The first waiting card, once one appears (the agent's window is shown if none does).
fn the_card_of(b: &TestBridge, token: &str, window: &str) -> Value {
    wait_for(Duration::from_secs(60), || {
        let (_, v) = b.get("/api/cards", Some(token));
        v["cards"].as_array().and_then(|c| c.first().cloned())
    })
    .unwrap_or_else(|| {
        panic!(
            "no card appeared; the pane shows:\n{}",
            screen_of(b, window)
        )
    })
}

fn the_card(b: &TestBridge, token: &str) -> Value {
    the_card_of(b, token, "claude")
}

/// Types `prompt` into the agent's window and sends it.
fn ask_in(b: &TestBridge, window: &str, prompt: &str) {
    let tmux = b.tmux.as_ref().expect("tmux");
    let target = format!("main:{window}");
    let typed = tmux
        .cmd()
        .args(["send-keys", "-t", &target, "-l", prompt])
        .status()
        .expect("send-keys");
    assert!(typed.success());
    // Both agents take text arriving all at once for a paste; Enter in the same burst would be
    // part of it. A person's Enter comes once the text shows in the input: so does this one.
    wait_for(Duration::from_secs(10), || {
        screen_of(b, window).contains(prompt).then_some(())
    })
    .unwrap_or_else(|| panic!("the prompt did not show:\n{}", screen_of(b, window)));
    let entered = tmux
        .cmd()
        .args(["send-keys", "-t", &target, "Enter"])
        .status()
        .expect("send-keys");
    assert!(entered.success());
}

fn ask(b: &TestBridge, prompt: &str) {
    ask_in(b, "claude", prompt);
}

/// Starts Claude Code in a tmux window `claude` of the bridge's server, in `work`, against the
/// model stand-in, and waits for its prompt.
fn start_claude(b: &TestBridge, claude: &Path, work: &Path, home: &Path, model: &ModelApi) {
    // Claude Code in a tmux window of the bridge's server, with the bridge's state dir in its
    // environment (the hook it runs inherits it).
    let env = format!(
        "env -i PATH={path} HOME={home} TERM=xterm-256color COLLIE_STATE_DIR={state} \
         COLLIE_CONFIG_DIR={config} ANTHROPIC_BASE_URL={url} ANTHROPIC_API_KEY={key} \
         DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 {claude}",
        path = std::env::var("PATH").unwrap_or_default(),
        home = home.display(),
        state = b.state().display(),
        config = b.dir.path().join("config").display(),
        url = model.url(),
        claude = claude.display(),
        key = claude::API_KEY,
    );
    let started = b
        .tmux
        .as_ref()
        .expect("tmux")
        .cmd()
        .args(["new-window", "-d", "-n", "claude", "-c"])
        .arg(work)
        .arg(&env)
        .status()
        .expect("tmux new-window");
    assert!(started.success());
    wait_for(Duration::from_secs(60), || {
        screen(b).contains("for shortcuts").then_some(())
    })
    .unwrap_or_else(|| panic!("Claude Code did not reach its prompt:\n{}", screen(b)));
}

#[test]
fn a_tap_on_the_phone_decides_whether_claude_code_runs_the_command() {
    let claude = claude::binary();
    let b = TestBridge::start();
    let phone = b.pair("pixel", "full");
    let work = b.dir.path().join("work");
    std::fs::create_dir_all(&work).expect("work dir");
    let allowed = work.join("allowed-marker");
    let denied = work.join("denied-marker");
    let model = ModelApi::start(&format!("touch {}", allowed.display()));
    let home = claude::home(&b, "claude-home", &work);
    collie_in_home(
        &b,
        &home,
        &["hooks", "install", "claude", "--hold-permissions"],
    );

    start_claude(&b, &claude, &work, &home, &model);

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

/// Without Collie's hook, Claude Code's own dialog on the screen is offered as a screen card, and
/// the tap types the option's number into it (SPEC §10.2).
#[test]
fn claude_code_s_own_dialog_is_a_screen_card_and_the_tap_answers_it() {
    let claude = claude::binary();
    let b = TestBridge::start();
    let phone = b.pair("pixel", "full");
    let work = b.dir.path().join("work");
    std::fs::create_dir_all(&work).expect("work dir");
    let marker = work.join("screen-marker");
    let model = ModelApi::start(&format!("touch {}", marker.display()));
    let home = claude::home(&b, "claude-home", &work);
    start_claude(&b, &claude, &work, &home, &model);
    ask(&b, "make the marker");
    let card = the_card(&b, &phone);
    assert_eq!(card["source"], "screen");
    assert_eq!(card["pane_name"], "claude");
    assert_eq!(card["title"], "Do you want to proceed?");
    assert!(
        card["items"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("screen-marker")),
        "the card shows the command: {card}"
    );
    assert_eq!(card["options"][0], json!({"id": "1", "label": "Yes"}));
    assert!(!marker.exists(), "nothing ran before the tap");
    let (status, v) = b.post(
        &format!("/api/cards/{}/answer", card["id"].as_str().expect("id")),
        Some(&phone),
        &json!({"option": "1", "shown": card["shown"]}),
    );
    assert_eq!((status, v), (200, json!({"ok": true, "delivered": true})));
    wait_for(Duration::from_secs(30), || marker.exists().then_some(()))
        .unwrap_or_else(|| panic!("the tapped dialog did not run the command:\n{}", screen(&b)));
}

// ---- Codex -------------------------------------------------------------------------------------

/// The native Codex binary of the pinned npm package for this machine (`@openai/codex` names its
/// platform packages by npm alias; the binary sits under the Rust target triple).
fn codex_binary() -> PathBuf {
    let (package, triple) = match std::env::consts::ARCH {
        "aarch64" => ("codex-linux-arm64", "aarch64-unknown-linux-musl"),
        _ => ("codex-linux-x64", "x86_64-unknown-linux-musl"),
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
        "agent-tests/node_modules/@openai/{package}/vendor/{triple}/bin/codex"
    ));
    assert!(
        path.exists(),
        "Codex is not installed at {}: run scripts/test (it installs agent-tests/ from the npm \
         registry) or `npm ci --prefix agent-tests --ignore-scripts`",
        path.display()
    );
    path
}

/// `value` as JSON with every object's keys sorted, written without spaces: the canonical form
/// Codex hashes (`codex-rs/config/src/fingerprint.rs`).
fn canonical_json(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .iter()
                .map(|k| format!("{}:{}", Value::from(k.as_str()), canonical_json(&map[*k])))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(canonical_json).collect();
            format!("[{}]", items.join(","))
        }
        other => other.to_string(),
    }
}

/// Trusts every `PermissionRequest` hook of `$CODEX_HOME/hooks.json` the way Codex's `/hooks`
/// review would, by writing its `trusted_hash` under `[hooks.state]` in `config.toml`.
///
/// Why: Codex runs a hook from the user's files only once a person trusted it, and otherwise
/// opens with a "Hooks need review" screen. A test has no person, and trusting by hand is what a
/// user does once after `collie hooks install codex`; Collie itself never writes this (trusting
/// is the user's act). What Codex 0.171.0 compares, read in its source (openai/codex,
/// `codex-rs/hooks/src/engine/discovery.rs`, `command_hook_hash` and `hook_key`, and
/// `codex-rs/config/src/fingerprint.rs`, `version_for_toml`):
/// - the key is `<absolute path of hooks.json>:permission_request:<group index>:<handler
///   index>`;
/// - the hash is `sha256:` and the hex SHA-256 of the canonical JSON (keys sorted, no spaces) of
///   the hook's normalized identity: `event_name` (`permission_request`), the group's `matcher`,
///   and `hooks` holding only this handler as `type`, `command`, `timeout` (default 600, at least
///   1), `async` (default false) and `statusMessage` when set — the identity goes through TOML
///   first, so fields that are unset are left out rather than written as null.
///
/// With a wrong hash Codex opens on "Hooks need review" instead and never runs the hook, so no
/// card comes (tried: the test then fails showing that screen).
fn trust_codex_hooks(codex_home: &Path) {
    let hooks_path = codex_home.join("hooks.json");
    let hooks: Value =
        serde_json::from_slice(&std::fs::read(&hooks_path).expect("hooks.json")).expect("JSON");
    let mut state = String::new();
    let groups = hooks["hooks"]["PermissionRequest"]
        .as_array()
        .expect("PermissionRequest groups");
    for (g, group) in groups.iter().enumerate() {
        for (h, handler) in group["hooks"].as_array().expect("hooks").iter().enumerate() {
            let mut normalized = json!({
                "type": "command",
                "command": handler["command"],
                "timeout": handler["timeout"].as_u64().unwrap_or(600).max(1),
                "async": handler["async"].as_bool().unwrap_or(false),
            });
            if let Some(message) = handler["statusMessage"].as_str() {
                normalized["statusMessage"] = json!(message);
            }
            let mut identity = json!({"event_name": "permission_request", "hooks": [normalized]});
            if let Some(matcher) = group["matcher"].as_str() {
                identity["matcher"] = json!(matcher);
            }
            let digest = Sha256::digest(canonical_json(&identity).as_bytes());
            let key = format!("{}:permission_request:{g}:{h}", hooks_path.display());
            // A JSON string is a TOML basic string for these characters.
            state.push_str(&format!(
                "\n[hooks.state.{}]\ntrusted_hash = \"sha256:{}\"\n",
                Value::from(key),
                hex::encode(digest)
            ));
        }
    }
    let config = codex_home.join("config.toml");
    let mut text = std::fs::read_to_string(&config).expect("config.toml");
    text.push_str(&state);
    std::fs::write(&config, text).expect("config.toml");
}

/// A Codex home (`CODEX_HOME`) in which Codex starts straight at its prompt in `work`, talking to
/// the stand-in: the stand-in as its model provider, the folder trusted, no update check, no
/// analytics; commands run in a read-only sandbox and Codex asks before running one outside it
/// (`approval_policy = "on-request"`; Codex 0.171.0 refuses the older `untrusted`).
fn codex_home(b: &TestBridge, work: &Path, api: &ResponsesApi) -> PathBuf {
    let home = b.dir.path().join("codex-home");
    std::fs::create_dir_all(&home).expect("codex home");
    // Codex keys hook trust by the file's absolute path as it resolves its home.
    let home = home.canonicalize().expect("canonical codex home");
    let config = format!(
        "model = \"gpt-standin\"\n\
         model_provider = \"standin\"\n\
         approval_policy = \"on-request\"\n\
         sandbox_mode = \"read-only\"\n\
         check_for_update_on_startup = false\n\
         \n\
         [model_providers.standin]\n\
         name = \"Stand-in\"\n\
         base_url = {url}\n\
         wire_api = \"responses\"\n\
         \n\
         [projects.{work}]\n\
         trust_level = \"trusted\"\n\
         \n\
         [analytics]\n\
         enabled = false\n",
        url = Value::from(api.base_url()),
        work = Value::from(work.display().to_string()),
    );
    std::fs::write(home.join("config.toml"), config).expect("config.toml");
    home
}

/// A bridge with the real Codex at its prompt in tmux window `codex`, Collie's hook installed by
/// `collie hooks install codex --hold-permissions` and trusted, and a paired full device.
struct CodexRun {
    b: TestBridge,
    phone: String,
    marker: PathBuf,
    _api: ResponsesApi,
}

/// Codex in a tmux window `codex`, with Collie's hook installed and trusted when `hooked`.
fn codex_run(hooked: bool) -> CodexRun {
    let codex = codex_binary();
    let b = TestBridge::start();
    let phone = b.pair("pixel", "full");
    let work = b.dir.path().join("work");
    std::fs::create_dir_all(&work).expect("work dir");
    let work = work.canonicalize().expect("canonical work dir");
    let marker = work.join("marker");
    let api = ResponsesApi::start(&format!("touch {}", marker.display()));
    let home = b.dir.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let codex_home = codex_home(&b, &work, &api);
    if hooked {
        let installed = b
            .command()
            .env("HOME", &home)
            .env("CODEX_HOME", &codex_home)
            .args(["hooks", "install", "codex", "--hold-permissions"])
            .output()
            .expect("collie");
        assert!(
            installed.status.success(),
            "collie hooks install codex: {}",
            String::from_utf8_lossy(&installed.stderr)
        );
        trust_codex_hooks(&codex_home);
    }

    // `--no-daemon`: by default Codex 0.171.0 runs its agent in a shared background server
    // (`codex app-server --managed-daemon`) that the first Codex starts and every later one
    // joins, and hooks run there — under the first Codex's pane, with its environment, or under
    // no pane at all once it exits (docs/guide/hooks.md). Without it, hooks are children of the
    // Codex in this pane, as the bridge's pane check expects.
    let env = format!(
        "env -i PATH={path} HOME={home} CODEX_HOME={codex_home} TERM=xterm-256color \
         COLLIE_STATE_DIR={state} COLLIE_CONFIG_DIR={config} {codex} --no-daemon",
        path = std::env::var("PATH").unwrap_or_default(),
        home = home.display(),
        codex_home = codex_home.display(),
        state = b.state().display(),
        config = b.dir.path().join("config").display(),
        codex = codex.display(),
    );
    let started = b
        .tmux
        .as_ref()
        .expect("tmux")
        .cmd()
        .args(["new-window", "-d", "-n", "codex", "-c"])
        .arg(&work)
        .arg(&env)
        .status()
        .expect("tmux new-window");
    assert!(started.success());
    // Its prompt. (Whether the hook is trusted shows only later: an untrusted one never runs,
    // so no card comes, and Codex draws "Hooks need review" over the prompt a moment after it.)
    wait_for(Duration::from_secs(60), || {
        screen_of(&b, "codex")
            .contains("? for shortcuts")
            .then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "Codex did not reach its prompt:\n{}",
            screen_of(&b, "codex")
        )
    });
    CodexRun {
        b,
        phone,
        marker,
        _api: api,
    }
}

/// Asks Codex to run the scripted command and returns the card its hook made, after checking
/// what the card shows.
fn codex_card(run: &CodexRun) -> Value {
    ask_in(&run.b, "codex", "make the marker");
    let card = the_card_of(&run.b, &run.phone, "codex");
    assert_eq!(card["source"], "codex");
    assert_eq!(card["pane_name"], "codex");
    assert_eq!(card["title"], "Codex asks to use Bash");
    let command = format!("touch {}", run.marker.display());
    assert!(
        card["items"]
            .as_array()
            .expect("items")
            .iter()
            .any(|i| i["text"] == command.as_str()),
        "the card shows the command in full: {card}"
    );
    // Codex reads no rule to add from a hook (decision 0022): never "Always allow".
    let options: Vec<&str> = card["options"]
        .as_array()
        .expect("options")
        .iter()
        .filter_map(|o| o["id"].as_str())
        .collect();
    assert_eq!(options, ["allow", "deny"]);
    assert!(!run.marker.exists(), "nothing ran before the tap");
    card
}

fn answer(run: &CodexRun, card: &Value, option: &str) {
    let (status, v) = run.b.post(
        &format!("/api/cards/{}/answer", card["id"].as_str().expect("id")),
        Some(&run.phone),
        &json!({"option": option, "shown": card["shown"]}),
    );
    assert_eq!((status, v), (200, json!({"ok": true, "delivered": true})));
}

#[test]
fn a_tap_on_allow_lets_codex_run_the_command() {
    let run = codex_run(true);
    let card = codex_card(&run);
    answer(&run, &card, "allow");
    wait_for(Duration::from_secs(30), || {
        run.marker.exists().then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "the allowed command did not run:\n{}",
            screen_of(&run.b, "codex")
        )
    });
}

#[test]
fn a_tap_on_deny_keeps_codex_from_running_the_command() {
    let run = codex_run(true);
    let card = codex_card(&run);
    answer(&run, &card, "deny");
    // Codex shows the hook's message, then hands the refusal to the model, whose next turn ends
    // the exchange ("Done."): by then a command that was going to run would have.
    wait_for(Duration::from_secs(30), || {
        let s = screen_of(&run.b, "codex");
        (s.contains("Denied from pixel via Collie") && s.contains("Done.")).then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "Codex did not show the denial and end its turn:\n{}",
            screen_of(&run.b, "codex")
        )
    });
    assert!(!run.marker.exists(), "the denied command must not run");
}

#[test]
fn esc_in_codex_ends_the_hold_and_closes_the_card() {
    let run = codex_run(true);
    let card = codex_card(&run);
    // While the card waits, Codex draws no dialog of its own: it shows its hook running (on its
    // next redraw, which may come after the card), and a person at the machine can only
    // interrupt the turn (Esc), which ends the hook's process.
    wait_for(Duration::from_secs(10), || {
        screen_of(&run.b, "codex")
            .contains("Running hook")
            .then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "Codex does not show its hook running:\n{}",
            screen_of(&run.b, "codex")
        )
    });
    let tmux = run.b.tmux.as_ref().expect("tmux");
    let pressed = tmux
        .cmd()
        .args(["send-keys", "-t", "main:codex", "Escape"])
        .status()
        .expect("send-keys");
    assert!(pressed.success());
    // The hook going away is the machine answering first: the card closes at once, as "answered
    // elsewhere", and a late tap gets 410.
    let receipt = wait_for(Duration::from_secs(30), || {
        let (_, v) = run.b.get("/api/cards", Some(&run.phone));
        v["receipts"]
            .as_array()
            .and_then(|r| r.iter().find(|r| r["card"] == card["id"]).cloned())
    })
    .unwrap_or_else(|| {
        panic!(
            "the card stayed open after Esc:\n{}",
            screen_of(&run.b, "codex")
        )
    });
    assert_eq!(receipt["state"], "answered elsewhere");
    let (status, v) = run.b.post(
        &format!("/api/cards/{}/answer", card["id"].as_str().expect("id")),
        Some(&run.phone),
        &json!({"option": "allow", "shown": card["shown"]}),
    );
    assert_eq!((status, v), (410, json!({"error": "card closed"})));
    // Codex says so on its next redraw, which may come after the card closed.
    wait_for(Duration::from_secs(10), || {
        screen_of(&run.b, "codex")
            .contains("Conversation interrupted")
            .then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "Codex did not end the turn:\n{}",
            screen_of(&run.b, "codex")
        )
    });
    assert!(!run.marker.exists(), "an interrupted turn runs nothing");
}

/// Without Collie's hook, Codex's own approval dialog is offered as a screen card, and the tap
/// types the option's number into it (SPEC §10.2).
#[test]
fn codex_s_own_dialog_is_a_screen_card_and_the_tap_answers_it() {
    let run = codex_run(false);
    ask_in(&run.b, "codex", "make the marker");
    let card = the_card_of(&run.b, &run.phone, "codex");
    assert_eq!(card["source"], "screen");
    assert_eq!(
        card["title"],
        "Would you like to run the following command?"
    );
    let command = format!("$ touch {}", run.marker.display());
    assert!(
        card["items"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains(&command)),
        "the card shows the command: {card}"
    );
    assert_eq!(
        card["options"][0],
        json!({"id": "1", "label": "Yes, proceed (y)"})
    );
    assert!(!run.marker.exists(), "nothing ran before the tap");
    answer(&run, &card, "1");
    wait_for(Duration::from_secs(30), || {
        run.marker.exists().then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "the tapped dialog did not run the command:\n{}",
            screen_of(&run.b, "codex")
        )
    });
}

// ---- The chat view -----------------------------------------------------------------------------

/// The chat view reads what Claude Code wrote to its own transcript: the prompt, the tool call,
/// its result and the answer, every text masked; new turns follow from the cursor.
#[test]
fn the_chat_of_a_claude_code_pane_is_read_from_its_transcript_and_masked() {
    let claude = claude::binary();
    let b = TestBridge::start();
    let phone = b.pair("pixel", "read");
    let tapper = b.pair("tapper", "full");
    let work = b.dir.path().join("work");
    std::fs::create_dir_all(&work).expect("work dir");
    let marker = work.join("chat-marker");
    let secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    let model = ModelApi::start(&format!("touch {} && echo {secret}", marker.display()));
    let home = claude::home(&b, "claude-home", &work);
    start_claude(&b, &claude, &work, &home, &model);
    let pane = b.pane_named(&phone, None, "claude");

    // Before the first prompt Claude Code may not have written its transcript yet: the agent is
    // known, the turns are none.
    let (status, first) = b.get(&format!("/api/panes/local/{pane}/chat"), Some(&phone));
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["agent"], "claude");

    ask(&b, "make the chat marker");
    // Claude Code's own dialog asks first (no hook installed); the tap runs the command.
    let card = the_card(&b, &tapper);
    let (status, _) = b.post(
        &format!("/api/cards/{}/answer", card["id"].as_str().expect("id")),
        Some(&tapper),
        &json!({"option": "1", "shown": card["shown"]}),
    );
    assert_eq!(status, 200);
    let chat = chat_when(&b, &phone, &pane, |c| {
        texts(c, "assistant", "text").iter().any(|t| t == "Done.")
    });
    assert!(marker.exists());
    assert_eq!(chat["agent"], "claude");
    let session = chat["session"].as_str().expect("session").to_owned();
    assert!(
        home.join(".claude/projects")
            .join(
                work.to_string_lossy()
                    .replace(|c: char| !c.is_ascii_alphanumeric(), "-")
            )
            .join(format!("{session}.jsonl"))
            .is_file(),
        "the session names Claude Code's transcript"
    );
    assert_eq!(texts(&chat, "user", "text"), ["make the chat marker"]);
    let calls = texts(&chat, "assistant", "tool_call");
    assert_eq!(calls.len(), 1, "{chat:#}");
    assert!(calls[0].starts_with("Bash: touch "), "{}", calls[0]);
    assert!(calls[0].contains("chat-marker"));
    let results = texts(&chat, "tool", "tool_result");
    assert_eq!(results.len(), 1, "{chat:#}");
    let all = chat.to_string();
    assert!(!all.contains(secret), "the secret reaches no turn: {all}");
    assert!(
        calls[0].contains("ghp_a•••") && results[0].contains("ghp_a•••"),
        "{chat:#}"
    );
    for turn in chat["turns"].as_array().expect("turns") {
        assert!(
            turn["at"].as_str().is_some_and(|a| a.starts_with("20")),
            "{turn}"
        );
    }

    // Following: from the cursor, only what came after.
    let cursor = chat["cursor"].as_str().expect("cursor").to_owned();
    let path = format!(
        "/api/panes/local/{pane}/chat?after={}",
        support::url_encode(&cursor)
    );
    let (status, same) = b.get(&path, Some(&phone));
    assert_eq!(status, 200);
    assert_eq!(same["turns"], json!([]), "nothing new yet");
    ask(&b, "and again");
    let newer = wait_for(Duration::from_secs(30), || {
        let (_, v) = b.get(&path, Some(&phone));
        (!texts(&v, "user", "text").is_empty()).then_some(v)
    })
    .unwrap_or_else(|| panic!("the next turns did not follow:\n{}", screen(&b)));
    assert_eq!(texts(&newer, "user", "text"), ["and again"], "{newer:#}");
    assert_eq!(newer["session"].as_str(), Some(session.as_str()));
    let (status, v) = b.get(
        &format!("/api/panes/local/{pane}/chat?after=nonsense"),
        Some(&phone),
    );
    assert_eq!((status, v), (400, json!({"error": "bad cursor"})));
}

/// The chat view of a Codex pane reads its rollout: the prompt, the command, its output and the
/// answer.
#[test]
fn the_chat_of_a_codex_pane_is_read_from_its_rollout() {
    let run = codex_run(false);
    ask_in(&run.b, "codex", "make the marker");
    let card = the_card_of(&run.b, &run.phone, "codex");
    answer(&run, &card, "1");
    let pane = run.b.pane_named(&run.phone, None, "codex");
    let chat = chat_when(&run.b, &run.phone, &pane, |c| {
        texts(c, "assistant", "text").iter().any(|t| t == "Done.")
    });
    assert_eq!(chat["agent"], "codex");
    assert!(chat["session"]
        .as_str()
        .is_some_and(|s| s.starts_with("rollout-")));
    assert_eq!(
        texts(&chat, "user", "text"),
        ["make the marker"],
        "{chat:#}"
    );
    let calls = texts(&chat, "assistant", "tool_call");
    assert!(
        calls
            .iter()
            .any(|c| c.contains("touch ") && c.contains("marker")),
        "{chat:#}"
    );
    assert!(!texts(&chat, "tool", "tool_result").is_empty(), "{chat:#}");
}
