//! Tools under tiers (SPEC §11, issue 13's figures), with real processes: a release-built
//! `collie bridge` on loopback and its phone API, side by side in one run with
//!
//! 1. `exec_command "true"` round trip through `POST /api/tools/exec_command` against `ssh` to
//!    localhost with a ControlMaster already open (a private `sshd` this bench starts on a
//!    loopback port with its own host key; skipped, and said so, when `sshd` is missing);
//! 2. `edit_block` on a 1 MiB file (one line changed back and forth, so each call edits);
//! 3. `read_file` of a 10 MiB file, whole, as MiB/s of file read through the API (masking
//!    included);
//! 4. the bridge's memory with the session cap reached by sessions printing without end (`yes`),
//!    and again after more sessions were refused — it must stay flat.
//!
//! Run: `cargo bench --bench tools` (`COLLIE_BENCH_TOOLS_N=N` round trips per side, default 100:
//! the exec round trips are spread over one paired device per 18 — each device may start 20
//! processes in a burst — and pairing allows 10 attempts a minute from one source).
//! A plain binary, not criterion: the figures are whole processes'. Nothing is asserted.

mod support;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{
    agent, cpu_model, cpus, env_number, listing_only, load_average, mib, wait_for, wait_rss_stable,
    Bridge, Stats,
};

/// POSTs `body` to `url`; the status and the body.
fn post(agent: &ureq::Agent, url: &str, auth: &str, body: &Value) -> (u16, Vec<u8>) {
    let resp = match agent
        .post(url)
        .set("Authorization", auth)
        .send_json(body.clone())
    {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("POST {url}: {e}"),
    };
    let status = resp.status();
    let mut out = Vec::new();
    resp.into_reader()
        .read_to_end(&mut out)
        .unwrap_or_else(|e| panic!("POST {url}: reading the body: {e}"));
    (status, out)
}

/// A tool call that must answer 200.
fn call(agent: &ureq::Agent, bridge: &Bridge, auth: &str, tool: &str, args: &Value) -> Vec<u8> {
    let (status, body) = post(
        agent,
        &bridge.url(&format!("/api/tools/{tool}")),
        auth,
        args,
    );
    assert_eq!(status, 200, "{tool}: {}", String::from_utf8_lossy(&body));
    body
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

/// A private `sshd` on a loopback port, with a ControlMaster connection open to it.
struct Ssh {
    dir: tempfile::TempDir,
    port: u16,
    daemon: Child,
}

impl Ssh {
    fn start() -> Option<Ssh> {
        let sshd = ["/usr/sbin/sshd", "/usr/bin/sshd"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| p.exists())?;
        let dir = tempfile::tempdir().ok()?;
        let d = dir.path();
        for (key, kind) in [("host", "ed25519"), ("user", "ed25519")] {
            let ok = Command::new("ssh-keygen")
                .args(["-q", "-t", kind, "-N", "", "-f"])
                .arg(d.join(key))
                .status()
                .ok()?
                .success();
            if !ok {
                return None;
            }
        }
        std::fs::copy(d.join("user.pub"), d.join("authorized_keys")).ok()?;
        if nix::unistd::geteuid().is_root() {
            // sshd refuses to start as root without its privilege separation folder.
            let _ = std::fs::create_dir_all("/run/sshd");
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .ok()?
            .local_addr()
            .ok()?
            .port();
        std::fs::write(
            d.join("sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {}\nAuthorizedKeysFile {}\n\
                 PidFile {}\nStrictModes no\nUsePAM no\nPermitRootLogin yes\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\n",
                d.join("host").display(),
                d.join("authorized_keys").display(),
                d.join("sshd.pid").display(),
            ),
        )
        .ok()?;
        let daemon = Command::new(sshd)
            .args(["-D", "-e", "-f"])
            .arg(d.join("sshd_config"))
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let ssh = Ssh { dir, port, daemon };
        // The daemon listens, then the first `true` opens the master connection (not measured).
        let up = wait_for(Duration::from_secs(10), || ssh.run_true().then_some(()));
        up.map(|()| ssh)
    }

    fn run_true(&self) -> bool {
        let d = self.dir.path();
        Command::new("ssh")
            .args(["-F", "/dev/null", "-i"])
            .arg(d.join("user"))
            .args(["-p", &self.port.to_string()])
            .args([
                "-o",
                "StrictHostKeyChecking=no",
                "-o",
                "UserKnownHostsFile=/dev/null",
                "-o",
                "LogLevel=ERROR",
                "-o",
                "BatchMode=yes",
                "-o",
                "ControlMaster=auto",
                "-o",
                "ControlPersist=300",
            ])
            .arg("-o")
            .arg(format!("ControlPath={}", d.join("cm").display()))
            .args(["127.0.0.1", "true"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Drop for Ssh {
    fn drop(&mut self) {
        let d = self.dir.path();
        let _ = Command::new("ssh")
            .args(["-o", "LogLevel=QUIET", "-O", "exit", "-o"])
            .arg(format!("ControlPath={}", d.join("cm").display()))
            .arg("127.0.0.1")
            .stderr(Stdio::null())
            .status();
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
    }
}

/// `n` `exec_command "true"` round trips spread over `tokens` (each device's creation rate allows a
/// burst of 20), after 10 unmeasured ones.
fn exec_round_trips(bridge: &Bridge, tokens: &[String], n: usize) -> Stats {
    let http = agent();
    let body = json!({"command": "true"});
    let mut times = Vec::with_capacity(n);
    for i in 0..n + 10 {
        let auth = &tokens[i % tokens.len()];
        let start = Instant::now();
        call(&http, bridge, auth, "exec_command", &body);
        if i >= 10 {
            times.push(start.elapsed());
        }
    }
    Stats::of(times)
}

fn ssh_round_trips(ssh: &Ssh, n: usize) -> Stats {
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let start = Instant::now();
        assert!(ssh.run_true(), "ssh true failed");
        times.push(start.elapsed());
    }
    Stats::of(times)
}

/// A text file of about `bytes` bytes of 100-character lines, with `marker` on one line.
fn text_file(path: &Path, bytes: usize, marker: &str) {
    let line = format!(
        "{}\n",
        "the quick brown fox jumps over the lazy dog 0123456789 ".repeat(2)
    );
    let mut text = String::with_capacity(bytes + 200);
    while text.len() < bytes / 2 {
        text.push_str(&line);
    }
    text.push_str(marker);
    text.push('\n');
    while text.len() < bytes {
        text.push_str(&line);
    }
    std::fs::write(path, text).expect("write the file");
}

fn main() {
    if listing_only() {
        return;
    }
    let n: usize = env_number("COLLIE_BENCH_TOOLS_N", 100);
    println!(
        "machine: {} × {}, load {}",
        cpus(),
        cpu_model(),
        load_average()
    );
    let bridge = Bridge::options("tools").log("warn").start();
    let home = bridge.dir().join("home");
    let http = agent();

    // 1. exec_command against ssh.
    let tokens: Vec<String> = (0..(n + 10).div_ceil(18))
        .map(|i| format!("Bearer {}", bridge.pair(&format!("exec{i}"), "full")))
        .collect();
    let exec = exec_round_trips(&bridge, &tokens, n);
    println!(
        "exec_command \"true\" via the API: p50 {} p99 {} (n {})",
        ms(exec.p50),
        ms(exec.p99),
        exec.n
    );
    match Ssh::start() {
        Some(ssh) => {
            let s = ssh_round_trips(&ssh, n);
            println!(
                "ssh (ControlMaster) \"true\":       p50 {} p99 {} (n {})",
                ms(s.p50),
                ms(s.p99),
                s.n
            );
            println!(
                "exec_command is {:.1}x faster than ssh at the median (goal ≥ 5x)",
                s.p50.as_secs_f64() / exec.p50.as_secs_f64()
            );
        }
        None => println!("ssh baseline skipped: no sshd, ssh-keygen or ssh on this machine"),
    }

    // 2. edit_block on a 1 MiB file.
    let files = format!("Bearer {}", bridge.pair("files", "files"));
    text_file(&home.join("one-mib.txt"), 1 << 20, "marker A");
    let mut times = Vec::new();
    for i in 0..60 {
        let (old, new) = if i % 2 == 0 {
            ("marker A", "marker B")
        } else {
            ("marker B", "marker A")
        };
        let args = json!({"file_path": "one-mib.txt", "old_string": old, "new_string": new});
        let start = Instant::now();
        call(&http, &bridge, &files, "edit_block", &args);
        if i >= 10 {
            times.push(start.elapsed());
        }
    }
    let edit = Stats::of(times);
    println!(
        "edit_block on 1 MiB: p50 {} p99 {} (n {})",
        ms(edit.p50),
        ms(edit.p99),
        edit.n
    );

    // 3. read_file of 10 MiB.
    text_file(&home.join("ten-mib.txt"), 10 << 20, "marker");
    let size = std::fs::metadata(home.join("ten-mib.txt"))
        .map(|m| m.len())
        .unwrap_or(0);
    let mut times = Vec::new();
    let mut answer = 0;
    for i in 0..12 {
        let start = Instant::now();
        answer = call(
            &http,
            &bridge,
            &files,
            "read_file",
            &json!({"path": "ten-mib.txt"}),
        )
        .len();
        if i >= 2 {
            times.push(start.elapsed());
        }
    }
    let read = Stats::of(times);
    println!(
        "read_file of {}: p50 {} ({:.0} MiB/s; answer {})",
        mib(size),
        ms(read.p50),
        size as f64 / (1 << 20) as f64 / read.p50.as_secs_f64(),
        mib(answer as u64)
    );

    // 4. Memory with the session cap reached.
    let pid = bridge.pid();
    let before = wait_rss_stable(pid);
    let owners: Vec<String> = (0..2)
        .map(|i| format!("Bearer {}", bridge.pair(&format!("sessions{i}"), "full")))
        .collect();
    let mut started = 0;
    let mut refused = 0;
    for owner in owners.iter().cycle().take(40) {
        let (status, _) = post(
            &http,
            &bridge.url("/api/tools/start_process"),
            owner,
            &json!({"command": "yes collie-bench", "timeout_ms": 50}),
        );
        match status {
            200 => started += 1,
            503 => refused += 1,
            other => panic!("start_process answered {other}"),
        }
    }
    // Let the rings fill (each `yes` writes far more than its 2 MiB ring).
    std::thread::sleep(Duration::from_secs(3));
    let at_cap = wait_rss_stable(pid);
    for owner in owners.iter().cycle().take(40) {
        let (status, _) = post(
            &http,
            &bridge.url("/api/tools/start_process"),
            owner,
            &json!({"command": "yes collie-bench"}),
        );
        if status == 503 {
            refused += 1;
        }
    }
    std::thread::sleep(Duration::from_secs(3));
    let after = wait_rss_stable(pid);
    println!(
        "sessions: {started} running (cap reached), {refused} refused; RSS {} idle → {} at the cap → {} after more refusals",
        mib(before),
        mib(at_cap),
        mib(after)
    );
}
