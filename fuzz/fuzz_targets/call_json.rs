//! cargo-fuzz target `call_json`: see `volley_testkit::fuzz::call_json`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| volley_testkit::fuzz::call_json(data));
