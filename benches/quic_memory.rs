//! What quinn and rustls themselves keep per idle crew connection on the lead: the floor under the
//! lead's memory per member (docs/PERFORMANCE.md, "Lead memory per member"). The lead's own
//! figure (`cargo bench --bench relay`, part 4) is its whole process's resident memory per member
//! bridge; this one is the heap that this crate's transport alone holds for one connection, with
//! the shipped configuration and nothing of the bridge around it.
//!
//! This process is the lead: a [`QuicEndpoint::lead`] on loopback on a two-worker runtime (the
//! bridge's), counting every heap byte through a counting wrapper of the system allocator. The members run in a
//! child process (this same binary, started with `--members`), so their side of each connection is
//! not counted: one member endpoint and identity per connection, each dialling once and then
//! staying connected and idle (QUIC keep-alives only) until the lead closes. The lead accepts
//! and holds every connection, as a crew link does.
//!
//! It prints, per connection: the heap in use (allocated minus freed) once every connection is up
//! and again after some idle seconds, and the process's anonymous resident memory (`RssAnon`, the
//! figure the relay bench's lead memory is comparable with), whose difference from the heap is
//! what the allocator keeps besides (freed handshake buffers it has not given back). One connection is made and closed before the baseline, so one-time set-up (the crypto
//! provider, the runtime's buffers) is not counted per connection.
//!
//! Run: `cargo bench --bench quic_memory` (`COLLIE_BENCH_CONNECTIONS`, default 50;
//! `COLLIE_BENCH_IDLE_SECS`, default 10; `COLLIE_BENCH_AT_ONCE=1` dials every member at once, as
//! members do when a lead restarts, instead of one after the other). The child is killed on drop, pass or fail.

use std::alloc::System;
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use collie_crew::identity::Identity;
use collie_crew::pin::Pin;
use collie_crew::tls::{ClientAdmission, PinCheck};
use collie_crew::transport::quic::QuicEndpoint;
use collie_crew::transport::{Connection, Transport};
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static ALLOCATOR: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Heap bytes in use: requested minus freed, reallocations counted.
fn heap_in_use() -> i64 {
    let s = ALLOCATOR.stats();
    s.bytes_allocated as i64 - s.bytes_deallocated as i64 + s.bytes_reallocated as i64
}

/// Anonymous resident memory (heap and stacks, what the allocator holds) in bytes.
fn rss_anon_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

const KIB: f64 = 1024.0;

fn knob(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// The child: `count` members dialling `addr` (the lead's `pin`), one endpoint each, one after
/// the other or all at once; prints `up` once all are connected, then waits for the lead to close
/// them.
fn members(addr: SocketAddr, pin: Pin, count: usize, at_once: bool) {
    let rt = runtime();
    rt.block_on(async {
        let dial = |_| async move {
            let identity = Arc::new(Identity::generate().expect("an identity"));
            let bind: SocketAddr = "127.0.0.1:0".parse().expect("an address");
            let endpoint = QuicEndpoint::member(identity, bind).expect("a member endpoint");
            let conn = endpoint.dial(&addr, pin).await.expect("the member dials");
            (endpoint, conn)
        };
        let mut held = Vec::with_capacity(count);
        if at_once {
            let mut dials = tokio::task::JoinSet::new();
            for i in 0..count {
                dials.spawn(dial(i));
            }
            while let Some(done) = dials.join_next().await {
                held.push(done.expect("a dial task"));
            }
        } else {
            for i in 0..count {
                held.push(dial(i).await);
            }
        }
        println!("up");
        let _ = std::io::stdout().flush();
        for (_, conn) in &held {
            conn.closed().await;
        }
    });
}

/// Kills the members' process when dropped, pass or fail.
struct Members(Child);

impl Drop for Members {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn_members(addr: SocketAddr, pin: Pin, count: usize, at_once: bool) -> Members {
    let exe = std::env::current_exe().expect("this binary's path");
    let mut child = Command::new(exe)
        .args([
            "--members",
            &addr.to_string(),
            &pin.to_string(),
            &count.to_string(),
            if at_once { "at-once" } else { "in-turn" },
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the members");
    let stdout = child.stdout.take().expect("piped stdout");
    let members = Members(child);
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("the members' output");
    assert_eq!(line.trim(), "up", "the members did not all connect");
    members
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--members") {
        let addr = args[at + 1].parse().expect("an address");
        let pin = args[at + 2].parse().expect("a pin");
        let count = args[at + 3].parse().expect("a count");
        members(addr, pin, count, args[at + 4] == "at-once");
        return;
    }
    let count = knob("COLLIE_BENCH_CONNECTIONS", 50) as usize;
    let idle = Duration::from_secs(knob("COLLIE_BENCH_IDLE_SECS", 10));
    let at_once = knob("COLLIE_BENCH_AT_ONCE", 0) == 1;

    let rt = runtime();
    let identity = Arc::new(Identity::generate().expect("an identity"));
    let pin = identity.pin();
    let admit_all: PinCheck = Arc::new(|_| true);
    let loopback: SocketAddr = "127.0.0.1:0".parse().expect("an address");
    let lead = rt
        .block_on(async {
            QuicEndpoint::lead(identity, loopback, admit_all, ClientAdmission::PinnedOnly)
        })
        .expect("a lead endpoint");
    let addr = lead.local_addr().expect("the lead's address");

    // One connection made and closed first: one-time set-up is not per connection.
    {
        let warm = spawn_members(addr, pin, 1, false);
        let conn = rt.block_on(lead.accept()).expect("the lead accepts");
        conn.close("warm-up done");
        rt.block_on(async { tokio::time::sleep(Duration::from_millis(500)).await });
        drop(conn);
        drop(warm);
        rt.block_on(async { tokio::time::sleep(Duration::from_millis(500)).await });
    }

    let heap_before = heap_in_use();
    let rss_before = rss_anon_bytes();
    let started = Instant::now();
    let members = spawn_members(addr, pin, count, at_once);
    let mut held = Vec::with_capacity(count);
    while held.len() < count {
        held.push(rt.block_on(lead.accept()).expect("the lead accepts"));
    }
    let took = started.elapsed();
    rt.block_on(async { tokio::time::sleep(Duration::from_secs(1)).await });
    let heap_up = heap_in_use();
    let rss_up = rss_anon_bytes();
    rt.block_on(async { tokio::time::sleep(idle).await });
    let heap_idle = heap_in_use();
    let rss_idle = rss_anon_bytes();
    let open = held.iter().filter(|c| c.close_reason().is_none()).count();

    let per = |after: i64, before: i64| (after - before) as f64 / KIB / count as f64;
    let per_rss = |after: u64| (after as f64 - rss_before as f64) / KIB / count as f64;
    println!(
        "QUIC heap per idle crew connection on the lead ({count} connections, shipped lead \
         configuration, dialled {}; all up in {:.1} s)",
        if at_once {
            "all at once"
        } else {
            "one after the other"
        },
        took.as_secs_f64()
    );
    println!(
        "  heap in use, all up:             {:8.1} KiB per connection",
        per(heap_up, heap_before)
    );
    println!(
        "  heap in use, after {:>3} s idle:   {:8.1} KiB per connection ({open} still open)",
        idle.as_secs(),
        per(heap_idle, heap_before)
    );
    println!(
        "  RssAnon, all up / after idle:    {:8.1} / {:.1} KiB per connection",
        per_rss(rss_up),
        per_rss(rss_idle)
    );
    for conn in &held {
        conn.close("done");
    }
    rt.block_on(async { tokio::time::sleep(Duration::from_millis(200)).await });
    drop(members);
}
