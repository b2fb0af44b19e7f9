//! cargo-fuzz target `framing`: see `volley_testkit::fuzz::framing`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| volley_testkit::fuzz::framing(data));
