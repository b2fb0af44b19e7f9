//! The command line: `volley serve | ...`, parsed with clap derive; value parsers live beside it.

pub mod bench;
pub mod duration;
pub mod size;

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use clap::{Args, Parser, Subcommand};

use duration::parse_duration;
use size::parse_size;

/// volley: build, serve and load-test gRPC services.
#[derive(Debug, Parser)]
#[command(name = "volley", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the built-in services (api.Users, helloworld.Greeter, grpc.hi, orders.OrderService,
    /// health, reflection) on one port.
    Serve(Box<ServeArgs>),
    /// Load-test a gRPC method: a drop-in for ghz (same flags, same reports), many times lighter.
    /// With no host, benches the built-in services in-process.
    #[command(version, disable_version_flag = true)]
    Bench(Box<bench::BenchArgs>),
}

/// `volley serve`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ServeArgs {
    /// Something else to serve instead of the built-in services.
    #[command(subcommand)]
    pub what: Option<ServeWhat>,

    /// Address to listen on (port 0 picks a free port; the log line says which).
    #[arg(long, default_value = "127.0.0.1:9090")]
    pub addr: SocketAddr,

    /// Also listen here, with every protocol as on --addr (seed 001's setup: HTTP on 9501 beside
    /// gRPC on 9503).
    #[arg(long, value_name = "ADDR")]
    pub http_addr: Option<SocketAddr>,

    /// Make every handler wait this long before replying (e.g. 200ms), for sleeping-server experiments.
    #[arg(long, value_parser = parse_duration, default_value = "0")]
    pub delay: Duration,

    /// Serve TLS with this PEM certificate chain (needs --tls-key).
    #[arg(long, requires = "tls_key", value_name = "PEM")]
    pub tls_cert: Option<PathBuf>,

    /// The PEM private key for --tls-cert.
    #[arg(long, requires = "tls_cert", value_name = "PEM")]
    pub tls_key: Option<PathBuf>,

    /// Serve TLS with a freshly generated local CA and certificate (localhost, 127.0.0.1, ::1);
    /// the log says where the CA was written.
    #[arg(long, conflicts_with_all = ["tls_cert", "tls_key"])]
    pub tls_self_signed: bool,

    /// Where --tls-self-signed writes ca.pem, server.pem and server.key (default: a new temp dir).
    #[arg(long, requires = "tls_self_signed", value_name = "DIR")]
    pub tls_dir: Option<PathBuf>,

    /// With TLS, also accept plaintext h2c on the same port.
    #[arg(long)]
    pub also_plaintext: bool,

    /// Compress replies with gzip when the client accepts it.
    #[arg(long)]
    pub compress: bool,

    /// SETTINGS_MAX_CONCURRENT_STREAMS per connection.
    #[arg(long, default_value_t = volley_server::server_defaults::MAX_CONCURRENT_STREAMS)]
    pub max_concurrent_streams: u32,

    /// Largest request message accepted (e.g. 4MiB); larger ones get RESOURCE_EXHAUSTED.
    #[arg(long, value_parser = parse_size, default_value = "4MiB")]
    pub max_recv_message_size: usize,

    /// Time in-flight calls get to finish after SIGINT/SIGTERM.
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub grace_period: Duration,

    /// HTTP/2 keepalive PING interval (0: off).
    #[arg(long, value_parser = parse_duration, default_value = "0")]
    pub keepalive: Duration,

    /// Threads serving connections, each with its own single-threaded runtime (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
}

/// What `volley serve` can run besides the built-in services.
#[derive(Debug, Subcommand)]
pub enum ServeWhat {
    /// Seed 002's gateway: HTTP `GET /performance` makes one gRPC call
    /// (helloworld.Greeter/SayHello) to --backend through a channel with --strategy.
    Gateway(GatewayArgs),
}

/// `volley serve gateway`.
#[derive(Debug, Args)]
pub struct GatewayArgs {
    /// The gRPC backend (HOST:PORT), e.g. a `volley serve` (with --delay 200ms for the sleeping case).
    #[arg(long)]
    pub backend: String,

    /// How calls share backend connections: per-request, single, pool[:N] (default 4) or
    /// expanding[:MAX] (default 8).
    #[arg(long, default_value = "expanding")]
    pub strategy: String,

    /// Address to listen on (HTTP/1.1 and h2c).
    #[arg(long, default_value = "127.0.0.1:18080")]
    pub addr: SocketAddr,

    /// Worker threads (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
}
