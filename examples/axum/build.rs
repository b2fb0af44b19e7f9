//! The greeter's protos, as any volley service's: volley-build, no protoc (the server side only:
//! this app serves, it does not call).
fn main() {
    volley_build::configure()
        .build_client(false)
        .compile_protos(&["proto/helloworld.proto"], &["proto"])
        .unwrap();
}
