//! Held permissions end to end (SPEC §10.1, §10.2), with real processes: `collie bridge`, a
//! private tmux server, and the real `collie hook claude-permission` started inside a tmux pane for
//! every question — as an agent starts its hook.
//!
//! Run: `cargo bench --bench cards` (`COLLIE_BENCH_CARDS=N` questions per figure, default 200).
//! A plain binary, not criterion: the figures need real processes.
//!
//! 1. *Hook fires → card on an open phone stream*: the pane's loop starts the hook when the bench
//!    writes a line to a FIFO; the time until the `card` event arrives on `GET /api/cards/stream`.
//! 2. *Tap → hook returns*: from sending `POST /api/cards/{id}/answer` to the hook's decision
//!    line arriving at the other end of its stdout (another FIFO).
//!
//! Both locally and through a lead (the hook in a member's pane, the stream and the tap on the
//! lead). 4. *Screen prompts* (`COLLIE_BENCH_SCREENS=N`, default 40): a pane draws a permission
//! dialog when the bench writes to a FIFO; the time until its `screen` card arrives on the stream
//! (the watcher waits for the screen to be still for a whole look period, 200 ms, so this is
//! 200–400 ms by design), and from the tap to the program in the pane reading the typed number.
//! Then 3. *1,000 waiting cards*: this binary, run in a pane as `--hold N`, holds N hook
//! connections open at once; the bridge's RSS before and after, and `GET /api/cards` latency with
//! them waiting. Every process and temp dir is removed on drop; nothing is asserted.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{agent, env_number, get_ok, listing_only, wait_for, wait_rss_stable, Bridge, Stats};

/// Claude Code's PermissionRequest input for one Bash call.
fn request() -> Value {
    json!({
        "session_id": "bench", "hook_event_name": "PermissionRequest", "tool_name": "Bash",
        "tool_input": {"command": "cargo test --workspace", "description": "Run the tests"},
        "permission_suggestions": [{"type": "addRules", "behavior": "allow",
            "destination": "localSettings", "rules": [{"toolName": "Bash", "ruleContent": "cargo test"}]}]
    })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--hold") {
        hold(&args[at + 1..]);
        return;
    }
    if listing_only() {
        return;
    }
    let n: usize = env_number("COLLIE_BENCH_CARDS", 200);
    let root = tempfile::Builder::new()
        .prefix("collie-cards-bench-")
        .tempdir()
        .expect("temp dir");
    println!(
        "Held permissions, end to end ({} CPUs, {}); load average before {}",
        support::cpus(),
        support::cpu_model(),
        support::load_average()
    );
    {
        let local = Machine::start(&root.path().join("local"), "laptop");
        let token = local.bridge.pair("bench", "full");
        let (fire, tap) = questions(&local, &local.bridge, &token, None, n);
        report("locally", &fire, &tap);
        let (seen, typed) = screens(&local, &local.bridge, &token, None, screen_n());
        report_screens("locally", &seen, &typed);
        thousand(&local, &token);
    }
    {
        let lead = Machine::start(&root.path().join("lead"), "lead");
        let member = Machine::start(&root.path().join("web-1"), "web-1");
        lead.bridge.cli_ok(&["crew", "init"]);
        member
            .bridge
            .cli_ok(&["crew", "join", &lead.bridge.invite(), "--name", "web-1"]);
        wait_for(Duration::from_secs(20), || {
            (lead.bridge.members_online() == 1).then_some(())
        })
        .expect("web-1 online");
        let token = lead.bridge.pair("bench", "full");
        let (fire, tap) = questions(&member, &lead.bridge, &token, Some("web-1"), n);
        report("through the lead", &fire, &tap);
        let (seen, typed) = screens(&member, &lead.bridge, &token, Some("web-1"), screen_n());
        report_screens("through the lead", &seen, &typed);
    }
    println!("load average after {}", support::load_average());
}

fn report(how: &str, fire: &Stats, tap: &Stats) {
    println!("  {how}: hook fires → card on the phone's stream  p50 {:>8.2?}  p99 {:>8.2?}  max {:>8.2?}  n {}",
        fire.p50, fire.p99, fire.max, fire.n);
    println!("  {how}: tap → hook returns                         p50 {:>8.2?}  p99 {:>8.2?}  max {:>8.2?}  n {}",
        tap.p50, tap.p99, tap.max, tap.n);
}

fn screen_n() -> usize {
    env_number("COLLIE_BENCH_SCREENS", 40)
}

fn report_screens(how: &str, seen: &Stats, typed: &Stats) {
    println!("  {how}: dialog drawn → screen card on the stream  p50 {:>8.2?}  p99 {:>8.2?}  max {:>8.2?}  n {}",
        seen.p50, seen.p99, seen.max, seen.n);
    println!("  {how}: tap → the program reads the number       p50 {:>8.2?}  p99 {:>8.2?}  max {:>8.2?}  n {}",
        typed.p50, typed.p99, typed.max, typed.n);
}

/// A bridge with a private tmux server whose pane `hooks` runs the hook on demand: a line on
/// `<dir>/go` starts `collie hook claude-permission` with `<dir>/input.json` on stdin and
/// `<dir>/out` (a FIFO) as stdout.
struct Machine {
    bridge: Bridge,
    tmux: PathBuf,
    dir: PathBuf,
}

impl Machine {
    fn start(dir: &Path, name: &str) -> Machine {
        std::fs::create_dir_all(dir).expect("dir");
        let tmux = dir.join("tmux.sock");
        let run = |args: &[&str]| {
            let ok = Command::new("tmux")
                .arg("-f")
                .arg("/dev/null")
                .arg("-S")
                .arg(&tmux)
                .args(args)
                .env_remove("TMUX")
                .env("SHELL", "/bin/sh")
                .status()
                .expect("tmux");
            assert!(ok.success(), "tmux {args:?}");
        };
        run(&["new-session", "-d", "-s", "main", "-x", "100", "-y", "30"]);
        let bridge = Bridge::options(name)
            .dir(dir.to_path_buf())
            .env("COLLIE_TMUX_SOCKETS", &tmux)
            .start();
        for fifo in ["go", "out", "draw", "typed"] {
            let made = Command::new("mkfifo")
                .arg(dir.join(fifo))
                .status()
                .expect("mkfifo");
            assert!(made.success());
        }
        std::fs::write(dir.join("input.json"), request().to_string()).expect("input");
        let collie = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/collie");
        let script = format!(
            "while read x < {d}/go; do env COLLIE_STATE_DIR={d}/state COLLIE_CONFIG_DIR={d}/config \
             HOME={d}/home {collie} hook claude-permission < {d}/input.json > {d}/out; done",
            d = dir.display(),
            collie = collie.display()
        );
        run(&["new-window", "-d", "-t", "main", "-n", "hooks", &script]);
        // The screen-prompt pane: each line on `draw` draws a dialog (numbered by the line, so
        // each is a new question), then the key it reads goes to `typed` and the screen clears.
        let dialog = format!(
            "while read i < {d}/draw; do \
             printf '\\033[H\\033[2J────────────\\n Bash command\\n make step-%s\\n\\n \
             Do you want to proceed?\\n ❯ 1. Yes\\n   2. No\\n' \"$i\"; \
             IFS= read -rsn1 k; printf '%s' \"$k\" > {d}/typed; printf '\\033[H\\033[2J'; done",
            d = dir.display()
        );
        run(&[
            "new-window",
            "-d",
            "-t",
            "main",
            "-n",
            "screen",
            "bash",
            "-c",
            &dialog,
        ]);
        Machine {
            bridge,
            tmux,
            dir: dir.to_path_buf(),
        }
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.tmux)
            .arg("kill-server")
            .status();
    }
}

/// Events of `GET /api/cards/stream` as (name, data).
fn stream(bridge: &Bridge, token: &str) -> mpsc::Receiver<(String, Value)> {
    let url = bridge.url("/api/cards/stream");
    let authority = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap_or_default()
        .to_owned();
    let mut s = TcpStream::connect(&authority).expect("connect");
    write!(
        s,
        "GET /api/cards/stream HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {token}\r\n\r\n"
    )
    .expect("write");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(s);
        let mut line = String::new();
        let mut event = String::new();
        while reader.read_line(&mut line).unwrap_or(0) > 0 {
            if let Some(name) = line.strip_prefix("event:") {
                event = name.trim().to_owned();
            } else if let Some(data) = line.strip_prefix("data:") {
                if let Ok(v) = serde_json::from_str::<Value>(data.trim()) {
                    if tx.send((std::mem::take(&mut event), v)).is_err() {
                        return;
                    }
                }
            }
            line.clear();
        }
    });
    rx
}

/// Reads the FIFO at `path` on a thread (opening a FIFO waits for its writer): when and what its
/// writer wrote, once it closes.
fn read_fifo(path: PathBuf) -> mpsc::Receiver<(Instant, String)> {
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        if let Ok(mut f) = std::fs::File::open(&path) {
            let _ = f.read_to_string(&mut text);
        }
        let _ = done_tx.send((Instant::now(), text));
    });
    done_rx
}

/// The phone's tap: `option` on `card`, as drawn.
fn tap(
    http: &ureq::Agent,
    phone: &Bridge,
    token: &str,
    card: &Value,
    option: &str,
    machine: Option<&str>,
) {
    let answer = http
        .post(&phone.url(&format!(
            "/api/cards/{}/answer",
            card["id"].as_str().expect("id")
        )))
        .set("Authorization", &format!("Bearer {token}"))
        .send_json(json!({"option": option, "shown": card["shown"], "machine": machine}))
        .expect("answer");
    assert_eq!(answer.status(), 200);
}

/// `n` questions asked on `asker`, watched and answered on `phone`'s bridge.
fn questions(
    asker: &Machine,
    phone: &Bridge,
    token: &str,
    machine: Option<&str>,
    n: usize,
) -> (Stats, Stats) {
    let events = stream(phone, token);
    let first = events
        .recv_timeout(Duration::from_secs(10))
        .expect("the stream's first event");
    assert_eq!(first.0, "cards");
    let http = agent();
    let (mut fire, mut taps) = (Vec::new(), Vec::new());
    for i in 0..n + 5 {
        let done_rx = read_fifo(asker.dir.join("out"));
        let fired = Instant::now();
        std::fs::OpenOptions::new()
            .write(true)
            .open(asker.dir.join("go"))
            .and_then(|mut go| go.write_all(b"go\n"))
            .expect("start the hook");
        let card = loop {
            let (name, data) = events
                .recv_timeout(Duration::from_secs(10))
                .expect("a card event");
            if name == "card" && data["state"] == "waiting" {
                break data;
            }
        };
        let seen = fired.elapsed();
        let tapped = Instant::now();
        tap(&http, phone, token, &card, "allow", machine);
        let (at, text) = done_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the hook returns");
        assert!(text.contains("\"allow\""), "the hook printed {text:?}");
        if i >= 5 {
            fire.push(seen);
            taps.push(at - tapped);
        }
    }
    (Stats::of(fire), Stats::of(taps))
}

/// 4. `n` screen prompts drawn on `asker`, watched and answered on `phone`'s bridge.
fn screens(
    asker: &Machine,
    phone: &Bridge,
    token: &str,
    machine: Option<&str>,
    n: usize,
) -> (Stats, Stats) {
    let events = stream(phone, token);
    let http = agent();
    let (mut seen_all, mut typed_all) = (Vec::new(), Vec::new());
    for i in 0..n + 2 {
        let done_rx = read_fifo(asker.dir.join("typed"));
        let drawn = Instant::now();
        std::fs::OpenOptions::new()
            .write(true)
            .open(asker.dir.join("draw"))
            .and_then(|mut draw| writeln!(draw, "{i}"))
            .expect("draw the dialog");
        let card = loop {
            let (name, data) = events
                .recv_timeout(Duration::from_secs(10))
                .expect("a card event");
            if name == "card" && data["state"] == "waiting" && data["source"] == "screen" {
                break data;
            }
        };
        let seen = drawn.elapsed();
        let tapped = Instant::now();
        tap(&http, phone, token, &card, "1", machine);
        let (at, text) = done_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the program reads the number");
        assert_eq!(text, "1");
        if i >= 2 {
            seen_all.push(seen);
            typed_all.push(at - tapped);
        }
    }
    (Stats::of(seen_all), Stats::of(typed_all))
}

/// 3. The bridge's memory and `GET /api/cards` with 1,000 cards waiting.
fn thousand(m: &Machine, token: &str) {
    const CARDS: usize = 1_000;
    let before = wait_rss_stable(m.bridge.pid());
    let me = std::env::current_exe().expect("this bench");
    let socket = m.dir.join("state/hooks.sock");
    let input = m.dir.join("input.json");
    let script = format!(
        "{} --hold {CARDS} {} {}",
        me.display(),
        socket.display(),
        input.display()
    );
    let ok = Command::new("tmux")
        .arg("-S")
        .arg(&m.tmux)
        .args(["new-window", "-d", "-t", "main", "-n", "holder", &script])
        .status()
        .expect("tmux");
    assert!(ok.success());
    let http = agent();
    let url = m.bridge.url("/api/cards");
    let auth = format!("Bearer {token}");
    wait_for(Duration::from_secs(60), || {
        let v: Value = serde_json::from_slice(&get_ok(&http, &url, &auth)).ok()?;
        (v["cards"].as_array()?.len() >= CARDS).then_some(())
    })
    .expect("1,000 cards waiting");
    let with = wait_rss_stable(m.bridge.pid());
    let mut times = Vec::new();
    for _ in 0..50 {
        let t = Instant::now();
        let _ = get_ok(&http, &url, &auth);
        times.push(t.elapsed());
    }
    let list = Stats::of(times);
    println!(
        "  1,000 cards waiting: bridge RSS {:.1} MiB → {:.1} MiB (+{:.1} KiB per card); GET /api/cards p50 {:.2?} p99 {:.2?}",
        before as f64 / 1048576.0,
        with as f64 / 1048576.0,
        (with as f64 - before as f64) / 1024.0 / CARDS as f64,
        list.p50,
        list.p99
    );
    let _ = Command::new("tmux")
        .arg("-S")
        .arg(&m.tmux)
        .args(["kill-window", "-t", "main:holder"])
        .status();
}

/// `--hold N SOCKET INPUT`: opens N hook connections, as N hooks would, and holds them until
/// killed (run inside a pane, so the bridge places every one of them).
fn hold(args: &[String]) {
    let n: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(0);
    let socket = args.get(1).expect("socket");
    let input: Value = serde_json::from_str(
        &std::fs::read_to_string(args.get(2).expect("input")).expect("input file"),
    )
    .expect("input JSON");
    let line = format!("{}\n", json!({"agent": "claude", "input": input}));
    let mut held = Vec::with_capacity(n);
    for _ in 0..n {
        let mut s = UnixStream::connect(socket).expect("connect");
        s.write_all(line.as_bytes()).expect("send");
        held.push(s);
    }
    // Hold them until the bench kills this window.
    loop {
        std::thread::park();
    }
}
