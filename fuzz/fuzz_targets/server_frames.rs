//! cargo-fuzz target `server_frames`: see `volley_testkit::fuzz::server_frames`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| volley_testkit::fuzz::server_frames(data));
