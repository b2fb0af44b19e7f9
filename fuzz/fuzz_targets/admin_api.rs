//! cargo-fuzz target `admin_api`: see `volley_testkit::fuzz::admin_api`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| volley_testkit::fuzz::admin_api(data));
