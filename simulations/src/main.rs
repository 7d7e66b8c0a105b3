//! Runs crew simulations from the command line.
//!
//! ```text
//! cargo run -p collie-simulations -- <scenario|all> [--seed N] [--seeds K] [--members M] [--trace]
//! ```
//!
//! `--seed N` runs one seed (replaying a failure printed by a test); `--seeds K` runs seeds
//! `N..N+K`, spread over the machine's cores (reports print in order); `--members M` runs every scenario named with M honest members instead of its own
//! number. `--trace` prints every event of the run. Exits non-zero on the first violation.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use anyhow::{bail, Context};
use collie_simulations::{run_with, Options, Report, Scenario, Violation};

const USAGE: &str =
    "usage: collie-simulations <join|join-faults|faults|unpinned|garbage|deputy|all> \
                     [--seed N] [--seeds K] [--members M] [--trace]";

fn main() -> anyhow::Result<ExitCode> {
    let mut args = std::env::args().skip(1);
    let mut scenarios = Vec::new();
    let (mut seed, mut count, mut trace) = (0u64, 1u64, false);
    let mut members = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--seed" => seed = number(args.next(), "--seed")?,
            "--seeds" => count = number(args.next(), "--seeds")?,
            "--members" => {
                let n = number(args.next(), "--members")?;
                members = Some(usize::try_from(n).context("--members is too large")?);
            }
            "--trace" => trace = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(ExitCode::SUCCESS);
            }
            "all" => scenarios.extend(Scenario::ALL),
            name => match Scenario::from_name(name) {
                Some(s) => scenarios.push(s),
                None => bail!("unknown scenario {name:?}\n{USAGE}"),
            },
        }
    }
    if scenarios.is_empty() {
        bail!("name a scenario\n{USAGE}");
    }
    let options = Options {
        bug: None,
        trace,
        members,
    };
    let runs: Vec<(Scenario, u64)> = scenarios
        .into_iter()
        .flat_map(|s| (seed..seed.saturating_add(count)).map(move |n| (s, n)))
        .collect();
    // Runs are independent and each is deterministic, so they spread over the machine's cores;
    // their reports print in order, and the first failure in that order is the one reported.
    let workers = if trace {
        1
    } else {
        std::thread::available_parallelism().map_or(1, usize::from)
    };
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let results: Mutex<BTreeMap<usize, Outcome>> = Mutex::new(BTreeMap::new());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(scenario, seed)) = runs.get(i) else {
                    return;
                };
                if failed.load(Ordering::Relaxed) {
                    return;
                }
                let outcome = run_with(scenario, seed, options);
                if outcome.is_err() {
                    failed.store(true, Ordering::Relaxed);
                }
                results
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(i, outcome);
            });
        }
    });
    let results = results.into_inner().unwrap_or_else(PoisonError::into_inner);
    for (_, outcome) in results {
        match outcome {
            Ok(report) => {
                for line in &report.trace {
                    println!("{line}");
                }
                println!("{report}");
            }
            Err(violation) => {
                for line in &violation.trace {
                    println!("{line}");
                }
                eprintln!("FAILED {violation}");
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

type Outcome = Result<Report, Box<Violation>>;

fn number(arg: Option<String>, flag: &str) -> anyhow::Result<u64> {
    let arg = arg.with_context(|| format!("{flag} needs a number"))?;
    arg.parse()
        .with_context(|| format!("{flag} needs a number, not {arg:?}"))
}
