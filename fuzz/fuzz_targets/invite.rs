//! `cargo +nightly fuzz run invite`: see `collie_fuzz::invite`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| collie_fuzz::invite(data));
