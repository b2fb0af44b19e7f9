//! A default tonic server (tonic's helloworld example as users write it: `#[tokio::main]`,
//! `Server::builder()` with no options), with helloworld.Greeter and api.Users; with
//! `--tls-cert CERT.pem --tls-key KEY.pem`, over TLS as tonic's tls example serves it
//! (`ServerTlsConfig` with the identity, rustls on ring).
use rust_greeters::{
    api::{
        GetUserRequest, ListUserRequest, User,
        users_server::{Users, UsersServer},
    },
    helloworld::{
        HelloReply, HelloRequest,
        greeter_server::{Greeter, GreeterServer},
    },
};
use tonic::{Request, Response, Status};

struct MyGreeter;

#[tonic::async_trait]
impl Greeter for MyGreeter {
    async fn say_hello(&self, req: Request<HelloRequest>) -> Result<Response<HelloReply>, Status> {
        Ok(Response::new(HelloReply {
            message: format!("Hello {}", req.into_inner().name),
        }))
    }
}

struct MyUsers;

#[tonic::async_trait]
impl Users for MyUsers {
    async fn get(&self, req: Request<GetUserRequest>) -> Result<Response<User>, Status> {
        Ok(Response::new(rust_greeters::get_reply(req.into_inner().id)))
    }

    type ListStream = tokio_stream::Iter<std::vec::IntoIter<Result<User, Status>>>;

    async fn list(
        &self,
        _: Request<ListUserRequest>,
    ) -> Result<Response<Self::ListStream>, Status> {
        let users: Vec<_> = (0..10).map(|i| Ok(rust_greeters::list_item(i))).collect();
        Ok(Response::new(tokio_stream::iter(users)))
    }
}

/// The value after `flag` on the command line.
fn arg(flag: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    let i = args.iter().position(|a| a == flag)?;
    args.get(i + 1).cloned()
}

#[tokio::main]
async fn main() {
    let listener = rust_greeters::listen().await;
    let mut builder = tonic::transport::Server::builder();
    #[cfg(feature = "tls")]
    if let (Some(cert), Some(key)) = (arg("--tls-cert"), arg("--tls-key")) {
        let identity = tonic::transport::Identity::from_pem(
            std::fs::read(cert).expect("read --tls-cert"),
            std::fs::read(key).expect("read --tls-key"),
        );
        builder = builder
            .tls_config(tonic::transport::ServerTlsConfig::new().identity(identity))
            .expect("a TLS configuration");
    }
    #[cfg(not(feature = "tls"))]
    assert!(
        arg("--tls-cert").is_none(),
        "tonic-greeter was built without --features tls"
    );
    builder
        .add_service(GreeterServer::new(MyGreeter))
        .add_service(UsersServer::new(MyUsers))
        .serve_with_incoming(tokio_stream_from(listener))
        .await
        .unwrap();
}

fn tokio_stream_from(
    l: tokio::net::TcpListener,
) -> impl tokio_stream::Stream<Item = std::io::Result<tokio::net::TcpStream>> {
    tokio_stream::wrappers::TcpListenerStream::new(l)
}
