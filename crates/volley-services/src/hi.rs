//! `grpc.hi` (seed 001, Hyperf): `sayHello` greets the user and echoes it back. The lower-case
//! names are the seed's own; ghz calls `grpc.hi/sayHello`.

use volley_server::{Request, Response, Status};

use crate::{
    Options,
    pb::grpc::{
        HiReply, HiUser,
        hi_server::{Hi, HiServer},
    },
};

/// The service name.
pub const NAME: &str = "grpc.hi";

/// Hyperf's hi service, on the generated `Hi` trait.
#[derive(Clone, Copy, Debug, Default)]
pub struct HiService {
    opts: Options,
}

impl Hi for HiService {
    async fn say_hello(&self, req: Request<HiUser>) -> Result<Response<HiReply>, Status> {
        self.opts.wait().await;
        let user = req.into_inner();
        Ok(Response::new(HiReply {
            message: format!("Hello {}", user.name),
            user: Some(user),
        }))
    }
}

/// `grpc.hi` on volley-server.
pub fn service(opts: Options) -> HiServer<HiService> {
    HiServer::new(HiService { opts })
}
