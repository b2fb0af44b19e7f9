//! `cargo run -p volley-example-axum [-- ADDR] [--builtin] [--no-layers]`: the app on ADDR
//! (default 127.0.0.1:3000), HTTP/1.1 and HTTP/2 (h2c) through axum::serve; `--builtin` serves
//! volley's built-in services instead of the greeter (for tests and benchmarks); `--no-layers`
//! serves volley's router alone through axum::serve (the tower path without axum's routing).

use std::sync::{Arc, atomic::AtomicU64};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let addr = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .cloned()
        .unwrap_or("127.0.0.1:3000".into());
    let server = if args.iter().any(|a| a == "--builtin") {
        volley_example_axum::builtin()
    } else {
        volley_example_axum::greeter()
    };
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("listening on {}", listener.local_addr()?);
    if args.iter().any(|a| a == "--no-layers") {
        let router = axum::Router::new().fallback_service(server.router());
        axum::serve(listener, router).await?;
    } else {
        let app = volley_example_axum::app(server, Arc::new(AtomicU64::new(0)));
        axum::serve(listener, app).await?;
    }
    Ok(())
}
