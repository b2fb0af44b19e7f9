//! helloworld.proto (the workspace's copy) to prost types and tonic stubs, with protox (no protoc).
fn main() {
    let root = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap())
        .join("../../../proto");
    let fds = protox::compile(["helloworld/helloworld.proto"], [&root]).expect("helloworld.proto");
    tonic_prost_build::compile_fds(fds).expect("generate");
}
