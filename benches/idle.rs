//! What a bridge costs while nothing happens (docs/PERFORMANCE.md, "Idle costs"): the time from
//! `exec` to the first `200` of `GET /api/health`, the CPU it burns and the memory it keeps while
//! idle — solo, no pane, one paired device.
//!
//! Run: `cargo bench --bench idle`. To compare builds in one run, name each binary:
//! `COLLIE_BENCH_BINS=before=/path/to/old/collie,after=target/release/collie cargo bench --bench
//! idle`; the rounds then alternate between them (A, B, A, B, …), so a change of the machine's
//! state during the run touches both alike. Knobs: `COLLIE_BENCH_ROUNDS` (default 5),
//! `COLLIE_BENCH_IDLE_SECS` (the CPU window, default 30), `COLLIE_BENCH_SETTLE_SECS` (the wait
//! before it, default 12: tokio lets an unused blocking thread go after 10 s).
//!
//! Each binary gets a state of its own, prepared once (a bridge started, one `read` device
//! paired, stopped), so every measured start is a restart of a bridge with one device — the start
//! that matters. A start on an empty state dir (the first ever) is timed too. The bridges have
//! their own state, config, home and an empty tmux dir, so no tmux server is found. A plain
//! binary, not criterion; every wait is bounded, every bridge is stopped (SIGTERM, SIGKILL after
//! 10 s) and the temp dir removed, pass or fail. Figures are printed, never asserted.
//!
//! Before each round every binary's file is dropped from the page cache and read back in
//! ([`recache`]): the binary's resident pages depend on how its file is cached.
//!
//! CPU is read three ways: clock ticks of `utime + stime` from `/proc/<pid>/stat` (what `top`
//! shows, 10 ms each), nanoseconds on a CPU summed over `/proc/<pid>/task/*/schedstat`, and
//! wake-ups (voluntary and involuntary context switches summed over the threads), which count a
//! timer that fires even when it does next to nothing. Children's ticks (`cutime + cstime`: a
//! tmux probe, say) are shown apart.

mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use support::{
    cpu_model, cpus, env_number, listing_only, load_average, mem_total_kib, rss_bytes,
    smaps_breakdown, status_field, wait_for, wait_rss_stable, Bridge, MIB,
};

/// Clock ticks per second of `/proc/<pid>/stat` (`CLK_TCK`, 100 on Linux).
const TICKS_PER_SEC: f64 = 100.0;

fn main() {
    if listing_only() {
        return;
    }
    let bins = binaries();
    let rounds: usize = env_number("COLLIE_BENCH_ROUNDS", 5);
    let window = Duration::from_secs(env_number("COLLIE_BENCH_IDLE_SECS", 30));
    let settle = Duration::from_secs(env_number("COLLIE_BENCH_SETTLE_SECS", 12));
    let root = tempfile::Builder::new()
        .prefix("collie-bench-idle-")
        .tempdir()
        .expect("create a temp dir");

    // One prepared state per binary: started once, one device paired, stopped.
    let prepared: Vec<Bridge> = bins
        .iter()
        .enumerate()
        .map(|(i, (label, bin))| {
            let mut b = Bridge::options(&format!("idle-{i}"))
                .dir(root.path().join(format!("{i}-{label}")))
                .program(bin.clone())
                .start();
            b.pair("bench-phone", "read");
            b.stop();
            b
        })
        .collect();

    let mut samples: Vec<Vec<Sample>> = bins.iter().map(|_| Vec::new()).collect();
    for round in 1..=rounds {
        for (_, bin) in &bins {
            recache(bin);
        }
        for (i, (label, _)) in bins.iter().enumerate() {
            let fresh_dir = root.path().join(format!("fresh-{round}-{i}"));
            let fresh = first_start(&prepared[i], &fresh_dir);
            let s = measure(&prepared[i], window, settle, fresh);
            eprintln!("round {round}/{rounds}, {label}: {}", s.one_line());
            samples[i].push(s);
        }
    }

    println!();
    println!(
        "idle costs of a solo bridge, no pane, one paired device ({} CPUs, {}, {} MiB RAM)",
        cpus(),
        cpu_model(),
        mem_total_kib() / 1024
    );
    println!(
        "{rounds} rounds alternating the binaries; CPU window {} s after {} s settling; load \
         average at the end: {}",
        window.as_secs(),
        settle.as_secs(),
        load_average()
    );
    for ((label, bin), s) in bins.iter().zip(&samples) {
        println!();
        println!("{label}: {}", bin.display());
        report(s);
    }
}

/// Drops `bin`'s pages from the page cache and reads the whole file back in, so every binary
/// compared is cached alike. The kernel maps a binary's code into a process a page-cache folio at
/// a time (128 KiB here), and the folios a file has depend on how its pages got into the cache
/// (written by the linker, copied, read back after an eviction): without this, two identical
/// files can differ by 2 MiB of RSS.
fn recache(bin: &Path) {
    use std::os::fd::AsRawFd;
    let Ok(mut file) = std::fs::File::open(bin) else {
        return;
    };
    let _ = nix::fcntl::posix_fadvise(
        file.as_raw_fd(),
        0,
        0,
        nix::fcntl::PosixFadviseAdvice::POSIX_FADV_DONTNEED,
    );
    let _ = std::io::copy(&mut file, &mut std::io::sink());
}

/// `(label, binary)` pairs from `COLLIE_BENCH_BINS`, or the binary cargo built.
fn binaries() -> Vec<(String, PathBuf)> {
    match std::env::var("COLLIE_BENCH_BINS") {
        Ok(list) if !list.trim().is_empty() => list
            .split(',')
            .map(|item| match item.split_once('=') {
                Some((label, path)) => (label.trim().to_owned(), PathBuf::from(path.trim())),
                None => (item.trim().to_owned(), PathBuf::from(item.trim())),
            })
            .collect(),
        _ => vec![(
            "this build".to_owned(),
            PathBuf::from(env!("CARGO_BIN_EXE_collie")),
        )],
    }
}

/// One start and idle period of one binary.
struct Sample {
    /// `exec` → the first `200` of `GET /api/health`, on the prepared state.
    to_health: Duration,
    /// `exec` → the banner line on stdout.
    to_banner: Duration,
    /// The same on an empty state dir.
    fresh_to_health: Duration,
    /// Over the window: own ticks, children's ticks, ns on CPU, wake-ups.
    ticks: u64,
    child_ticks: u64,
    cpu_ns: u64,
    switches: u64,
    /// Wake-ups by thread name.
    by_thread: BTreeMap<String, u64>,
    window: Duration,
    /// At the end of the window.
    rss: u64,
    threads: u64,
    smaps: BTreeMap<&'static str, u64>,
}

impl Sample {
    fn cpu_percent_ticks(&self) -> f64 {
        self.ticks as f64 / TICKS_PER_SEC / self.window.as_secs_f64() * 100.0
    }

    fn cpu_percent_ns(&self) -> f64 {
        self.cpu_ns as f64 / 1e9 / self.window.as_secs_f64() * 100.0
    }

    fn wakeups_per_sec(&self) -> f64 {
        self.switches as f64 / self.window.as_secs_f64()
    }

    fn one_line(&self) -> String {
        format!(
            "start {:.1} ms (banner {:.1} ms, empty state {:.1} ms); {} ticks ({:.3} %), {:.3} % \
             by schedstat, {:.1} wake-ups/s, children {} ticks; RSS {:.2} MiB, {} threads",
            ms(self.to_health),
            ms(self.to_banner),
            ms(self.fresh_to_health),
            self.ticks,
            self.cpu_percent_ticks(),
            self.cpu_percent_ns(),
            self.wakeups_per_sec(),
            self.child_ticks,
            self.rss as f64 / MIB,
            self.threads
        )
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Starts the prepared bridge, times it, lets it settle, measures the window, stops it.
fn measure(prepared: &Bridge, window: Duration, settle: Duration, fresh: Duration) -> Sample {
    let mut started = timed_start(prepared, prepared.dir());
    let pid = started.pid();
    std::thread::sleep(settle);
    wait_rss_stable(pid);
    let before = Cpu::read(pid);
    let t0 = Instant::now();
    std::thread::sleep(window);
    let after = Cpu::read(pid);
    let elapsed = t0.elapsed();
    let sample = Sample {
        to_health: started.to_health,
        to_banner: started.to_banner,
        fresh_to_health: fresh,
        ticks: after.ticks - before.ticks,
        child_ticks: after.child_ticks - before.child_ticks,
        cpu_ns: after.ns.saturating_sub(before.ns),
        switches: after.switches.saturating_sub(before.switches),
        by_thread: after
            .by_thread
            .iter()
            .map(|(name, n)| {
                let was = before.by_thread.get(name).copied().unwrap_or(0);
                (name.clone(), n.saturating_sub(was))
            })
            .filter(|(_, n)| *n > 0)
            .collect(),
        window: elapsed,
        rss: rss_bytes(pid),
        threads: status_field(pid, "Threads").unwrap_or(0),
        smaps: smaps_breakdown(pid),
    };
    started.stop();
    sample
}

/// The first start of the prepared bridge's binary on an empty state dir; stopped at once.
fn first_start(prepared: &Bridge, dir: &Path) -> Duration {
    for d in ["state", "config", "tmuxdefault", "home"] {
        std::fs::create_dir_all(dir.join(d)).expect("create the bridge's dirs");
    }
    let mut started = timed_start(prepared, dir);
    let took = started.to_health;
    started.stop();
    took
}

/// A bridge this bench started itself, to time its start; stopped on drop.
struct Started {
    child: Option<Child>,
    to_health: Duration,
    to_banner: Duration,
}

impl Started {
    fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if let Ok(raw) = i32::try_from(child.id()) {
            let _ = kill(Pid::from_raw(raw), Signal::SIGTERM);
        }
        if wait_for(Duration::from_secs(10), || child.try_wait().ok().flatten()).is_none() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Runs `collie bridge` with `prepared`'s binary and environment but the dirs under `dir`, on a
/// port picked beforehand, and asks `GET /api/health` until it answers `200` (every 0.2 ms, at
/// most 20 s).
fn timed_start(prepared: &Bridge, dir: &Path) -> Started {
    let port = free_port();
    let mut cmd = prepared.command();
    cmd.env("HOME", dir.join("home"))
        .env("COLLIE_STATE_DIR", dir.join("state"))
        .env("COLLIE_CONFIG_DIR", dir.join("config"))
        .env("TMUX_TMPDIR", dir.join("tmuxdefault"))
        .args(["bridge", "--port", &port.to_string(), "--name"])
        .arg(prepared.name())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let t0 = Instant::now();
    let mut child = cmd.spawn().expect("spawn collie bridge");
    let stdout = child.stdout.take().expect("the bridge's stdout is piped");
    let mut started = Started {
        child: Some(child),
        to_health: Duration::ZERO,
        to_banner: Duration::ZERO,
    };
    // The banner's arrival is stamped on a thread that then drains stdout for good.
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        let _ = reader.read_line(&mut line);
        let _ = tx.send(Instant::now());
        let mut sink = String::new();
        while reader.read_line(&mut sink).map(|n| n > 0).unwrap_or(false) {
            sink.clear();
        }
    });
    let deadline = t0 + Duration::from_secs(20);
    loop {
        if health_ok(port) {
            started.to_health = t0.elapsed();
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the bridge did not answer GET /api/health within 20 s"
        );
        std::thread::sleep(Duration::from_micros(200));
    }
    let banner = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the bridge prints its banner within 20 s");
    started.to_banner = banner.duration_since(t0);
    started
}

/// A port nobody listens on right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind a loopback port")
        .port()
}

/// Whether `GET /api/health` on `port` answers `200` now (one connection, closed after it).
fn health_ok(port: u16) -> bool {
    let Ok(mut conn) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
    let request =
        format!("GET /api/health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    if conn.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    conn.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.1 200")
}

/// CPU counters of a process.
struct Cpu {
    ticks: u64,
    child_ticks: u64,
    ns: u64,
    switches: u64,
    /// Context switches by thread name (threads of one name summed).
    by_thread: BTreeMap<String, u64>,
}

impl Cpu {
    fn read(pid: u32) -> Cpu {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("read stat");
        // Fields after the command's closing parenthesis, starting with field 3 (state).
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let f: Vec<u64> = rest
            .split_whitespace()
            .map(|v| v.parse().unwrap_or(0))
            .collect();
        // utime, stime, cutime, cstime are fields 14–17, i.e. 11–14 here.
        let field = |n: usize| f.get(n - 3).copied().unwrap_or(0);
        let mut ns = 0;
        let mut switches = 0;
        let mut by_thread = BTreeMap::new();
        if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
            for task in tasks.flatten() {
                let p = task.path();
                if let Ok(s) = std::fs::read_to_string(p.join("schedstat")) {
                    ns += s
                        .split_whitespace()
                        .next()
                        .and_then(|v| v.parse::<u64>().ok())
                        .unwrap_or(0);
                }
                if let Ok(s) = std::fs::read_to_string(p.join("status")) {
                    let n = s
                        .lines()
                        .filter(|l| l.contains("ctxt_switches:"))
                        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                        .sum::<u64>();
                    switches += n;
                    let name = s
                        .lines()
                        .find_map(|l| l.strip_prefix("Name:"))
                        .map(|n| n.trim().trim_end_matches(|c: char| c.is_ascii_digit()))
                        .unwrap_or("?")
                        .to_owned();
                    *by_thread.entry(name).or_insert(0) += n;
                }
            }
        }
        Cpu {
            ticks: field(14) + field(15),
            child_ticks: field(16) + field(17),
            ns,
            switches,
            by_thread,
        }
    }
}

/// Medians (and ranges) of one binary's samples.
fn report(samples: &[Sample]) {
    let row = |what: &str, unit: &str, values: Vec<f64>| {
        let (median, lo, hi) = spread(values);
        println!("  {what:<38} {median:>10.3} {unit:<9} ({lo:.3}–{hi:.3})");
    };
    row(
        "start → first 200 of /api/health",
        "ms",
        samples.iter().map(|s| ms(s.to_health)).collect(),
    );
    row(
        "start → banner on stdout",
        "ms",
        samples.iter().map(|s| ms(s.to_banner)).collect(),
    );
    row(
        "first start (empty state) → 200",
        "ms",
        samples.iter().map(|s| ms(s.fresh_to_health)).collect(),
    );
    row(
        "idle CPU, utime+stime ticks",
        "% core",
        samples.iter().map(Sample::cpu_percent_ticks).collect(),
    );
    row(
        "idle CPU, schedstat",
        "% core",
        samples.iter().map(Sample::cpu_percent_ns).collect(),
    );
    row(
        "wake-ups (context switches)",
        "per s",
        samples.iter().map(Sample::wakeups_per_sec).collect(),
    );
    row(
        "children's ticks in the window",
        "ticks",
        samples.iter().map(|s| s.child_ticks as f64).collect(),
    );
    row(
        "idle RSS (VmRSS)",
        "MiB",
        samples.iter().map(|s| s.rss as f64 / MIB).collect(),
    );
    row(
        "threads",
        "",
        samples.iter().map(|s| s.threads as f64).collect(),
    );
    let names: Vec<&str> = samples
        .iter()
        .flat_map(|s| s.by_thread.keys().map(String::as_str))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    for name in names {
        row(
            &format!("  wake-ups: {name}"),
            "per s",
            samples
                .iter()
                .map(|s| {
                    s.by_thread.get(name).copied().unwrap_or(0) as f64 / s.window.as_secs_f64()
                })
                .collect(),
        );
    }
    let kinds: Vec<&str> = samples
        .iter()
        .flat_map(|s| s.smaps.keys().copied())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    for kind in kinds {
        row(
            &format!("  RSS: {kind}"),
            "MiB",
            samples
                .iter()
                .map(|s| s.smaps.get(kind).copied().unwrap_or(0) as f64 / MIB)
                .collect(),
        );
    }
}

/// Median, minimum and maximum.
fn spread(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return (0.0, 0.0, 0.0);
    }
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    (median, v[0], v[n - 1])
}
