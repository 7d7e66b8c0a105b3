//! The sandbox around what a phone starts (SPEC §15, issue 30; decision 0071), with real
//! processes on this machine's kernel (Landlock ABI 7): a starter, a one-shot command,
//! `exec_command` and `start_process` each run the same probe — a bash script that tries what the
//! policy forbids and writes what happened into the workspace — under an applied `[sandbox]`
//! policy. Each attempt is refused or bounded while the workspace stays writable and the allowed
//! port reachable: writing outside the workspace, reading a fake `~/.ssh/id_ed25519` and Collie's
//! `local-secret`, writing `~/.claude/settings.json`, connecting to a loopback port the policy does
//! not allow, reaching tmux's socket, forking 10,000 processes, allocating past the memory limit,
//! and outliving the time limit.

mod support;

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use support::{wait_for, Opts, TestBridge};

/// The policy's limits: small enough to reach quickly, large enough for the probe itself.
const MEMORY_MB: u64 = 256;
const PROCESSES: u32 = 12;
const TIMEOUT_S: u64 = 25;

/// A bridge whose applied configuration confines what it starts, with the probe in its
/// workspace and two listening loopback ports: one the policy allows, one it does not.
struct Confined {
    bridge: TestBridge,
    ws: PathBuf,
    outside: PathBuf,
    _allowed: TcpListener,
    denied: TcpListener,
}

impl Confined {
    fn start() -> Confined {
        Self::start_with(true)
    }

    /// With `sandbox` false the same configuration without `[sandbox]`: the control run.
    fn start_with(sandbox: bool) -> Confined {
        let allowed = TcpListener::bind("127.0.0.1:0").expect("allowed port");
        let denied = TcpListener::bind("127.0.0.1:0").expect("denied port");
        denied.set_nonblocking(true).expect("nonblocking");
        let mut bridge = TestBridge::start_with(Opts {
            with_tmux: true,
            ..Opts::default()
        });
        let ws = bridge.dir.path().join("ws");
        let outside = bridge.dir.path().join("outside");
        std::fs::create_dir_all(&ws).expect("ws");
        std::fs::create_dir_all(&outside).expect("outside");
        let tmux = bridge.tmux.as_ref().expect("tmux").socket.clone();
        let home = bridge.dir.path().join("home");
        std::fs::create_dir_all(home.join(".ssh")).expect(".ssh");
        std::fs::write(home.join(".ssh/id_ed25519"), "FAKE PRIVATE KEY\n").expect("key");
        std::fs::create_dir_all(home.join(".claude")).expect(".claude");
        std::fs::write(home.join(".claude/settings.json"), "{\"hooks\":{}}\n").expect("settings");
        let places = Places {
            ws: &ws,
            outside: &outside,
            home: &home,
            state: &bridge.state(),
            tmux: &tmux,
        };
        write_probe(&places, &allowed, &denied);
        let _ = bridge.stop();
        bridge.configure(&format!(
            "workspaces = [\"{ws}\"]\n\
             [[starters]]\nname = \"Probe\"\nexec = \"/usr/bin/bash\"\nargs = [\"{ws}/probe.sh\", \"starter\"]\n\
             {sandbox}",
            ws = ws.display(),
            sandbox = if sandbox {
                format!(
                    "[sandbox]\nprofile = \"workspace\"\nnetwork = \"local\"\n\
                     local_ports = [{port}]\nmemory_mb = {MEMORY_MB}\n\
                     processes = {PROCESSES}\ntimeout_s = {TIMEOUT_S}\n",
                    port = allowed.local_addr().expect("addr").port(),
                )
            } else {
                String::new()
            },
        ));
        bridge.launch();
        Confined {
            bridge,
            ws,
            outside,
            _allowed: allowed,
            denied,
        }
    }

    /// Waits for the probe run `name` to finish its attempts; what each one did.
    fn results(&self, name: &str) -> BTreeMap<String, String> {
        let file = self.ws.join(format!("results-{name}"));
        let done = wait_for(Duration::from_secs(60), || {
            let text = std::fs::read_to_string(&file).ok()?;
            text.contains("done yes").then_some(text)
        });
        let text = done.unwrap_or_else(|| {
            panic!(
                "the probe `{name}` did not finish: {:?}",
                std::fs::read_to_string(&file)
            )
        });
        text.lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }

    /// Every attempt of run `name` was refused or bounded, and the run is killed at the time
    /// limit — not before.
    fn assert_confined(&self, name: &str) {
        let r = self.results(name);
        let said = |k: &str| r.get(k).map(String::as_str).unwrap_or("(missing)");
        assert_eq!(said("workspace_write"), "ok", "{name}: {r:?}");
        assert_eq!(said("allowed_connect"), "ok", "{name}: {r:?}");
        assert_eq!(
            said("settings_read"),
            "ok",
            "{name}: read-only, not hidden: {r:?}"
        );
        for refused in [
            "outside_write",
            "ssh_read",
            "secret_read",
            "settings_write",
            "denied_connect",
            "tmux",
        ] {
            assert_eq!(said(refused), "refused", "{name} {refused}: {r:?}");
        }
        assert!(
            !self.outside.join(format!("escape-{name}")).exists(),
            "{name}: a file was written outside the workspace"
        );
        let home = self.bridge.dir.path().join("home");
        assert_eq!(
            std::fs::read_to_string(home.join(".claude/settings.json")).expect("settings"),
            "{\"hooks\":{}}\n",
            "{name}: the hooks' settings file changed"
        );
        assert!(
            self.denied.accept().is_err(),
            "{name}: the port the policy does not allow was reached"
        );
        // 400 MB asked, 256 MiB allowed: the allocating shell died instead of answering.
        assert_ne!(
            said("memory"),
            "0",
            "{name}: the allocation succeeded: {r:?}"
        );
        let mem = std::fs::read_to_string(self.ws.join(format!("mem-{name}"))).unwrap_or_default();
        assert!(!mem.contains("400000000"), "{name}: {mem}");
        let forks: u32 = said("forks").parse().unwrap_or(u32::MAX);
        assert!(
            forks < PROCESSES,
            "{name}: {forks} of 10,000 processes started (limit {PROCESSES})"
        );
        // The probe now sleeps for ten minutes; the time limit ends it and all it started.
        let pid: u32 = std::fs::read_to_string(self.ws.join(format!("pid-{name}")))
            .expect("pid")
            .trim()
            .parse()
            .expect("pid number");
        let proc_dir = PathBuf::from(format!("/proc/{pid}"));
        assert!(
            proc_dir.exists(),
            "{name}: the probe ended before its time limit"
        );
        let gone = wait_for(Duration::from_secs(TIMEOUT_S + 30), || {
            (!proc_dir.exists()).then_some(())
        });
        assert!(gone.is_some(), "{name}: the probe outlived the time limit");
    }
}

/// Where the probe looks.
struct Places<'a> {
    ws: &'a Path,
    outside: &'a Path,
    home: &'a Path,
    state: &'a Path,
    /// The tmux server the bridge's panes run in.
    tmux: &'a Path,
}

/// The probe: each attempt writes `<what> ok|refused` (or a number); `done yes` when all ran.
/// The fork bomb comes last: its sleeping children hold the process limit, so after it the probe
/// uses only shell built-ins, and then becomes `sleep 600` (no fork) for the time limit to end.
fn write_probe(p: &Places, allowed: &TcpListener, denied: &TcpListener) {
    let script = format!(
        r#"#!/bin/bash
name="$1"
out="{ws}/results-$name"
: > "$out"
r() {{ echo "$1 $2" >> "$out"; }}
echo $$ > "{ws}/pid-$name"
if echo in > "{ws}/inside-$name"; then r workspace_write ok; else r workspace_write refused; fi
if echo out > "{outside}/escape-$name" 2>/dev/null; then r outside_write ok; else r outside_write refused; fi
if cat "{home}/.ssh/id_ed25519" > /dev/null 2>&1; then r ssh_read ok; else r ssh_read refused; fi
if cat "{state}/local-secret" > /dev/null 2>&1; then r secret_read ok; else r secret_read refused; fi
if echo '{{}}' > "{home}/.claude/settings.json" 2>/dev/null; then r settings_write ok; else r settings_write refused; fi
if cat "{home}/.claude/settings.json" > /dev/null 2>&1; then r settings_read ok; else r settings_read refused; fi
if (exec 3<>/dev/tcp/127.0.0.1/{allowed}) 2>/dev/null; then r allowed_connect ok; else r allowed_connect refused; fi
if (exec 3<>/dev/tcp/127.0.0.1/{denied}) 2>/dev/null; then r denied_connect ok; else r denied_connect refused; fi
if tmux -S "{tmux}" list-sessions > /dev/null 2>&1; then r tmux ok; else r tmux refused; fi
if [ "$name" = control ]; then r done yes; exit 0; fi
bash -c 'x=$(head -c 400000000 /dev/zero | tr "\0" a); echo ${{#x}}' > "{ws}/mem-$name" 2>&1
r memory $?
sh -c 'i=0; while [ $i -lt 10000 ]; do sleep 600 & i=$((i+1)); echo $i > "{ws}/forks-'"$name"'"; done' 2>/dev/null
read -r n < "{ws}/forks-$name"
r forks "$n"
r done yes
exec sleep 600
"#,
        ws = p.ws.display(),
        outside = p.outside.display(),
        home = p.home.display(),
        state = p.state.display(),
        tmux = p.tmux.display(),
        allowed = allowed.local_addr().expect("addr").port(),
        denied = denied.local_addr().expect("addr").port(),
    );
    std::fs::write(p.ws.join("probe.sh"), script).expect("probe");
}

#[test]
fn a_starter_runs_confined() {
    let c = Confined::start();
    let phone = c.bridge.pair("phone", "full");
    let (status, body) = c.bridge.post(
        "/api/panes",
        Some(&phone),
        &json!({"machine": "local", "starter": "Probe"}),
    );
    assert_eq!(status, 200, "{body}");
    c.assert_confined("starter");
}

#[test]
fn a_one_shot_command_runs_confined() {
    let c = Confined::start();
    let phone = c.bridge.pair("phone", "full");
    let line = format!("bash {}/probe.sh command", c.ws.display());
    let (status, body) = c.bridge.post(
        "/api/commands",
        Some(&phone),
        &json!({"machine": "local", "command": line}),
    );
    assert_eq!(status, 200, "{body}");
    c.assert_confined("command");
}

#[test]
fn exec_command_runs_confined() {
    let c = Confined::start();
    let phone = c.bridge.pair("phone", "full");
    let args = json!({
        "command": format!("bash {}/probe.sh exec", c.ws.display()),
        "timeout_ms": 120_000,
    });
    // The call lasts until the sandbox's time limit, past the harness client's 15 s.
    let url = c.bridge.url("/api/tools/exec_command");
    std::thread::scope(|s| {
        let call = s.spawn(|| {
            ureq::post(&url)
                .timeout(Duration::from_secs(TIMEOUT_S + 60))
                .set("Authorization", &format!("Bearer {phone}"))
                .send_json(args.clone())
                .expect("exec_command")
                .into_json::<serde_json::Value>()
                .expect("JSON")
        });
        c.assert_confined("exec");
        let body = call.join().expect("exec_command");
        // The sandbox's time limit, not the tool's (two minutes), ended it.
        assert_eq!(body["exit_code"], 124, "{body}");
        assert_eq!(body["timed_out"], false, "{body}");
        assert!(
            body["stderr"]
                .as_str()
                .is_some_and(|e| e.contains("time limit")),
            "{body}"
        );
    });
}

#[test]
fn start_process_runs_confined() {
    let c = Confined::start();
    let phone = c.bridge.pair("phone", "full");
    let (status, body) = c.bridge.post(
        "/api/tools/start_process",
        Some(&phone),
        &json!({"command": format!("bash {}/probe.sh process", c.ws.display())}),
    );
    assert_eq!(status, 200, "{body}");
    c.assert_confined("process");
}

/// The control: the same probe without `[sandbox]` reaches everything the confined runs could
/// not — so each refusal above is the sandbox's, not the probe's.
#[test]
fn without_the_sandbox_the_probe_reaches_all_of_it() {
    let c = Confined::start_with(false);
    let phone = c.bridge.pair("phone", "full");
    let (status, body) = c.bridge.post(
        "/api/tools/exec_command",
        Some(&phone),
        &json!({"command": format!("bash {}/probe.sh control", c.ws.display())}),
    );
    assert_eq!((status, &body["exit_code"]), (200, &json!(0)), "{body}");
    let r = c.results("control");
    for reached in [
        "workspace_write",
        "outside_write",
        "ssh_read",
        "secret_read",
        "settings_write",
        "allowed_connect",
        "denied_connect",
        "tmux",
    ] {
        assert_eq!(
            r.get(reached).map(String::as_str),
            Some("ok"),
            "{reached}: {r:?}"
        );
    }
}

/// A policy for the keeper tests below: the system's programs, the folder `ws` writable.
fn keeper_policy(ws: &Path, timeout_s: u64) -> String {
    json!({
        "paths": [
            {"path": "/usr", "access": "read", "from": "system"},
            {"path": "/etc", "access": "read", "from": "system"},
            {"path": "/proc", "access": "read", "from": "system"},
            {"path": "/dev/null", "access": "device", "from": "system"},
            {"path": ws, "access": "write", "from": "workspace"},
        ],
        "network": {"rule": "none"},
        "limits": {"memory_mb": 512, "processes": 16, "timeout_s": timeout_s},
    })
    .to_string()
}

fn keeper(ws: &Path, timeout_s: u64, script: &str) -> std::process::Command {
    let mut cmd = std::process::Command::new(support::collie_bin());
    cmd.args(["__sandbox", &keeper_policy(ws, timeout_s), "--"])
        .args(["/usr/bin/sh", "-c", script])
        .current_dir(ws);
    cmd
}

fn pid_in(file: &Path) -> PathBuf {
    let pid = wait_for(Duration::from_secs(10), || {
        std::fs::read_to_string(file)
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok())
    })
    .expect("the command wrote its child's pid");
    PathBuf::from(format!("/proc/{pid}"))
}

/// What a confined command leaves running — even in a session of its own — ends with it.
#[test]
fn what_the_command_leaves_behind_ends_with_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path();
    let status = keeper(ws, 60, "setsid sleep 600 & echo $! > left; exit 3")
        .status()
        .expect("keeper");
    assert_eq!(status.code(), Some(3), "the command's own exit code");
    let left = pid_in(&ws.join("left"));
    let gone = wait_for(Duration::from_secs(10), || (!left.exists()).then_some(()));
    assert!(gone.is_some(), "the escaped sleep outlived its command");
}

/// Told to stop (a tool's `kill_process`, a closed pane), the keeper gives the command SIGTERM and
/// then ends the whole tree.
#[test]
fn a_stopped_keeper_ends_the_whole_tree() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path();
    let mut child = keeper(
        ws,
        600,
        "trap '' TERM; setsid sleep 600 & echo $! > left; echo $$ > me; while :; do sleep 1; done",
    )
    .spawn()
    .expect("keeper");
    let left = pid_in(&ws.join("left"));
    let me = pid_in(&ws.join("me"));
    let keeper_pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(keeper_pid, nix::sys::signal::Signal::SIGTERM).expect("signal");
    let status = child.wait().expect("wait");
    assert!(!status.success(), "{status:?}");
    let gone = wait_for(Duration::from_secs(10), || {
        (!left.exists() && !me.exists()).then_some(())
    });
    assert!(
        gone.is_some(),
        "a command that ignores SIGTERM, or its escapee, lived on"
    );
}

/// A policy that does not read, or a confinement that fails, runs nothing.
#[test]
fn nothing_runs_when_the_sandbox_cannot_be_set_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path();
    let marker = ws.join("ran");
    let out = std::process::Command::new(support::collie_bin())
        .args(["__sandbox", "{not a policy", "--", "/usr/bin/touch"])
        .arg(&marker)
        .output()
        .expect("keeper");
    assert_eq!(out.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the command was not started"));
    // A workspace that cannot be opened is skipped, and the rest holds: the write outside fails.
    let policy = keeper_policy(&ws.join("missing"), 60);
    let status = std::process::Command::new(support::collie_bin())
        .args(["__sandbox", &policy, "--", "/usr/bin/touch"])
        .arg(&marker)
        .status()
        .expect("keeper");
    assert!(!status.success());
    assert!(!marker.exists(), "the command ran unconfined");
}

/// The confined command cannot gain privileges (`no_new_privs`), and a root one holds no
/// capability — none to use now, none to regain across `execve` (SPEC §15).
#[test]
fn the_command_has_no_new_privileges_and_no_capabilities() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path();
    let out = keeper(
        ws,
        60,
        "grep -E '^(NoNewPrivs|CapEff|CapPrm|CapBnd|CapAmb):' /proc/self/status",
    )
    .output()
    .expect("keeper");
    assert!(out.status.success(), "{out:?}");
    let status = String::from_utf8_lossy(&out.stdout);
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::trim)
            .unwrap_or_else(|| panic!("no {name} in {status}"))
            .to_owned()
    };
    assert_eq!(field("NoNewPrivs:"), "1", "{status}");
    // Root gives up the bounding set too; another user's is the system's, and empty sets.
    let sets: &[&str] = if nix::unistd::geteuid().is_root() {
        &["CapEff:", "CapPrm:", "CapBnd:", "CapAmb:"]
    } else {
        &["CapEff:", "CapPrm:", "CapAmb:"]
    };
    for caps in sets {
        assert!(
            field(caps).chars().all(|c| c == '0'),
            "{caps} not empty: {status}"
        );
    }
}
