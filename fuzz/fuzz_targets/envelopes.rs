//! cargo-fuzz target `envelopes`: see `volley_testkit::fuzz::envelopes`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| volley_testkit::fuzz::envelopes(data));
