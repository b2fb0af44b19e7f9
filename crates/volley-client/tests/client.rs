//! volley-client against volley-server in-process: unary calls, statuses, reflection, and dial errors.

use std::net::SocketAddr;

use bytes::Bytes;
use volley_client::{
    CallHead, ConnectError, Connection, Endpoint, Target, load::call::unary, reflect::fetch_pool,
};
use volley_server::Server;
use volley_services::pb::api::GetUserRequest;
use volley_wire::{Code, codec::encode_frame};

async fn serve() -> SocketAddr {
    let mut b = Server::builder();
    for s in volley_services::all(Default::default()) {
        b = b.add_service(s);
    }
    let server = b.build().unwrap();
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { server.serve(l, std::future::pending()).await });
    addr
}

fn endpoint(addr: SocketAddr) -> Endpoint {
    Endpoint::new(Target::parse(&addr.to_string()).unwrap()).unwrap()
}

#[tokio::test]
async fn unary_calls_and_statuses() {
    let addr = serve().await;
    let conn = Connection::connect(&endpoint(addr)).await.unwrap();
    let head = CallHead::new(
        "http",
        &addr.to_string(),
        "/api.Users/Get",
        &[],
        None,
        false,
    )
    .unwrap();
    let body = encode_frame(&GetUserRequest { id: 228 });
    let reply = unary(conn.sender(), &head, body.clone()).await.unwrap();
    assert!(reply.bytes > 5);

    let head = CallHead::new(
        "http",
        &addr.to_string(),
        "/api.Users/Nope",
        &[],
        None,
        false,
    )
    .unwrap();
    let err = unary(conn.sender(), &head, body.clone()).await.unwrap_err();
    assert_eq!(err.code(), Code::Unimplemented);
    assert_eq!(
        err.to_string(),
        "rpc error: code = Unimplemented desc = unknown method Nope for service api.Users"
    );

    let head = CallHead::new(
        "http",
        &addr.to_string(),
        "/api.Users/Get",
        &[],
        None,
        false,
    )
    .unwrap();
    let err = unary(
        conn.sender(),
        &head,
        Bytes::from_static(&[0, 0, 0, 0, 2, 8, 0xff]),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), Code::Internal);
}

#[tokio::test]
async fn reflection_builds_a_pool_with_imports() {
    let addr = serve().await;
    let conn = Connection::connect(&endpoint(addr)).await.unwrap();
    let pool = fetch_pool(&conn, "http", &addr.to_string(), "orders.OrderService", &[])
        .await
        .unwrap();
    let m = volley_proto::schema::resolve(&pool, "orders.OrderService/AddOrder").unwrap();
    assert!(m.descriptor.is_client_streaming());
    assert!(
        pool.get_message_by_name("google.protobuf.Timestamp")
            .is_some()
    );
    let err = fetch_pool(&conn, "http", &addr.to_string(), "no.Such", &[])
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no.Such"), "{err}");
}

#[tokio::test]
async fn dial_errors_say_what_failed() {
    // A port nobody listens on.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    let err = Connection::connect(&endpoint(addr)).await.unwrap_err();
    assert!(matches!(err, ConnectError::Io { .. }));
    assert!(
        err.to_string()
            .starts_with(&format!("cannot connect to {addr}: ")),
        "{err}"
    );

    // A listener that never answers the HTTP/2 handshake: the connect timeout fires.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut ep = endpoint(silent.local_addr().unwrap());
    ep.connect_timeout = std::time::Duration::from_millis(200);
    let hold = tokio::spawn(async move {
        let _c = silent.accept().await;
        std::future::pending::<()>().await
    });
    let t = std::time::Instant::now();
    let err = Connection::connect(&ep).await.unwrap_err();
    assert!(matches!(err, ConnectError::Timeout { .. }), "{err}");
    assert!(err.to_string().contains("timed out after 200ms"), "{err}");
    assert!(t.elapsed() < std::time::Duration::from_secs(2));
    hold.abort();
}
