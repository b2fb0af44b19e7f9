//! Generates the seed services' and the interop suite's messages, servers and clients with
//! volley-build (protox, no protoc), from the copies under this crate's proto/ (scripts/sync-protos
//! keeps them equal to the repository's proto/, so the crate builds from its package alone).

use std::{env, path::PathBuf};

fn main() {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("proto");
    let files = [
        "api/users.proto",
        "helloworld/helloworld.proto",
        "grpc/hi.proto",
        "orders/order.proto",
        "grpc/testing/test.proto",
    ]
    .map(|f| root.join(f));
    volley_build::compile_protos(&files, &[&root]).unwrap();
}
