//! `collie service install|uninstall|status` (SPEC §17, decision 0077): the systemd user unit
//! written into a private `XDG_CONFIG_HOME`, checked with `systemd-analyze verify` where that
//! exists, and removed again. Every run points systemctl at a user bus that does not exist, so no
//! test ever reaches the machine's own service manager: this is also how `install` behaves on a
//! machine (a container, CI) where `systemctl --user` cannot be used.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use support::collie_bin;

struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::Builder::new()
            .prefix("collie-service-")
            .tempdir()
            .expect("tempdir");
        for d in ["home", "xdg", "state"] {
            std::fs::create_dir_all(dir.path().join(d)).expect("mkdir");
        }
        Home { dir }
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    fn unit(&self) -> PathBuf {
        self.path("xdg/systemd/user/collie.service")
    }

    fn collie(&self, args: &[&str]) -> Output {
        Command::new(collie_bin())
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.path("home"))
            .env("XDG_CONFIG_HOME", self.path("xdg"))
            .env("COLLIE_STATE_DIR", self.path("state"))
            .env("COLLIE_PORT", "7999")
            // No user bus: systemctl --user fails at once, whatever this machine runs.
            .env("XDG_RUNTIME_DIR", self.path("no-runtime-dir"))
            .env(
                "DBUS_SESSION_BUS_ADDRESS",
                format!("unix:path={}", self.path("no-bus").display()),
            )
            .stdin(Stdio::null())
            .output()
            .expect("run collie")
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn install_writes_a_unit_that_runs_this_binary_s_bridge_and_verifies() {
    let h = Home::new();
    let out = h.collie(&["service", "install", "--no-enable"]);
    assert!(out.status.success(), "{}", text(&out));
    let unit = std::fs::read_to_string(h.unit()).expect("the unit is written");
    let program = std::fs::canonicalize(collie_bin()).expect("the binary's real path");
    let lines: Vec<&str> = unit.lines().collect();
    for want in [
        format!("ExecStart={} bridge", program.display()),
        "Restart=on-failure".into(),
        format!("EnvironmentFile=-{}/collie/.env", h.path("xdg").display()),
        format!(
            "Environment=\"COLLIE_STATE_DIR={}\"",
            h.path("state").display()
        ),
        "WantedBy=default.target".into(),
    ] {
        assert!(lines.contains(&want.as_str()), "{want} in\n{unit}");
    }
    // A setting is not frozen into the unit: it belongs in .env, and the command says so.
    assert!(!unit.contains("COLLIE_PORT"), "{unit}");
    assert!(text(&out).contains("COLLIE_PORT"), "{}", text(&out));
    let mode = std::fs::metadata(h.unit())
        .expect("stat")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    verify(&h.unit());
}

/// `systemd-analyze verify` reads the unit as systemd would (and checks that ExecStart's binary
/// exists); where systemd-analyze is missing this one check is skipped, and the test says so.
fn verify(unit: &Path) {
    if !have("systemd-analyze") {
        eprintln!("systemd-analyze is not installed: the unit's syntax check is skipped");
        return;
    }
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(unit)
        .stdin(Stdio::null())
        .output()
        .expect("run systemd-analyze");
    let said = text(&out);
    assert!(
        out.status.success() && !said.contains("collie.service:"),
        "systemd-analyze verify: {said}"
    );
}

#[test]
fn without_a_user_systemd_install_writes_the_unit_and_says_what_to_run() {
    let h = Home::new();
    let out = h.collie(&["service", "install"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(h.unit().exists(), "the unit is written all the same");
    assert!(said.contains("could not enable it"), "{said}");
    assert!(
        said.contains("systemctl --user daemon-reload && systemctl --user enable --now collie"),
        "{said}"
    );
    assert!(said.contains("loginctl enable-linger"), "{said}");
}

#[test]
fn print_writes_nothing_and_uninstall_removes_what_install_wrote() {
    let h = Home::new();
    let printed = h.collie(&["service", "install", "--print"]);
    assert!(printed.status.success(), "{}", text(&printed));
    assert!(String::from_utf8_lossy(&printed.stdout).contains("Restart=on-failure"));
    assert!(!h.unit().exists(), "--print wrote the unit");

    let status = text(&h.collie(&["service", "status"]));
    assert!(status.contains("not installed"), "{status}");

    let out = h.collie(&["service", "install", "--no-enable"]);
    assert!(out.status.success(), "{}", text(&out));
    let status = text(&h.collie(&["service", "status"]));
    assert!(status.contains("installed"), "{status}");
    assert!(!status.contains("not installed"), "{status}");
    assert!(status.contains(&h.unit().display().to_string()), "{status}");
    let json: serde_json::Value =
        serde_json::from_slice(&h.collie(&["service", "status", "--json"]).stdout)
            .expect("status --json is JSON");
    assert_eq!(json["installed"], true);
    assert!(json["manager_error"].is_string(), "{json}");

    let out = h.collie(&["service", "uninstall"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!h.unit().exists(), "uninstall left the unit");
    let status = text(&h.collie(&["service", "status"]));
    assert!(status.contains("not installed"), "{status}");
}
