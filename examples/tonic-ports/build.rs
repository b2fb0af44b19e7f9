// tonic's examples/build.rs for these two examples, with volley-build in tonic_prost_build's
// place (the same builder calls: configure, file_descriptor_set_path, compile_protos).
use std::{env, path::PathBuf};

fn main() {
    volley_build::configure()
        .compile_protos(&["proto/routeguide/route_guide.proto"], &["proto"])
        .unwrap();

    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    volley_build::configure()
        .file_descriptor_set_path(out_dir.join("helloworld_descriptor.bin"))
        .compile_protos(&["proto/helloworld/helloworld.proto"], &["proto"])
        .unwrap();
}
