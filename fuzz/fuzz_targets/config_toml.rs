//! `cargo +nightly fuzz run config_toml`: see `collie_fuzz::config_toml`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| collie_fuzz::config_toml(data));
