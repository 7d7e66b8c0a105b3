//! Load through the crew (docs/PERFORMANCE.md, "Load through the crew"): a lead and two members
//! under the most streams the lead allows and a steady rate of relayed snapshot reads, for ten
//! minutes, with one member killed and restarted midway.
//!
//! Run: `cargo bench --bench crew_load` (`COLLIE_BENCH_SECS=60` for a short run;
//! `COLLIE_BENCH_RESTARTS=N` kills and restarts `web-2` N times, evenly spread, to tell memory an
//! allocator keeps after one burst from memory that grows with each restart). A plain binary,
//! not criterion, like `benches/relay.rs`: the figures need real processes (a lead and two members
//! as `collie bridge`, private tmux servers). What it does:
//!
//! - Each member (`web-1`, `web-2`) mirrors a private tmux server whose pane prints a numbered line
//!   about 20 times a second, forever (`L0000001 …`; tmux keeps 2,000 lines of scrollback, full
//!   after about 100 s).
//! - A lead with both members joined and devices paired on it opens the most pane streams it allows
//!   in all ([`STREAMS`], its `IN_ALL`), half of each member's printing pane, [`PER_DEVICE`] per
//!   device; then asks for one more from another device, which must be refused with 503 `resource
//!   limit`. Each stream is read on a thread of its own, which checks that every event's `seq` is
//!   above the one before and that the highest line number on screen never goes back.
//! - [`READERS`] client threads, each on its own keep-alive connection, read both printing panes
//!   through the lead (`GET /api/panes/{member}/{pane}`) at [`READS_PER_SEC`] in all, paced.
//! - Midway, `web-2` is killed with SIGKILL and, [`DOWN_FOR`] later, started again on the same dirs
//!   and tmux server. Its streams must end with a `closed` event naming why (`member unreachable`)
//!   and open again once it is back; `web-2`'s reads answer `member unreachable` meanwhile (they
//!   are counted apart until every stream is open again).
//! - Every [`SAMPLE_EVERY`] the resident memory of the lead and both members is sampled; the curve
//!   is printed with, for each, the growth from the first third after warm-up to the last third.
//!
//! Correctness is counted and printed as failures, and makes the bench exit non-zero: a read
//! answered otherwise than 200 (but `web-2`'s while it is away), a stream that ends early or out
//! of order, a `web-2` stream that does not say its member went away or does not come back, a
//! 257th stream not refused as it should be. Timings and memory are printed, never asserted.
//!
//! Everything the bench starts lives under one temp dir and is stopped on drop, pass or fail:
//! bridges (SIGTERM, SIGKILL after 10 s), then their tmux servers; a last guard kills by pid any
//! process still naming the temp dir and says so. Every wait is bounded.
//!
//! `COLLIE_BENCH_BIN=/path/to/collie` runs another build for every bridge (the bench itself need
//! not be rebuilt).

mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

use support::{
    agent, cpu_model, cpus, env_number, get_json, listing_only, load_average, mem_total_kib,
    status_field, wait_for, Bridge, BridgeOptions, Stats, Sweep, Tmux, MIB,
};

/// Streams the bench opens through the lead: the most the lead allows in all.
const STREAMS: usize = collie::app::follow::IN_ALL;
/// Streams per paired device: the most one device may have open.
const PER_DEVICE: usize = collie::app::follow::PER_DEVICE;
/// Relayed snapshot reads per second, over all reader threads.
const READS_PER_SEC: usize = 1_500;
/// Reader threads, each on its own keep-alive connection.
const READERS: usize = 6;
/// How often the resident memory of the three bridges is sampled.
const SAMPLE_EVERY: Duration = Duration::from_secs(10);
/// The run's length unless `COLLIE_BENCH_SECS` says otherwise.
const DEFAULT_SECS: u64 = 600;
/// How long `web-2` stays dead before it is started again.
const DOWN_FOR: Duration = Duration::from_secs(5);
/// How long a stream may take to open again once its member went away (the member's restart
/// included).
const REOPEN_WITHIN: Duration = Duration::from_secs(120);
/// Size of the members' tmux windows.
const COLS: usize = 100;
const ROWS: usize = 30;
/// The printing pane's command: a numbered line of text every 50 ms (plus `sleep`'s start-up).
const PRINTER: &str = "i=0; while :; do i=$((i+1)); \
     printf 'L%07d %s\\n' \"$i\" 'the quick brown fox jumps over the lazy dog and runs far away again'; \
     sleep 0.05; done";

fn main() {
    if listing_only() {
        return;
    }
    let secs: u64 = env_number("COLLIE_BENCH_SECS", DEFAULT_SECS).max(20);
    let restarts: u32 = env_number("COLLIE_BENCH_RESTARTS", 1).max(1);
    let run_for = Duration::from_secs(secs);
    let begun = Instant::now();
    let root = tempfile::Builder::new()
        .prefix("collie-load-bench-")
        .tempdir()
        .expect("create a temp dir");
    // Declared after `root`, so it is dropped before it: last of all the guards below.
    let _sweep = Sweep(root.path().to_path_buf());
    let load_before = load_average();
    let mut failures: Vec<String> = Vec::new();

    let mut crew = Crew::start(root.path());
    let pids = Pids {
        lead: crew.lead.pid(),
        web1: crew.members[0].bridge.pid(),
        web2: Arc::new(AtomicU32::new(crew.members[1].bridge.pid())),
    };

    // The streams, opened one after the other: all at once would pass the relay's 64 requests
    // waiting per member, which is not what is measured here.
    progress(&format!("opening {STREAMS} streams through the lead"));
    let stop = Arc::new(AtomicBool::new(false));
    let open = Arc::new(AtomicUsize::new(0));
    let mut streams: Vec<JoinHandle<StreamReport>> = Vec::with_capacity(STREAMS);
    for i in 0..STREAMS {
        let member = i % 2;
        let spec = StreamSpec {
            index: i,
            member,
            url: crew.lead.url(&format!(
                "/api/panes/{}/{}/stream",
                MEMBERS[member], crew.printers[member]
            )),
            auth: crew.devices[i / PER_DEVICE].clone(),
        };
        let (tx, rx) = mpsc::channel();
        let (stop, open) = (Arc::clone(&stop), Arc::clone(&open));
        streams.push(std::thread::spawn(move || follow(spec, &stop, &open, tx)));
        if rx.recv_timeout(Duration::from_secs(20)).is_err() {
            failures.push(format!(
                "stream {i} did not open with a first event within 20 s"
            ));
            break;
        }
    }
    let all_open = open.load(Ordering::SeqCst);
    progress(&format!("{all_open} streams open"));

    // One more, from a device with none open: past the lead's cap in all.
    let refused = one_too_many(&crew);
    if let Err(why) = &refused {
        failures.push(format!("stream {}: {why}", STREAMS + 1));
    }

    // The readers and the memory sampler.
    let away = Arc::new(AtomicBool::new(false));
    let readers: Vec<JoinHandle<ReadReport>> = (0..READERS)
        .map(|i| {
            let urls: Vec<String> = (0..2)
                .map(|m| {
                    crew.lead
                        .url(&format!("/api/panes/{}/{}", MEMBERS[m], crew.printers[m]))
                })
                .collect();
            let auth = crew.devices[0].clone();
            let (stop, away) = (Arc::clone(&stop), Arc::clone(&away));
            std::thread::spawn(move || read_paced(i, &urls, &auth, &stop, &away))
        })
        .collect();
    let samples = Arc::new(Mutex::new(Vec::<Sample>::new()));
    let sampler = {
        let (stop, samples) = (Arc::clone(&stop), Arc::clone(&samples));
        let (lead, web1, web2) = (pids.lead, pids.web1, Arc::clone(&pids.web2));
        std::thread::spawn(move || {
            let start = Instant::now();
            let mut k = 0u32;
            while !stop.load(Ordering::SeqCst) {
                let due = start + SAMPLE_EVERY * k;
                if let Some(wait) = due.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait.min(Duration::from_millis(500)));
                    continue;
                }
                let rss = |pid: u32| status_field(pid, "VmRSS").map(|kib| kib * 1024);
                let sample = Sample {
                    at: start.elapsed(),
                    lead: rss(lead),
                    web1: rss(web1),
                    web2: rss(web2.load(Ordering::SeqCst)),
                };
                samples.lock().expect("samples").push(sample);
                k += 1;
            }
        })
    };
    let measured_from = Instant::now();
    progress(&format!(
        "{READS_PER_SEC} reads/s and {all_open} streams for {secs} s; web-2 is killed {restarts} \
         time(s) on the way"
    ));

    // Midway (or, with more restarts, evenly spread): web-2 dies and comes back.
    let mut restart = Vec::new();
    for k in 1..=restarts {
        sleep_until(measured_from + run_for * k / (restarts + 1), &stop);
        restart.push(restart_web2(
            &mut crew,
            &pids,
            &away,
            &open,
            all_open,
            measured_from,
        ));
    }
    sleep_until(measured_from + run_for, &stop);
    let measured = measured_from.elapsed();

    // The cap once more, with every stream open again: every place came back, none leaked.
    let refused_at_end = (open.load(Ordering::SeqCst) == STREAMS).then(|| one_too_many(&crew));
    if let Some(Err(why)) = &refused_at_end {
        failures.push(format!("stream {} at the end: {why}", STREAMS + 1));
    }

    progress("stopping the load");
    stop.store(true, Ordering::SeqCst);
    let reads: Vec<ReadReport> = readers
        .into_iter()
        .map(|h| h.join().expect("a reader thread panicked"))
        .collect();
    let _ = sampler.join();
    // A stream's thread sees the flag at its next line (the panes print 20 a second).
    let mut stream_reports = Vec::with_capacity(streams.len());
    let deadline = Instant::now() + Duration::from_secs(30);
    for h in streams {
        if wait_for(deadline.saturating_duration_since(Instant::now()), || {
            h.is_finished().then_some(())
        })
        .is_some()
        {
            stream_reports.push(h.join().expect("a stream thread panicked"));
        } else {
            failures.push("a stream's reader did not end within 30 s of the end".to_owned());
        }
    }
    let samples = samples.lock().expect("samples").clone();
    progress("stopping the lead and both members");
    drop(crew);

    println!();
    println!(
        "Load through the crew ({} CPUs, {}, {:.1} GiB RAM); load average before {load_before}, \
         after {}; measured for {:.0} s",
        cpus(),
        cpu_model(),
        mem_total_kib() as f64 / 1024.0 / 1024.0,
        load_average(),
        measured.as_secs_f64()
    );
    print_streams(
        &stream_reports,
        all_open,
        &refused,
        &refused_at_end,
        &mut failures,
    );
    print_restart(&restart, &stream_reports, &mut failures);
    print_reads(&reads, measured, &mut failures);
    print_memory(&samples, run_for, &restart);
    println!();
    println!("total run time {:.0} s", begun.elapsed().as_secs_f64());
    if failures.is_empty() {
        println!("failures: none");
    } else {
        println!("FAILURES ({}):", failures.len());
        for f in failures.iter().take(40) {
            println!("  - {f}");
        }
        if failures.len() > 40 {
            println!("  - … and {} more", failures.len() - 40);
        }
        // The guards must still run: drop them before leaving with the status.
        drop(_sweep);
        drop(root);
        std::process::exit(1);
    }
}

fn progress(what: &str) {
    eprintln!("[crew_load bench] {what}");
}

/// Sleeps until `at` (or until `stop` is set), in short steps.
fn sleep_until(at: Instant, stop: &AtomicBool) {
    while let Some(left) = at.checked_duration_since(Instant::now()) {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(500)));
    }
}

// ---------------------------------------------------------------------------------------------
// The crew: a lead and two members with a printing pane each
// ---------------------------------------------------------------------------------------------

const MEMBERS: [&str; 2] = ["web-1", "web-2"];

/// A lead and `web-1`, `web-2` joined to it, each member mirroring a private tmux server with a
/// printing pane; devices paired on the lead. Stopped on drop (each bridge, then its tmux).
struct Crew {
    lead: Bridge,
    members: Vec<Member>,
    /// `Bearer …` of `read` devices paired on the lead, one per [`PER_DEVICE`] streams.
    devices: Vec<String>,
    /// One more, which opens no stream but the one past the cap.
    spare: String,
    /// Collie's ids of the printing panes of web-1 and web-2.
    printers: [String; 2],
}

/// A member bridge with a private tmux server. Declared bridge first so it drops first: the
/// bridge stops while the server it is attached to still runs.
struct Member {
    bridge: Bridge,
    tmux: Tmux,
    dir: PathBuf,
}

/// A bridge's options, running `COLLIE_BENCH_BIN` if set instead of the binary cargo built.
fn bridge(name: &str) -> BridgeOptions {
    let options = Bridge::options(name);
    match std::env::var_os("COLLIE_BENCH_BIN") {
        Some(bin) => options.program(PathBuf::from(bin)),
        None => options,
    }
}

impl Member {
    fn start(dir: PathBuf, name: &str) -> Member {
        std::fs::create_dir_all(&dir).expect("create the member's dir");
        let tmux = Tmux::start(&dir, COLS, ROWS, "printer", PRINTER);
        let bridge = Member::options(&dir, &tmux, name).start();
        Member { bridge, tmux, dir }
    }

    /// The member's bridge options: the same on a restart, so it comes back as the same machine
    /// mirroring the same tmux server.
    fn options(dir: &Path, tmux: &Tmux, name: &str) -> BridgeOptions {
        bridge(name)
            .dir(dir.to_path_buf())
            .env("COLLIE_TMUX_SOCKETS", &tmux.socket)
    }
}

impl Crew {
    fn start(root: &Path) -> Crew {
        progress("starting the lead and two members with printing panes");
        let lead = bridge("lead").dir(root.join("lead")).start();
        lead.cli_ok(&["crew", "init"]);
        let members: Vec<Member> = MEMBERS
            .iter()
            .map(|name| Member::start(root.join(name), name))
            .collect();
        for m in &members {
            m.bridge
                .cli_ok(&["crew", "join", &lead.invite(), "--name", m.bridge.name()]);
        }
        wait_for(Duration::from_secs(30), || {
            (lead.members_online() == 2).then_some(())
        })
        .expect("both members are online at the lead within 30 s");
        let devices: Vec<String> = (0..STREAMS.div_ceil(PER_DEVICE))
            .map(|i| format!("Bearer {}", lead.pair(&format!("load-{i}"), "read")))
            .collect();
        let spare = format!("Bearer {}", lead.pair("one-too-many", "read"));
        let printers = [
            members[0].tmux.collie_id("printer"),
            members[1].tmux.collie_id("printer"),
        ];
        let crew = Crew {
            lead,
            members,
            devices,
            spare,
            printers,
        };
        // Each printing pane shows numbered lines through the lead.
        let agent = agent();
        for (m, pane) in MEMBERS.iter().zip(&crew.printers) {
            let url = crew.lead.url(&format!("/api/panes/{m}/{pane}"));
            wait_for(Duration::from_secs(30), || {
                let snap = get_json(&agent, &url, &crew.devices[0])?;
                let lines = snap["lines"].as_array()?;
                lines
                    .iter()
                    .filter_map(Value::as_str)
                    .any(|l| counter_of(l).is_some())
                    .then_some(())
            })
            .unwrap_or_else(|| panic!("{m}'s printing pane shows lines through the lead"));
        }
        crew
    }
}

/// The line number a printed line starts with (`L0000123 …`).
fn counter_of(line: &str) -> Option<u64> {
    let digits = line.strip_prefix('L')?.get(..7)?;
    digits.parse().ok()
}

/// Asks for one stream past the cap from the spare device: `Ok` with what it said if refused
/// with 503 `{"error":"resource limit"}`, `Err` otherwise.
fn one_too_many(crew: &Crew) -> Result<String, String> {
    let url = crew.lead.url(&format!(
        "/api/panes/{}/{}/stream",
        MEMBERS[0], crew.printers[0]
    ));
    let answer = ureq::get(&url)
        .set("Authorization", &crew.spare)
        .timeout(Duration::from_secs(10))
        .call();
    match answer {
        Ok(resp) => Err(format!("opened with {}, not refused", resp.status())),
        Err(ureq::Error::Status(status, resp)) => {
            let body = resp.into_string().unwrap_or_default();
            let error = serde_json::from_str::<Value>(&body)
                .ok()
                .and_then(|v| v["error"].as_str().map(str::to_owned));
            if status == 503 && error.as_deref() == Some("resource limit") {
                Ok(format!("{status} {}", body.trim()))
            } else {
                Err(format!("refused with {status} {}", body.trim()))
            }
        }
        Err(e) => Err(format!("failed: {e}")),
    }
}

// ---------------------------------------------------------------------------------------------
// The restart of web-2
// ---------------------------------------------------------------------------------------------

/// What happened around web-2's restart, in time since the measurement began.
#[derive(Default)]
struct Restart {
    killed: Option<Duration>,
    killed_at: Option<Instant>,
    /// When the new web-2 bridge was started, online at the lead, and its pane read again.
    started: Option<Duration>,
    online: Option<Duration>,
    readable: Option<Duration>,
    /// When every stream was open again.
    all_open: Option<Duration>,
    problems: Vec<String>,
}

fn restart_web2(
    crew: &mut Crew,
    pids: &Pids,
    away: &AtomicBool,
    open: &AtomicUsize,
    streams: usize,
    origin: Instant,
) -> Restart {
    let mut r = Restart::default();
    progress("SIGKILL web-2");
    away.store(true, Ordering::SeqCst);
    let member = &mut crew.members[1];
    member.bridge.kill_hard();
    r.killed_at = Some(Instant::now());
    r.killed = Some(origin.elapsed());
    std::thread::sleep(DOWN_FOR);
    progress("starting web-2 again on the same dirs and tmux server");
    member.bridge = Member::options(&member.dir, &member.tmux, MEMBERS[1]).start();
    pids.web2.store(member.bridge.pid(), Ordering::SeqCst);
    r.started = Some(origin.elapsed());
    let lead = &crew.lead;
    if wait_for(Duration::from_secs(60), || {
        (lead.members_online() == 2).then_some(())
    })
    .is_some()
    {
        r.online = Some(origin.elapsed());
    } else {
        r.problems
            .push("web-2 is not online at the lead 60 s after its restart".to_owned());
    }
    let agent = agent();
    let url = lead.url(&format!("/api/panes/{}/{}", MEMBERS[1], crew.printers[1]));
    if wait_for(Duration::from_secs(60), || {
        get_json(&agent, &url, &crew.devices[0])
    })
    .is_some()
    {
        r.readable = Some(origin.elapsed());
    } else {
        r.problems
            .push("web-2's pane is not read through the lead 60 s after its restart".to_owned());
    }
    let reopened = wait_for(REOPEN_WITHIN, || {
        (open.load(Ordering::SeqCst) >= streams).then_some(())
    });
    // web-2's restart is over once its streams are back: until then, its 128 streams asking at
    // once take up part of the relay's requests waiting for web-2, and a read may be refused.
    away.store(false, Ordering::SeqCst);
    if reopened.is_some() {
        r.all_open = Some(origin.elapsed());
        progress("every stream is open again");
    } else {
        r.problems.push(format!(
            "only {} of {streams} streams open {} s after the restart",
            open.load(Ordering::SeqCst),
            REOPEN_WITHIN.as_secs()
        ));
    }
    r
}

// ---------------------------------------------------------------------------------------------
// Streams
// ---------------------------------------------------------------------------------------------

struct StreamSpec {
    index: usize,
    /// 0 for web-1, 1 for web-2.
    member: usize,
    url: String,
    auth: String,
}

/// What one stream's reader saw over the whole run.
#[derive(Default)]
struct StreamReport {
    member: usize,
    /// Change events, over all its connections.
    events: u64,
    connections: u32,
    /// `closed` events: when, and the reason they gave.
    closed: Vec<(Instant, Option<String>)>,
    /// When a connection opened after a `closed` showed its first event.
    resumed: Vec<Instant>,
    /// Answers to opening it again, other than 200 ("502 member unreachable" → count).
    refusals: BTreeMap<String, u32>,
    /// Events out of order (a `seq` not above the one before on the connection, or a line
    /// number below one shown before).
    disorder: Vec<String>,
    /// Anything else wrong: ended without `closed`, a first event that is not full, not opened
    /// again in time.
    errors: Vec<String>,
}

/// Follows one stream until `stop`: opens it (again after each `closed`), reads its events and
/// checks their order. Sends on `opened` once the first connection's first event came.
fn follow(
    spec: StreamSpec,
    stop: &AtomicBool,
    open: &AtomicUsize,
    opened: mpsc::Sender<()>,
) -> StreamReport {
    let mut r = StreamReport {
        member: spec.member,
        ..StreamReport::default()
    };
    // No overall timeout: the stream stays open; a read timeout well above the keep-alive
    // comments' interval (15 s) only guards against a dead connection.
    let agent = ureq::AgentBuilder::new()
        .timeout_connect(Duration::from_secs(5))
        .timeout_read(Duration::from_secs(60))
        .build();
    let mut highest_line = 0u64;
    let mut reopening_since: Option<Instant> = None;
    // Retries are spread a little, so 128 streams of one member do not all ask at once.
    let retry = Duration::from_millis(200 + (spec.index as u64 * 37) % 300);
    while !stop.load(Ordering::SeqCst) {
        let answer = agent.get(&spec.url).set("Authorization", &spec.auth).call();
        let resp = match answer {
            Ok(resp) => resp,
            Err(e) => {
                let what = match e {
                    ureq::Error::Status(status, resp) => {
                        format!("{status} {}", resp.into_string().unwrap_or_default().trim())
                    }
                    ureq::Error::Transport(t) => format!("transport: {t}"),
                };
                match reopening_since {
                    None => {
                        r.errors.push(format!("opening: {what}"));
                        return r;
                    }
                    Some(since) if since.elapsed() > REOPEN_WITHIN => {
                        r.errors.push(format!(
                            "not open again {} s after it closed; last answer {what}",
                            REOPEN_WITHIN.as_secs()
                        ));
                        return r;
                    }
                    Some(_) => {
                        *r.refusals.entry(what).or_insert(0) += 1;
                        std::thread::sleep(retry);
                        continue;
                    }
                }
            }
        };
        r.connections += 1;
        open.fetch_add(1, Ordering::SeqCst);
        let first_connection = reopening_since.is_none();
        let ended = read_connection(resp.into_reader(), &mut r, &mut highest_line, stop, || {
            if first_connection {
                let _ = opened.send(());
            }
        });
        open.fetch_sub(1, Ordering::SeqCst);
        match ended {
            Ended::Stopped => break,
            Ended::Closed(error) => {
                r.closed.push((Instant::now(), error));
                reopening_since = Some(Instant::now());
            }
            Ended::Early(why) => {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                r.errors.push(format!("ended without `closed`: {why}"));
                reopening_since = Some(Instant::now());
            }
        }
    }
    r
}

/// How a connection ended.
enum Ended {
    /// The bench is over.
    Stopped,
    /// A `closed` event, with its reason.
    Closed(Option<String>),
    /// The connection ended or failed without one.
    Early(String),
}

/// Reads one connection's events into `r` until it ends; `first` runs once its first event came.
fn read_connection(
    source: impl Read,
    r: &mut StreamReport,
    highest_line: &mut u64,
    stop: &AtomicBool,
    first: impl FnOnce(),
) -> Ended {
    let mut first = Some(first);
    let mut reader = BufReader::new(source);
    let mut line = String::new();
    let mut name = String::from("message");
    let mut last_seq: Option<u64> = None;
    let reopened = r.connections > 1;
    loop {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) => return Ended::Early("end of stream".to_owned()),
            Ok(_) => {}
            Err(e) => return Ended::Early(format!("read: {e}")),
        }
        if stop.load(Ordering::SeqCst) {
            return Ended::Stopped; // dropping the reader closes the connection
        }
        if let Some(n) = line.strip_prefix("event:") {
            n.trim().clone_into(&mut name);
            continue;
        }
        let Some(data) = line.strip_prefix("data:") else {
            continue;
        };
        let event: Value = match serde_json::from_str(data.trim()) {
            Ok(v) => v,
            Err(e) => return Ended::Early(format!("an event that is not JSON: {e}")),
        };
        if std::mem::replace(&mut name, "message".to_owned()) == "closed" {
            return Ended::Closed(event["error"].as_str().map(str::to_owned));
        }
        r.events += 1;
        let seq = event["seq"].as_u64();
        match (last_seq, seq) {
            (_, None) => r.disorder.push(format!("an event without seq: {event}")),
            (Some(before), Some(now)) if now <= before => r
                .disorder
                .push(format!("seq {now} after {before} on one connection")),
            _ => {}
        }
        last_seq = seq.or(last_seq);
        if let Some(f) = first.take() {
            if event["full"] != true {
                r.errors.push("a first event that is not full".to_owned());
            }
            if reopened {
                r.resumed.push(Instant::now());
            }
            f();
        }
        let shown = event["rows"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(_, l)| l.as_str().and_then(counter_of))
            .max();
        if let Some(n) = shown {
            if n < *highest_line {
                r.disorder
                    .push(format!("line {n} shown after line {}", *highest_line));
            }
            *highest_line = (*highest_line).max(n);
        }
    }
}

fn print_streams(
    reports: &[StreamReport],
    opened: usize,
    refused: &Result<String, String>,
    refused_at_end: &Option<Result<String, String>>,
    failures: &mut Vec<String>,
) {
    println!();
    println!(
        "Streams: {opened} of {STREAMS} opened through the lead ({} devices, {PER_DEVICE} each), \
         half of each member's printing pane",
        STREAMS.div_ceil(PER_DEVICE)
    );
    let cap = |r: &Result<String, String>| match r {
        Ok(said) => format!("refused as it should be: {said}"),
        Err(why) => format!("WRONG: {why}"),
    };
    println!("  stream {} at the start: {}", STREAMS + 1, cap(refused));
    match refused_at_end {
        Some(r) => println!("  stream {} at the end: {}", STREAMS + 1, cap(r)),
        None => println!(
            "  stream {} at the end: not asked (not every stream was open again)",
            STREAMS + 1
        ),
    }
    for (member, name) in MEMBERS.iter().enumerate() {
        let mut counts: Vec<u64> = reports
            .iter()
            .filter(|r| r.member == member)
            .map(|r| r.events)
            .collect();
        counts.sort_unstable();
        if counts.is_empty() {
            continue;
        }
        println!(
            "  {}: {} streams, events per stream min {} / median {} / max {}",
            name,
            counts.len(),
            counts[0],
            counts[counts.len() / 2],
            counts[counts.len() - 1]
        );
    }
    let disorder: usize = reports.iter().map(|r| r.disorder.len()).sum();
    let errors: usize = reports.iter().map(|r| r.errors.len()).sum();
    println!("  events out of order: {disorder}; streams that went wrong otherwise: {errors}");
    for (i, r) in reports.iter().enumerate() {
        for d in &r.disorder {
            failures.push(format!(
                "stream {i} ({}): out of order: {d}",
                MEMBERS[r.member]
            ));
        }
        for e in &r.errors {
            failures.push(format!("stream {i} ({}): {e}", MEMBERS[r.member]));
        }
    }
}

fn print_restart(restarts: &[Restart], reports: &[StreamReport], failures: &mut Vec<String>) {
    println!();
    let at =
        |d: Option<Duration>| d.map_or("never".to_owned(), |d| format!("{:.1} s", d.as_secs_f64()));
    for restart in restarts {
        println!(
            "web-2 killed (SIGKILL) at {}, started again at {}, online at the lead at {}, its \
             pane read again at {}, every stream open again at {}",
            at(restart.killed),
            at(restart.started),
            at(restart.online),
            at(restart.readable),
            at(restart.all_open)
        );
        for p in &restart.problems {
            failures.push(p.clone());
        }
    }
    // Each `closed` and each reopening, timed from the last kill before it.
    let since_kill = |when: &Instant| {
        restarts
            .iter()
            .filter_map(|r| r.killed_at)
            .rfind(|k| k <= when)
            .map(|k| when.saturating_duration_since(k))
    };
    let kills = restarts.iter().filter(|r| r.killed_at.is_some()).count();
    for (member, name) in MEMBERS.iter().enumerate() {
        let mine: Vec<&StreamReport> = reports.iter().filter(|r| r.member == member).collect();
        let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
        let mut said = Vec::new();
        let mut back = Vec::new();
        let mut refusals: BTreeMap<&str, u32> = BTreeMap::new();
        for r in &mine {
            for (when, why) in &r.closed {
                *reasons
                    .entry(why.clone().unwrap_or_else(|| "(no reason)".to_owned()))
                    .or_insert(0) += 1;
                said.extend(since_kill(when));
            }
            back.extend(r.resumed.iter().filter_map(since_kill));
            for (what, n) in &r.refusals {
                *refusals.entry(what).or_insert(0) += n;
            }
        }
        let closed_streams = mine.iter().filter(|r| !r.closed.is_empty()).count();
        println!(
            "  {} streams: {closed_streams} of {} closed, reasons {reasons:?}",
            name,
            mine.len()
        );
        if !said.is_empty() {
            let s = Stats::of(said);
            println!(
                "    `closed` came after the kill: p50 {}, max {}",
                secs(s.p50),
                secs(s.max)
            );
        }
        if !back.is_empty() {
            let n = back.len();
            let s = Stats::of(back);
            println!(
                "    open again with a full first event: {n} times, after the kill p50 {}, max {}",
                secs(s.p50),
                secs(s.max)
            );
        }
        if !refusals.is_empty() {
            println!("    answers while opening again: {refusals:?}");
        }
        for (i, r) in mine.iter().enumerate() {
            let unexpected = r
                .closed
                .iter()
                .filter(|(_, why)| member == 0 || why.as_deref() != Some("member unreachable"))
                .count();
            if unexpected > 0 {
                failures.push(format!(
                    "{} stream {i}: {unexpected} unexpected `closed` events: {:?}",
                    name,
                    r.closed.iter().map(|(_, w)| w).collect::<Vec<_>>()
                ));
            }
            if member == 1 && (r.closed.len() < kills || r.resumed.len() < kills) {
                failures.push(format!(
                    "web-2 stream {i}: {} `closed`, {} reopened, for {kills} kills",
                    r.closed.len(),
                    r.resumed.len()
                ));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Reads
// ---------------------------------------------------------------------------------------------

#[derive(Default)]
struct ReadReport {
    /// Times of reads answered 200.
    times: Vec<Duration>,
    /// web-2's reads answered otherwise while it was away ("502 member unreachable" → count).
    away: BTreeMap<String, u32>,
    /// Reads answered otherwise at any other time.
    errors: Vec<String>,
    /// How far behind its schedule the thread fell at worst.
    worst_lag: Duration,
}

/// Reads both printing panes in turn at `READS_PER_SEC / READERS` a second until `stop`.
fn read_paced(
    index: usize,
    urls: &[String],
    auth: &str,
    stop: &AtomicBool,
    away: &AtomicBool,
) -> ReadReport {
    let mut r = ReadReport::default();
    let agent = agent();
    let every = Duration::from_secs_f64(READERS as f64 / READS_PER_SEC as f64);
    // The threads start at different points of one period, so their reads interleave.
    let start = Instant::now() + every.mul_f64(index as f64 / READERS as f64);
    let mut k: u32 = 0;
    let mut body = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        let due = start + every * k;
        match due.checked_duration_since(Instant::now()) {
            Some(wait) => std::thread::sleep(wait),
            None => r.worst_lag = r.worst_lag.max(due.elapsed()),
        }
        let member = (index + k as usize) % 2;
        k += 1;
        let was_away = member == 1 && away.load(Ordering::SeqCst);
        let t = Instant::now();
        let answer = agent.get(&urls[member]).set("Authorization", auth).call();
        let (status, text) = match answer {
            Ok(resp) | Err(ureq::Error::Status(_, resp)) => {
                let status = resp.status();
                body.clear();
                match resp.into_reader().read_to_end(&mut body) {
                    Ok(_) => (status, String::new()),
                    Err(e) => (0, format!("reading the body: {e}")),
                }
            }
            Err(e) => (0, format!("transport: {e}")),
        };
        let took = t.elapsed();
        if status == 200 {
            r.times.push(took);
            continue;
        }
        let what = if status == 0 {
            text
        } else {
            format!("{status} {}", String::from_utf8_lossy(&body).trim())
        };
        if member == 1 && (was_away || away.load(Ordering::SeqCst)) {
            *r.away.entry(what).or_insert(0) += 1;
        } else {
            r.errors.push(format!("{}: {what}", MEMBERS[member]));
        }
    }
    r
}

fn print_reads(reports: &[ReadReport], measured: Duration, failures: &mut Vec<String>) {
    println!();
    let mut times = Vec::new();
    let mut away: BTreeMap<&str, u32> = BTreeMap::new();
    let mut worst_lag = Duration::ZERO;
    for r in reports {
        times.extend_from_slice(&r.times);
        for (what, n) in &r.away {
            *away.entry(what).or_insert(0) += n;
        }
        worst_lag = worst_lag.max(r.worst_lag);
        for e in &r.errors {
            failures.push(format!("read: {e}"));
        }
    }
    let errors: usize = reports.iter().map(|r| r.errors.len()).sum();
    let ok = times.len();
    println!(
        "Relayed snapshot reads: {READERS} client threads, paced at {READS_PER_SEC}/s in all, \
         both members' printing panes"
    );
    println!(
        "  {ok} answered 200 ({:.0}/s over {:.0} s); errors {errors}; a reader fell behind its \
         schedule by {} at worst",
        ok as f64 / measured.as_secs_f64(),
        measured.as_secs_f64(),
        secs(worst_lag)
    );
    if !away.is_empty() {
        println!(
            "  web-2's reads from its kill until its streams were all open again, not 200: \
             {away:?}"
        );
    }
    if ok > 0 {
        let s = Stats::of(times);
        println!(
            "  latency p50 {}, p99 {}, max {}",
            ms(s.p50),
            ms(s.p99),
            ms(s.max)
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------------------------

struct Pids {
    lead: u32,
    web1: u32,
    /// Changes when web-2 is started again.
    web2: Arc<AtomicU32>,
}

/// Resident memory of the three bridges at one time (`None`: the process was not there).
#[derive(Clone)]
struct Sample {
    at: Duration,
    lead: Option<u64>,
    web1: Option<u64>,
    web2: Option<u64>,
}

/// The warm-up left out of the flatness figure: the panes' scrollback (2,000 lines at about 20 a
/// second) fills in the first 100 s or so.
fn warm_up(run_for: Duration) -> Duration {
    Duration::from_secs(120).min(run_for / 3)
}

fn print_memory(samples: &[Sample], run_for: Duration, restarts: &[Restart]) {
    println!();
    println!(
        "Resident memory (VmRSS, MiB) every {} s from the start of the load",
        SAMPLE_EVERY.as_secs()
    );
    println!(
        "  {:>6}  {:>8}  {:>8}  {:>8}",
        "t (s)", "lead", "web-1", "web-2"
    );
    let show = |b: Option<u64>| b.map_or("-".to_owned(), |b| format!("{:.1}", b as f64 / MIB));
    for s in samples {
        let note = restarts
            .iter()
            .find_map(|r| match (r.killed, r.started) {
                (Some(k), Some(st)) if s.at >= k && s.at < st => Some("  web-2 dead"),
                (Some(_), Some(st)) if s.at >= st && s.at < st + SAMPLE_EVERY => {
                    Some("  web-2 started again")
                }
                _ => None,
            })
            .unwrap_or("");
        println!(
            "  {:>6.0}  {:>8}  {:>8}  {:>8}{note}",
            s.at.as_secs_f64(),
            show(s.lead),
            show(s.web1),
            show(s.web2)
        );
    }
    let warm = warm_up(run_for);
    println!(
        "  flat after warm-up? growth = the last third's highest sample minus the lowest of the \
         first third after {} s of warm-up",
        warm.as_secs()
    );
    let growth = |pick: &dyn Fn(&Sample) -> Option<u64>, from: Duration, to: Duration| {
        let kept: Vec<u64> = samples
            .iter()
            .filter(|s| s.at >= from && s.at <= to)
            .filter_map(pick)
            .collect();
        if kept.len() < 3 {
            return "too few samples".to_owned();
        }
        let third = kept.len() / 3;
        let first_min = kept[..third.max(1)].iter().min().copied().unwrap_or(0);
        let last_max = kept[kept.len() - third.max(1)..]
            .iter()
            .max()
            .copied()
            .unwrap_or(0);
        format!(
            "{:+.2} MiB ({:.1} → {:.1})",
            (last_max as f64 - first_min as f64) / MIB,
            first_min as f64 / MIB,
            last_max as f64 / MIB
        )
    };
    let end = samples.last().map_or(Duration::ZERO, |s| s.at);
    println!(
        "    lead:  {} (the restart of web-2 in between)",
        growth(&|s| s.lead, warm, end)
    );
    println!("    web-1: {}", growth(&|s| s.web1, warm, end));
    if let Some(killed) = restarts.first().and_then(|r| r.killed) {
        println!(
            "    web-2: {} before it was first killed; after a restart the samples are a new \
             process's",
            growth(&|s| s.web2, warm, killed)
        );
    }
    // The lead just before each kill, and once everything was back and 30 s more.
    for restart in restarts {
        let (Some(killed), Some(all_open)) = (restart.killed, restart.all_open) else {
            continue;
        };
        let before = samples.iter().rfind(|s| s.at < killed).and_then(|s| s.lead);
        let after = samples
            .iter()
            .find(|s| s.at >= all_open + Duration::from_secs(30))
            .and_then(|s| s.lead);
        if let (Some(b), Some(a)) = (before, after) {
            println!(
                "    lead across web-2's restart at {:.0} s: {:.1} MiB before the kill, {:.1} MiB \
                 30 s after every stream was open again ({:+.2} MiB)",
                killed.as_secs_f64(),
                b as f64 / MIB,
                a as f64 / MIB,
                (a as f64 - b as f64) / MIB
            );
        }
    }
}

/// A duration in seconds with one decimal.
fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// A duration in ms with one decimal.
fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}
