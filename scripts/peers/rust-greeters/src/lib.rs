//! The generated helloworld types and stubs shared by the two reference servers.
pub mod helloworld {
    tonic::include_proto!("helloworld");
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
