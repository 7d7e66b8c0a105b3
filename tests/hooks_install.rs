//! Black-box tests of `collie hooks install|uninstall|status` (SPEC §10.2) through the real
//! binary, with `HOME` and the working directory in a fresh temp dir: the user's own hooks and
//! settings survive in their order, the file keeps its mode, a second install changes nothing,
//! uninstall gives the original back, and a file Collie cannot read is refused and left byte for
//! byte.

mod support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};
use support::{collie_bin, json_of};

/// A home and a project directory, removed on drop.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::create_dir(dir.path().join("home")).expect("home");
        fs::create_dir(dir.path().join("project")).expect("project");
        Sandbox { dir }
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn project(&self) -> PathBuf {
        self.dir.path().join("project")
    }

    /// `collie ARGS` in the project directory, with nothing of the machine's user reachable:
    /// no `CLAUDE_CONFIG_DIR` or `CODEX_HOME` either, unless `env` sets them.
    fn collie_with(&self, args: &[&str], env: &[(&str, &Path)]) -> Output {
        let mut cmd = Command::new(collie_bin());
        cmd.args(args)
            .current_dir(self.project())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.home())
            .env("COLLIE_STATE_DIR", self.dir.path().join("state"))
            .env("COLLIE_CONFIG_DIR", self.dir.path().join("config"));
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().expect("collie runs")
    }

    fn collie(&self, args: &[&str]) -> Output {
        self.collie_with(args, &[])
    }

    /// `collie ARGS`, which must succeed; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.collie(args);
        assert!(
            out.status.success(),
            "collie {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8")
    }
}

/// The command the binary under test installs for `subcommand`.
fn our_command(subcommand: &str) -> String {
    let exe = fs::canonicalize(collie_bin()).expect("the binary exists");
    collie::agent_hooks::command::render(&exe, subcommand).expect("the test binary is a collie")
}

fn mode_of(path: &Path) -> u32 {
    fs::metadata(path).expect("exists").permissions().mode() & 0o7777
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&fs::read(path).expect("readable")).expect("JSON")
}

/// A value's text, which (unlike `==`) sees the order of keys.
fn text(v: &Value) -> String {
    serde_json::to_string(v).expect("serializes")
}

fn write_with_mode(path: &Path, bytes: &[u8], mode: u32) {
    fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    fs::write(path, bytes).expect("write");
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("chmod");
}

/// A user's settings: keys around `hooks`, and hooks of their own around and in the event.
const USERS_CLAUDE_SETTINGS: &str = r#"{
    "model": "opus",
    "hooks": {
        "PreToolUse": [ { "matcher": "Bash", "hooks": [ { "type": "command", "command": "./check.sh" } ] } ],
        "PermissionRequest": [
            { "matcher": "Bash", "hooks": [ { "type": "command", "command": "./mine.sh", "timeout": 5 } ] }
        ],
        "Stop": [ { "hooks": [ { "type": "command", "command": "./done.sh" } ] } ]
    },
    "permissions": { "allow": [ "Bash(ls)" ] },
    "env": { "A": "1" }
}
"#;

#[test]
fn claude_user_scope_keeps_the_users_hooks_the_mode_and_comes_back_out_exactly() {
    let s = Sandbox::new();
    let file = s.home().join(".claude/settings.json");
    write_with_mode(&file, USERS_CLAUDE_SETTINGS.as_bytes(), 0o640);
    let original = read_json(&file);

    let out = s.ok(&["hooks", "install", "claude", "--hold-permissions"]);
    assert!(out.contains(&file.display().to_string()), "{out}");
    let installed = read_json(&file);
    let mut expected = original.clone();
    expected["hooks"]["PermissionRequest"]
        .as_array_mut()
        .expect("a list")
        .push(json!({ "matcher": "*", "hooks": [
            { "type": "command", "command": our_command("claude-permission"), "timeout": 660 }
        ] }));
    assert_eq!(text(&installed), text(&expected));
    assert_eq!(mode_of(&file), 0o640);

    // Again: nothing to do, the file is not even rewritten.
    let bytes = fs::read(&file).expect("readable");
    let out = s.ok(&["hooks", "install", "claude", "--hold-permissions"]);
    assert!(out.contains("already"), "{out}");
    assert_eq!(fs::read(&file).expect("readable"), bytes);

    let status = s.ok(&["hooks", "status"]);
    let line = status
        .lines()
        .find(|l| l.starts_with("claude") && l.contains(" user "))
        .unwrap_or_else(|| panic!("no claude user line: {status}"));
    assert!(line.contains(&file.display().to_string()), "{line}");
    assert!(line.ends_with("  installed"), "{line}");
    let report = json_of(&s.ok(&["hooks", "status", "claude", "--json"]));
    assert_eq!(
        report["hooks"],
        json!([
            { "agent": "claude", "scope": "user", "path": file, "state": "installed" },
            { "agent": "claude", "scope": "project",
              "path": s.project().join(".claude/settings.json"), "state": "not_installed" },
        ])
    );

    let out = s.ok(&["hooks", "uninstall", "claude"]);
    assert!(out.starts_with("removed"), "{out}");
    assert_eq!(text(&read_json(&file)), text(&original));
    assert_eq!(mode_of(&file), 0o640);
    let out = s.ok(&["hooks", "uninstall", "claude"]);
    assert!(out.contains("nothing changed"), "{out}");
    assert!(s
        .ok(&["hooks", "status", "claude"])
        .contains("  not installed"));
}

#[test]
fn project_scope_writes_the_current_directorys_settings() {
    let s = Sandbox::new();
    s.ok(&[
        "hooks",
        "install",
        "claude",
        "--hold-permissions",
        "--scope",
        "project",
    ]);
    let file = s.project().join(".claude/settings.json");
    assert_eq!(
        read_json(&file)["hooks"]["PermissionRequest"][0]["hooks"][0]["command"],
        json!(our_command("claude-permission"))
    );
    assert_eq!(mode_of(&file), 0o600);
    assert_eq!(mode_of(file.parent().expect("a parent")), 0o700);
    assert!(!s.home().join(".claude").exists());

    let status = s.ok(&["hooks", "status", "claude"]);
    assert!(
        status
            .lines()
            .any(|l| l.contains(" project ") && l.ends_with("  installed")),
        "{status}"
    );
    assert!(
        status
            .lines()
            .any(|l| l.contains(" user ") && l.ends_with("  not installed")),
        "{status}"
    );

    s.ok(&["hooks", "uninstall", "claude", "--scope", "project"]);
    assert_eq!(read_json(&file), json!({}));
}

#[test]
fn a_malformed_settings_file_is_refused_and_left_byte_for_byte() {
    let s = Sandbox::new();
    let file = s.home().join(".claude/settings.json");
    for (bytes, why) in [
        (&b"{ \"hooks\": [ \n"[..], "not valid JSON"),
        (
            &b"{\"hooks\": \"yes\"}"[..],
            "`hooks` is a string, not an object",
        ),
        (&b"[1, 2]"[..], "the file holds a list, not a JSON object"),
        (
            &b"{\"hooks\": {\"PermissionRequest\": {}}}"[..],
            "`hooks.PermissionRequest` is an object, not a list",
        ),
    ] {
        write_with_mode(&file, bytes, 0o644);
        for args in [
            &["hooks", "install", "claude", "--hold-permissions"][..],
            &["hooks", "uninstall", "claude"][..],
        ] {
            let out = s.collie(args);
            assert_eq!(out.status.code(), Some(1), "{args:?} on {bytes:?}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains(&file.display().to_string()), "{err}");
            assert!(err.contains(why), "{err}");
            assert!(err.contains("nothing was changed"), "{err}");
            assert_eq!(fs::read(&file).expect("readable"), bytes);
            assert_eq!(mode_of(&file), 0o644);
        }
        let status = s.ok(&["hooks", "status", "claude"]);
        assert!(status.contains(&format!("unreadable: {why}")), "{status}");
    }
}

#[test]
fn a_settings_file_over_4_mib_is_not_read() {
    let s = Sandbox::new();
    let file = s.home().join(".claude/settings.json");
    fs::create_dir_all(file.parent().expect("a parent")).expect("mkdir");
    fs::File::create(&file)
        .and_then(|f| f.set_len(4 * 1024 * 1024 + 1))
        .expect("a big file");
    let out = s.collie(&["hooks", "install", "claude", "--hold-permissions"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("larger than 4 MiB"), "{err}");
    assert_eq!(
        fs::metadata(&file).expect("exists").len(),
        4 * 1024 * 1024 + 1
    );
}

#[test]
fn install_asks_for_hold_permissions_and_writes_nothing_without() {
    let s = Sandbox::new();
    let out = s.collie(&["hooks", "install", "claude"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--hold-permissions"), "{err}");
    assert!(err.contains("only the held-permission hook"), "{err}");
    assert!(!s.home().join(".claude").exists());
}

#[test]
fn codex_hooks_json_gets_the_same_treatment() {
    let s = Sandbox::new();
    let file = s.home().join(".codex/hooks.json");
    let users = json!({ "hooks": {
        "PermissionRequest": [ { "matcher": "^Bash$", "hooks": [
            { "type": "command", "command": "/usr/local/bin/approve", "timeout": 30 }
        ] } ],
        "SessionStart": [ { "hooks": [ { "type": "command", "command": "./hello.sh" } ] } ],
    } });
    write_with_mode(
        &file,
        serde_json::to_string_pretty(&users)
            .expect("JSON")
            .as_bytes(),
        0o600,
    );

    s.ok(&["hooks", "install", "codex", "--hold-permissions"]);
    let list = read_json(&file)["hooks"]["PermissionRequest"].clone();
    assert_eq!(
        list,
        json!([
            users["hooks"]["PermissionRequest"][0],
            { "matcher": "*", "hooks": [
                { "type": "command", "command": our_command("codex-permission"), "timeout": 660 }
            ] },
        ])
    );
    let status = s.ok(&["hooks", "status", "codex"]);
    assert!(
        status
            .lines()
            .any(|l| l.contains(" user ") && l.ends_with("  installed")),
        "{status}"
    );
    s.ok(&["hooks", "uninstall", "codex"]);
    assert_eq!(text(&read_json(&file)), text(&users));

    // CODEX_HOME moves the user's file, as it does for Codex.
    let codex_home = s.dir.path().join("codex-home");
    let out = s.collie_with(
        &["hooks", "install", "codex", "--hold-permissions"],
        &[("CODEX_HOME", codex_home.as_path())],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(codex_home.join("hooks.json").exists());
    assert_eq!(text(&read_json(&file)), text(&users));
}

#[test]
fn the_installed_timeout_follows_the_configured_hold() {
    let s = Sandbox::new();
    let config = s.dir.path().join("config");
    fs::create_dir(&config).expect("config dir");
    fs::write(
        config.join("config.toml"),
        "schema_version = 1\n[hooks]\nhold = 3600\n",
    )
    .expect("config");
    s.ok(&["hooks", "install", "claude", "--hold-permissions"]);
    let settings = read_json(&s.home().join(".claude/settings.json"));
    assert_eq!(
        settings["hooks"]["PermissionRequest"][0]["hooks"][0]["timeout"],
        3660
    );
    // A shorter hold rewrites Collie's entry in place.
    fs::write(
        config.join("config.toml"),
        "schema_version = 1\n[hooks]\nhold = 60\n",
    )
    .expect("config");
    s.ok(&["hooks", "install", "claude", "--hold-permissions"]);
    let settings = read_json(&s.home().join(".claude/settings.json"));
    let groups = settings["hooks"]["PermissionRequest"]
        .as_array()
        .expect("groups");
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0]["hooks"][0]["timeout"], 120);
}

/// The `hooks.installed` lines of a bridge's audit log: (agent, scope, action, path).
fn hooks_lines(b: &support::TestBridge) -> Vec<(String, String, String, String)> {
    b.audit_lines()
        .into_iter()
        .filter(|l| l["event"] == "hooks.installed")
        .map(|l| {
            let d = &l["detail"];
            let s = |k: &str| d[k].as_str().unwrap_or_default().to_owned();
            (s("agent"), s("scope"), s("action"), s("path"))
        })
        .collect()
}

#[test]
fn install_and_uninstall_are_audited_by_the_running_bridge_and_kept_while_it_is_stopped() {
    let mut b = support::TestBridge::start();
    let settings = b.dir.path().join("home/.claude/settings.json");
    let settings = settings.display().to_string();
    let install = ["hooks", "install", "claude", "--hold-permissions"];

    // A running bridge writes the line itself.
    b.cli_ok(&install);
    let want_installed = (
        "claude".to_owned(),
        "user".to_owned(),
        "installed".to_owned(),
        settings.clone(),
    );
    assert_eq!(hooks_lines(&b), vec![want_installed.clone()]);
    // A second install changes nothing, and nothing happened is no line.
    b.cli_ok(&install);
    assert_eq!(hooks_lines(&b).len(), 1);

    // With the bridge stopped the line is kept in the store and appended when it starts again.
    b.stop();
    b.cli_ok(&["hooks", "uninstall", "claude"]);
    assert_eq!(
        hooks_lines(&b).len(),
        1,
        "nobody writes the log while it is stopped"
    );
    b.launch();
    let want_removed = (
        "claude".to_owned(),
        "user".to_owned(),
        "removed".to_owned(),
        settings,
    );
    assert_eq!(hooks_lines(&b), vec![want_installed, want_removed]);
    let verify = b.cli(&["audit", "verify"]);
    assert!(verify.status.success(), "{verify:?}");
}
