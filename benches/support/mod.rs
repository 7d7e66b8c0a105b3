//! What the end-to-end benches (`bridge`, `relay`, `crew_load`, `walky_crew`) share: a real
//! `collie bridge` in dirs of its own, private tmux servers, bounded waits, HTTP reads, latency
//! statistics, readings of `/proc`, and the sweep that kills what a bench left behind.
//!
//! Each bench is its own crate, so each includes this module with `mod support;` (cargo resolves
//! `benches/support/mod.rs` beside the bench's root file; having no `main.rs`, the dir is no bench
//! target of its own).
//!
//! `dead_code` is allowed for the whole module because no single bench uses all of it: each bench
//! binary compiles its own copy, and what that bench leaves unused would otherwise warn there
//! (and fail `clippy -D warnings`) though another bench needs it.
#![allow(dead_code)]

mod bridge;
mod harness;
mod http;
mod machine;
mod procfs;
mod stats;
mod sweep;
mod tmux;
mod wait;

// Re-exported so a bench names `support::Bridge` rather than the file each item lives in. Like the
// items themselves, each bench uses only some of these, and an unused `pub(crate) use` warns as an
// unused import: hence the `allow` on each.
#[allow(unused_imports)]
pub(crate) use bridge::{Bridge, BridgeOptions};
#[allow(unused_imports)]
pub(crate) use harness::{env_number, listing_only};
#[allow(unused_imports)]
pub(crate) use http::{agent, get, get_json, get_ok, measure_get, HTTP_WARM_UP};
#[allow(unused_imports)]
pub(crate) use machine::{cpu_model, cpus, load_average, mem_total_kib};
#[allow(unused_imports)]
pub(crate) use procfs::{rss_bytes, smaps_breakdown, status_field, wait_rss_stable};
#[allow(unused_imports)]
pub(crate) use stats::{met, mib, Stats, MIB};
#[allow(unused_imports)]
pub(crate) use sweep::Sweep;
#[allow(unused_imports)]
pub(crate) use tmux::Tmux;
#[allow(unused_imports)]
pub(crate) use wait::wait_for;
