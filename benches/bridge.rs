//! End-to-end figures for a real `collie bridge` (docs/PERFORMANCE.md): resident memory when idle
//! and with hosted panes whose buffers are full, and the latency of snapshot and list reads over HTTP
//! on loopback.
//!
//! Run: `cargo bench --bench bridge`. A plain binary, not criterion: it starts one bridge in a temp
//! dir (its own state, config, home and tmux dirs, so no tmux pane of the user is mirrored), pairs one
//! `read` device, and drives it with the `collie` CLI and `ureq`. Every wait is bounded; the bridge
//! (and with it every pane it hosts) is stopped and the temp dir removed on drop, pass or fail.
//! Timings are printed, never asserted.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::Value;

/// Hosted panes started for the memory figures.
const PANES: usize = 10;
/// Random bytes each output round encodes: base64 makes 2 MiB of text of them (plus newlines).
const RANDOM_BYTES_PER_ROUND: usize = 1_572_864;
/// Sequential requests per latency figure (after [`WARM_UP`] unmeasured ones).
const REQUESTS: usize = 2_000;
/// Requests sent before measuring, to fill caches and open the keep-alive connection.
const WARM_UP: usize = 100;
/// Requests for the snapshot-with-scrollback figure (each answer is ~170 KB of JSON).
const SCROLLBACK_REQUESTS: usize = 200;
/// Scrollback lines asked for in that figure: all a hosted pane keeps (SPEC §5).
const SCROLLBACK_LINES: usize = 2_000;
/// The idle resident memory goal, in bytes (15 MB).
const IDLE_GOAL_BYTES: u64 = 15_000_000;
/// What one hosted pane may hold by SPEC §5: a 2 MiB ring plus 2,000 scrollback lines and the 24
/// visible rows of 80 cells (32 bytes per `vt100::Cell`).
const PANE_CAP_BYTES: u64 = 2 * 1024 * 1024 + (2_000 + 24) * 80 * 32;

const MIB: f64 = 1024.0 * 1024.0;

fn main() {
    let mut bridge = Bridge::start();
    let pid = bridge.pid();
    let token = bridge.pair("bench-phone");
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(15))
        .build();
    let mut report = Report::default();

    // 1. Idle: one paired device, no panes.
    let idle = wait_rss_stable(pid);
    report.line("idle RSS (1 device, no panes)", mib(idle), &goal_idle(idle));
    let threads = status_field(pid, "Threads").unwrap_or(0);
    let breakdown = smaps_breakdown(pid);
    let list_empty = measure(&agent, &bridge.url("/api/panes"), &token, REQUESTS);

    // 2. Ten hosted panes, each writing 2 MiB of text, then 2 MiB more.
    let script = format!(
        "gen() {{ head -c {RANDOM_BYTES_PER_ROUND} /dev/urandom | base64 -w 100; }}; \
         gen; echo BENCH-DONE-1; read x; gen; echo BENCH-DONE-2; exec cat"
    );
    let started = Instant::now();
    let panes: Vec<String> = (0..PANES)
        .map(|i| bridge.new_pane(&format!("bench-{i}"), &script))
        .collect();
    for p in &panes {
        wait_for_text(&bridge, &agent, &token, p, "BENCH-DONE-1");
    }
    let round1_secs = started.elapsed().as_secs_f64();
    let full = wait_rss_stable(pid);
    let per_pane = full.saturating_sub(idle) / PANES as u64;
    report.line(&format!("RSS, {PANES} panes x 2 MiB output"), mib(full), "");
    report.line(
        "  growth per pane",
        mib(per_pane),
        &format!(
            "SPEC §5 buffers {:.2} MiB, {:+.1}% beside them",
            PANE_CAP_BYTES as f64 / MIB,
            (per_pane as f64 / PANE_CAP_BYTES as f64 - 1.0) * 100.0
        ),
    );

    let started = Instant::now();
    for p in &panes {
        bridge.cli_ok(&["panes", "keys", p, "Enter"]);
    }
    for p in &panes {
        wait_for_text(&bridge, &agent, &token, p, "BENCH-DONE-2");
    }
    let round2_secs = started.elapsed().as_secs_f64();
    let again = wait_rss_stable(pid);
    let growth = again.saturating_sub(full) / PANES as u64;
    report.line(
        &format!("RSS, {PANES} panes' worth of output more"),
        mib(again),
        "",
    );
    report.line(
        "  further growth per pane",
        mib(growth),
        &format!(
            "bounded (<= 1/8 of §5 buffers): {}",
            met(growth <= PANE_CAP_BYTES / 8)
        ),
    );

    // 3. Snapshot latency on a pane with a full screen; 4. list latency.
    let pane_url = bridge.url(&format!("/api/panes/local/{}", panes[0]));
    let snap = measure(&agent, &pane_url, &token, REQUESTS);
    report.latency("GET /api/panes/local/{pane}", &snap);
    let list = measure(&agent, &bridge.url("/api/panes"), &token, REQUESTS);
    report.latency("GET /api/panes (no panes)", &list_empty);
    report.latency("GET /api/panes (10 panes)", &list);
    let with_scrollback = measure(
        &agent,
        &format!("{pane_url}?scrollback={SCROLLBACK_LINES}"),
        &token,
        SCROLLBACK_REQUESTS,
    );
    report.latency("GET .../{pane}?scrollback=2000", &with_scrollback);
    let after = rss_bytes(pid);

    let status = bridge.stop();

    println!();
    println!(
        "collie bridge, end to end ({} CPUs, {})",
        cpus(),
        cpu_model()
    );
    println!("load average at the end: {}", load_average());
    println!();
    report.print();
    println!();
    println!(
        "idle detail: {threads} threads; RSS by mapping: {}",
        breakdown
            .iter()
            .map(|(k, v)| format!("{k} {:.2} MiB", *v as f64 / MIB))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "output rounds: first {round1_secs:.1} s, second {round2_secs:.1} s for {PANES} panes; \
         RSS after the latency runs {:.2} MiB",
        after as f64 / MIB
    );
    println!("bridge exit after SIGTERM: {status:?}");
}

/// A running `collie bridge` with its own temp dirs; stopped (SIGTERM, then SIGKILL) on drop.
struct Bridge {
    child: Option<Child>,
    port: u16,
    /// Removed after the bridge has been stopped (fields drop after `Drop::drop`).
    dir: tempfile::TempDir,
}

impl Bridge {
    fn start() -> Bridge {
        let dir = tempfile::Builder::new()
            .prefix("collie-bench-")
            .tempdir()
            .expect("create a temp dir");
        for d in ["state", "config", "tmuxdefault", "home"] {
            std::fs::create_dir_all(dir.path().join(d)).expect("create the bridge's dirs");
        }
        let mut bridge = Bridge {
            child: None,
            port: 0,
            dir,
        };
        let mut cmd = bridge.command();
        cmd.args(["bridge", "--port", "0", "--name", "benchbox"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd.spawn().expect("spawn collie bridge");
        let stdout = child.stdout.take().expect("the bridge's stdout is piped");
        bridge.child = Some(child);

        // Read the banner on a thread (so a silent bridge cannot hang us), then keep draining.
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            let _ = tx.send(line);
            let mut sink = String::new();
            while reader.read_line(&mut sink).map(|n| n > 0).unwrap_or(false) {
                sink.clear();
            }
        });
        let banner = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the bridge prints its banner within 20 s");
        bridge.port = banner
            .split("http://")
            .nth(1)
            .and_then(|a| a.trim().rsplit(':').next())
            .and_then(|p| p.parse().ok())
            .expect("the banner names http://127.0.0.1:PORT");
        let sock = bridge.dir.path().join("state").join("bridge.sock");
        wait_for(Duration::from_secs(10), || sock.exists().then_some(()))
            .expect("the bridge creates its control socket within 10 s");
        bridge
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().expect("the bridge is running").id()
    }

    /// A `collie` command with this bridge's environment and nothing of the caller's but `PATH`.
    fn command(&self) -> Command {
        let d = self.dir.path();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_collie"));
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", d.join("home"))
            .env("COLLIE_STATE_DIR", d.join("state"))
            .env("COLLIE_CONFIG_DIR", d.join("config"))
            .env("TMUX_TMPDIR", d.join("tmuxdefault"))
            .env("COLLIE_LOG", "warn");
        cmd
    }

    /// Runs `collie ARGS`, panics unless it succeeds, returns stdout.
    fn cli_ok(&self, args: &[&str]) -> String {
        let out: Output = self
            .command()
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run the collie CLI");
        assert!(
            out.status.success(),
            "collie {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Pairs a `read` device and returns its token.
    fn pair(&self, label: &str) -> String {
        let out = self.cli_ok(&["pair", "--json", "--tier", "read"]);
        let v: Value = serde_json::from_str(&out).expect("`collie pair --json` prints JSON");
        let code = v["code"].as_str().expect("a pairing code");
        let resp = ureq::post(&self.url("/api/pair"))
            .timeout(Duration::from_secs(15))
            .send_json(serde_json::json!({ "code": code, "label": label }))
            .expect("pairing succeeds");
        let body: Value = resp.into_json().expect("the pairing answer is JSON");
        body["token"]
            .as_str()
            .expect("the pairing answer carries a token")
            .to_owned()
    }

    /// Starts a hosted pane running `sh -c SCRIPT`; returns its id (`pN`).
    fn new_pane(&self, name: &str, script: &str) -> String {
        let out = self.cli_ok(&["panes", "new", "--name", name, "--", "sh", "-c", script]);
        // `machine/pN#token`
        out.trim()
            .split_once('/')
            .and_then(|(_, rest)| rest.split_once('#'))
            .map(|(id, _)| id.to_owned())
            .expect("`collie panes new` prints machine/id#token")
    }

    /// SIGTERM, up to 10 s for a clean exit, then SIGKILL.
    fn stop(&mut self) -> Option<std::process::ExitStatus> {
        let mut child = self.child.take()?;
        if let Ok(raw) = i32::try_from(child.id()) {
            let _ = kill(Pid::from_raw(raw), Signal::SIGTERM);
        }
        match wait_for(Duration::from_secs(10), || child.try_wait().ok().flatten()) {
            Some(status) => Some(status),
            None => {
                let _ = child.kill();
                child.wait().ok()
            }
        }
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Polls `f` every 20 ms until it returns `Some` or `timeout` passes.
fn wait_for<T>(timeout: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// GETs `url` with the device token and reads the whole body (so the connection is reused).
fn get(agent: &ureq::Agent, url: &str, auth: &str) -> Vec<u8> {
    let resp = agent
        .get(url)
        .set("Authorization", auth)
        .call()
        .unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let mut body = Vec::new();
    resp.into_reader()
        .read_to_end(&mut body)
        .unwrap_or_else(|e| panic!("GET {url}: reading the body: {e}"));
    body
}

/// Waits (at most 180 s) until a visible row of `pane` contains `marker`.
fn wait_for_text(bridge: &Bridge, agent: &ureq::Agent, token: &str, pane: &str, marker: &str) {
    let url = bridge.url(&format!("/api/panes/local/{pane}"));
    let auth = format!("Bearer {token}");
    let seen = wait_for(Duration::from_secs(180), || {
        let v: Value = serde_json::from_slice(&get(agent, &url, &auth)).ok()?;
        v["lines"]
            .as_array()?
            .iter()
            .any(|l| l.as_str().is_some_and(|s| s.contains(marker)))
            .then_some(())
    });
    seen.unwrap_or_else(|| panic!("pane {pane} did not print {marker} within 180 s"));
}

/// Latency figures of one request kind.
struct Latency {
    n: usize,
    p50: Duration,
    p99: Duration,
    max: Duration,
    body_bytes: usize,
}

/// `n` sequential GETs on one keep-alive agent, after [`WARM_UP`] unmeasured ones.
fn measure(agent: &ureq::Agent, url: &str, token: &str, n: usize) -> Latency {
    let auth = format!("Bearer {token}");
    let mut body_bytes = 0;
    for _ in 0..WARM_UP {
        body_bytes = get(agent, url, &auth).len();
    }
    let mut times: Vec<Duration> = (0..n)
        .map(|_| {
            let t = Instant::now();
            let _ = get(agent, url, &auth);
            t.elapsed()
        })
        .collect();
    times.sort_unstable();
    // Nearest rank: the smallest value with at least p·n values at or below it.
    let rank = |p: f64| times[((p * n as f64).ceil() as usize).clamp(1, n) - 1];
    Latency {
        n,
        p50: rank(0.50),
        p99: rank(0.99),
        max: times[n - 1],
        body_bytes,
    }
}

/// A field of `/proc/<pid>/status` in its own unit (kB for memory).
fn status_field(pid: u32, name: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// VmRSS in bytes.
fn rss_bytes(pid: u32) -> u64 {
    status_field(pid, "VmRSS").expect("the bridge's /proc status has VmRSS") * 1024
}

/// Samples RSS every 250 ms until the last 8 samples (2 s) lie within 256 KiB; at most 60 s.
fn wait_rss_stable(pid: u32) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut samples: Vec<u64> = Vec::new();
    loop {
        samples.push(rss_bytes(pid));
        let tail = &samples[samples.len().saturating_sub(8)..];
        let lo = tail.iter().min().copied().unwrap_or(0);
        let hi = tail.iter().max().copied().unwrap_or(0);
        if tail.len() == 8 && hi - lo <= 256 * 1024 {
            return *tail.last().unwrap_or(&hi);
        }
        if Instant::now() >= deadline {
            eprintln!(
                "note: RSS still moving after 60 s ({lo}..{hi} bytes); using the last sample"
            );
            return *tail.last().unwrap_or(&hi);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Resident bytes by kind of mapping, from `/proc/<pid>/smaps`: the binary itself, shared
/// libraries, the `[heap]`, anonymous mappings (allocator arenas, thread stacks) and the rest.
fn smaps_breakdown(pid: u32) -> BTreeMap<&'static str, u64> {
    let mut out = BTreeMap::new();
    let Ok(smaps) = std::fs::read_to_string(format!("/proc/{pid}/smaps")) else {
        return out;
    };
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
    let mut kind = "other";
    for line in smaps.lines() {
        let mut parts = line.split_whitespace();
        let first = parts.next().unwrap_or("");
        if first.contains('-') && first.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            // A mapping header: range perms offset dev inode [path].
            let path = parts.nth(4).unwrap_or("");
            kind = match path {
                "" => "anonymous",
                "[heap]" => "heap",
                "[stack]" => "main stack",
                p if exe == Path::new(p) => "binary",
                p if p.starts_with('/') => "libraries",
                _ => "other",
            };
        } else if first == "Rss:" {
            let kb: u64 = parts.next().and_then(|v| v.parse().ok()).unwrap_or(0);
            *out.entry(kind).or_insert(0) += kb * 1024;
        }
    }
    out
}

fn mib(bytes: u64) -> String {
    format!("{:.2} MiB", bytes as f64 / MIB)
}

fn met(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "MISSED"
    }
}

fn goal_idle(idle: u64) -> String {
    format!("<= 15 MB: {}", met(idle <= IDLE_GOAL_BYTES))
}

fn cpus() -> usize {
    std::thread::available_parallelism().map_or(0, |n| n.get())
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find_map(|l| l.strip_prefix("model name")?.split_once(':'))
                .map(|(_, m)| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned())
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// The printed table.
#[derive(Default)]
struct Report {
    rows: Vec<(String, String, String)>,
}

impl Report {
    fn line(&mut self, what: &str, value: String, note: &str) {
        self.rows.push((what.to_owned(), value, note.to_owned()));
    }

    fn latency(&mut self, what: &str, l: &Latency) {
        let us = |d: Duration| d.as_micros();
        self.rows.push((
            what.to_owned(),
            format!(
                "p50 {} us, p99 {} us, max {} us",
                us(l.p50),
                us(l.p99),
                us(l.max)
            ),
            format!("n = {}, {} B per answer", l.n, l.body_bytes),
        ));
    }

    fn print(&self) {
        let w0 = self.rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
        let w1 = self.rows.iter().map(|r| r.1.len()).max().unwrap_or(0);
        for (a, b, c) in &self.rows {
            println!("{a:<w0$}  {b:<w1$}  {c}");
        }
    }
}
