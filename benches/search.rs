//! Search against ripgrep (SPEC §11, issue 13's figure): a 100,000-file tree in a temp dir,
//! searched for a literal by the `rg` binary and by Collie's `Searches`, side by side in the same
//! run, warm cache for both.
//!
//! Run: `cargo bench --bench search` (`COLLIE_BENCH_SEARCH_RUNS=N` timed runs each, default 7).
//! `rg` is looked up on `PATH`; when it is missing the bench says so and prints only Collie's
//! figures. A plain binary, not criterion: the figures are whole searches.
//!
//! The tree: 100 folders × 10 sub-folders × 100 files of about 600 bytes of deterministic text
//! (a seeded generator), a root `.gitignore` that hides `build/` folders and `*.gen` files (5 %
//! of the tree, some holding the literal), and the literal in 1 file of 1,000 outside them — so
//! both tools must find exactly the same 100 lines. ripgrep runs with `--no-require-git` (the
//! tree is no git repository, and Collie honours `.gitignore` either way), `-F` and `-n`, its
//! output read through a pipe; Collie runs `content` with `literalSearch`, case-sensitive, no
//! context lines, with an `allowed` predicate that refuses a `.collie` folder (as the bridge's
//! does), and its default limits.
//!
//! Figures: time to the last result (rg: until it exits; Collie: until the search has ended and
//! all results are in its buffer) and time to the first result (rg: its first output line;
//! Collie: `start` answering with one result), medians of the runs. Nothing is asserted.

mod support;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use collie_actors::tools::search::{SearchLimits, Searches, StartSearchArgs};
use serde_json::json;
use support::{cpu_model, cpus, env_number, load_average, met, Stats};

const NEEDLE: &str = "COLLIE_NEEDLE_4217";
const TOP: usize = 100;
const SUB: usize = 10;
const FILES: usize = 100;
const WORDS: &[&str] = &[
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango",
    "uniform", "victor", "whiskey", "xray", "yankee", "zulu", "fn", "let", "mut", "impl",
];

/// A small deterministic generator (xorshift64*), so every run builds the same tree.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// Builds the tree; answers how many lines hold the literal outside ignored files.
fn build_tree(root: &Path) -> usize {
    std::fs::write(root.join(".gitignore"), "build/\n*.gen\n").expect("write .gitignore");
    let mut rng = Rng(0x5EED_0013);
    let mut expected = 0;
    let mut n = 0usize;
    for t in 0..TOP {
        for s in 0..SUB {
            // Every twentieth sub-folder is a `build/` folder (ignored).
            let ignored_dir = (t * SUB + s) % 20 == 7;
            let dir = if ignored_dir {
                root.join(format!("t{t:03}/build{s}/build"))
            } else {
                root.join(format!("t{t:03}/s{s}"))
            };
            std::fs::create_dir_all(&dir).expect("mkdir");
            for f in 0..FILES {
                n += 1;
                let mut text = String::with_capacity(700);
                let mut line = 0;
                while text.len() < 600 {
                    for _ in 0..8 {
                        text.push_str(WORDS[(rng.next() % WORDS.len() as u64) as usize]);
                        text.push(' ');
                    }
                    text.push('\n');
                    line += 1;
                    if line == 3 && n.is_multiple_of(1_000) {
                        text.push_str(&format!("here is {NEEDLE} once\n"));
                    }
                }
                let name = if !ignored_dir && f % 50 == 3 {
                    // An ignored generated file beside the others, holding the literal.
                    text.push_str(&format!("{NEEDLE} in a generated file\n"));
                    format!("f{f}.gen")
                } else {
                    format!("f{f}.txt")
                };
                if !ignored_dir && !name.ends_with(".gen") && n.is_multiple_of(1_000) {
                    expected += 1;
                }
                std::fs::write(dir.join(name), text).expect("write");
            }
        }
    }
    expected
}

/// `rg` on `PATH`, if there is one.
fn find_rg() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("rg"))
        .find(|p| p.is_file())
}

/// One ripgrep run: (first output line, exit, lines printed).
fn run_rg(rg: &Path, root: &Path) -> (Duration, Duration, usize) {
    let started = Instant::now();
    let mut child = Command::new(rg)
        .args(["--no-require-git", "-F", "-n", NEEDLE])
        .arg(root)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn rg");
    let mut out = BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut first_line = String::new();
    out.read_line(&mut first_line).expect("read rg");
    let first = started.elapsed();
    let mut rest = String::new();
    out.read_to_string(&mut rest).expect("read rg");
    child.wait().expect("rg exits");
    let last = started.elapsed();
    let lines = usize::from(!first_line.is_empty()) + rest.lines().count();
    (first, last, lines)
}

fn args() -> StartSearchArgs {
    serde_json::from_value(json!({
        "path": ".", "pattern": NEEDLE, "searchType": "content", "literalSearch": true,
        "ignoreCase": false, "contextLines": 0,
    }))
    .expect("valid arguments")
}

/// One Collie run to the last result: `start` answers only once the search has ended.
async fn collie_last(s: &Searches, root: &Path) -> (Duration, usize) {
    let allowed: Arc<dyn Fn(&Path) -> bool + Send + Sync> =
        Arc::new(|p: &Path| !p.components().any(|c| c.as_os_str() == ".collie"));
    let started = Instant::now();
    let done = s
        .start("bench", root.to_path_buf(), allowed, args())
        .await
        .expect("search");
    let took = started.elapsed();
    assert!(
        done.answer.is_complete,
        "the wait cap is far above a search"
    );
    (took, done.answer.total_results)
}

/// One Collie run to the first result: `start` answers as soon as there is one.
async fn collie_first(s: &Searches, root: &Path) -> Duration {
    let allowed: Arc<dyn Fn(&Path) -> bool + Send + Sync> =
        Arc::new(|p: &Path| !p.components().any(|c| c.as_os_str() == ".collie"));
    let started = Instant::now();
    let done = s
        .start("bench", root.to_path_buf(), allowed, args())
        .await
        .expect("search");
    let took = started.elapsed();
    s.stop_all();
    assert!(done.answer.total_results >= 1);
    took
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let runs: usize = env_number("COLLIE_BENCH_SEARCH_RUNS", 7).max(1);
    println!(
        "search bench: {} CPUs ({}), load {}, {runs} timed runs each",
        cpus(),
        cpu_model(),
        load_average()
    );
    let dir = tempfile::TempDir::new().expect("temp dir");
    let root = dir.path().join("tree");
    std::fs::create_dir(&root).expect("mkdir");
    let t = Instant::now();
    let expected = build_tree(&root);
    println!(
        "tree: {} files in {} (built in {:.1} s); {expected} lines hold the literal outside ignored files",
        TOP * SUB * FILES,
        root.display(),
        t.elapsed().as_secs_f64()
    );

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    // Default limits, except that `start` waits for the whole search (or for one result).
    let to_last = Searches::new(SearchLimits {
        first_page_len: usize::MAX,
        first_page_wait: Duration::from_secs(600),
        ..SearchLimits::default()
    });
    let to_first = Searches::new(SearchLimits {
        first_page_len: 1,
        first_page_wait: Duration::from_secs(600),
        ..SearchLimits::default()
    });
    let rg = find_rg();
    match &rg {
        Some(rg) => {
            let version = Command::new(rg)
                .arg("--version")
                .output()
                .map(|o| {
                    String::from_utf8_lossy(&o.stdout)
                        .lines()
                        .next()
                        .unwrap_or("")
                        .to_owned()
                })
                .unwrap_or_default();
            println!("rg: {version}");
        }
        None => println!("rg: not found on PATH; only Collie's figures are printed"),
    }
    let threads = SearchLimits::default().threads_per_search;
    println!("Collie: {threads} walker threads, default limits");

    // Warm the page cache (and both tools) once, and check they agree.
    let (_, found) = rt.block_on(collie_last(&to_last, &root));
    println!("Collie finds {found} lines");
    if let Some(rg) = &rg {
        let (_, _, lines) = run_rg(rg, &root);
        println!("rg finds {lines} lines");
    }

    let (mut rg_first, mut rg_last, mut c_first, mut c_last) = (vec![], vec![], vec![], vec![]);
    for _ in 0..runs {
        if let Some(rg) = &rg {
            let (first, last, _) = run_rg(rg, &root);
            rg_first.push(first);
            rg_last.push(last);
        }
        c_last.push(rt.block_on(collie_last(&to_last, &root)).0);
        c_first.push(rt.block_on(collie_first(&to_first, &root)));
    }
    // Let the first-result searches (stopped) wind down before the runtime goes.
    let deadline = Instant::now() + Duration::from_secs(30);
    while to_first.live_threads() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }

    let c_last = Stats::of(c_last);
    let c_first = Stats::of(c_first);
    println!();
    println!(
        "| {:<28} | {:>12} | {:>12} |",
        "median of runs", "last result", "first result"
    );
    println!("|{:-<30}|{:->14}|{:->14}|", "", "", "");
    if !rg_last.is_empty() {
        let rg_last = Stats::of(rg_last);
        let rg_first = Stats::of(rg_first);
        println!(
            "| {:<28} | {:>12} | {:>12} |",
            "rg (process, piped)",
            ms(rg_last.p50),
            ms(rg_first.p50)
        );
        println!(
            "| {:<28} | {:>12} | {:>12} |",
            "Collie Searches",
            ms(c_last.p50),
            ms(c_first.p50)
        );
        let speed = rg_last.p50.as_secs_f64() / c_last.p50.as_secs_f64();
        println!();
        println!(
            "Collie's speed: {speed:.2}× ripgrep's (goal ≥ 0.8×: {})",
            met(speed >= 0.8)
        );
    } else {
        println!(
            "| {:<28} | {:>12} | {:>12} |",
            "Collie Searches",
            ms(c_last.p50),
            ms(c_first.p50)
        );
    }
}
