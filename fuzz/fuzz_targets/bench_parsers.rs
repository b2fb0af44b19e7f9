//! cargo-fuzz target `bench_parsers`: see `volley_testkit::fuzz::bench_parsers`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| volley_testkit::fuzz::bench_parsers(data));
