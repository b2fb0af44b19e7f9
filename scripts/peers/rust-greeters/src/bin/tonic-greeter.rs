//! A default tonic server (tonic's helloworld example as users write it: `#[tokio::main]`,
//! `Server::builder()` with no options).
use rust_greeters::helloworld::{
    HelloReply, HelloRequest,
    greeter_server::{Greeter, GreeterServer},
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

#[tokio::main]
async fn main() {
    let listener = rust_greeters::listen().await;
    tonic::transport::Server::builder()
        .add_service(GreeterServer::new(MyGreeter))
        .serve_with_incoming(tokio_stream_from(listener))
        .await
        .unwrap();
}

fn tokio_stream_from(
    l: tokio::net::TcpListener,
) -> impl tokio_stream::Stream<Item = std::io::Result<tokio::net::TcpStream>> {
    tokio_stream::wrappers::TcpListenerStream::new(l)
}
