//! `volley bench`: ghz's command line, flag for flag (names, short forms, defaults, validation).
//! Every field is optional here so that a flag given on the command line can be told from a
//! default: the command line wins over `--config`, which wins over ghz's defaults. Values whose
//! errors must name the flag (durations, sizes, names) stay text here and are typed by `flags`.
//! `--help` lists them by section (`help_heading`): target, TLS, load, data, streams, output,
//! connections, HTTP load, gates, scale and watch, close to the steps `resolve` takes.

use std::path::PathBuf;

use clap::{ArgAction, Args};

/// `volley bench [flags] [host]`: load a gRPC server; a drop-in for `ghz`.
#[derive(Debug, Default, Args)]
pub struct BenchArgs {
    /// Target `host:port`, `dns:///host:port`, `ipv4:a:p,b:p` (several backends: see
    /// --lb-strategy) or `unix:/path`. Without one, the built-in services are started
    /// in-process on a loopback port and benched.
    pub host: Option<String>,

    /// Print the version.
    #[arg(short = 'v', long = "version", action = ArgAction::Version)]
    pub version: Option<bool>,

    /// Path to a JSON, TOML or YAML config file with ghz's keys; flags given here win.
    #[arg(long)]
    pub config: Option<PathBuf>,

    /// The .proto file (compiled in-process; no protoc).
    #[arg(help_heading = "Target", long)]
    pub proto: Option<PathBuf>,
    /// A compiled FileDescriptorSet (--proto wins).
    #[arg(help_heading = "Target", long)]
    pub protoset: Option<PathBuf>,
    /// The method: `package.Service/Method` or `package.Service.Method`. Repeat it with weights
    /// for a mix, each call going to one method: `--call api.Users.Get:80 --call
    /// api.Users.List:20`.
    #[arg(help_heading = "Target", long, value_name = "METHOD[:WEIGHT]")]
    pub call: Vec<String>,
    /// A scenario file (YAML or JSON): a config file that may also give `target`, a `mix:` of
    /// methods with weights and data of their own, and arrival-rate `stages:`.
    #[arg(help_heading = "Target", long, value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    /// Comma-separated import paths (the current directory and the proto's own are added).
    #[arg(
        help_heading = "Target",
        short = 'i',
        long = "import-paths",
        value_delimiter = ','
    )]
    pub import_paths: Option<Vec<String>>,
    /// With no host: the in-process server answers the --proto services from these
    /// GripMock-format stubs (files or folders, repeatable), as `volley serve --stubs` does.
    #[arg(help_heading = "Target", long, alias = "stub", value_name = "PATH")]
    pub stubs: Vec<PathBuf>,

    /// Root CA (PEM) to verify the server with.
    #[arg(help_heading = "TLS", long)]
    pub cacert: Option<PathBuf>,
    /// Client certificate (PEM) for mutual TLS.
    #[arg(help_heading = "TLS", long)]
    pub cert: Option<PathBuf>,
    /// Client private key (PEM).
    #[arg(help_heading = "TLS", long)]
    pub key: Option<PathBuf>,
    /// Server name to verify instead of the host.
    #[arg(help_heading = "TLS", long)]
    pub cname: Option<String>,
    /// Do not verify the server's certificate.
    #[arg(help_heading = "TLS", long = "skipTLS", action = ArgAction::SetTrue)]
    pub skip_tls: bool,
    /// Plaintext (h2c). Without it, TLS with the system roots (as ghz).
    #[arg(help_heading = "TLS", long, action = ArgAction::SetTrue)]
    pub insecure: bool,
    /// The :authority header.
    #[arg(help_heading = "TLS", long)]
    pub authority: Option<String>,

    /// Fire calls without waiting for the previous one (open model).
    #[arg(help_heading = "Load", long = "async", action = ArgAction::SetTrue)]
    pub async_mode: bool,
    /// Total requests per second, shared by all workers (0 = no limit).
    #[arg(help_heading = "Load", short = 'r', long)]
    pub rps: Option<u64>,
    /// const, step or line.
    #[arg(help_heading = "Load", long = "load-schedule")]
    pub load_schedule: Option<String>,
    /// Starting RPS of a step or line schedule.
    #[arg(help_heading = "Load", long = "load-start")]
    pub load_start: Option<u64>,
    /// Final RPS (0 = none).
    #[arg(help_heading = "Load", long = "load-end")]
    pub load_end: Option<u64>,
    /// RPS step (or slope per second for line); may be negative.
    #[arg(help_heading = "Load", long = "load-step", allow_hyphen_values = true)]
    pub load_step: Option<i64>,
    /// Length of each RPS step.
    #[arg(help_heading = "Load", long = "load-step-duration")]
    pub load_step_duration: Option<String>,
    /// Stop adjusting the RPS after this long.
    #[arg(help_heading = "Load", long = "load-max-duration")]
    pub load_max_duration: Option<String>,

    /// Workers [default: 50].
    #[arg(help_heading = "Load", short = 'c', long)]
    pub concurrency: Option<u64>,
    /// const, step or line.
    #[arg(help_heading = "Load", long = "concurrency-schedule")]
    pub concurrency_schedule: Option<String>,
    /// Starting workers of a step or line schedule.
    #[arg(help_heading = "Load", long = "concurrency-start")]
    pub concurrency_start: Option<u64>,
    /// Final workers (0 = none).
    #[arg(help_heading = "Load", long = "concurrency-end")]
    pub concurrency_end: Option<u64>,
    /// Worker step (or slope per second for line) [default: 1].
    #[arg(
        help_heading = "Load",
        long = "concurrency-step",
        allow_hyphen_values = true
    )]
    pub concurrency_step: Option<i64>,
    /// Length of each worker step.
    #[arg(help_heading = "Load", long = "concurrency-step-duration")]
    pub concurrency_step_duration: Option<String>,
    /// Stop adjusting workers after this long.
    #[arg(help_heading = "Load", long = "concurrency-max-duration")]
    pub concurrency_max_duration: Option<String>,

    /// Number of calls [default: 200]; ignored with -z.
    #[arg(help_heading = "Load", short = 'n', long)]
    pub total: Option<u64>,
    /// Per-call deadline, 0 = none [default: 20s].
    #[arg(help_heading = "Load", short = 't', long)]
    pub timeout: Option<String>,
    /// Run for this long (e.g. 10s); overrides -n.
    #[arg(help_heading = "Load", short = 'z', long)]
    pub duration: Option<String>,
    /// Stop after this long even if -n is not reached.
    #[arg(help_heading = "Load", short = 'x', long = "max-duration")]
    pub max_duration: Option<String>,
    /// What -z does to in-flight calls: close, wait or ignore [default: close].
    #[arg(help_heading = "Load", long = "duration-stop")]
    pub duration_stop: Option<String>,
    /// An arrival-rate stage, k6's `DURATION:RATE` (repeatable): the rate goes linearly from the
    /// last stage's (0 at the start) to RATE calls/s over DURATION; the run lasts their sum.
    #[arg(help_heading = "Load", long = "stage", value_name = "DURATION:RATE")]
    pub stages: Vec<String>,

    /// Request data as JSON (an object, or an array: round-robin for unary, the message sequence
    /// for client streams); `@` reads stdin.
    #[arg(help_heading = "Data", short = 'd', long)]
    pub data: Option<String>,
    /// Request data from a JSON file; an NDJSON file (.ndjson, .jsonl) gives one message per
    /// line (kept encoded in memory up to 8 MiB, streamed from disk beyond).
    #[arg(help_heading = "Data", short = 'D', long = "data-file")]
    pub data_file: Option<PathBuf>,
    /// Which line of an NDJSON data file each call takes: round-robin (call k, line k mod n) or
    /// random (a line picked by a hash of k) [default: round-robin].
    #[arg(help_heading = "Data", long = "data-order", value_name = "ORDER")]
    pub data_order: Option<String>,
    /// Request data as serialized protobuf from stdin (several: varint-length-delimited).
    #[arg(help_heading = "Data", short = 'b', long, action = ArgAction::SetTrue)]
    pub binary: bool,
    /// Request data as serialized protobuf from a file.
    #[arg(help_heading = "Data", short = 'B', long = "binary-file")]
    pub binary_file: Option<PathBuf>,
    /// Request metadata as a JSON object (templated); `@` reads stdin.
    #[arg(help_heading = "Data", short = 'm', long)]
    pub metadata: Option<String>,
    /// Request metadata from a JSON file.
    #[arg(help_heading = "Data", short = 'M', long = "metadata-file")]
    pub metadata_file: Option<PathBuf>,
    /// Metadata sent only with the reflection call, as a JSON object.
    #[arg(help_heading = "Data", long = "reflect-metadata")]
    pub reflect_metadata: Option<String>,

    /// Pause between messages sent on client and bidi streams.
    #[arg(help_heading = "Streams", long = "stream-interval")]
    pub stream_interval: Option<String>,
    /// Close each stream after this long.
    #[arg(help_heading = "Streams", long = "stream-call-duration")]
    pub stream_call_duration: Option<String>,
    /// Messages sent (client/bidi) or received (server) per stream.
    #[arg(help_heading = "Streams", long = "stream-call-count")]
    pub stream_call_count: Option<u64>,
    /// Render the data template for every message sent, not once per call.
    #[arg(help_heading = "Streams", long = "stream-dynamic-messages", action = ArgAction::SetTrue)]
    pub stream_dynamic_messages: bool,

    /// Write the report here instead of stdout.
    #[arg(help_heading = "Output", short = 'o', long)]
    pub output: Option<PathBuf>,
    /// summary, csv, json, pretty, html, influx-summary, influx-details or prometheus.
    #[arg(help_heading = "Output", short = 'O', long)]
    pub format: Option<String>,
    /// Leave the first N results out of the report.
    #[arg(help_heading = "Output", long = "skipFirst")]
    pub skip_first: Option<u64>,
    /// Count failed calls in fastest, slowest, histogram and percentiles.
    #[arg(help_heading = "Output", long = "count-errors", action = ArgAction::SetTrue)]
    pub count_errors: bool,

    /// HTTP/2 connections: a pool of N, each call on the least-loaded one; at most -c [default: 1].
    #[arg(help_heading = "Connections", long)]
    pub connections: Option<u64>,
    /// How calls share connections: per-request, single, pool[:N] (N defaults to --connections)
    /// or expanding[:MAX] [default: single, or pool:N with --connections N].
    // The brackets are help text for the terminal, not rustdoc links.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[arg(help_heading = "Connections", long)]
    pub strategy: Option<String>,
    /// Dial timeout [default: 10s].
    #[arg(help_heading = "Connections", long = "connect-timeout")]
    pub connect_timeout: Option<String>,
    /// HTTP/2 keepalive PING interval (also its timeout).
    #[arg(help_heading = "Connections", long)]
    pub keepalive: Option<String>,
    /// Load-balancing policy over the target's addresses, as ghz takes it: pick_first (the
    /// default) or round_robin (every address of a name, or of an `ipv4:a:p,b:p` list, in turn;
    /// each gets the --connections).
    #[arg(help_heading = "Connections", long = "lb-strategy")]
    pub lb_strategy: Option<String>,
    /// A gRPC service config (JSON, or a file holding it), as grpc-go's
    /// WithDefaultServiceConfig takes it: unary calls are retried or hedged by their method's
    /// retryPolicy or hedgingPolicy, with retryThrottling and the server's pushback; its
    /// loadBalancingConfig is the --lb-strategy when that is not given.
    #[arg(
        help_heading = "Connections",
        long = "service-config",
        value_name = "JSON|FILE"
    )]
    pub service_config: Option<String>,
    /// Largest reply accepted (e.g. "42 MB").
    #[arg(help_heading = "Connections", long = "max-recv-message-size")]
    pub max_recv_message_size: Option<String>,
    /// Largest request sent (e.g. "42 MB").
    #[arg(help_heading = "Connections", long = "max-send-message-size")]
    pub max_send_message_size: Option<String>,
    /// Compress requests with gzip.
    #[arg(help_heading = "Connections", short = 'e', long = "enable-compression", action = ArgAction::SetTrue)]
    pub enable_compression: bool,
    /// The wire protocol of the calls: `grpc` (the default), `grpc-web` or `connect` (unary
    /// methods; Connect's unary calls send the message as the whole body), on HTTP/2.
    #[arg(
        help_heading = "Connections",
        long = "protocol",
        value_name = "grpc|grpc-web|connect"
    )]
    pub protocol: Option<String>,

    /// A header, `Name: value` (repeatable): on an HTTP target a request header; on a gRPC
    /// target call metadata, sent before -m's pairs (grpcurl's -H).
    #[arg(help_heading = "Data", short = 'H', long = "header")]
    pub header: Vec<String>,
    /// HTTP load: the request method [default: GET, or POST with -d].
    #[arg(help_heading = "HTTP load", long)]
    pub method: Option<String>,
    /// HTTP load: speak HTTP/2 (prior knowledge on http://, ALPN on https://) instead of HTTP/1.1.
    #[arg(help_heading = "HTTP load", long)]
    pub http2: bool,

    /// A name for the run, carried into reports and {{.WorkerID}}.
    #[arg(help_heading = "Output", long)]
    pub name: Option<String>,
    /// JSON object of tags carried into reports.
    #[arg(help_heading = "Output", long)]
    pub tags: Option<String>,
    /// Scrape this `/metrics` URL (gRFC A66's `grpc_server_call_duration_seconds`, as `volley
    /// serve --metrics` serves it) before and after the run, and report the server's call count
    /// and latency beside the client's.
    #[arg(help_heading = "Output", long, value_name = "URL")]
    pub server_metrics: Option<String>,
    /// A CI gate, judged after the run: `p99<50ms`, `errors<0.1%`, `rps>=9500`,
    /// `status.Unavailable==0`, `service.p99.9<=20ms` (repeatable; also `thresholds:` in the
    /// config file). The exit code is 99 when one fails, 98 when the run cannot be judged.
    #[arg(help_heading = "Gates", long = "threshold", value_name = "EXPR")]
    pub thresholds: Option<Vec<String>>,
    /// Run shard I of N of the plan: the calls numbered I mod N and the workers numbered I mod N,
    /// at the whole plan's times (`auto/N`: I from JOB_COMPLETION_INDEX, as a Kubernetes Indexed
    /// Job sets it). `volley report merge` sums the shards' -O json results exactly.
    #[arg(help_heading = "Scale", long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Dial every connection, then start at this wall-clock time (RFC 3339, or +30s from now);
    /// a process ready too late exits 98 without sending.
    #[arg(help_heading = "Scale", long = "start-at", value_name = "TIME")]
    pub start_at: Option<String>,
    /// Print the plan as a Kubernetes Indexed Job instead of running it (`k8s-job`; needs
    /// `--shard auto/N` and `--image`): `kubectl apply -f -`, then
    /// `kubectl logs -l job-name=NAME | volley report merge -`.
    #[arg(help_heading = "Scale", long, value_name = "KIND")]
    pub emit: Option<String>,
    /// The container image for `--emit k8s-job` (its entrypoint must be `volley`).
    #[arg(help_heading = "Scale", long, value_name = "IMAGE")]
    pub image: Option<String>,
    /// Stop the run as soon as this holds, checked as it goes (after 50 calls): `errors>50%`,
    /// `status.Unavailable>10%`. The exit code is then 99.
    #[arg(help_heading = "Gates", long = "abort-on", value_name = "EXPR")]
    pub abort_on: Option<String>,
    /// Watch the run: a full-screen view, per second, of the rate achieved and asked, p50/p99/p99.9
    /// (from the intended send and from the actual send), errors by code, calls in flight, pacer
    /// lag and generator CPU, per method under a mix; q stops the run early (the report is still
    /// written). The progress bar stays the default.
    #[arg(help_heading = "Watch", long, action = ArgAction::SetTrue)]
    pub tui: bool,
    /// Write one JSON line per interval to FILE (`-` for stdout): calls, rate, percentiles,
    /// statuses, in flight, lag, CPU, per method under a mix.
    #[arg(help_heading = "Watch", long, value_name = "FILE|-")]
    pub live: Option<PathBuf>,
    /// With --live: each line also carries the interval's latency histogram (HdrHistogram V2
    /// deflate, base64), so that intervals can be merged exactly.
    #[arg(help_heading = "Watch", long = "live-histograms", action = ArgAction::SetTrue)]
    pub live_histograms: bool,
    /// How often --live, --prometheus-listen, --dashboard and --tui are updated [default: 1s].
    #[arg(
        help_heading = "Watch",
        long = "live-interval",
        value_name = "DURATION"
    )]
    pub live_interval: Option<String>,
    /// Serve the run's figures for Prometheus on ADDR (`/metrics`): calls by method and code, a
    /// latency histogram, in-flight, lag and CPU gauges (port 0 picks one; stderr says which).
    #[arg(
        help_heading = "Watch",
        long = "prometheus-listen",
        value_name = "ADDR"
    )]
    pub prometheus_listen: Option<String>,
    /// Serve a live dashboard of the run on ADDR while it goes (k6's port, 127.0.0.1:5665, when
    /// no ADDR is given; port 0 picks one; stderr says which): calls per second, latency
    /// percentiles over time, statuses, errors, in flight, per method of a mix; its button saves
    /// the page as a report. Give ADDR with `=`: `--dashboard=127.0.0.1:8080`.
    #[arg(
        help_heading = "Watch",
        long,
        value_name = "ADDR",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "127.0.0.1:5665"
    )]
    pub dashboard: Option<String>,
    /// Write the dashboard's page with the whole run in it to FILE at the end: one
    /// self-contained HTML file (no --dashboard needed).
    #[arg(help_heading = "Watch", long = "dashboard-export", value_name = "FILE")]
    pub dashboard_export: Option<PathBuf>,
    /// Keep serving --prometheus-listen and --dashboard this long after the run, for a last
    /// scrape or look [default: 0s].
    #[arg(help_heading = "Watch", long, value_name = "DURATION")]
    pub linger: Option<String>,
    /// Write the thresholds' verdicts to FILE as JUnit XML.
    #[arg(help_heading = "Gates", long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Threads running the load [default: all cores].
    #[arg(help_heading = "Scale", long)]
    pub cpus: Option<u64>,
    /// Path for a JSON-lines debug log.
    #[arg(help_heading = "Output", long)]
    pub debug: Option<PathBuf>,
    /// Do not offer template functions.
    #[arg(help_heading = "Data", long = "disable-template-functions", action = ArgAction::SetTrue)]
    pub disable_template_functions: bool,
    /// Do not template data or metadata at all.
    #[arg(help_heading = "Data", long = "disable-template-data", action = ArgAction::SetTrue)]
    pub disable_template_data: bool,
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::BenchArgs;

    #[derive(Parser)]
    struct Cmd {
        #[command(flatten)]
        bench: BenchArgs,
    }

    #[test]
    fn every_flag_but_config_and_version_sits_in_a_section() {
        let cmd = Cmd::command();
        let loose: Vec<&str> = cmd
            .get_arguments()
            .filter(|a| !a.is_positional() && a.get_help_heading().is_none())
            .map(|a| a.get_id().as_str())
            .collect();
        assert_eq!(loose, ["version", "config"]);
        let sections: Vec<&str> = cmd
            .get_arguments()
            .filter_map(|a| a.get_help_heading())
            .fold(Vec::new(), |mut seen, h| {
                if !seen.contains(&h) {
                    seen.push(h);
                }
                seen
            });
        assert_eq!(
            sections,
            [
                "Target",
                "TLS",
                "Load",
                "Data",
                "Streams",
                "Output",
                "Connections",
                "HTTP load",
                "Gates",
                "Scale",
                "Watch"
            ]
        );
    }
}
