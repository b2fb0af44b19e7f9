//! TLS clients that offer no ALPN: HTTP/2 from them is served by the server's own HTTP/2
//! connections (`conn::h2`) with their guards, as h2c and TLS with ALPN "h2" are, and HTTP/1.1
//! from them still reaches hyper; one that says nothing after the handshake is closed.

use std::{
    net::SocketAddr,
    path::PathBuf,
    sync::Arc,
    time::{Duration, Instant},
};

use prost::Message;
use rustls::pki_types::{CertificateDer, ServerName, pem::PemObject};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};
use tokio_rustls::{TlsConnector, client::TlsStream};
use volley_server::{Code, Request, Response, Server, Service};
use volley_testkit::{frame, read_reply};

#[derive(Clone, PartialEq, Message)]
struct Num {
    #[prost(int64, tag = "1")]
    n: i64,
}

/// A TLS server (certificates from `generate_self_signed`) with one Echo method, and the CA
/// its certificate chains to.
async fn tls_server(handshake: Duration) -> (SocketAddr, PathBuf) {
    let dir = std::env::temp_dir().join(format!(
        "volley-tls-without-alpn-{}-{}",
        std::process::id(),
        handshake.as_millis()
    ));
    let files = volley_server::tls::generate_self_signed(&dir).unwrap();
    let config = volley_server::tls::server_config(&files.cert, &files.key).unwrap();
    let echo = Service::builder("test.Calc")
        .unary("Echo", |req: Request<Num>| async move {
            Ok(Response::new(req.into_inner()))
        })
        .build();
    let server = Server::builder()
        .tls(config)
        .handshake_timeout(handshake)
        .add_service(echo)
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { server.serve(listener, std::future::pending()).await });
    (addr, files.ca)
}

/// A TLS connection that offers no ALPN protocol.
async fn connect_without_alpn(addr: SocketAddr, ca: &PathBuf) -> TlsStream<TcpStream> {
    let mut roots = rustls::RootCertStore::empty();
    let pem = std::fs::read(ca).unwrap();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        roots.add(cert.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(volley_server::tls::provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    assert!(config.alpn_protocols.is_empty());
    let tcp = TcpStream::connect(addr).await.unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let tls = TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), None);
    tls
}

#[tokio::test]
async fn http2_without_alpn_is_answered_and_ping_flooding_it_is_cut_off() {
    let (addr, ca) = tls_server(Duration::from_secs(10)).await;
    let tls = connect_without_alpn(addr, &ca).await;
    let (send, mut conn) = h2::client::handshake(tls).await.unwrap();
    let mut pings = conn.ping_pong().expect("ping_pong is taken once, here");
    let driver = tokio::spawn(conn);

    // A call is answered.
    let req = http::Request::post(format!("https://localhost:{}/test.Calc/Echo", addr.port()))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .unwrap();
    let mut send = send.ready().await.unwrap();
    let (resp, mut body) = send.send_request(req, false).unwrap();
    body.send_data(frame(&Num { n: 7 }), true).unwrap();
    let reply = read_reply(resp.await.unwrap()).await.unwrap();
    assert_eq!(reply.code(), Code::Ok, "{:?}", reply.status());
    assert_eq!(reply.decode::<Num>(), vec![Num { n: 7 }]);

    // Pings on the idle connection, back to back: the server's ping policing (`conn::pings`,
    // which hyper's HTTP/2 server does not have) ends it with GOAWAY ENHANCE_YOUR_CALM.
    let started = Instant::now();
    for _ in 0..10 {
        if pings.ping(h2::Ping::opaque()).await.is_err() {
            break;
        }
    }
    let ended = tokio::time::timeout(Duration::from_secs(5), driver)
        .await
        .expect("the server ends a ping-flooding connection")
        .unwrap();
    let e = ended.expect_err("the connection ends with an error");
    assert!(
        e.is_go_away() && e.reason() == Some(h2::Reason::ENHANCE_YOUR_CALM),
        "cut off by {e:?} after {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn http1_without_alpn_still_reaches_hyper() {
    let (addr, ca) = tls_server(Duration::from_secs(10)).await;
    let mut tls = connect_without_alpn(addr, &ca).await;
    tls.write_all(b"GET /nothing-here HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), tls.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 "), "{answer:?}");
}

#[tokio::test]
async fn a_client_silent_after_the_handshake_is_closed_at_the_handshake_timeout() {
    let (addr, ca) = tls_server(Duration::from_millis(300)).await;
    let mut tls = connect_without_alpn(addr, &ca).await;
    let started = Instant::now();
    let mut buf = [0u8; 64];
    let read = tokio::time::timeout(Duration::from_secs(5), tls.read(&mut buf))
        .await
        .expect("the server closes a silent connection");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
}
