//! `helloworld.Greeter` (seed 003): `SayHello` answers "Hello " + name.

use volley_server::{Request, Response, Service};

use crate::{
    Options,
    pb::helloworld::{HelloReply, HelloRequest},
};

/// The service name.
pub const NAME: &str = "helloworld.Greeter";

/// `helloworld.Greeter` on volley-server.
pub fn service(opts: Options) -> Service {
    Service::builder(NAME)
        .unary("SayHello", move |req: Request<HelloRequest>| async move {
            opts.wait().await;
            Ok(Response::new(HelloReply {
                message: format!("Hello {}", req.get_ref().name),
            }))
        })
        .build()
}
