//! Generates volley's messages, server and `OrdersClient`, and (for the tests) tonic's
//! `OrdersClient` from the same descriptors, into a folder of its own.

use prost::Message;

fn main() {
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let set = out.join("orders.bin");
    volley_build::configure()
        .file_descriptor_set_path(&set)
        .compile_protos(&["proto/orders.proto"], &["proto"])
        .unwrap();
    let fds =
        prost_types::FileDescriptorSet::decode(std::fs::read(&set).unwrap().as_slice()).unwrap();
    let tonic_out = out.join("tonic");
    std::fs::create_dir_all(&tonic_out).unwrap();
    tonic_prost_build::configure()
        .build_server(false)
        .out_dir(&tonic_out)
        .compile_fds(fds)
        .unwrap();
}
