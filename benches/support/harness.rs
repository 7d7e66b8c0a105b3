//! What a `harness = false` bench does before it measures: answer cargo's questions and read its
//! knobs from the environment.

use std::str::FromStr;

/// True when cargo only asks the bench to list itself (`cargo bench -- --list`, `--format …`, as
/// `cargo test --benches` and IDEs do): a bench that starts bridges for that would waste minutes.
pub(crate) fn listing_only() -> bool {
    std::env::args().any(|a| a == "--list" || a.starts_with("--format"))
}

/// The number in the environment variable `name` (a run's size, e.g. `COLLIE_BENCH_TOOLS_N`), or
/// `default` when it is unset or not a number.
pub(crate) fn env_number<T: FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
