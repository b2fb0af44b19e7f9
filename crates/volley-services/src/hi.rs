//! `grpc.hi` (seed 001, Hyperf): `sayHello` greets the user and echoes it back. The lower-case
//! names are the seed's own; ghz calls `grpc.hi/sayHello`.

use volley_server::{Request, Response, Service};

use crate::{
    Options,
    pb::grpc::{HiReply, HiUser},
};

/// The service name.
pub const NAME: &str = "grpc.hi";

/// `grpc.hi` on volley-server.
pub fn service(opts: Options) -> Service {
    Service::builder(NAME)
        .unary("sayHello", move |req: Request<HiUser>| async move {
            opts.wait().await;
            let user = req.into_inner();
            Ok(Response::new(HiReply {
                message: format!("Hello {}", user.name),
                user: Some(user),
            }))
        })
        .build()
}
