//! cargo-fuzz target `proto_schema`: see `volley_testkit::fuzz::proto_schema`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| volley_testkit::fuzz::proto_schema(data));
