//! Compiles the protos volley itself speaks (health, reflection, google.api.http) with protox, no
//! protoc needed, from the copies under this crate's proto/ (scripts/sync-protos keeps them
//! equal to the repository's proto/, so the crate builds from its package alone).

use std::{env, path::PathBuf};

fn main() {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("proto");
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
    embed_googleapis(&out);
}

/// `googleapis.rs`: every `.proto` under `googleapis/` as `(name, include_str!(path))`, for the
/// embedded import root (`compile::EMBEDDED`).
fn embed_googleapis(out: &std::path::Path) {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("googleapis");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "proto") {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut code = String::from("&[\n");
    for f in &files {
        let name = f
            .strip_prefix(&root)
            .unwrap()
            .to_str()
            .unwrap()
            .replace('\\', "/");
        code.push_str(&format!(
            "    ({name:?}, include_str!({:?})),\n",
            f.display().to_string()
        ));
    }
    code.push_str("]\n");
    std::fs::write(out.join("googleapis.rs"), code).unwrap();
}
