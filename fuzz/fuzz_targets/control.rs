//! `cargo +nightly fuzz run control`: see `collie_fuzz::control`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| collie_fuzz::control(data));
