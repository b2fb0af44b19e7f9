//! The server's per-connection limits, seen from clients, its frames read raw off the socket:
//! the idle limit (`ServerBuilder::max_connection_idle`): a connection with no call gets GOAWAY
//! after about the limit, while one making a call every 100 ms keeps its one connection through
//! several limits; ping policing (on by default): a client pinging every 10 ms with no call open
//! gets GOAWAY ENHANCE_YOUR_CALM, and one pinging as often during a call does not.

use std::{
    net::SocketAddr,
    sync::Arc,
    time::{Duration, Instant},
};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use volley_client::{CallHead, Channel, Endpoint, Strategy, Target};
use volley_server::Server;
use volley_services::{Options, pb::helloworld::HelloRequest};
use volley_wire::codec::encode_frame;

async fn serve(idle: Duration) -> (SocketAddr, Arc<Server>) {
    let mut b = Server::builder().max_connection_idle(Some(idle));
    for s in volley_services::all(Options::default()) {
        b = b.add_service(s);
    }
    let server = Arc::new(b.build().unwrap());
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let s = server.clone();
    tokio::spawn(async move { s.serve(l, std::future::pending()).await });
    (addr, server)
}

/// Reads frames until a GOAWAY; the time it came, and its error code.
async fn until_goaway(sock: &mut tokio::net::TcpStream) -> (Instant, u32) {
    let mut head = [0u8; 9];
    loop {
        sock.read_exact(&mut head).await.expect("a frame header");
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let mut payload = vec![0u8; len];
        sock.read_exact(&mut payload).await.expect("its payload");
        if head[3] == 0x7 {
            let code = u32::from_be_bytes(payload[4..8].try_into().unwrap());
            return (Instant::now(), code);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_connection_gets_goaway_after_the_limit_and_a_busy_one_does_not() {
    let (addr, server) = serve(Duration::from_secs(1)).await;

    let busy = tokio::spawn(async move {
        let ep = Endpoint::new(Target::parse(&addr.to_string()).unwrap()).unwrap();
        let ch = Channel::new(ep, Strategy::Single);
        let head = CallHead::new(
            "http",
            &addr.to_string(),
            "/helloworld.Greeter/SayHello",
            &[],
            None,
            false,
        )
        .unwrap();
        let body = encode_frame(&HelloRequest { name: "x".into() });
        for _ in 0..25 {
            ch.unary(&head, body.clone()).await.unwrap();
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        ch.dials()
    });

    let mut sock = tokio::net::TcpStream::connect(addr).await.unwrap();
    let started = Instant::now();
    sock.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
        .await
        .unwrap();
    let (at, code) = tokio::time::timeout(Duration::from_secs(5), until_goaway(&mut sock))
        .await
        .expect("GOAWAY within 5 s");
    let after = at - started;
    assert_eq!(code, 0, "NO_ERROR");
    assert!(
        after >= Duration::from_millis(950) && after < Duration::from_millis(1600),
        "GOAWAY after {after:?} for a 1 s limit"
    );

    // 2.5 s of a call every 100 ms: one connection throughout.
    assert_eq!(busy.await.unwrap(), 1);
    assert_eq!(server.connections().accepted, 2);
}

/// Sends the preface, then a PING every 10 ms (and, with `call`, opens a stream first and
/// keeps it open); the GOAWAY's code if one comes within 2 s.
async fn ping_every_10ms(addr: SocketAddr, call: bool) -> Option<u32> {
    let mut sock = tokio::net::TcpStream::connect(addr).await.unwrap();
    sock.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
        .await
        .unwrap();
    if call {
        // HEADERS on stream 1, END_HEADERS only (the request body never ends): POST
        // /api.Users/List, a server stream that waits for its request message.
        let mut block = vec![0x83, 0x86]; // :method POST, :scheme http
        block.extend([0x44, 15]); // :path, literal
        block.extend(b"/api.Users/List");
        block.extend([0x41, 9]); // :authority
        block.extend(b"localhost");
        block.extend([0x5f, 16]); // content-type
        block.extend(b"application/grpc");
        let mut frame = vec![0, 0, block.len() as u8, 0x1, 0x4, 0, 0, 0, 1];
        frame.extend(block);
        sock.write_all(&frame).await.unwrap();
    }
    let (mut read, mut write) = sock.into_split();
    let pinger = tokio::spawn(async move {
        for _ in 0..200 {
            let ping = [0, 0, 8, 0x6, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
            if write.write_all(&ping).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    let mut head = [0u8; 9];
    let code = tokio::time::timeout(Duration::from_secs(2), async {
        loop {
            read.read_exact(&mut head).await.ok()?;
            let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
            let mut payload = vec![0u8; len];
            read.read_exact(&mut payload).await.ok()?;
            if head[3] == 0x7 {
                return Some(u32::from_be_bytes(payload[4..8].try_into().unwrap()));
            }
        }
    })
    .await
    .ok()
    .flatten();
    pinger.abort();
    code
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pings_on_an_idle_connection_are_cut_off_and_pings_during_a_call_are_not() {
    let mut b = Server::builder();
    for s in volley_services::all(Options::default()) {
        b = b.add_service(s);
    }
    let server = Arc::new(b.build().unwrap());
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { server.serve(l, std::future::pending()).await });

    assert_eq!(
        ping_every_10ms(addr, false).await,
        Some(0xb),
        "ENHANCE_YOUR_CALM"
    );
    assert_eq!(
        ping_every_10ms(addr, true).await,
        None,
        "no GOAWAY during a call"
    );
}
