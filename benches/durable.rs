//! Durable agents at scale (SPEC §10.3, issue 12's figures), with real processes: a release-built
//! `collie bridge` reading 20 attached agents of 100 conversations each over private unix
//! sockets. The agents are served by this bench (real HTTP/1.1 servers on real sockets: the
//! scripted agent of `tests/support/durable_agent.rs`), so the bridge's figures are its own.
//!
//! Run: `cargo bench --bench durable` (`COLLIE_BENCH_DURABLE_SECS=N` seconds per CPU window,
//! default 60). A plain binary, not criterion: the figures are a whole process's.
//!
//! 1. *Memory*: the bridge's RSS (settled) before attaching and once every agent's 100
//!    conversations are read, sanitized, masked and kept — per agent and per conversation.
//! 2. *Idle CPU*: the bridge's user + system time over a window with no phone watching, so each
//!    agent is read every 10 s (8,640 reads a day): first with the agents answering `304` to a
//!    matching `If-None-Match` (every sixth read still unconditional), then with agents that send
//!    no ETag (every read parsed, sanitized and masked in full) — against the same bridge idle with
//!    no agent attached, measured first in the same run.
//!
//! Every process and temp dir is removed on drop; nothing is asserted.

#[path = "../tests/support/durable_agent.rs"]
mod durable_agent;
mod support;
#[path = "../tests/support/test_ca.rs"]
mod test_ca;

use std::os::unix::fs::PermissionsExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use durable_agent::{Answer, Got, ScriptedAgent};
use serde_json::{json, Value};
use support::{agent, env_number, get_json, listing_only, mib, wait_for, wait_rss_stable, Bridge};

const AGENTS: usize = 20;
const CONVERSATIONS: usize = 100;
const ITEMS: usize = 12;

/// An agent's state: `CONVERSATIONS` conversations of `ITEMS` items (a few hundred bytes each,
/// mixed scripts), every tenth with an open question.
fn state(agent: usize) -> Value {
    let conversations: Vec<Value> = (0..CONVERSATIONS)
        .map(|c| {
            let items: Vec<Value> = (0..ITEMS)
                .map(|i| {
                    json!({
                        "id": format!("i{i}"),
                        "kind": if i % 3 == 0 { "markdown" } else { "text" },
                        "role": if i % 2 == 0 { "user" } else { "agent" },
                        "text": format!(
                            "Step {i} of run {c} on agent {agent}: built 42 targets, \
                             デプロイ準備完了 — all checks passed; next: `cargo test --workspace` \
                             and then ship to staging. {}",
                            "details ".repeat(20)
                        ),
                        "at": 1_800_000_000_000u64 + (c * 1000 + i) as u64,
                    })
                })
                .collect();
            let questions: Vec<Value> = if c % 10 == 0 {
                vec![json!({
                    "id": "q1",
                    "title": format!("Deploy run {c} to production?"),
                    "reason": "All checks passed.\nThe diff touches 3 files.",
                    "options": [{"id": "yes", "label": "Deploy"}, {"id": "no", "label": "Cancel"}]
                })]
            } else {
                vec![]
            };
            json!({
                "id": format!("c{c}"),
                "title": format!("Run {c}"),
                "state": "idle",
                "updated": 1_800_000_000_000u64 + c as u64,
                "items": items,
                "questions": questions,
                "actions": [{"id": "retry", "label": "Retry"}],
            })
        })
        .collect();
    json!({"conversations": conversations, "starters": [{"id": "run", "label": "New run"}]})
}

/// The bridge's user + system CPU time so far.
fn cpu(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc stat");
    // Fields after the command's closing parenthesis: state is field 3; utime 14, stime 15.
    let after = &stat[stat.rfind(')').expect("comm") + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .unwrap_or(100) as u64;
    Duration::from_millis(ticks * 1000 / hz)
}

/// The bridge's CPU over `secs` seconds, as a share of one core.
fn cpu_window(pid: u32, secs: u64) -> (Duration, f64) {
    let (t0, c0) = (Instant::now(), cpu(pid));
    std::thread::sleep(Duration::from_secs(secs));
    let used = cpu(pid) - c0;
    (
        used,
        used.as_secs_f64() / t0.elapsed().as_secs_f64() * 100.0,
    )
}

fn main() {
    if listing_only() {
        return;
    }
    let secs: u64 = env_number("COLLIE_BENCH_DURABLE_SECS", 60);
    let bridge = Bridge::options("bench").log("warn").start();
    let pid = bridge.pid();
    let token = format!("Bearer {}", bridge.pair("bench", "read"));
    let http = agent();

    let rss_empty = wait_rss_stable(pid);
    let (idle_cpu, idle_pct) = cpu_window(pid, secs);

    // The agents: each answers 304 to its own ETag unless told to send none.
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let etags = Arc::new(AtomicBool::new(true));
    let mut agents = Vec::new();
    for a in 0..AGENTS {
        let body = state(a).to_string().into_bytes();
        let tag = format!("\"v{a}\"");
        let etags = Arc::clone(&etags);
        let socket = dir.path().join(format!("a{a}.sock"));
        agents.push(ScriptedAgent::socket(&socket, move |got: &Got| {
            let with_tags = etags.load(Ordering::Relaxed);
            if with_tags && got.header("if-none-match") == Some(tag.as_str()) {
                return Answer::status(304);
            }
            let mut headers = vec![("content-type".into(), "application/json".into())];
            if with_tags {
                headers.push(("etag".into(), tag.clone()));
            }
            Answer::Reply {
                status: 200,
                headers,
                body: body.clone(),
                wire: true,
            }
        }));
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        bridge.cli_ok(&[
            "durable",
            "attach",
            &format!("a{a}"),
            "--socket",
            &socket.display().to_string(),
        ]);
    }
    let body_bytes = state(0).to_string().len();
    let read_all = Instant::now();
    let mut last = String::new();
    wait_for(Duration::from_secs(120), || {
        let v = get_json(&http, &bridge.url("/api/durable"), &token)?;
        let agents = v["agents"].as_array()?;
        last = agents
            .iter()
            .map(|a| {
                format!(
                    "{} {} {} {}",
                    a["name"],
                    a["status"],
                    a["error"],
                    a["conversations"].as_array().map_or(0, Vec::len)
                )
            })
            .collect::<Vec<_>>()
            .join("\n");
        (agents.len() == AGENTS
            && agents.iter().all(|a| {
                a["status"] == "up"
                    && a["conversations"].as_array().map(Vec::len) == Some(CONVERSATIONS)
            }))
        .then_some(())
    })
    .unwrap_or_else(|| panic!("every agent read within 120 s; last:\n{last}"));
    let read_all = read_all.elapsed();
    // Stop watching: the phone's read above counts as watching for 6 s.
    std::thread::sleep(Duration::from_secs(8));
    let rss_full = wait_rss_stable(pid);

    let reads = |agents: &[ScriptedAgent]| -> usize { agents.iter().map(|a| a.got().len()).sum() };
    let before = reads(&agents);
    eprintln!("reads so far: {before}");
    let (etag_cpu, etag_pct) = cpu_window(pid, secs);
    let etag_reads = reads(&agents) - before;

    etags.store(false, Ordering::Relaxed);
    std::thread::sleep(Duration::from_secs(11));
    let before = reads(&agents);
    let (full_cpu, full_pct) = cpu_window(pid, secs);
    let full_reads = reads(&agents) - before;

    let per_read = |used: Duration, base: Duration, n: usize| {
        let extra = used.saturating_sub(base).as_secs_f64() * 1000.0;
        extra / n.max(1) as f64
    };
    println!("durable agents: {AGENTS} agents × {CONVERSATIONS} conversations × {ITEMS} items ({} KiB of JSON per agent)", body_bytes / 1024);
    println!(
        "all read, sanitized and shown: {:.1} s after attaching",
        read_all.as_secs_f64()
    );
    println!(
        "RSS: {} with no agent → {} with all ({} per agent, {:.1} KiB per conversation)",
        mib(rss_empty),
        mib(rss_full),
        mib(rss_full.saturating_sub(rss_empty) / AGENTS as u64),
        rss_full.saturating_sub(rss_empty) as f64 / 1024.0 / (AGENTS * CONVERSATIONS) as f64
    );
    println!("CPU over {secs} s, no phone watching:");
    println!("  no agents:                {idle_cpu:>8.2?}  ({idle_pct:.2} % of a core)");
    println!(
        "  20 agents, ETag/304:      {etag_cpu:>8.2?}  ({etag_pct:.2} % of a core), {etag_reads} reads ({:.1} per agent per minute), {:.2} ms CPU per read over idle",
        etag_reads as f64 / AGENTS as f64 * 60.0 / secs as f64,
        per_read(etag_cpu, idle_cpu, etag_reads)
    );
    println!(
        "  20 agents, no ETag:       {full_cpu:>8.2?}  ({full_pct:.2} % of a core), {full_reads} reads, {:.2} ms CPU per full read over idle",
        per_read(full_cpu, idle_cpu, full_reads)
    );
    let end = get_json(&http, &bridge.url("/api/durable"), &token).unwrap_or_default();
    let statuses: Vec<String> = end["agents"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|a| {
                    let now = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_millis() as u64);
                    let age = now.saturating_sub(a["polled"].as_u64().unwrap_or(0)) / 1000;
                    format!(
                        "{}={} {age} s ago{}",
                        a["name"].as_str().unwrap_or(""),
                        a["status"].as_str().unwrap_or(""),
                        a["error"]
                            .as_str()
                            .map(|e| format!(" ({e})"))
                            .unwrap_or_default()
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    println!("at the end: {}", statuses.join(", "));
    drop(agents);
}
