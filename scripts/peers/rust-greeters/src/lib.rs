//! The generated types and stubs shared by the two reference servers, and api.Users' replies
//! (the same users volley's built-in service answers).
pub mod helloworld {
    tonic::include_proto!("helloworld");
}
pub mod api {
    tonic::include_proto!("api");
}

/// A message as one gRPC frame (uncompressed).
pub fn frame<M: prost::Message>(msg: &M) -> bytes::Bytes {
    use bytes::BufMut;
    let mut frame = bytes::BytesMut::with_capacity(5 + msg.encoded_len());
    frame.put_u8(0);
    frame.put_u32(msg.encoded_len() as u32);
    msg.encode_raw(&mut frame);
    frame.freeze()
}

/// The message in a request body holding one gRPC frame (the default message if it does not parse).
pub fn decode<M: prost::Message + Default>(body: &[u8]) -> M {
    body.get(5..)
        .and_then(|m| M::decode(m).ok())
        .unwrap_or_default()
}

/// The user `Get` answers, carrying the requested id.
pub fn get_reply(id: i64) -> api::User {
    api::User {
        id,
        email: "dmitry.k@test.tld".into(),
        name: "Dmitry K.".into(),
        rating: 228.53,
    }
}

/// The i-th of the ten users `List` streams.
pub fn list_item(i: i64) -> api::User {
    api::User {
        id: i,
        email: format!("user{i}@test"),
        name: format!("User {i}"),
        rating: i as f64 * 1.53,
    }
}

/// Binds `--addr` (default 127.0.0.1:0) and prints "listening on ADDR" to stderr.
pub async fn listen() -> tokio::net::TcpListener {
    let args: Vec<String> = std::env::args().collect();
    let addr = args
        .iter()
        .position(|a| a == "--addr")
        .and_then(|i| args.get(i + 1))
        .map_or("127.0.0.1:0", String::as_str);
    let l = tokio::net::TcpListener::bind(addr).await.expect("bind");
    eprintln!("listening on {}", l.local_addr().unwrap());
    l
}

/// Serves `--addr` on one current-thread runtime (as `volley serve --threads 1` runs), one task
/// per connection running `conn` on the accepted socket (TCP_NODELAY set). For the floors.
pub fn serve_each<F, Fut>(conn: F)
where
    F: Fn(tokio::net::TcpStream) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let listener = listen().await;
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let _ = tcp.set_nodelay(true);
            tokio::spawn(conn(tcp));
        }
    });
}
