//! cargo-fuzz target `call_args`: see `volley_testkit::fuzz::call_args`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| volley_testkit::fuzz::call_args(data));
