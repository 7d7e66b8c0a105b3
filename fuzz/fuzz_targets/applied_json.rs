//! `cargo +nightly fuzz run applied_json`: see `collie_fuzz::applied_json`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| collie_fuzz::applied_json(data));
