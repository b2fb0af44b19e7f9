//! What the greeter's tests share: a greeter served on a loopback port chosen at run time.

use volley_example_greeter::hello::greeter_server::{Greeter, GreeterServer};
use volley_server::Server;

/// Serves `service` on 127.0.0.1 (a port the system picks) for the rest of the test; its
/// address.
pub async fn serve(service: impl Greeter) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let server = Server::builder()
        .add_service(GreeterServer::new(service))
        .build()
        .unwrap();
    tokio::spawn(async move {
        server
            .serve(listener, std::future::pending::<()>())
            .await
            .unwrap();
    });
    addr
}
