//! The generated code of `proto/helloworld.proto`, shared by the server and the client.

/// Package `helloworld`: `HelloRequest`, `HelloReply`, `greeter_server` and `greeter_client`.
#[allow(missing_docs)]
pub mod hello {
    volley_server::include_proto!("helloworld");
}
