//! An agent cannot pair itself a device (SPEC §4.6). The attack (issue 26, hole 8): an agent in a
//! pane runs `collie pair --tier full`, claims the code over loopback and taps its own cards. The
//! bridge reads the asking process's parent chain (the control socket's peer, which the client
//! cannot forge) and refuses a chain that holds Claude Code or Codex, audited `security.denied`.
//!
//! The agents here are stand-ins: a copy of bash named `claude` or `codex` runs the command, which
//! is what the bridge sees of the real agents (their processes are named so; the real agents need
//! a model to decide to run a command, and the rule reads nothing but the chain).

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use support::{wait_for, Opts, TestBridge};

/// A copy of bash named `name` in `dir`: a process the kernel and `/proc` show as `name`.
fn agent_named(dir: &Path, name: &str) -> PathBuf {
    let bash = which_bash();
    let path = dir.join(name);
    std::fs::copy(&bash, &path).expect("copy bash");
    path
}

fn which_bash() -> PathBuf {
    ["/bin/bash", "/usr/bin/bash"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .expect("bash")
}

/// `collie pair --json --tier full`, run by a shell `program` (the command is not its last, so the
/// shell cannot exec it in its own place: the shell stays the CLI's parent).
fn pair_from(b: &TestBridge, program: &Path) -> Output {
    // The bridge's `collie` command: its program and its environment, run by the shell instead.
    let collie = b.command();
    let script = format!(
        "\"{}\" pair --json --tier full; rc=$?; exit $rc",
        collie.get_program().to_string_lossy()
    );
    let envs: Vec<(&std::ffi::OsStr, &std::ffi::OsStr)> = collie
        .get_envs()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect();
    std::process::Command::new(program)
        .env_clear()
        .envs(envs)
        .args(["-c", &script])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run the shell")
}

#[test]
fn an_agent_asking_for_a_pairing_code_is_refused_and_audited() {
    let b = TestBridge::start_with(Opts::default());
    let tools = tempfile::tempdir().expect("tempdir");
    for name in ["claude", "codex"] {
        let agent = agent_named(tools.path(), name);
        let out = pair_from(&b, &agent);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {stdout} {stderr}");
        assert!(!stdout.contains("\"code\""), "{name} got a code: {stdout}");
        assert!(
            stderr.contains("an agent is running this command"),
            "{name}: {stderr}"
        );
    }
    // Audited: denials of one source and reason are written once a minute with a count, so the
    // first (Claude Code's) is the line.
    let denied = wait_for(Duration::from_secs(10), || {
        b.audit_lines()
            .into_iter()
            .find(|l| l["event"] == "security.denied" && l["detail"]["method"] == "pair")
    })
    .expect("a security.denied line for the refused pairing");
    assert_eq!(denied["detail"]["agent"], "claude", "{denied}");
    assert_eq!(denied["detail"]["tier"], "full", "{denied}");
    // No code was made: a claim of anything fails, and no device exists.
    let (status, v) = b.get("/api/health", None);
    assert_eq!(status, 200, "{v}");
    assert!(!b.cli_ok(&["devices", "list"]).contains("full"));

    // The person's own shell (bash by its own name) gets a code as ever.
    let out = pair_from(&b, &which_bash());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("pair --json");
    let code = v["code"].as_str().expect("a code").to_owned();
    let (status, body) = b.post(
        "/api/pair",
        None,
        &serde_json::json!({"code": code, "label": "mine"}),
    );
    assert_eq!(status, 200, "{body}");
}
