//! `volley lab gateway`: the experiment of the gateway write-up (seed 002, `docs/seeds.md`). An
//! HTTP/1.1 server (the seed loads it with wrk) whose
//! `GET /performance` makes one gRPC call (`helloworld.Greeter/SayHello`) to a backend through a
//! `volley-client` channel with the chosen connection strategy, and answers with the greeting.
//! A failed backend call answers 503 (UNAVAILABLE) or 502 (any other status) with one line.

use std::{convert::Infallible, net::SocketAddr, sync::Arc};

use anyhow::{Context, Result};
use bytes::Bytes;
use clap::Args;
use http::{Method, Response, StatusCode, header::CONTENT_TYPE};
use http_body_util::Full;
use hyper::{body::Incoming, server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;
use prost::Message;
use tracing::{debug, info};
use volley_client::{CallHead, Channel, Endpoint, Strategy, Target};
use volley_services::pb::helloworld::{HelloReply, HelloRequest};
use volley_wire::{Code, codec::encode_frame};

use crate::{Signals, runtime};

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

/// The gateway's state: the channel to the backend and the call it makes.
struct Gateway {
    channel: Channel,
    head: CallHead,
    body: Bytes,
}

/// Runs the gateway until `signals` names a signal.
pub fn run(args: GatewayArgs, signals: Signals) -> Result<()> {
    let strategy = Strategy::parse(&args.strategy, DEFAULT_POOL)
        .map_err(|e| anyhow::anyhow!("--strategy: {e}"))?;
    let target = Target::parse(&args.backend).map_err(|e| anyhow::anyhow!("--backend: {e}"))?;
    let authority = target.to_string();
    let endpoint = Endpoint::new(target).map_err(|e| anyhow::anyhow!("--backend: {e}"))?;
    let head = CallHead::new(
        "http",
        &authority,
        "/helloworld.Greeter/SayHello",
        &[],
        None,
        false,
    )
    .map_err(|e| anyhow::anyhow!("--backend: {e}"))?;
    let (rt, threads) = runtime(args.threads)?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(args.addr)
            .await
            .with_context(|| format!("cannot listen on {}", args.addr))?;
        let gw = Arc::new(Gateway {
            channel: Channel::new(endpoint, strategy),
            head,
            body: encode_frame(&HelloRequest {
                name: "volley".into(),
            }),
        });
        if let Err(e) = gw.channel.warm().await {
            info!("backend {} not reachable yet: {}", args.backend, e.message());
        }
        if !listener.local_addr()?.ip().is_loopback() {
            tracing::warn!(
                "{}: other hosts can reach this lab gateway, which takes no auth",
                listener.local_addr()?
            );
        }
        info!(
            "listening on {} (gateway: GET /performance -> {} helloworld.Greeter/SayHello, strategy {strategy}, {threads} thread(s))",
            listener.local_addr()?,
            args.backend
        );
        serve(listener, gw, signals).await
    })
}

async fn serve(
    listener: tokio::net::TcpListener,
    gw: Arc<Gateway>,
    signals: Signals,
) -> Result<()> {
    let mut stop = std::pin::pin!(signals());
    loop {
        let (stream, peer) = tokio::select! {
            which = &mut stop => {
                info!("received {which}, stopping");
                return Ok(());
            }
            r = listener.accept() => match r {
                Ok(a) => a,
                Err(e) => {
                    debug!("accept: {e}");
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let gw = gw.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req| {
                let gw = gw.clone();
                async move { Ok::<_, Infallible>(handle(&gw, req).await) }
            });
            if let Err(e) = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc)
                .await
            {
                debug!("connection from {peer}: {e}");
            }
        });
    }
}

fn text(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

async fn handle(gw: &Gateway, req: http::Request<Incoming>) -> Response<Full<Bytes>> {
    if req.uri().path() != "/performance" {
        return text(
            StatusCode::NOT_FOUND,
            "not found: the gateway serves GET /performance\n".into(),
        );
    }
    if req.method() != Method::GET {
        return text(
            StatusCode::METHOD_NOT_ALLOWED,
            "method not allowed: use GET\n".into(),
        );
    }
    match gw.channel.unary_message(&gw.head, gw.body.clone()).await {
        Ok(msg) => match HelloReply::decode(msg) {
            Ok(reply) => text(StatusCode::OK, format!("{}\n", reply.message)),
            Err(e) => text(
                StatusCode::BAD_GATEWAY,
                format!("backend reply is not a HelloReply: {e}\n"),
            ),
        },
        Err(s) => {
            let status = if s.code() == Code::Unavailable {
                StatusCode::SERVICE_UNAVAILABLE
            } else {
                StatusCode::BAD_GATEWAY
            };
            text(status, format!("backend: {}\n", s.message()))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::{future::Future, pin::Pin};

    use http_body_util::BodyExt;

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

    #[test]
    fn answers_are_one_line_of_plain_text_with_their_status() {
        let r = text(StatusCode::BAD_GATEWAY, "backend: down\n".into());
        assert_eq!(r.status(), StatusCode::BAD_GATEWAY);
        assert_eq!(r.headers()[CONTENT_TYPE], "text/plain; charset=utf-8");
        let body = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(r.into_body().collect())
            .unwrap()
            .to_bytes();
        assert_eq!(body, "backend: down\n");
    }
}
