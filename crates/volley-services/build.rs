//! Compiles the seed services' protos and the interop suite's with protox (no protoc) into Rust types and a descriptor set.

use std::{env, path::PathBuf};

fn main() {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("../../proto");
    let files = [
        "api/users.proto",
        "helloworld/helloworld.proto",
        "grpc/hi.proto",
        "orders/order.proto",
        "grpc/testing/test.proto",
    ];
    for f in &files {
        println!("cargo:rerun-if-changed={}", root.join(f).display());
    }
    let fds = protox::compile(files, [&root]).expect("compile seed protos");
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    std::fs::write(
        out.join("services_descriptor.bin"),
        prost::Message::encode_to_vec(&fds),
    )
    .unwrap();
    prost_build::Config::new()
        .compile_fds(fds)
        .expect("generate seed service types");
}
