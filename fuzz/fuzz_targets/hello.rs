//! `cargo +nightly fuzz run hello`: see `collie_fuzz::hello`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| collie_fuzz::hello(data));
