//! End-to-end walky figures across three real bridge processes (docs/PERFORMANCE.md, "Walky"):
//! a lead and two members on loopback, a message from a pane on member A to a pane on member B —
//! signed by A, verified and attested by the lead, verified by B, logged (synced) on all three,
//! audited, and its header typed into B's pane.
//!
//! Run: `cargo bench --bench walky_crew`. A plain binary, not criterion. Sends go to A's control
//! socket exactly as `collie walky send` does (one connection per message, the sender pane given as
//! `COLLIE_PANE`), without spawning a CLI process per message. B's receiving pane is a hosted pane
//! running this very binary as `--pane-reader FILE`, which stamps each line it reads (the header,
//! after the pty's line discipline) with the wall clock: send-to-header latency is that stamp minus
//! the moment the send was written, on one machine's clock.
//!
//! Figures: latency p50/p99 sequential (one message at a time), throughput with several concurrent
//! senders, and the lead's result records under a flood past their cap (kept, dropped, lead RSS).
//! Every process is stopped and every temp dir removed on drop, pass or fail. Nothing is asserted.

mod support;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use support::{cpu_model, cpus, status_field, wait_for, Bridge};

/// Sequential messages for the latency figure (after [`WARM_UP`]).
const SEQUENTIAL: usize = 1_000;
const WARM_UP: usize = 50;
/// Concurrent senders tried for the throughput figure.
const CONCURRENCY: [usize; 3] = [4, 16, 32];
/// Messages per throughput run.
const PER_RUN: usize = 2_000;
/// The flood: past the lead's cap of 10,000 kept results.
const FLOOD: usize = 12_000;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--pane-reader") {
        pane_reader(Path::new(&args[i + 1]));
        return;
    }
    println!(
        "walky across three bridges on {} ({} CPUs)",
        cpu_model(),
        cpus()
    );
    // Only errors on stderr (`COLLIE_LOG=error`), as this bench has always run its bridges.
    let start = |name: &str| Bridge::options(name).log("error").start();
    let lead = start("lead");
    let a = start("a");
    let b = start("b");
    lead.cli_ok(&["crew", "init"]);
    for (m, name) in [(&a, "web-a"), (&b, "web-b")] {
        m.cli_ok(&["crew", "join", &lead.invite(), "--name", name]);
    }
    wait_for(Duration::from_secs(20), || {
        (lead.members_online() == 2).then_some(())
    })
    .expect("both members online");

    let sender = a.new_pane("sender", &["sh", "-c", "exec cat"]).0;
    let stamps = b.dir().join("stamps.txt");
    let exe = std::env::current_exe().expect("this binary");
    let (receiver, token) = b.new_pane(
        "receiver",
        &[
            exe.to_str().expect("utf-8 path"),
            "--pane-reader",
            stamps.to_str().expect("utf-8 path"),
        ],
    );
    let to = format!("web-b/{receiver}#{token}");
    let sock = a.socket();

    // Latency, one message at a time.
    for i in 0..WARM_UP {
        send(&sock, &sender, &to, &format!("warm {i}")).expect("warm-up send");
    }
    let mut sent_at = HashMap::new();
    let mut round_trips = Vec::new();
    for i in 0..SEQUENTIAL {
        let t0 = now_ns();
        let started = Instant::now();
        let id = send(&sock, &sender, &to, &format!("message {i}")).expect("send");
        round_trips.push(started.elapsed());
        sent_at.insert(id, t0);
    }
    let arrived = wait_for(Duration::from_secs(30), || {
        let seen = read_stamps(&stamps);
        sent_at
            .keys()
            .all(|id| seen.contains_key(id))
            .then_some(seen)
    })
    .expect("every header reached B's pane");
    let mut to_header: Vec<Duration> = sent_at
        .iter()
        .map(|(id, t0)| Duration::from_nanos(arrived[id].saturating_sub(*t0)))
        .collect();
    println!();
    println!("| figure | p50 | p99 | n |");
    println!("|---|---|---|---|");
    row("send → header line in B's pane", &mut to_header);
    row("send → `delivered` back at the sender", &mut round_trips);

    // Throughput with concurrent senders.
    println!();
    println!("| concurrent senders | messages/s | p50 send→delivered |");
    println!("|---|---|---|");
    for n in CONCURRENCY {
        let (rate, mut lat) = throughput(&sock, &sender, &to, n, PER_RUN);
        let p50 = percentile(&mut lat, 0.50);
        println!("| {n} | {rate:.0} | {} |", ms(p50));
    }

    // The flood: the lead keeps at most 10,000 results for their 10 minutes.
    let before = rss_kib(&lead);
    let started = Instant::now();
    let (rate, _) = throughput(&sock, &sender, &to, 16, FLOOD);
    let stats: Value =
        serde_json::from_str(&lead.cli_ok(&["walky", "log", "--json"])).expect("json");
    println!();
    println!(
        "flood: {FLOOD} messages in {:.1} s ({rate:.0}/s); lead records kept {} of cap {}, dropped {}; lead RSS {} KiB before, {} KiB after",
        started.elapsed().as_secs_f64(),
        stats["records"]["kept"],
        stats["records"]["cap"],
        stats["records"]["dropped"],
        before,
        rss_kib(&lead),
    );
}

/// Sends one message from `pane` to `to` through the bridge's control socket; returns its id when
/// it was delivered.
fn send(sock: &Path, pane: &str, to: &str, body: &str) -> Result<String, String> {
    let mut s = UnixStream::connect(sock).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(|e| e.to_string())?;
    let req = json!({
        "cmd": "walky-send",
        "from": {"collie_pane": pane, "tmux": null, "tmux_pane": null},
        "to": to,
        "body": body,
        "wait": true,
    });
    let mut line = req.to_string();
    line.push('\n');
    s.write_all(line.as_bytes()).map_err(|e| e.to_string())?;
    let mut reply = String::new();
    BufReader::new(s)
        .read_line(&mut reply)
        .map_err(|e| e.to_string())?;
    let v: Value = serde_json::from_str(&reply).map_err(|e| format!("{e}: {reply}"))?;
    match v["data"]["outcome"].as_str() {
        Some("delivered") => Ok(v["data"]["id"].as_str().unwrap_or("").to_owned()),
        _ => Err(reply),
    }
}

/// `total` messages from `n` threads; messages per second and each send's round trip.
fn throughput(sock: &Path, pane: &str, to: &str, n: usize, total: usize) -> (f64, Vec<Duration>) {
    let left = Arc::new(AtomicUsize::new(total));
    let (tx, rx) = mpsc::channel();
    let started = Instant::now();
    let workers: Vec<_> = (0..n)
        .map(|w| {
            let (sock, pane, to, left, tx) = (
                sock.to_owned(),
                pane.to_owned(),
                to.to_owned(),
                Arc::clone(&left),
                tx.clone(),
            );
            std::thread::spawn(move || {
                while left
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |l| l.checked_sub(1))
                    .is_ok()
                {
                    let t = Instant::now();
                    let ok = send(&sock, &pane, &to, &format!("from worker {w}")).is_ok();
                    let _ = tx.send((ok, t.elapsed()));
                }
            })
        })
        .collect();
    drop(tx);
    let mut lat = Vec::new();
    let mut delivered = 0usize;
    for (ok, d) in rx {
        if ok {
            delivered += 1;
        }
        lat.push(d);
    }
    for w in workers {
        let _ = w.join();
    }
    (delivered as f64 / started.elapsed().as_secs_f64(), lat)
}

/// The receiving pane's program: stamps every line with the wall clock in nanoseconds.
fn pane_reader(out: &Path) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(out)
        .expect("stamps file");
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let _ = writeln!(file, "{} {line}", now_ns());
    }
}

/// Message id → the first time its header was read in the pane.
fn read_stamps(path: &Path) -> HashMap<String, u64> {
    let mut text = String::new();
    if let Ok(mut f) = std::fs::File::open(path) {
        let _ = f.read_to_string(&mut text);
    }
    let mut seen = HashMap::new();
    for line in text.lines() {
        let Some((stamp, rest)) = line.split_once(' ') else {
            continue;
        };
        let Some(id) = rest
            .split("[walky ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
        else {
            continue;
        };
        if let Ok(t) = stamp.parse::<u64>() {
            seen.entry(id.to_owned()).or_insert(t);
        }
    }
    seen
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn percentile(v: &mut [Duration], q: f64) -> Duration {
    if v.is_empty() {
        return Duration::ZERO;
    }
    v.sort();
    let i = ((v.len() as f64 - 1.0) * q).round() as usize;
    v[i.min(v.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn row(what: &str, v: &mut [Duration]) {
    let (p50, p99) = (percentile(v, 0.50), percentile(v, 0.99));
    println!("| {what} | {} | {} | {} |", ms(p50), ms(p99), v.len());
}

/// The bridge's VmRSS in KiB (0 if it cannot be read).
fn rss_kib(bridge: &Bridge) -> u64 {
    status_field(bridge.pid(), "VmRSS").unwrap_or(0)
}
