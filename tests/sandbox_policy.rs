//! Black-box tests of the sandbox's policy half (SPEC §15) against real `collie` processes:
//! `[sandbox]` in `config.toml` is applied into the snapshot, `collie show` prints the effective
//! policy with where each entry came from, `collie apply` refuses a root that would reach what the
//! sandbox must keep out, `collie doctor` shows the kernel's Landlock ABI, and the bridge refuses to
//! start under a policy the kernel cannot enforce.
//!
//! This machine's kernel has Landlock ABI 7. An older kernel is simulated through the test-only
//! `fault-injection` feature: `COLLIE_TEST_LANDLOCK_ABI` makes a `fault-injection` build's kernel
//! probe report that ABI (shipped builds never read it).

mod support;

use std::path::PathBuf;
use std::time::Duration;

use support::{json_of, wait_for, Opts, TestBridge};

/// A bridge that ran once on the defaults and is stopped: its dirs are ready for a configuration.
fn stopped_bridge() -> TestBridge {
    let mut b = TestBridge::start_with(Opts::default());
    b.stop();
    b
}

fn home(b: &TestBridge) -> PathBuf {
    std::fs::canonicalize(b.dir.path().join("home")).expect("home")
}

fn write_config(b: &TestBridge, body: &str) {
    std::fs::write(
        b.config_dir().join("config.toml"),
        format!("schema_version = 1\n{body}"),
    )
    .expect("write config.toml");
}

fn apply_yes(b: &TestBridge) -> String {
    let out = b.cli(&["apply", "--yes"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// A workspace `~/code`, a dotfile, and `[sandbox]` with `rest` after `profile = "workspace"`.
fn sandboxed(b: &TestBridge, rest: &str) {
    std::fs::create_dir_all(home(b).join("code")).expect("mkdir");
    std::fs::write(home(b).join(".bashrc"), "# test\n").expect("write");
    write_config(
        b,
        &format!("workspaces = [\"~/code\"]\n[sandbox]\nprofile = \"workspace\"\n{rest}"),
    );
}

/// Runs `collie bridge` with `env` added and expects it to refuse to start: its stderr.
fn start_refused(b: &TestBridge, env: &[(&str, &str)]) -> String {
    let (status, err) = b.start_refused(env);
    assert!(!status.success(), "{err}");
    assert!(
        !b.state().join("bridge.sock").exists(),
        "nothing was served: {err}"
    );
    err
}

#[test]
fn apply_and_show_print_the_policy_with_where_each_entry_came_from() {
    let mut b = stopped_bridge();
    sandboxed(
        &b,
        "network = \"local\"\nlocal_ports = [5432]\nprocesses = 64\n",
    );
    let applied = apply_yes(&b);
    assert!(
        applied.contains("+ sandbox (profile \"workspace\")"),
        "{applied}"
    );
    assert!(applied.contains("network local, ports 5432"), "{applied}");

    let shown = b.cli_ok(&["show"]);
    let code = home(&b).join("code");
    for line in [
        format!("path     {} (write; workspace)", code.display()),
        format!(
            "path     {} (read; home dotfiles)",
            home(&b).join(".bashrc").display()
        ),
        "path     /usr (read; system)".to_owned(),
        "path     /dev/null (device; system)".to_owned(),
        "network  local, ports 5432".to_owned(),
        "limit    memory_mb 4096 MiB (preset normal)".to_owned(),
        "limit    processes 64 processes ([sandbox] processes)".to_owned(),
        "limit    timeout_s 1800 s (preset normal)".to_owned(),
    ] {
        assert!(shown.contains(&line), "missing {line:?} in:\n{shown}");
    }
    assert!(
        shown.contains("sandbox    workspace"),
        "the effective permissions name it: {shown}"
    );
    assert!(
        !shown.contains("path     /dev (device"),
        "never /dev whole: {shown}"
    );

    let json = json_of(&b.cli_ok(&["show", "--json"]));
    let sandbox = &json["effective"]["applied"]["sandbox"];
    assert_eq!(sandbox["preset"], "normal", "{sandbox}");
    assert_eq!(sandbox["overrides"][0], "processes", "{sandbox}");
    assert_eq!(sandbox["policy"]["network"]["rule"], "local", "{sandbox}");
    assert_eq!(sandbox["policy"]["network"]["ports"][0], 5432, "{sandbox}");
    let paths = sandbox["policy"]["paths"].as_array().expect("paths");
    assert!(
        paths.iter().any(|p| p["path"] == code.display().to_string()
            && p["access"] == "write"
            && p["from"] == "workspace"),
        "{sandbox}"
    );
    // Collie's own state and config folders are nowhere in it.
    for p in paths {
        let path = p["path"].as_str().expect("a path");
        assert!(
            !b.state().starts_with(path) && !b.config_dir().starts_with(path),
            "{path} reaches Collie's own folders"
        );
    }

    // This kernel enforces it: the bridge starts, and the snapshot is what it runs on.
    b.launch();
    assert!(b
        .cli_ok(&["show"])
        .contains("applied: the bridge starts with it"));
    // The change is audited with the profile it turned on.
    let line = wait_for(Duration::from_secs(10), || {
        b.audit_lines()
            .into_iter()
            .find(|l| l["event"] == "config.applied")
    })
    .expect("config.applied is in the log once the bridge runs");
    assert_eq!(line["detail"]["sandbox"], "workspace", "{line}");
    b.stop();
}

#[test]
fn apply_refuses_roots_that_reach_what_the_sandbox_keeps_out() {
    let b = stopped_bridge();
    std::fs::create_dir_all(home(&b).join(".ssh")).expect("mkdir");
    std::fs::create_dir_all(home(&b).join(".claude")).expect("mkdir");
    for (body, says) in [
        // The default workspace is the whole home folder.
        ("[sandbox]\nprofile = \"workspace\"\n", "narrower workspaces"),
        (
            "workspaces = [\"~\"]\n[sandbox]\nprofile = \"workspace\"\n",
            ".ssh",
        ),
        (
            "workspaces = [\"~/.claude\"]\n[sandbox]\nprofile = \"workspace\"\n",
            "settings.json",
        ),
        (
            "workspaces = [{ path = \"~/.claude\", access = \"read\" }]\n[sandbox]\nprofile = \"workspace\"\nnetwork = \"none\"\nlocal_ports = [22]\n",
            "local_ports only applies",
        ),
    ] {
        write_config(&b, body);
        let out = b.cli(&["apply", "--yes"]);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(1), "{body}: {err}");
        assert!(err.contains(says), "{body}: {err}");
        assert!(
            !b.state().join("applied.json").exists(),
            "nothing was applied: {body}"
        );
    }
    // Collie's state folder under a read-only root.
    write_config(
        &b,
        &format!(
            "workspaces = [{{ path = \"~/.claude\", access = \"read\" }}]\n[sandbox]\nprofile = \"workspace\"\nread_only = [\"{}\"]\n",
            b.dir.path().display()
        ),
    );
    let out = b.cli(&["apply", "--yes"]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("Collie's own state or config folder"), "{err}");
}

#[test]
fn doctor_shows_the_landlock_abi_and_whether_the_policy_can_be_enforced() {
    let b = stopped_bridge();
    let doctor = String::from_utf8_lossy(&b.cli(&["doctor"]).stdout).into_owned();
    assert!(
        doctor.contains("ok    sandbox off; Landlock ABI "),
        "{doctor}"
    );
    sandboxed(&b, "");
    apply_yes(&b);
    let doctor = String::from_utf8_lossy(&b.cli(&["doctor"]).stdout).into_owned();
    assert!(
        doctor.contains("ok    the applied sandbox can be enforced here: Landlock ABI "),
        "{doctor}"
    );
    assert!(doctor.contains("(files and TCP)"), "{doctor}");
}

/// The older kernel is simulated (this one has ABI 7): see the file's head.
#[cfg(feature = "fault-injection")]
#[test]
fn a_policy_an_older_kernel_cannot_enforce_stops_the_bridge() {
    let mut b = stopped_bridge();
    // Network `none` is enforced with Landlock's TCP rules: ABI 4.
    sandboxed(&b, "network = \"none\"\n");
    apply_yes(&b);
    let err = start_refused(&b, &[("COLLIE_TEST_LANDLOCK_ABI", "3")]);
    assert!(err.contains("sandbox"), "{err}");
    assert!(err.contains("needs Landlock ABI 4"), "{err}");
    assert!(err.contains("this kernel has ABI 3"), "{err}");
    let doctor = b
        .command()
        .env("COLLIE_TEST_LANDLOCK_ABI", "3")
        .arg("doctor")
        .output();
    let doctor = String::from_utf8_lossy(&doctor.expect("doctor").stdout).into_owned();
    assert!(
        doctor.contains("FAIL  the applied sandbox cannot be enforced here"),
        "{doctor}"
    );

    // No Landlock at all: nothing to confine with, whatever the rule.
    sandboxed(&b, "network = \"any\"\n");
    apply_yes(&b);
    let err = start_refused(&b, &[("COLLIE_TEST_LANDLOCK_ABI", "0")]);
    assert!(
        err.contains("needs Landlock, and this kernel has none"),
        "{err}"
    );

    // `any` needs only the file rules (ABI 1): the same older kernel starts the bridge.
    b.extra_env
        .push(("COLLIE_TEST_LANDLOCK_ABI".into(), "3".into()));
    b.launch();
    assert!(b.cli_ok(&["show"]).contains("network  any"));
    b.stop();
}
