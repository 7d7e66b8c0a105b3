//! `cargo +nightly fuzz run durable_state`: see `collie_fuzz::durable_state`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| collie_fuzz::durable_state(data));
