//! `helloworld.Greeter` (seed 003): `SayHello` answers "Hello " + name.

use volley_server::{Request, Response, Status};

use crate::{
    Options,
    pb::helloworld::{
        HelloReply, HelloRequest,
        greeter_server::{Greeter, GreeterServer},
    },
};

/// The service name.
pub const NAME: &str = "helloworld.Greeter";

/// The greeter, on the generated `Greeter` trait.
#[derive(Clone, Copy, Debug, Default)]
pub struct Hello {
    opts: Options,
}

impl Greeter for Hello {
    async fn say_hello(&self, req: Request<HelloRequest>) -> Result<Response<HelloReply>, Status> {
        self.opts.wait().await;
        Ok(Response::new(HelloReply {
            message: format!("Hello {}", req.get_ref().name),
        }))
    }
}

/// `helloworld.Greeter` on volley-server.
pub fn service(opts: Options) -> GreeterServer<Hello> {
    GreeterServer::new(Hello { opts })
}
