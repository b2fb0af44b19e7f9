//! `volley gateway`: REST, Connect, gRPC-Web and gRPC on one port in front of an upstream gRPC
//! server (`volley_gateway`), served with `volley serve`'s server flags (TLS, token, CORS,
//! metrics, traces, limits).

use std::{
    path::PathBuf,
    sync::{Arc, mpsc},
};

use anyhow::{Context, Result, bail};
use clap::Args;
use prost_reflect::DescriptorPool;
use tracing::{info, warn};
use volley_bench::plan::units::parse_duration;
use volley_client::{Endpoint, Policy, ServiceConfig, Strategy, tls::TlsOptions};
use volley_gateway::{Upstream, headers::RestHeaders};
use volley_server::Server;

use crate::server::{Listening, ServerFlags, serve};

/// `volley gateway`'s flags: where the upstream is, what it serves, and `volley serve`'s
/// server flags.
#[derive(Debug, Args)]
#[command(mut_arg("addr", |a| a.default_value("127.0.0.1:8080")))]
pub struct GatewayArgs {
    /// The gRPC server to forward to: host:port, http://host:port, https://host:port (TLS),
    /// dns:///name:port, ipv4:a:port,b:port or unix:/path.
    #[arg(long, value_name = "ADDRESS")]
    pub upstream: String,

    /// The upstream's services from this .proto file (repeatable), compiled at start; without
    /// --proto or --protoset they come from the upstream's server reflection.
    #[arg(long, value_name = "FILE")]
    pub proto: Vec<PathBuf>,
    /// Import paths for --proto, comma-separated (the file's own directory and the current one
    /// are added).
    #[arg(
        short = 'i',
        long = "import-paths",
        value_delimiter = ',',
        value_name = "DIRS"
    )]
    pub import_paths: Vec<PathBuf>,
    /// The upstream's services from this compiled FileDescriptorSet (repeatable).
    #[arg(long, value_name = "FILE")]
    pub protoset: Vec<PathBuf>,

    /// HTTP rules from this file (YAML, a google.api.Service config's `http.rules`: the file
    /// grpc-gateway takes as --grpc-api-configuration and Envoy's transcoder as its service
    /// config), beside any in the protos' options.
    #[arg(long, value_name = "FILE")]
    pub http_rules: Option<PathBuf>,

    /// How each server thread's calls share connections to the upstream: single, pool[:N],
    /// expanding[:MAX] or per-request.
    // The brackets are help text for the terminal, not rustdoc links.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[arg(long, default_value = "single", value_name = "STRATEGY")]
    pub upstream_strategy: String,
    /// pick_first, or round_robin over the addresses of the upstream's name or list.
    #[arg(long, default_value = "pick_first", value_name = "POLICY")]
    pub lb_policy: String,
    /// A gRPC service config (JSON file): the upstream calls' retry or hedging policies and
    /// timeouts, by method.
    #[arg(long, value_name = "FILE")]
    pub service_config: Option<PathBuf>,
    /// Trust this PEM CA for an https:// upstream instead of the system's roots.
    #[arg(long, value_name = "PEM")]
    pub upstream_cacert: Option<PathBuf>,
    /// A client certificate (PEM) for an upstream that asks for one (mutual TLS; needs
    /// --upstream-key).
    #[arg(long, value_name = "PEM", requires = "upstream_key")]
    pub upstream_cert: Option<PathBuf>,
    /// The private key (PEM) of --upstream-cert.
    #[arg(long, value_name = "PEM", requires = "upstream_cert")]
    pub upstream_key: Option<PathBuf>,

    /// Forward this header of REST callers to the upstream as it is (repeatable; grpc-gateway
    /// forwards only `authorization` and IANA's permanent headers, prefixed `grpcgateway-`).
    #[arg(long, value_name = "NAME")]
    pub forward_header: Vec<http::HeaderName>,
    /// Forward REST callers' `Grpc-Metadata-Foo` headers as `foo` metadata (grpc-gateway's
    /// WithLegacyHeaderMatching; its default since v2.33 forwards none, since any caller could
    /// set any key the upstream trusts).
    #[arg(long)]
    pub legacy_metadata_headers: bool,

    /// Reach the upstream through this HTTP proxy (`http://[user:password@]host:port`, with
    /// CONNECT) [default: HTTPS_PROXY unless NO_PROXY lists the upstream, as grpc-go reads them].
    #[arg(long, value_name = "URL")]
    pub proxy: Option<String>,

    /// How often to ask the upstream's reflection whether its services changed, serving the new
    /// ones when they did (0: only on SIGHUP, which always rereads the files or reflection).
    #[arg(long, value_parser = parse_duration, default_value = "30s", value_name = "DURATION")]
    pub reload_interval: std::time::Duration,

    /// How the gateway listens and guards its port: as `volley serve`.
    #[command(flatten)]
    pub server: ServerFlags,
}

/// Runs the gateway until a signal, then drains and returns.
pub fn run(args: GatewayArgs) -> Result<()> {
    let args = Arc::new(args);
    let endpoint = endpoint(&args)?;
    let listening = Listening::bind(&args.server)?;
    let upstream = Arc::new(upstream(&args, endpoint.clone())?);
    let pool = schema(&args, &endpoint)?;
    let first = builder(&args, &pool, &upstream, true)?;
    let (tx, next) = mpsc::channel();
    watch(args.clone(), endpoint, &pool, upstream, tx);
    serve(
        first,
        &args.server,
        listening,
        "",
        "volley-gateway",
        Some(next),
    )
}

/// The upstream, with the flags' strategy, policy, service config and header rules.
fn upstream(args: &GatewayArgs, endpoint: Endpoint) -> Result<Upstream> {
    let mut upstream = Upstream::new(endpoint)
        .strategy(
            args.upstream_strategy
                .parse::<Strategy>()
                .context("--upstream-strategy")?,
        )
        .policy(args.lb_policy.parse::<Policy>().context("--lb-policy")?)
        .rest_headers(RestHeaders {
            legacy_metadata: args.legacy_metadata_headers,
            permitted: args.forward_header.clone(),
        });
    if let Some(path) = &args.service_config {
        let json = std::fs::read_to_string(path)
            .with_context(|| format!("--service-config {}", path.display()))?;
        let config = ServiceConfig::parse(&json)
            .with_context(|| format!("--service-config {}", path.display()))?;
        upstream = upstream.service_config(config);
    }
    Ok(upstream)
}

/// The server for `pool`'s services, each forwarding to `upstream`, with the rule file's rules
/// and the OpenAPI document; `say` logs what it forwards (at start; a reload says it once).
fn builder(
    args: &GatewayArgs,
    pool: &DescriptorPool,
    upstream: &Arc<Upstream>,
    say: bool,
) -> Result<volley_server::ServerBuilder> {
    let forwarded = volley_gateway::services(pool, upstream);
    if forwarded.services.is_empty() {
        bail!("the upstream's descriptors have no service to forward");
    }
    let title = pool
        .services()
        .filter(|s| !s.full_name().starts_with("grpc."))
        .map(|s| s.name().to_owned())
        .collect::<Vec<_>>()
        .join(", ");
    let mut builder = Server::builder().health(!forwarded.health).openapi(title);
    for s in forwarded.services {
        if say {
            info!("forwarding {} to {}", s.name(), upstream.target());
        }
        builder = builder.add_service(s);
    }
    if let Some(path) = &args.http_rules {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("--http-rules {}", path.display()))?;
        let rules = volley_gateway::rules::parse(&text)
            .map_err(|e| anyhow::anyhow!("--http-rules {}: {e}", path.display()))?;
        if say {
            info!("{} HTTP rule(s) from {}", rules.len(), path.display());
        }
        for rule in rules {
            let selector = rule.selector.clone();
            builder = builder.http_rule(&selector, rule);
        }
    }
    Ok(builder)
}

/// A pool's files, by name, as encoded: what is compared to see whether descriptors changed
/// (reflection's files come in no fixed order).
fn fingerprint(pool: &DescriptorPool) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = pool
        .files()
        .map(|f| (f.name().to_owned(), f.encode_to_vec()))
        .collect();
    files.sort();
    files
}

/// Rereads the descriptors on SIGHUP (files, or the upstream's reflection) and, from
/// reflection, every `--reload-interval`; a change sends a new server's builder to `tx`.
fn watch(
    args: Arc<GatewayArgs>,
    endpoint: Endpoint,
    pool: &DescriptorPool,
    upstream: Arc<Upstream>,
    tx: mpsc::Sender<volley_server::ServerBuilder>,
) {
    let (ask, asked) = mpsc::channel::<&'static str>();
    let on_hup = ask.clone();
    crate::signal::on_each_hangup(move || {
        let _ = on_hup.send("SIGHUP");
    });
    let from_reflection = args.proto.is_empty() && args.protoset.is_empty();
    if from_reflection && !args.reload_interval.is_zero() {
        let every = args.reload_interval;
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(every);
                if ask.send("a change in the upstream's reflection").is_err() {
                    return;
                }
            }
        });
    }
    let mut seen = fingerprint(pool);
    std::thread::spawn(move || {
        for why in asked {
            let fresh = match schema(&args, &endpoint) {
                Ok(p) => p,
                Err(e) => {
                    if why == "SIGHUP" {
                        warn!("SIGHUP: cannot reread the descriptors ({e:#}); the old ones stay");
                    }
                    continue;
                }
            };
            let now = fingerprint(&fresh);
            if now == seen {
                if why == "SIGHUP" {
                    info!("SIGHUP: the descriptors are unchanged");
                }
                continue;
            }
            match builder(&args, &fresh, &upstream, false) {
                Ok(b) => {
                    info!(
                        "the descriptors changed ({why}): serving {} service(s) from them",
                        fresh.services().count()
                    );
                    seen = now;
                    if tx.send(b).is_err() {
                        return;
                    }
                }
                Err(e) => warn!("the new descriptors cannot be served ({e:#}); the old ones stay"),
            }
        }
    });
}

/// The upstream's endpoint, with TLS as its scheme and the flags ask.
fn endpoint(args: &GatewayArgs) -> Result<Endpoint> {
    let mut ep = Endpoint::from_target_str(&args.upstream)
        .with_context(|| format!("--upstream {}", args.upstream))?;
    let custom = args.upstream_cacert.is_some() || args.upstream_cert.is_some();
    if custom {
        if !ep.is_tls() {
            bail!(
                "--upstream-cacert and --upstream-cert are for TLS: write the upstream as \
                 https://{}",
                ep.authority
            );
        }
        let config = volley_client::tls::client_config(&TlsOptions {
            ca: args.upstream_cacert.clone(),
            cert: args.upstream_cert.clone(),
            key: args.upstream_key.clone(),
            skip_verify: false,
        })?;
        ep = ep.tls(config);
    }
    if let Some(url) = &args.proxy {
        ep = ep.proxy(Some(url)).context("--proxy")?;
    }
    Ok(ep)
}

/// The upstream's services (from the files given, or its reflection), with the well-known
/// types and `google.rpc`'s error details, so REST error bodies show details as JSON.
fn schema(args: &GatewayArgs, endpoint: &Endpoint) -> Result<DescriptorPool> {
    let mut pool = services(args, endpoint)?;
    volley_proto::load::add_common(&mut pool)?;
    Ok(pool)
}

/// The upstream's services: from the files given, or its reflection.
fn services(args: &GatewayArgs, endpoint: &Endpoint) -> Result<DescriptorPool> {
    if !args.proto.is_empty() || !args.protoset.is_empty() {
        return Ok(volley_proto::load::documented_pool(
            &args.proto,
            &args.import_paths,
            &args.protoset,
        )?);
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let pool = rt
        .block_on(volley_gateway::reflect(endpoint, &[]))
        .map_err(anyhow::Error::msg)
        .context("no --proto or --protoset, so the upstream's reflection was asked")?;
    info!(
        "the upstream's reflection lists {} service(s)",
        pool.services()
            .filter(|s| !s.full_name().starts_with("grpc.reflection."))
            .count()
    );
    Ok(pool)
}
