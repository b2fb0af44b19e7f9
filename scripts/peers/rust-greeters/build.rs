//! helloworld.proto and api/users.proto (the workspace's copies) to prost types and tonic stubs,
//! with protox (no protoc).
fn main() {
    let root = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap())
        .join("../../../proto");
    let fds = protox::compile(["helloworld/helloworld.proto", "api/users.proto"], [&root])
        .expect("helloworld.proto, api/users.proto");
    tonic_prost_build::compile_fds(fds).expect("generate");
}
