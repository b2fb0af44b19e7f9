//! cargo-fuzz target `call_template`: see `volley_testkit::fuzz::call_template`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| volley_testkit::fuzz::call_template(data));
