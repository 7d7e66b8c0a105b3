//! `cargo +nightly fuzz run relay`: see `collie_fuzz::relay`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| collie_fuzz::relay(data));
