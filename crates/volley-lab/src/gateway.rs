//! `volley lab gateway`: the experiment of the gateway write-up (seed 002, `docs/seeds.md`) on
//! the product, `volley gateway`: `GET /performance` is a REST rule for
//! `helloworld.Greeter/SayHello`, forwarded to the backend through the chosen connection
//! strategy (`volley_gateway::Upstream`), the reply's `message` its body (`"Hello "`). A backend
//! that cannot be reached answers 503 (UNAVAILABLE) with grpc-gateway's one-line error body, and
//! one log line per outage.

use std::{net::SocketAddr, sync::Arc};

use anyhow::{Context, Result};
use clap::Args;
use prost_reflect::DescriptorPool;
use tracing::info;
use volley_client::{Endpoint, Strategy, Target};
use volley_gateway::Upstream;
use volley_server::{
    Server,
    listen::Bound,
    pb::google_api::{HttpRule, http_rule::Pattern},
};

use crate::Signals;

/// `volley lab gateway`'s flags.
#[derive(Debug, Args)]
pub struct GatewayArgs {
    /// The gRPC backend (HOST:PORT), e.g. a `volley serve` (with --delay 200ms for the sleeping case).
    #[arg(long)]
    pub backend: String,

    /// How calls share backend connections: per-request, single, pool[:N] (default 4) or
    /// expanding[:MAX] (default 8).
    // The brackets are help text for the terminal, not rustdoc links.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[arg(long, default_value = "expanding")]
    pub strategy: String,

    /// Address to listen on (HTTP/1.1 and h2c).
    #[arg(long, default_value = "127.0.0.1:18080")]
    pub addr: SocketAddr,

    /// Worker threads (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
}

/// A bare `pool` strategy's size.
const DEFAULT_POOL: usize = 4;

/// The seed's one route.
fn performance() -> HttpRule {
    HttpRule {
        selector: "helloworld.Greeter.SayHello".into(),
        pattern: Some(Pattern::Get("/performance".into())),
        response_body: "message".into(),
        ..HttpRule::default()
    }
}

/// Runs the gateway until `signals` names a signal.
pub fn run(args: GatewayArgs, signals: Signals) -> Result<()> {
    let strategy = Strategy::parse(&args.strategy, DEFAULT_POOL)
        .map_err(|e| anyhow::anyhow!("--strategy: {e}"))?;
    let target = Target::parse(&args.backend).map_err(|e| anyhow::anyhow!("--backend: {e}"))?;
    let endpoint = Endpoint::new(target).map_err(|e| anyhow::anyhow!("--backend: {e}"))?;
    let pool = DescriptorPool::decode(volley_services::pb::FILE_DESCRIPTOR_SET)
        .context("the built-in descriptors")?;
    let upstream = Arc::new(Upstream::new(endpoint).strategy(strategy));
    let mut builder = Server::builder().health(false).reflection(false);
    for s in volley_gateway::services(&pool, &upstream).services {
        if s.name() == "helloworld.Greeter" {
            builder = builder.add_service(s);
        }
    }
    let server = Arc::new(
        builder
            .http_rule("helloworld.Greeter.SayHello", performance())
            .build()?,
    );
    let listener = std::net::TcpListener::bind(args.addr)
        .with_context(|| format!("cannot listen on {}", args.addr))?;
    listener.set_nonblocking(true)?;
    let local = listener.local_addr()?;
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    if !local.ip().is_loopback() {
        tracing::warn!("{local}: other hosts can reach this lab gateway, which takes no auth");
    }
    info!(
        "listening on {local} (gateway: GET /performance -> {} helloworld.Greeter/SayHello, \
         strategy {strategy}, {threads} thread(s), each with its own connections)",
        args.backend
    );
    let stop = async {
        let which = signals().await;
        info!("received {which}, stopping");
    };
    server.serve_on_threads(
        vec![Bound::Tcp(listener)],
        threads,
        "volley-lab-gateway",
        stop,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::{future::Future, pin::Pin};

    use super::*;

    fn never() -> Pin<Box<dyn Future<Output = &'static str> + Send>> {
        Box::pin(std::future::pending())
    }

    fn args(backend: &str, strategy: &str) -> GatewayArgs {
        GatewayArgs {
            backend: backend.into(),
            strategy: strategy.into(),
            addr: "127.0.0.1:0".parse().unwrap(),
            threads: Some(1),
        }
    }

    #[test]
    fn a_bad_strategy_or_backend_is_refused_before_listening() {
        let e = run(args("127.0.0.1:50051", "bogus"), never).unwrap_err();
        assert!(e.to_string().starts_with("--strategy: "), "{e}");
        let e = run(args("127.0.0.1:50051", "pool:0"), never).unwrap_err();
        assert!(e.to_string().starts_with("--strategy: "), "{e}");
        let e = run(args("ipv4:not-an-address", "single"), never).unwrap_err();
        assert!(e.to_string().starts_with("--backend: "), "{e}");
        // A bare pool is DEFAULT_POOL connections.
        assert_eq!(
            Strategy::parse("pool", DEFAULT_POOL).unwrap(),
            Strategy::Pool(4)
        );
    }
}
