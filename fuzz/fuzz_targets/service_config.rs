//! cargo-fuzz target `service_config`: see `volley_testkit::fuzz::service_config`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| volley_testkit::fuzz::service_config(data));
