//! A default tonic server (tonic's helloworld example as users write it: `#[tokio::main]`,
//! `Server::builder()` with no options), with helloworld.Greeter and api.Users.
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

#[tokio::main]
async fn main() {
    let listener = rust_greeters::listen().await;
    tonic::transport::Server::builder()
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
