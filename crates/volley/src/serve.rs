//! `volley serve`: the built-in services (and `--proto` services answered from stubs) on one
//! port, run by `server` (thread per core, drained together on SIGINT/SIGTERM); and the same
//! services in-process for `volley bench` without a host.

use std::{net::TcpListener as StdListener, sync::Arc, thread};

use anyhow::{Context, Result};
use tokio::sync::watch;
use tracing::{info, warn};
use volley_server::Server;
use volley_services::Options;

use volley_server::listen::Bound;

use crate::{
    cli::ServeArgs,
    server::{Listening, serve},
};

/// Runs the server until a signal, then drains and returns.
pub fn run(mut args: ServeArgs) -> Result<()> {
    args.proto.append(&mut args.protos);
    let listening = Listening::bind(&args.server)?;

    let mut builder = if args.no_builtin {
        if args.proto.is_empty() && args.protoset.is_empty() {
            anyhow::bail!("--no-builtin leaves nothing to serve: give --proto or --protoset");
        }
        Server::builder()
    } else {
        builtin(Options {
            delay: args.delay,
            work: args.work,
        })
    };
    let defaults = volley_mock::Defaults {
        stream_messages: args.stream_messages,
        delay: args.delay,
    };
    let pools = volley_mock::pools(&args.proto, &args.import_paths, &args.protoset)?;
    let services = if pools.is_empty() {
        if !args.stubs.is_empty() || args.admin_addr.is_some() {
            anyhow::bail!("stubs answer the services of a .proto: give --proto or --protoset");
        }
        Vec::new()
    } else {
        let stubs = volley_mock::Stubs::load(&args.stubs, &pools, defaults)?;
        if !args.stubs.is_empty() {
            info!(
                "{} stubs loaded; their files are reread when they change",
                stubs.len()
            );
            stubs.watch();
        }
        if let Some(addr) = args.admin_addr {
            let token = args.server.require_token.as_deref();
            let bound = volley_mock::admin::start(addr, stubs.clone(), token)?;
            info!("stubs admin API on http://{bound}/ (GET /, POST /add, POST /find, GET /clear)");
            if let Some(line) = volley_mock::admin::exposure_warning(
                bound,
                token.is_some(),
                "--require-token or a loopback --admin-addr",
            ) {
                warn!("{line}");
            }
        }
        builder = volley_mock::admin::mount(builder, &stubs);
        volley_mock::services(&pools, &args.proto, &args.protoset, &stubs)?
    };
    for s in services {
        info!("serving {} from its descriptor", s.name());
        builder = builder.add_service(s);
    }
    // The REST rules' OpenAPI document at GET /openapi.json.
    builder = builder.openapi("volley serve");
    let exposes = if pools.is_empty() {
        ""
    } else {
        " and change the stubs (the admin API)"
    };
    serve(
        builder,
        &args.server,
        listening,
        exposes,
        "volley-serve",
        None,
    )
}

/// A server builder with every built-in service; each brings its descriptors (reflection,
/// Connect/JSON and REST need no separate registration).
pub fn builtin(opts: Options) -> volley_server::ServerBuilder {
    let mut builder = Server::builder();
    for s in volley_services::all(opts) {
        builder = builder.add_service(s);
    }
    for (method, rule) in volley_services::rest::http_rules() {
        builder = builder.http_rule(method, rule);
    }
    builder
}

/// Keeps an in-process server alive; dropping it stops the server.
pub struct Embedded {
    stop: Option<watch::Sender<bool>>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Drop for Embedded {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(true);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts the built-in services, and `extra` ones (a `--proto`'s), on a free loopback port, on a
/// thread of their own.
pub fn start_embedded(
    extra: Vec<volley_server::Service>,
) -> Result<(std::net::SocketAddr, Embedded)> {
    let listener = StdListener::bind("127.0.0.1:0").context("cannot listen on 127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let mut builder = builtin(Options::default());
    for s in extra {
        builder = builder.add_service(s);
    }
    let server = Arc::new(
        builder
            .grace_period(std::time::Duration::from_secs(1))
            .build()?,
    );
    let (tx, mut rx) = watch::channel(false);
    let thread = thread::Builder::new()
        .name("volley-embedded".into())
        .spawn(move || {
            let stopped = async move {
                let _ = rx.wait_for(|s| *s).await;
            };
            let _ =
                server.serve_on_threads(vec![Bound::Tcp(listener)], 1, "volley-embedded", stopped);
        })?;
    Ok((
        addr,
        Embedded {
            stop: Some(tx),
            thread: Some(thread),
        },
    ))
}
