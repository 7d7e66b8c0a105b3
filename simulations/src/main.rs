//! Runs crew simulations from the command line.
//!
//! ```text
//! cargo run -p collie-simulations -- <scenario|all> [--seed N] [--seeds K] [--members M] [--trace]
//! ```
//!
//! `--seed N` runs one seed (replaying a failure printed by a test); `--seeds K` runs seeds
//! `N..N+K`; `--members M` runs every scenario named with M honest members instead of its own
//! number. `--trace` prints every event of the run. Exits non-zero on the first violation.

use std::process::ExitCode;

use anyhow::{bail, Context};
use collie_simulations::{run_with, Options, Scenario};

const USAGE: &str = "usage: collie-simulations <join|join-faults|faults|unpinned|garbage|all> \
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
    for scenario in scenarios {
        for seed in seed..seed.saturating_add(count) {
            match run_with(
                scenario,
                seed,
                Options {
                    bug: None,
                    trace,
                    members,
                },
            ) {
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
    }
    Ok(ExitCode::SUCCESS)
}

fn number(arg: Option<String>, flag: &str) -> anyhow::Result<u64> {
    let arg = arg.with_context(|| format!("{flag} needs a number"))?;
    arg.parse()
        .with_context(|| format!("{flag} needs a number, not {arg:?}"))
}
