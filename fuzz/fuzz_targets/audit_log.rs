//! `cargo +nightly fuzz run audit_log`: see `collie_fuzz::audit_log`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| collie_fuzz::audit_log(data));
