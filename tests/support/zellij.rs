#![allow(dead_code, unreachable_pub)]
//! A real zellij for the tests (issue 34, decision 0083): the pinned one `scripts/setup` builds
//! into `tools/` (or `COLLIE_ZELLIJ_BIN`) first on a test bridge's PATH, its sessions in the
//! bridge's own socket folder (`ZELLIJ_SOCKET_DIR`, which every test bridge gets) and killed when
//! the test ends, pass or fail. `COLLIE_ZELLIJ=0` skips the tests that need it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use std::time::Duration;

use serde_json::json;

use crate::support::{collie_bin, wait_for, Opts, TestBridge};

pub fn zellij_program() -> PathBuf {
    std::env::var_os("COLLIE_ZELLIJ_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tools/zellij-0.45.1/bin/zellij"),
        PathBuf::from,
    )
}

/// The test's zellij sessions, killed on drop.
pub struct Sessions {
    /// The bridge's test folder (its `zellij` socket folder and `home`).
    pub dir: PathBuf,
}

impl Sessions {
    /// The sessions of bridge `b` (they outlive a restart of it).
    pub fn of(b: &TestBridge) -> Sessions {
        Sessions {
            dir: b.dir.path().to_owned(),
        }
    }

    /// Runs zellij with `args` in the test's socket folder and home.
    pub fn run(&self, args: &[&str]) -> Output {
        self.run_with_shell(args, Path::new("/bin/sh"))
    }

    /// [`Sessions::run`] with `shell` as `SHELL`: what a session started so runs in its first
    /// pane.
    fn run_with_shell(&self, args: &[&str], shell: &Path) -> Output {
        let d = &self.dir;
        Command::new(zellij_program())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("ZELLIJ_SOCKET_DIR", d.join("zellij"))
            .env("HOME", d.join("home"))
            .env("XDG_CONFIG_HOME", d.join("home/.config"))
            .env("SHELL", shell)
            .current_dir(d.join("home"))
            .args(args)
            .output()
            .expect("zellij runs")
    }
}

impl Drop for Sessions {
    fn drop(&mut self) {
        let _ = self.run(&["kill-all-sessions", "--yes"]);
    }
}

/// The PATH with the pinned zellij first; `None` only when `COLLIE_ZELLIJ=0`.
pub fn zellij_path() -> Option<String> {
    if std::env::var_os("COLLIE_ZELLIJ").is_some_and(|v| v == "0") {
        eprintln!("skipped: COLLIE_ZELLIJ=0");
        return None;
    }
    let program = zellij_program();
    assert!(
        program.exists(),
        "no zellij at {} (scripts/setup builds it)",
        program.display()
    );
    let bin = program.parent().expect("bin dir").display().to_string();
    Some(format!(
        "{bin}:{}",
        std::env::var("PATH").unwrap_or_default()
    ))
}

/// A bridge whose PATH has the pinned zellij first; `None` only when `COLLIE_ZELLIJ=0`.
pub fn bridge() -> Option<TestBridge> {
    let path = zellij_path()?;
    Some(TestBridge::start_with(Opts {
        with_tmux: false,
        env: vec![("PATH".into(), path)],
        ..Opts::default()
    }))
}

pub fn zellij_panes(b: &TestBridge, token: &str) -> Vec<serde_json::Value> {
    let (_, list) = b.get("/api/panes", Some(token));
    list["panes"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|p| p["backend"] == "zellij")
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

impl Sessions {
    /// Starts session `name` in the background (no tips, the test's home).
    pub fn start(&self, name: &str) {
        self.start_running(name, Path::new("/bin/sh"));
    }

    /// Starts session `name` in the background with `program` (no arguments) in its one pane.
    pub fn start_running(&self, name: &str, program: &Path) {
        let config = self.dir.join("home/.config/zellij");
        std::fs::create_dir_all(&config).expect("config dir");
        std::fs::write(config.join("config.kdl"), "show_startup_tips false\n").expect("config");
        let out = self.run_with_shell(&["attach", "--create-background", name], program);
        assert!(out.status.success(), "zellij attach: {out:?}");
    }
}

/// The text of a pane as the bridge serves it, rows joined.
pub fn pane_text(b: &TestBridge, token: &str, pane: &str) -> String {
    let (_, snap) = b.get(&format!("/api/panes/testbox/{pane}"), Some(token));
    snap["lines"]
        .as_array()
        .map(|l| {
            l.iter()
                .filter_map(|x| x.as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// Writes an executable script `path` holding `body`.
pub fn write_program(path: &Path, body: &str) {
    std::fs::write(path, body).expect("script");
    let mut perms = std::fs::metadata(path).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(path, perms).expect("chmod");
}

/// `collie walky send TO hello`, typed into the shell of `pane`; what it printed and its exit code.
pub fn walky_from(
    b: &TestBridge,
    token: &str,
    pane: &str,
    to: &str,
    marker: &str,
) -> (String, i32) {
    let line = format!(
        "COLLIE_STATE_DIR={} COLLIE_CONFIG_DIR={} {} walky send {to} hello; echo {marker}=$?",
        b.state().display(),
        b.dir.path().join("config").display(),
        collie_bin().display()
    );
    type_into(b, token, pane, &json!({ "text": line, "keys": ["Enter"] }));
    wait_for(Duration::from_secs(30), || {
        // The pane is narrow: its rows are joined so a wrapped line reads whole.
        let text = pane_text(b, token, pane).replace('\n', "");
        let code = text
            .split(&format!("{marker}="))
            .nth(2)?
            .get(..1)?
            .parse::<i32>()
            .ok()?;
        Some((text, code))
    })
    .unwrap_or_else(|| panic!("the send never finished:\n{}", pane_text(b, token, pane)))
}

/// Types into this bridge's pane `pane` from the phone (`body`: `text` and/or `keys`); the bridge
/// must take it.
pub fn type_into(b: &TestBridge, token: &str, pane: &str, body: &serde_json::Value) {
    let (status, v) = b.post(
        &format!("/api/panes/testbox/{pane}/input"),
        Some(token),
        body,
    );
    assert_eq!(status, 200, "{v}");
}
