//! `volley lab orders`: seed 004's study. `--clients N` clients, each on its own connection, send
//! `--count M` orders in all (split evenly) to `orders.OrderService`, stamped with `requestTime`;
//! the server stamps `responseTime`. Unary: one call per order, one after another per client.
//! Stream: one bidi stream per client, orders pipelined (at most `--window` unanswered), replies
//! matched in order. Per order: client-to-server time (the two clocks: same host or namespaces
//! on one host share a clock) and round trip. Plaintext, or TLS with `--cacert`.
//!
//! The clients run on the bench engine (`volley_bench::run`, a [`CustomTarget`]): it dials,
//! schedules, times and records; the calls (`calls`) send the orders and read the replies' stamps.
//!
//! Without `--addr` it starts its own `volley serve` process (TLS with a certificate generated
//! for the run with `--tls`; in a network namespace, the clients in another, with `--netns`) and
//! adds the server's CPU time to the report (`own_server`).
//!
//! More clients than one process's open-file limit allows (or `--processes N`) run in groups of
//! child processes, each with its own server and relay when volley starts them, starting together
//! and merged exactly (`groups`).

use std::{path::PathBuf, sync::Arc, time::Duration};

use anyhow::{Result, anyhow, bail};
use clap::Args;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use volley_bench::plan::units::parse_duration;
use volley_bench::{
    ClientPath, Control, CustomCall, CustomTarget, DurationStop, Observers, Pace, RunOptions, Stop,
    StreamOptions, Target, plan::schedule::Ramp,
};
use volley_client::{
    CallHead, Endpoint, Strategy,
    endpoint::Target as Addr,
    tls::{TlsOptions, client_config},
};

use crate::Signals;
use calls::{StreamOrders, UnaryOrder};
use groups::OrderHistograms;

mod calls;
mod groups;
mod own_server;

/// `volley lab orders`'s flags.
#[derive(Debug, Args)]
pub struct OrdersArgs {
    /// The server (a `volley serve`, or any orders.OrderService). Without it, volley starts its
    /// own `volley serve` process for the run (on 127.0.0.1, or in a namespace with --netns).
    #[arg(long)]
    pub addr: Option<String>,

    /// With the server volley starts: TLS, with a certificate generated for the run.
    #[arg(long, conflicts_with = "addr")]
    pub tls: bool,

    /// With the server volley starts: run it in one network namespace and the clients in another,
    /// joined by a veth pair with this netem delay each way (e.g. 0.5ms; 0 for none). Needs root
    /// or CAP_NET_ADMIN; everything created is removed at the end, also on Ctrl-C.
    #[arg(long, value_parser = parse_duration, value_name = "DELAY", conflicts_with = "addr")]
    pub netns: Option<Duration>,

    /// TLS server name to verify (default: the host of --addr).
    #[arg(long, value_name = "NAME")]
    pub server_name: Option<String>,

    /// Server threads for the server volley starts.
    #[arg(long, default_value_t = 1)]
    pub server_threads: usize,

    /// unary (one call per order) or stream (one bidi stream per client).
    #[arg(long, default_value = "stream")]
    pub mode: String,

    /// Clients, each with its own connection (the seed's --no-of-clients).
    #[arg(long, default_value_t = 1000)]
    pub clients: usize,

    /// Orders in all, split evenly over the clients (the seed's --count).
    #[arg(long, default_value_t = 10000)]
    pub count: u64,

    /// Stream mode: most orders a client has sent and not yet seen answered.
    #[arg(long, default_value_t = 64)]
    pub window: usize,

    /// Use TLS, trusting this PEM CA (e.g. the ca.pem `volley serve --tls-self-signed` writes).
    #[arg(long, value_name = "PEM")]
    pub cacert: Option<PathBuf>,

    /// Print the figures as JSON.
    #[arg(long)]
    pub json: bool,

    /// Client threads (default: one per core).
    #[arg(long)]
    pub cpus: Option<usize>,

    /// Run the clients in at least N processes (with the server volley starts: each with a
    /// server, and a relay across namespaces, of its own). Default: as few as the open-file limit
    /// allows, one connection per client (two through a relay).
    #[arg(long, value_name = "N")]
    pub processes: Option<usize>,

    /// A client group's start: dial, then send the first order at this instant (milliseconds
    /// since the Unix epoch), and report histograms for the merge. Set by the parent process.
    #[arg(long, hide = true, value_name = "UNIX_MS")]
    pub start_at: Option<u64>,
}

/// One run's figures.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrdersReport {
    /// `unary` or `stream`.
    pub mode: String,
    /// Clients (connections).
    pub clients: usize,
    /// Orders sent (and answered).
    pub orders: u64,
    /// TLS on.
    pub tls: bool,
    /// Client processes the run took (each with its own server and relay when volley started
    /// them): more than one when the clients did not fit one process's open-file limit.
    #[serde(default = "one")]
    pub processes: usize,
    /// Seconds to open every client's connection.
    pub connect_seconds: f64,
    /// Seconds from the first order to the last reply.
    pub elapsed_seconds: f64,
    /// Orders per second over `elapsed_seconds`.
    pub orders_per_second: f64,
    /// Client-to-server time (server `responseTime` - client `requestTime`), microseconds.
    pub client_to_server_us: Quantiles,
    /// Round trip per order, microseconds.
    pub round_trip_us: Quantiles,
    /// This process's CPU time (user + system) per order while orders flowed, microseconds.
    pub client_cpu_us_per_order: f64,
    /// The server process's CPU time per order over the whole run (connections included), when
    /// volley started the server; microseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_cpu_us_per_order: Option<f64>,
    /// The delay each way, when run across namespaces (added by netem, or by `volley lab link` when
    /// the kernel has no netem: `delay_by`); microseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub netem_delay_us: Option<u64>,
    /// What added that delay: `netem` or `volley lab link`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_by: Option<String>,
    /// A client group's histograms, for the parent's merge (only with `--start-at`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histograms: Option<OrderHistograms>,
}

fn one() -> usize {
    1
}

/// Selected quantiles, microseconds.
#[derive(Debug, Serialize, Deserialize, Default)]
pub struct Quantiles {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

impl Quantiles {
    fn of(h: &Histogram<u64>) -> Quantiles {
        let us = |ns: u64| ns as f64 / 1000.0;
        Quantiles {
            p50: us(h.value_at_quantile(0.5)),
            p90: us(h.value_at_quantile(0.9)),
            p99: us(h.value_at_quantile(0.99)),
            max: us(h.max()),
        }
    }
}

fn endpoint(addr: &str, args: &OrdersArgs) -> Result<Endpoint> {
    let target = Addr::parse(addr).map_err(|e| anyhow!("--addr: {e}"))?;
    let mut ep = Endpoint::new(target).map_err(|e| anyhow!("--addr: {e}"))?;
    if let Some(ca) = &args.cacert {
        let opts = TlsOptions {
            ca: Some(ca.clone()),
            cert: None,
            key: None,
            skip_verify: false,
        };
        ep = ep.tls(client_config(&opts)?);
    }
    if let Some(n) = &args.server_name {
        ep = ep
            .server_name(n)
            .map_err(|e| anyhow!("--server-name: {e}"))?;
    }
    Ok(ep)
}

/// Runs the study and prints the report.
pub fn run(args: OrdersArgs, signals: Signals) -> Result<()> {
    if args.clients == 0 {
        bail!("--clients must be at least 1");
    }
    if args.count == 0 {
        bail!("--count must be at least 1");
    }
    if args.window == 0 {
        bail!("--window must be at least 1");
    }
    if args.processes == Some(0) {
        bail!("--processes must be at least 1");
    }
    let stream = match args.mode.as_str() {
        "unary" => false,
        "stream" => true,
        other => bail!("--mode must be unary or stream, not {other:?}"),
    };
    let report = match args.addr.clone() {
        Some(addr) => match groups::groups_for(&args, 1) {
            1 => measure(&addr, &args, stream)?,
            n => {
                let shares = groups::split(args.clients, args.count, n);
                let addrs = vec![addr.as_str(); shares.len()];
                groups::run_children(&std::env::current_exe()?, None, &args, &shares, &addrs)?
            }
        },
        None => own_server::with_own_server(&args, signals)?,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", text(&report));
    }
    Ok(())
}

/// Runs the clients in this process against `addr`, on the bench engine: one worker per client,
/// each on its own connection; the engine dials, times and records, the calls below send orders.
pub(super) fn measure(addr: &str, args: &OrdersArgs, stream: bool) -> Result<OrdersReport> {
    // A connection per client: the seed's 20,000 clients need more descriptors than the
    // usual soft limit of 1024 (the groups above split what one process may not hold).
    if let Err((need, limit)) = volley_server::fds::room_for(args.clients as u64) {
        bail!(
            "--clients {} needs about {need} open files and this process may open {limit} \
             (ulimit -Hn; root can raise it)",
            args.clients
        );
    }
    let ep = endpoint(addr, args)?;
    let tls = ep.tls.is_some();
    let path = if stream {
        "/orders.OrderService/AddOrder"
    } else {
        "/orders.OrderService/AddOrderUnary"
    };
    let scheme = if tls { "https" } else { "http" };
    let head =
        CallHead::new(scheme, &ep.authority, path, &[], None, false).map_err(|e| anyhow!(e))?;
    let clients = args.clients;
    let (total, call): (u64, Arc<dyn CustomCall>) = if stream {
        let orders = StreamOrders {
            head,
            count: args.count,
            clients: clients as u64,
            window: args.window,
        };
        (clients as u64, Arc::new(orders))
    } else {
        (args.count, Arc::new(UnaryOrder { head }))
    };
    let opts = RunOptions {
        stop: Stop::Calls(total),
        max_duration: None,
        duration_stop: DurationStop::Wait,
        concurrency: Ramp::constant(clients as f64),
        pace: Pace::Max,
        async_mode: false,
        // One connection per client: the engine dials each worker its own for a custom target,
        // so no channel (and no strategy) is involved.
        connections: clients,
        strategy: Strategy::Single,
        lb: volley_client::Policy::PickFirst,
        service_config: None,
        timeout: None,
        cpus: args
            .cpus
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            .max(1),
        skip_first: 0,
        count_errors: false,
        details_cap: 0,
        stream: StreamOptions::default(),
        name: String::new(),
        shard: None,
        start_at: args
            .start_at
            .map(|ms| std::time::UNIX_EPOCH + Duration::from_millis(ms)),
        abort_on: None,
        client: ClientPath::Fast,
    };
    let target = Arc::new(Target::Custom(CustomTarget { endpoint: ep, call }));
    let out = volley_bench::run(
        &opts,
        target,
        Arc::new(Control::default()),
        Observers::default(),
    )?;
    let rec = &out.recorder;
    if let Some(error) = rec.errors.keys().next() {
        bail!("{error}");
    }
    let (orders, round_trip) = if stream {
        (rec.messages_received, &rec.message_latency)
    } else {
        (rec.count, &rec.latency)
    };
    let elapsed = out.total.as_secs_f64();
    Ok(OrdersReport {
        mode: if stream { "stream" } else { "unary" }.into(),
        clients,
        orders,
        tls,
        processes: 1,
        connect_seconds: out.connect.as_secs_f64(),
        elapsed_seconds: elapsed,
        orders_per_second: orders as f64 / elapsed,
        client_to_server_us: Quantiles::of(&rec.probe),
        round_trip_us: Quantiles::of(round_trip),
        client_cpu_us_per_order: out.cpu.as_secs_f64() * 1e6 / orders.max(1) as f64,
        server_cpu_us_per_order: None,
        netem_delay_us: None,
        delay_by: None,
        histograms: args
            .start_at
            .map(|_| OrderHistograms::of(&rec.probe, round_trip)),
    })
}

/// The seed's two lines, then ours.
fn text(r: &OrdersReport) -> String {
    let q = |q: &Quantiles| {
        format!(
            "p50 {:.1} us, p90 {:.1} us, p99 {:.1} us, max {:.1} us",
            q.p50, q.p90, q.p99, q.max
        )
    };
    format!(
        "Number of clients {} and number of order transactions {}\n\
         transactions and elapsed time {:.4} in seconds\n\
         \n  {}, {}{}\n  orders/s:        {:.0}\n  client->server:  {}\n  round trip:      {}\n  \
         connect:         {:.4} s for {} connection(s){}\n  client CPU:      {:.2} us per order\n{}",
        r.clients,
        r.orders,
        r.elapsed_seconds,
        r.mode,
        if r.tls { "TLS" } else { "plaintext" },
        r.netem_delay_us
            .map(|d| format!(
                ", across namespaces with {d} us each way{}",
                r.delay_by
                    .as_deref()
                    .map(|by| format!(" ({by})"))
                    .unwrap_or_default()
            ))
            .unwrap_or_default(),
        r.orders_per_second,
        q(&r.client_to_server_us),
        q(&r.round_trip_us),
        r.connect_seconds,
        r.clients,
        if r.processes > 1 {
            format!(" in {} processes", r.processes)
        } else {
            String::new()
        },
        r.client_cpu_us_per_order,
        r.server_cpu_us_per_order
            .map(|c| format!("  server CPU:      {c:.2} us per order (whole run)\n"))
            .unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use std::{future::Future, pin::Pin};

    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: OrdersArgs,
    }

    /// `volley lab orders ARGV`'s flags.
    pub(super) fn parse<S: AsRef<str>>(argv: &[S]) -> OrdersArgs {
        Cli::try_parse_from(std::iter::once("orders").chain(argv.iter().map(AsRef::as_ref)))
            .unwrap_or_else(|e| panic!("{e}"))
            .args
    }

    fn never() -> Pin<Box<dyn Future<Output = &'static str> + Send>> {
        Box::pin(std::future::pending())
    }

    #[test]
    fn bad_flags_are_refused_before_anything_runs() {
        for (argv, said) in [
            (["--clients", "0"], "--clients must be at least 1"),
            (["--count", "0"], "--count must be at least 1"),
            (["--window", "0"], "--window must be at least 1"),
            (["--processes", "0"], "--processes must be at least 1"),
            (
                ["--mode", "both"],
                "--mode must be unary or stream, not \"both\"",
            ),
        ] {
            let e = run(parse(&argv), never).unwrap_err();
            assert_eq!(e.to_string(), said);
        }
    }

    #[test]
    fn quantiles_are_microseconds_of_a_nanosecond_histogram() {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for (ns, n) in [(100, 50), (200, 40), (1000, 9), (2000, 1)] {
            h.record_n(ns, n).unwrap();
        }
        let q = Quantiles::of(&h);
        assert_eq!((q.p50, q.p90, q.p99, q.max), (0.1, 0.2, 1.0, 2.0));
    }

    fn report() -> OrdersReport {
        OrdersReport {
            mode: "stream".into(),
            clients: 2,
            orders: 1000,
            tls: true,
            processes: 1,
            connect_seconds: 0.01234,
            elapsed_seconds: 0.5,
            orders_per_second: 2000.0,
            client_to_server_us: Quantiles {
                p50: 10.0,
                p90: 20.0,
                p99: 30.0,
                max: 40.0,
            },
            round_trip_us: Quantiles {
                p50: 100.0,
                p90: 200.0,
                p99: 300.0,
                max: 400.0,
            },
            client_cpu_us_per_order: 1.234,
            server_cpu_us_per_order: Some(5.678),
            netem_delay_us: Some(250),
            delay_by: Some("netem".into()),
            histograms: None,
        }
    }

    #[test]
    fn the_text_report_prints_the_seed_s_two_lines_then_ours() {
        assert_eq!(
            text(&report()),
            "Number of clients 2 and number of order transactions 1000\n\
             transactions and elapsed time 0.5000 in seconds\n\
             \n  stream, TLS, across namespaces with 250 us each way (netem)\n\
             \x20 orders/s:        2000\n\
             \x20 client->server:  p50 10.0 us, p90 20.0 us, p99 30.0 us, max 40.0 us\n\
             \x20 round trip:      p50 100.0 us, p90 200.0 us, p99 300.0 us, max 400.0 us\n\
             \x20 connect:         0.0123 s for 2 connection(s)\n\
             \x20 client CPU:      1.23 us per order\n\
             \x20 server CPU:      5.68 us per order (whole run)\n"
        );
        let plain = OrdersReport {
            mode: "unary".into(),
            tls: false,
            server_cpu_us_per_order: None,
            netem_delay_us: None,
            delay_by: None,
            ..report()
        };
        let t = text(&plain);
        assert!(t.contains("\n  unary, plaintext\n"), "{t}");
        assert!(t.ends_with("  client CPU:      1.23 us per order\n"), "{t}");
    }

    #[test]
    fn the_json_report_leaves_out_what_was_not_measured() {
        let plain = OrdersReport {
            server_cpu_us_per_order: None,
            netem_delay_us: None,
            delay_by: None,
            ..report()
        };
        let v = serde_json::to_value(&plain).unwrap();
        assert_eq!(v["ordersPerSecond"], 2000.0);
        assert_eq!(v["roundTripUs"]["p99"], 300.0);
        for k in ["serverCpuUsPerOrder", "netemDelayUs", "delayBy"] {
            assert!(v.get(k).is_none(), "{k}");
        }
        // The parent reads the child's JSON back.
        let back: OrdersReport =
            serde_json::from_str(&serde_json::to_string(&report()).unwrap()).unwrap();
        assert_eq!(back.delay_by.as_deref(), Some("netem"));
        assert_eq!(back.netem_delay_us, Some(250));
    }
}
