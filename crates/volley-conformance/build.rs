//! Compiles the Connect conformance protos (vendored under `proto/connectrpc/conformance/v1`,
//! Apache-2.0, from connectrpc.com/conformance v1.0.7) with protox.

use std::{env, path::PathBuf};

fn main() {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("../../proto");
    let files = [
        "connectrpc/conformance/v1/config.proto",
        "connectrpc/conformance/v1/service.proto",
        "connectrpc/conformance/v1/server_compat.proto",
    ];
    for f in &files {
        println!("cargo:rerun-if-changed={}", root.join(f).display());
    }
    let fds = protox::compile(files, [&root]).expect("compile conformance protos");
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    std::fs::write(
        out.join("conformance_descriptor.bin"),
        prost::Message::encode_to_vec(&fds),
    )
    .unwrap();
    prost_build::Config::new()
        .enable_type_names()
        .compile_fds(fds)
        .expect("generate conformance types");
}
