//! Generates the messages, the `Greeter` trait and server, and the `GreeterClient`.

fn main() {
    volley_build::compile_protos(&["proto/helloworld.proto"], &["proto"]).unwrap();
}
