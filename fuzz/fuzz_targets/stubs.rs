//! cargo-fuzz target `stubs`: see `volley_testkit::fuzz::stubs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| volley_testkit::fuzz::stubs(data));
