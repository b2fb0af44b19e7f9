//! cargo-fuzz target `json_message`: see `volley_testkit::fuzz::json_message`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| volley_testkit::fuzz::json_message(data));
