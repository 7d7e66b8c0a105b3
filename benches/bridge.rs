//! End-to-end figures for a real `collie bridge` (docs/PERFORMANCE.md): resident memory when idle
//! and with hosted panes whose buffers are full, and the latency of snapshot and list reads over HTTP
//! on loopback.
//!
//! Run: `cargo bench --bench bridge`. A plain binary, not criterion: it starts one bridge in a temp
//! dir (its own state, config, home and tmux dirs, so no tmux pane of the user is mirrored), pairs one
//! `read` device, and drives it with the `collie` CLI and `ureq`. Every wait is bounded; the bridge
//! (and with it every pane it hosts) is stopped and the temp dir removed on drop, pass or fail.
//! Timings are printed, never asserted.

mod support;

use std::time::{Duration, Instant};

use serde_json::Value;

use support::{
    agent, cpu_model, cpus, get_ok, load_average, measure_get, met, mib, rss_bytes,
    smaps_breakdown, status_field, wait_for, wait_rss_stable, Bridge, Stats, MIB,
};

/// Hosted panes started for the memory figures.
const PANES: usize = 10;
/// Random bytes each output round encodes: base64 makes 2 MiB of text of them (plus newlines).
const RANDOM_BYTES_PER_ROUND: usize = 1_572_864;
/// Sequential requests per latency figure (after [`support::HTTP_WARM_UP`] unmeasured ones).
const REQUESTS: usize = 2_000;
/// Requests for the snapshot-with-scrollback figure (each answer is ~170 KB of JSON).
const SCROLLBACK_REQUESTS: usize = 200;
/// Scrollback lines asked for in that figure: all a hosted pane keeps (SPEC §5).
const SCROLLBACK_LINES: usize = 2_000;
/// The idle resident memory goal, in bytes (15 MB).
const IDLE_GOAL_BYTES: u64 = 15_000_000;
/// What one hosted pane may hold by SPEC §5: a 2 MiB ring plus 2,000 scrollback lines and the 24
/// visible rows of 80 cells (32 bytes per `vt100::Cell`).
const PANE_CAP_BYTES: u64 = 2 * 1024 * 1024 + (2_000 + 24) * 80 * 32;

fn main() {
    let mut bridge = Bridge::start("benchbox");
    let pid = bridge.pid();
    let auth = format!("Bearer {}", bridge.pair("bench-phone", "read"));
    let agent = agent();
    let mut report = Report::default();

    // 1. Idle: one paired device, no panes.
    let idle = wait_rss_stable(pid);
    report.line("idle RSS (1 device, no panes)", mib(idle), &goal_idle(idle));
    let threads = status_field(pid, "Threads").unwrap_or(0);
    let breakdown = smaps_breakdown(pid);
    let list_empty = measure(&agent, &bridge.url("/api/panes"), &auth, REQUESTS);

    // 2. Ten hosted panes, each writing 2 MiB of text, then 2 MiB more.
    let script = format!(
        "gen() {{ head -c {RANDOM_BYTES_PER_ROUND} /dev/urandom | base64 -w 100; }}; \
         gen; echo BENCH-DONE-1; read x; gen; echo BENCH-DONE-2; exec cat"
    );
    let argv = ["sh", "-c", script.as_str()];
    let started = Instant::now();
    let panes: Vec<String> = (0..PANES)
        .map(|i| bridge.new_pane(&format!("bench-{i}"), &argv).0)
        .collect();
    for p in &panes {
        wait_for_text(&bridge, &agent, &auth, p, "BENCH-DONE-1");
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
        wait_for_text(&bridge, &agent, &auth, p, "BENCH-DONE-2");
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
    let snap = measure(&agent, &pane_url, &auth, REQUESTS);
    report.latency("GET /api/panes/local/{pane}", &snap);
    let list = measure(&agent, &bridge.url("/api/panes"), &auth, REQUESTS);
    report.latency("GET /api/panes (no panes)", &list_empty);
    report.latency("GET /api/panes (10 panes)", &list);
    let with_scrollback = measure(
        &agent,
        &format!("{pane_url}?scrollback={SCROLLBACK_LINES}"),
        &auth,
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

/// Waits (at most 180 s) until a visible row of `pane` contains `marker`.
fn wait_for_text(bridge: &Bridge, agent: &ureq::Agent, auth: &str, pane: &str, marker: &str) {
    let url = bridge.url(&format!("/api/panes/local/{pane}"));
    let seen = wait_for(Duration::from_secs(180), || {
        let v: Value = serde_json::from_slice(&get_ok(agent, &url, auth)).ok()?;
        v["lines"]
            .as_array()?
            .iter()
            .any(|l| l.as_str().is_some_and(|s| s.contains(marker)))
            .then_some(())
    });
    seen.unwrap_or_else(|| panic!("pane {pane} did not print {marker} within 180 s"));
}

/// The latency of one request kind and the size of its answer.
struct Latency {
    stats: Stats,
    body_bytes: usize,
}

/// `n` sequential GETs of `url`, each answered 200, on one keep-alive agent.
fn measure(agent: &ureq::Agent, url: &str, auth: &str, n: usize) -> Latency {
    let (stats, body_bytes) = measure_get(agent, url, auth, 200, n);
    Latency { stats, body_bytes }
}

fn goal_idle(idle: u64) -> String {
    format!("<= 15 MB: {}", met(idle <= IDLE_GOAL_BYTES))
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
                us(l.stats.p50),
                us(l.stats.p99),
                us(l.stats.max)
            ),
            format!("n = {}, {} B per answer", l.stats.n, l.body_bytes),
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
