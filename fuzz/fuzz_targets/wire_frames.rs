//! `cargo +nightly fuzz run wire_frames`: see `collie_fuzz::wire_frames`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| collie_fuzz::wire_frames(data));
