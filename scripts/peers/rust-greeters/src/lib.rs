//! The generated types and stubs shared by the two reference servers, and api.Users' replies
//! (the same users volley's built-in service answers).
pub mod helloworld {
    tonic::include_proto!("helloworld");
}
pub mod api {
    tonic::include_proto!("api");
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
