//! `cargo +nightly fuzz run hook_json`: see `collie_fuzz::hook_json`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| collie_fuzz::hook_json(data));
