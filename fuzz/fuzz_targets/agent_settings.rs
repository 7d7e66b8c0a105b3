//! `cargo +nightly fuzz run agent_settings`: see `collie_fuzz::agent_settings`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| collie_fuzz::agent_settings(data));
