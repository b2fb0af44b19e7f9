//! The command line: `volley serve | ...`, parsed with clap derive; value parsers live beside it.

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use clap::{Args, Parser, Subcommand};

use volley_bench::plan::{BenchArgs, units::parse_duration};
use volley_lab::{gateway::GatewayArgs, link::LinkArgs, orders::OrdersArgs, seeds::LabArgs};

/// `volley --version`: the package version and the commit it was built from.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("VOLLEY_COMMIT"),
    ")"
);

/// volley: build, serve and load-test gRPC services.
#[derive(Debug, Parser)]
#[command(name = "volley", version = VERSION, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands: the product first, then the experiment harness (`lab`).
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the built-in services (api.Users, helloworld.Greeter, grpc.hi, orders.OrderService,
    /// grpc.testing.TestService, health, reflection) on one port, or any .proto with --proto.
    Serve(Box<ServeArgs>),
    /// Load-test a gRPC method: a drop-in for ghz (same flags, same reports), many times lighter.
    /// With no host, benches the built-in services in-process.
    #[command(version, disable_version_flag = true)]
    Bench(Box<BenchArgs>),
    /// Call a method, list services or describe a symbol: grpcurl's command line and output
    /// (`volley call -plaintext HOST:PORT list`); `volley call -help` for its flags.
    #[command(disable_help_flag = true, disable_version_flag = true)]
    Call {
        /// grpcurl's flags and arguments, as grpcurl takes them.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Run a k6 script: `volley run script.js` takes what `k6 run` takes (k6/net/grpc, checks,
    /// thresholds, scenarios) and prints k6's summary (the binary run as `k6` is this).
    #[command(disable_help_flag = true, disable_version_flag = true)]
    Run {
        /// k6's flags and the script, as `k6 run` takes them.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// A drop-in for GripMock: the services of .proto files answered from stubs, gRPC on
    /// 0.0.0.0:4770, the admin API on 0.0.0.0:4771 (the binary run as `gripmock` is this).
    Mock(Box<crate::mock::MockArgs>),
    /// Results as data: merge the JSON results of a plan's shards (or of runs on many hosts)
    /// exactly, gate on the merged run, or compare two runs beyond their noise.
    #[command(subcommand)]
    Report(ReportCommand),
    /// The experiments volley grew out of: `volley lab` reruns every one of them and writes
    /// report.md, report.html and results.json with the published figures beside ours;
    /// `volley lab orders | gateway | link` runs one tool of the harness.
    Lab(Box<LabCommand>),
    /// REST (google.api.http), Connect, gRPC-Web and gRPC on one port in front of any gRPC
    /// server: every call forwarded to --upstream (its services from --proto, --protoset or its
    /// reflection), with `volley serve`'s server flags.
    Gateway(Box<crate::gateway::GatewayArgs>),
    /// Print the OpenAPI 3 document of .proto files' REST rules (google.api.http), as `volley
    /// serve` and `volley gateway` serve it at GET /openapi.json.
    Openapi(crate::openapi::OpenapiArgs),
    /// A web page to call methods: grpcui's command line (`volley ui -plaintext HOST:PORT`),
    /// its banner and its page's endpoints (the binary run as `grpcui` is this).
    Ui(Box<volley_ui::UiArgs>),
    /// Print a shell completion script: `source <(volley completions bash)`, or write it where
    /// your shell looks (zsh: a file `_volley` on $fpath; fish: ~/.config/fish/completions/volley.fish).
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// `volley lab orders`, under its old name.
    #[command(hide = true)]
    Orders(OrdersArgs),
    /// `volley lab link`, under its old name.
    #[command(hide = true)]
    Link(LinkArgs),
}

/// `volley lab`: every seed experiment rerun, or one tool of the harness.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct LabCommand {
    /// One tool of the harness instead of the whole rerun.
    #[command(subcommand)]
    pub tool: Option<LabTool>,
    /// The whole rerun's flags.
    #[command(flatten)]
    pub all: LabArgs,
}

/// The tools of `volley lab`.
#[derive(Debug, Subcommand)]
pub enum LabTool {
    /// The order study (seed 004): N clients send M timestamped orders to orders.OrderService,
    /// one unary call per order or one bidi stream per client; prints throughput,
    /// client-to-server time and round trip per order.
    Orders(OrdersArgs),
    /// The gateway experiment (seed 002): HTTP `GET /performance` makes one gRPC call
    /// (helloworld.Greeter/SayHello) to --backend through a channel with --strategy.
    Gateway(GatewayArgs),
    /// A TCP relay that behaves like a slower network (for kernels without netem): each way,
    /// a one-way delay with jitter and a rate cap, as `tc netem` or toxiproxy would add.
    Link(LinkArgs),
}

/// `volley report`.
#[derive(Debug, Subcommand)]
pub enum ReportCommand {
    /// Sum `volley bench -O json` results of one plan (files, or `-` for stdin with the results
    /// concatenated, as `kubectl logs` prints them) and print the merged report.
    Merge(MergeArgs),
    /// What changed from BASE to NEW (two `-O json` results, single or merged): p50, p90, p99,
    /// p99.9, mean, rps and errors, each with whether the change is beyond both runs' noise.
    Compare(CompareArgs),
}

/// `volley report compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The base run's JSON result.
    pub base: String,
    /// The new run's JSON result.
    pub new: String,
    /// summary (a table), md (Markdown, for a pull-request comment) or json.
    #[arg(short = 'O', long = "format", default_value = "summary")]
    pub format: String,
    /// Exit 99 when this change happened beyond the noise: `p99>+10%`, `rps<-5%`, `errors>+0.5%`
    /// (points of share). Repeatable.
    #[arg(long = "fail-if", value_name = "EXPR")]
    pub fail_if: Vec<String>,
}

/// `volley report merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// JSON results: files, or `-` for standard input (several results may follow each other;
    /// lines that are not JSON, such as log lines, are skipped).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<String>,
    /// The merged report's format, as `volley bench -O`: summary, csv, json, pretty, html,
    /// influx-summary, influx-details, prometheus, wrk.
    #[arg(short = 'O', long = "format", default_value = "summary")]
    pub format: String,
    /// Write the report to FILE instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// A gate on the merged run, as `volley bench --threshold` (repeatable).
    #[arg(long = "threshold", value_name = "EXPR")]
    pub thresholds: Vec<String>,
    /// Write the thresholds' verdicts to FILE as JUnit XML.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
}

/// `volley serve`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ServeArgs {
    /// Something else to serve instead of the built-in services.
    #[command(subcommand)]
    pub what: Option<ServeWhat>,

    /// Serve every service of this .proto file too (repeatable), compiled at start (no protoc):
    /// each method answers from the stubs, or a default message of its output type.
    #[arg(long, value_name = "FILE")]
    pub proto: Vec<PathBuf>,
    /// .proto files given as GripMock takes them (`gripmock --stub=DIR FILE.proto`): the same
    /// as --proto.
    #[arg(value_name = "PROTO")]
    pub protos: Vec<PathBuf>,
    /// Import paths for --proto, comma-separated (the file's own directory and the current one
    /// are added; GripMock's --imports spelling works too).
    #[arg(
        short = 'i',
        long = "import-paths",
        alias = "imports",
        value_delimiter = ',',
        value_name = "DIRS"
    )]
    pub import_paths: Vec<PathBuf>,
    /// Serve every service of this compiled FileDescriptorSet too (repeatable).
    #[arg(long, value_name = "FILE")]
    pub protoset: Vec<PathBuf>,
    /// GripMock-format stubs (JSON or YAML) answering the --proto services: files, or folders
    /// read with their subfolders (repeatable; GripMock's --stub spelling works too).
    #[arg(long, alias = "stub", value_name = "PATH")]
    pub stubs: Vec<PathBuf>,
    /// Also serve GripMock's admin API for the stubs on this address (it is always on the calls'
    /// port too, under /api/stubs): GET / lists them, POST /add adds one, POST /find answers a
    /// request as a call would, GET /clear drops those added. --require-token covers it.
    #[arg(long, value_name = "ADDR")]
    pub admin_addr: Option<SocketAddr>,
    /// Serve only the --proto and --protoset services, not the built-in ones.
    #[arg(long)]
    pub no_builtin: bool,
    /// How many messages a --proto server-streaming method sends (bidi: per request).
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub stream_messages: usize,

    /// Make every handler wait this long before replying (e.g. 200ms), for sleeping-server experiments.
    #[arg(long, value_parser = parse_duration, default_value = "0")]
    pub delay: Duration,

    /// Make every handler compute this long (on an idle core) before replying, on tokio's
    /// blocking pool, for overload experiments: a server given more calls than its cores can
    /// compute falls behind (e.g. 1ms with --threads 1 pinned to one core: about 1000 calls/s).
    #[arg(long, value_parser = parse_duration, default_value = "0", value_name = "DURATION")]
    pub work: Duration,

    /// The server's own flags (listening, TLS, limits, auth, metrics, traces, CORS), shared
    /// with `volley gateway`.
    #[command(flatten)]
    pub server: crate::server::ServerFlags,
}

/// What `volley serve` can run besides the built-in services.
#[derive(Debug, Subcommand)]
pub enum ServeWhat {
    /// `volley lab gateway`, under its old name.
    #[command(hide = true)]
    Gateway(GatewayArgs),
}
