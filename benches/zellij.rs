//! A zellij pane against a tmux pane, on the same bridge in the same run (issue 34,
//! docs/PERFORMANCE.md): the latency of a snapshot read over HTTP, and of a keystroke's echo — one
//! character posted to the input API, timed until a snapshot shows it at the prompt.
//!
//! Run: `cargo bench --bench zellij` (the pinned zellij `scripts/setup` builds into `tools/`, or
//! `COLLIE_ZELLIJ_BIN`). A plain binary: one bridge in a temp dir mirrors a private tmux server
//! and a zellij session in its own socket folder, both 80 × 24 shells. Rounds alternate between
//! the two panes so drift on the machine falls on both. Every wait is bounded; the zellij session,
//! the tmux server and the bridge are stopped on drop, pass or fail. Timings are printed, never
//! asserted. `COLLIE_BENCH_ZELLIJ_N` sets the reads per round (default 500) and keystrokes per
//! round (a fifth of it).

mod support;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use support::{
    agent, cpu_model, cpus, env_number, get_json, listing_only, load_average, measure_get,
    wait_for, Bridge, Stats, Tmux,
};

/// Rounds per pane, alternating.
const ROUNDS: usize = 3;

fn zellij_program() -> PathBuf {
    std::env::var_os("COLLIE_ZELLIJ_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tools/zellij-0.45.1/bin/zellij"),
        PathBuf::from,
    )
}

/// The bench's zellij session, killed on drop.
struct Zellij {
    dir: PathBuf,
}

impl Zellij {
    fn cmd(&self) -> Command {
        let mut c = Command::new(zellij_program());
        c.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("ZELLIJ_SOCKET_DIR", self.dir.join("zellij"))
            .env("HOME", self.dir.join("zellij-home"))
            .env("XDG_CONFIG_HOME", self.dir.join("zellij-home/.config"))
            .env("SHELL", "/bin/sh")
            .env("ENV", "/dev/null")
            .stdin(Stdio::null());
        c
    }

    fn start(dir: PathBuf) -> Zellij {
        let z = Zellij { dir };
        let config = z.dir.join("zellij-home/.config/zellij");
        std::fs::create_dir_all(&config).expect("zellij config dir");
        std::fs::write(config.join("config.kdl"), "show_startup_tips false\n").expect("config");
        let out = z
            .cmd()
            .current_dir(z.dir.join("zellij-home"))
            .args(["attach", "--create-background", "bench"])
            .output()
            .expect("zellij runs");
        assert!(out.status.success(), "zellij attach: {out:?}");
        z
    }
}

impl Drop for Zellij {
    fn drop(&mut self) {
        let _ = self.cmd().args(["kill-all-sessions", "--yes"]).output();
    }
}

fn post(agent: &ureq::Agent, url: &str, auth: &str, body: &Value) {
    if let Err(e) = agent.post(url).set("Authorization", auth).send_json(body) {
        panic!("POST {url}: {e}");
    }
}

/// The pane's screen as one string, its rows joined (a narrow pane wraps the prompt line), trailing
/// blanks trimmed.
fn prompt_line(agent: &ureq::Agent, url: &str, auth: &str) -> String {
    get_json(agent, url, auth)
        .and_then(|snap| {
            let rows: Vec<&str> = snap["lines"]
                .as_array()?
                .iter()
                .filter_map(Value::as_str)
                .collect();
            Some(rows.concat().trim_end().to_owned())
        })
        .unwrap_or_default()
}

/// `n` keystrokes into the pane, each timed from its POST until a snapshot shows the prompt line
/// ending with everything typed so far; the line is cleared (Ctrl-U) every 40 characters, untimed.
fn keystrokes(agent: &ureq::Agent, base: &str, auth: &str, n: usize) -> Stats {
    let input = format!("{base}/input");
    let mut typed = String::new();
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        if typed.len() == 40 {
            post(agent, &input, auth, &json!({ "keys": ["C-u"] }));
            typed.clear();
            wait_for(Duration::from_secs(10), || {
                let line = prompt_line(agent, base, auth);
                line.trim_end().ends_with(['#', '$']).then_some(())
            })
            .unwrap_or_else(|| panic!("the line of {base} was not cleared"));
        }
        let c = char::from(b'a' + (i % 26) as u8);
        typed.push(c);
        let t = Instant::now();
        post(agent, &input, auth, &json!({ "text": c.to_string() }));
        wait_for(Duration::from_secs(10), || {
            prompt_line(agent, base, auth)
                .ends_with(&typed)
                .then_some(())
        })
        .unwrap_or_else(|| {
            panic!(
                "{c} never echoed in {base}: {:?}",
                prompt_line(agent, base, auth)
            )
        });
        times.push(t.elapsed());
    }
    Stats::of(times)
}

fn main() {
    if listing_only() {
        return;
    }
    let n: usize = env_number("COLLIE_BENCH_ZELLIJ_N", 500);
    let program = zellij_program();
    assert!(
        program.exists(),
        "no zellij at {} (scripts/setup builds it)",
        program.display()
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let tmux = Tmux::start(dir.path(), 80, 24, "work", "sh");
    let bin = program.parent().expect("bin dir").display().to_string();
    let path = format!("{bin}:{}", std::env::var("PATH").unwrap_or_default());
    let bridge = Bridge::options("benchbox")
        .env("COLLIE_TMUX_SOCKETS", &tmux.socket)
        .env("PATH", path)
        .start();
    let zellij = Zellij::start(bridge.dir().to_path_buf());
    let auth = format!("Bearer {}", bridge.pair("bench-phone", "full"));
    let agent = agent();

    // Both panes listed: the tmux window and the zellij session's shell.
    let (tmux_pane, zellij_pane) = wait_for(Duration::from_secs(20), || {
        let list = get_json(&agent, &bridge.url("/api/panes"), &auth)?;
        let panes = list["panes"].as_array()?;
        let id = |backend: &str| {
            panes
                .iter()
                .find(|p| p["backend"] == backend)
                .and_then(|p| p["pane"].as_str().map(str::to_owned))
        };
        Some((id("tmux")?, id("zellij")?))
    })
    .expect("a tmux and a zellij pane listed");
    let base = |pane: &str| bridge.url(&format!("/api/panes/benchbox/{pane}"));

    let mut reads: [Vec<Stats>; 2] = [Vec::new(), Vec::new()];
    let mut echoes: [Vec<Stats>; 2] = [Vec::new(), Vec::new()];
    for _ in 0..ROUNDS {
        for (k, pane) in [&tmux_pane, &zellij_pane].into_iter().enumerate() {
            reads[k].push(measure_get(&agent, &base(pane), &auth, 200, n).0);
            echoes[k].push(keystrokes(&agent, &base(pane), &auth, n / 5));
        }
    }

    println!("zellij pane against tmux pane, same bridge, same run ({ROUNDS} rounds, alternating)");
    println!(
        "machine: {} × {}; load {}",
        cpus(),
        cpu_model(),
        load_average()
    );
    let median = |v: &[Stats]| {
        let mut p: Vec<Duration> = v.iter().map(|s| s.p50).collect();
        p.sort_unstable();
        p[p.len() / 2]
    };
    for (what, figures) in [
        ("snapshot read (GET)", &reads),
        ("keystroke → echo", &echoes),
    ] {
        let (t, z) = (median(&figures[0]), median(&figures[1]));
        println!(
            "{what}: tmux p50 {:.2} ms, zellij p50 {:.2} ms (median of {ROUNDS} rounds of {}), zellij/tmux {:.2}",
            t.as_secs_f64() * 1e3,
            z.as_secs_f64() * 1e3,
            figures[0][0].n,
            z.as_secs_f64() / t.as_secs_f64()
        );
    }
    drop(zellij);
    drop(bridge);
    drop(tmux);
}
