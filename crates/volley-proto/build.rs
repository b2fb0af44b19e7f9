//! Compiles the protos volley itself speaks (health, reflection) with protox: no protoc needed.

use std::{env, path::PathBuf};

fn main() {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("../../proto");
    let files = [
        "grpc/health/v1/health.proto",
        "grpc/reflection/v1/reflection.proto",
        "grpc/reflection/v1alpha/reflection.proto",
        "google/api/http.proto",
    ];
    for f in &files {
        println!("cargo:rerun-if-changed={}", root.join(f).display());
    }
    let fds = protox::compile(files, [&root]).expect("compile framework protos");
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    std::fs::write(
        out.join("framework_descriptor.bin"),
        prost::Message::encode_to_vec(&fds),
    )
    .unwrap();
    prost_build::Config::new()
        .compile_fds(fds)
        .expect("generate framework types");
}
