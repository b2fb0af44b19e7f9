//! cargo-fuzz target `fast_frames`: see `volley_testkit::fuzz::fast_frames`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| volley_testkit::fuzz::fast_frames(data));
