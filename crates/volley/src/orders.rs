//! `volley orders`: seed 004's study. `--clients N` clients, each on its own connection, send
//! `--count M` orders in all (split evenly) to `orders.OrderService`, stamped with `requestTime`;
//! the server stamps `responseTime`. Unary: one call per order, one after another per client.
//! Stream: one bidi stream per client, orders pipelined (at most `--window` unanswered), replies
//! matched in order. Per order: client-to-server time (the two clocks: same host or namespaces
//! on one host share a clock) and round trip. Plaintext, or TLS with `--cacert`.
//!
//! The clients run on the bench engine (`volley_bench::run`, a [`CustomTarget`]): it dials,
//! schedules, times and records; the calls here send the orders and read the replies' stamps.
//!
//! Without `--addr` it starts its own `volley serve` process (TLS with a certificate generated
//! for the run with `--tls`; in a network namespace, the clients in another, with `--netns`) and
//! adds the server's CPU time to the report.

use std::{
    cell::RefCell,
    process::{Command, Stdio},
    sync::Arc,
    time::{Duration, Instant, SystemTime},
};

use anyhow::{Result, anyhow, bail};
use bytes::{Bytes, BytesMut};
use hdrhistogram::Histogram;
use prost::Message;
use prost_types::Timestamp;
use serde::{Deserialize, Serialize};
use volley_bench::{
    Control, CustomCall, CustomFuture, CustomTarget, DurationStop, RunOptions, StreamOptions,
    Target, plan::schedule::Ramp, recorder::Recorder,
};
use volley_client::{
    CallHead, Connection, Endpoint, Strategy,
    call::{attempt_with, transport_status},
    endpoint::Target as Addr,
    tls::{TlsOptions, client_config},
};
use volley_services::pb::orders::{Order, OrderReply};
use volley_wire::{Code, Status, codec::FrameDecoder};

use crate::cli::OrdersArgs;

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
    /// The netem delay each way, when run across namespaces; microseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub netem_delay_us: Option<u64>,
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

/// Records an order's client-to-server time (server `responseTime` - client `requestTime`) as
/// the run's probe figure.
fn record_c2s(rec: &RefCell<Recorder>, sent_wall: SystemTime, reply: &OrderReply) {
    if let Some(at) = &reply.response_time {
        let server = SystemTime::UNIX_EPOCH
            + Duration::new(at.seconds.max(0) as u64, at.nanos.max(0) as u32);
        let c2s = server
            .duration_since(sent_wall)
            .map_or(0, |d| d.as_nanos() as u64);
        rec.borrow_mut().probe.saturating_record(c2s.max(1));
    }
}

fn order(i: u64) -> (Order, SystemTime, Instant) {
    let wall = SystemTime::now();
    let o = Order {
        instrument_id: i as i64,
        price: 100 + (i % 1000) as i64,
        quantity: 1,
        side: i % 2 == 0,
        request_time: Some(Timestamp::from(wall)),
    };
    (o, wall, Instant::now())
}

fn frame(o: &Order) -> Bytes {
    volley_wire::codec::encode_frame(o)
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
pub fn run(args: OrdersArgs) -> Result<()> {
    if args.clients == 0 {
        bail!("--clients must be at least 1");
    }
    if args.count == 0 {
        bail!("--count must be at least 1");
    }
    if args.window == 0 {
        bail!("--window must be at least 1");
    }
    let stream = match args.mode.as_str() {
        "unary" => false,
        "stream" => true,
        other => bail!("--mode must be unary or stream, not {other:?}"),
    };
    let report = match args.addr.clone() {
        Some(addr) => measure(&addr, &args, stream)?,
        None => with_own_server(&args)?,
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
fn measure(addr: &str, args: &OrdersArgs, stream: bool) -> Result<OrdersReport> {
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
        total,
        duration: None,
        max_duration: None,
        duration_stop: DurationStop::Wait,
        concurrency: Ramp::constant(clients as f64),
        rate: None,
        async_mode: false,
        connections: clients,
        strategy: Strategy::Pool(clients),
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
        progress: None,
    };
    let target = Arc::new(Target::Custom(CustomTarget { endpoint: ep, call }));
    let out = volley_bench::run(&opts, target, Arc::new(Control::default()))?;
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
        connect_seconds: out.connect.as_secs_f64(),
        elapsed_seconds: elapsed,
        orders_per_second: orders as f64 / elapsed,
        client_to_server_us: Quantiles::of(&rec.probe),
        round_trip_us: Quantiles::of(round_trip),
        client_cpu_us_per_order: out.cpu.as_secs_f64() * 1e6 / orders.max(1) as f64,
        server_cpu_us_per_order: None,
        netem_delay_us: None,
    })
}

/// Starts `volley serve` (in the server namespace with --netns), runs the clients (in the client
/// namespace with --netns, as a child `volley orders`), stops the server, removes the namespaces.
fn with_own_server(args: &OrdersArgs) -> Result<OrdersReport> {
    let exe = std::env::current_exe()?;
    let ns = args.netns.map(crate::netns::Netns::create).transpose()?;
    let host = if ns.is_some() {
        crate::netns::SERVER_IP
    } else {
        "127.0.0.1"
    };
    let tls_dir = std::env::temp_dir().join(format!("volley-orders-tls-{}", std::process::id()));
    let mut server = match &ns {
        Some(n) => crate::netns::Netns::exec(&n.server, &exe),
        None => Command::new(&exe),
    };
    server.args(["serve", "--addr", &format!("{host}:0"), "--threads"]);
    server.arg(args.server_threads.to_string());
    if args.tls {
        server
            .args(["--tls-self-signed", "--tls-dir"])
            .arg(&tls_dir);
    }
    let mut server = crate::child::Child::start(server)?;
    let result = (|| {
        let mut client_args = args.clone_for_child(&server.addr);
        if args.tls {
            client_args.cacert = Some(tls_dir.join("ca.pem"));
            client_args.server_name = Some("localhost".into());
        }
        let mut report = match &ns {
            None => measure(&server.addr, &client_args, args.mode == "stream")?,
            Some(n) => {
                let mut c = crate::netns::Netns::exec(&n.client, &exe);
                c.args(client_args.to_argv())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped());
                let child = c.spawn()?;
                crate::netns::track(child.id());
                let out = child.wait_with_output()?;
                if !out.status.success() {
                    bail!(
                        "the clients failed: {}",
                        String::from_utf8_lossy(&out.stderr).trim()
                    );
                }
                serde_json::from_slice::<OrdersReport>(&out.stdout)
                    .map_err(|e| anyhow!("cannot read the clients' report: {e}"))?
            }
        };
        let cpu = server.cpu();
        report.server_cpu_us_per_order =
            Some(cpu.as_secs_f64() * 1e6 / report.orders.max(1) as f64);
        report.netem_delay_us = args.netns.map(|d| d.as_micros() as u64);
        Ok(report)
    })();
    server.stop();
    let _ = std::fs::remove_dir_all(&tls_dir);
    drop(ns);
    result
}

impl OrdersArgs {
    /// The same run, against `addr`, printing JSON (for the child in the client namespace).
    fn clone_for_child(&self, addr: &str) -> OrdersArgs {
        OrdersArgs {
            addr: Some(addr.to_owned()),
            tls: false,
            netns: None,
            json: true,
            cacert: self.cacert.clone(),
            server_name: self.server_name.clone(),
            mode: self.mode.clone(),
            clients: self.clients,
            count: self.count,
            window: self.window,
            cpus: self.cpus,
            server_threads: self.server_threads,
        }
    }

    fn to_argv(&self) -> Vec<String> {
        let mut v: Vec<String> = vec!["orders".into(), "--json".into()];
        let mut kv = |k: &str, val: String| {
            v.push(k.into());
            v.push(val);
        };
        kv("--addr", self.addr.clone().unwrap_or_default());
        kv("--mode", self.mode.clone());
        kv("--clients", self.clients.to_string());
        kv("--count", self.count.to_string());
        kv("--window", self.window.to_string());
        if let Some(c) = &self.cacert {
            kv("--cacert", c.display().to_string());
        }
        if let Some(n) = &self.server_name {
            kv("--server-name", n.clone());
        }
        if let Some(c) = self.cpus {
            kv("--cpus", c.to_string());
        }
        v
    }
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
         connect:         {:.4} s for {} connection(s)\n  client CPU:      {:.2} us per order\n{}",
        r.clients,
        r.orders,
        r.elapsed_seconds,
        r.mode,
        if r.tls { "TLS" } else { "plaintext" },
        r.netem_delay_us
            .map(|d| format!(", across namespaces with {d} us netem each way"))
            .unwrap_or_default(),
        r.orders_per_second,
        q(&r.client_to_server_us),
        q(&r.round_trip_us),
        r.connect_seconds,
        r.clients,
        r.client_cpu_us_per_order,
        r.server_cpu_us_per_order
            .map(|c| format!("  server CPU:      {c:.2} us per order (whole run)\n"))
            .unwrap_or_default(),
    )
}

/// `--mode unary`: call number `i` is one order, answered before the worker sends the next.
struct UnaryOrder {
    head: CallHead,
}

impl CustomCall for UnaryOrder {
    fn call<'a>(
        &'a self,
        conn: &'a Connection,
        i: u64,
        rec: &'a RefCell<Recorder>,
    ) -> CustomFuture<'a> {
        Box::pin(async move {
            let (o, wall, _) = order(i);
            let mut kept = BytesMut::new();
            attempt_with(conn.sender(), &self.head, frame(&o), Some(&mut kept))
                .await
                .map_err(|f| f.status)?;
            let msg = volley_wire::codec::first_message(&kept.freeze())
                .ok_or_else(|| Status::internal("no reply message"))?;
            let len = msg.len();
            let reply = OrderReply::decode(msg).map_err(|e| Status::internal(e.to_string()))?;
            record_c2s(rec, wall, &reply);
            Ok(len)
        })
    }
}

/// `--mode stream`: call number `i` is client `i`'s bidi stream, carrying its share of the
/// orders.
struct StreamOrders {
    head: CallHead,
    count: u64,
    clients: u64,
    window: usize,
}

impl CustomCall for StreamOrders {
    fn call<'a>(
        &'a self,
        conn: &'a Connection,
        i: u64,
        rec: &'a RefCell<Recorder>,
    ) -> CustomFuture<'a> {
        let share = self.count / self.clients + u64::from(i < self.count % self.clients);
        Box::pin(async move {
            stream_client(conn, &self.head, share, self.window, rec)
                .await
                .map(|()| 0)
        })
    }
}

/// One bidi stream: orders pipelined up to `window` unanswered, replies matched in order.
async fn stream_client(
    conn: &Connection,
    head: &CallHead,
    share: u64,
    window: usize,
    rec: &RefCell<Recorder>,
) -> Result<(), Status> {
    let mut send = conn
        .sender()
        .clone()
        .ready()
        .await
        .map_err(|e| transport_status(&e))?;
    let (resp, mut out) = send
        .send_request(head.request(), false)
        .map_err(|e| transport_status(&e))?;
    let mut pending = std::collections::VecDeque::with_capacity(window);
    let mut sent = 0u64;
    let mut answered = 0u64;
    let mut fill = |pending: &mut std::collections::VecDeque<(SystemTime, Instant)>,
                    out: &mut h2::SendStream<Bytes>|
     -> Result<(), Status> {
        while pending.len() < window && sent < share {
            let (o, wall, at) = order(sent);
            out.send_data(frame(&o), false)
                .map_err(|e| transport_status(&e))?;
            pending.push_back((wall, at));
            sent += 1;
            rec.borrow_mut().messages_sent += 1;
        }
        if sent == share {
            out.send_data(Bytes::new(), true)
                .map_err(|e| transport_status(&e))?;
            sent += 1; // end sent once
        }
        Ok(())
    };
    fill(&mut pending, &mut out)?;
    let resp = resp.await.map_err(|e| transport_status(&e))?;
    let (parts, mut body) = resp.into_parts();
    if let Some(s) = Status::from_headers(&parts.headers) {
        return Err(s);
    }
    let mut decoder = FrameDecoder::new(None, usize::MAX);
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(|e| transport_status(&e))?;
        let _ = body.flow_control().release_capacity(chunk.len());
        decoder.push(chunk);
        while let Some(m) = decoder.next_message()? {
            let reply = OrderReply::decode(m).map_err(|e| Status::internal(e.to_string()))?;
            let (wall, at) = pending
                .pop_front()
                .ok_or_else(|| Status::internal("a reply with no order"))?;
            {
                let mut r = rec.borrow_mut();
                let rtt = at.elapsed().as_nanos() as u64;
                r.message_latency.saturating_record(rtt.max(1));
                r.messages_received += 1;
            }
            record_c2s(rec, wall, &reply);
            answered += 1;
        }
        fill(&mut pending, &mut out)?;
    }
    let trailers = body.trailers().await.map_err(|e| transport_status(&e))?;
    match trailers.as_ref().and_then(Status::from_headers) {
        Some(s) if s.code() == Code::Ok => {}
        Some(s) => return Err(s),
        None => return Err(Status::internal("the stream ended without a status")),
    }
    if !pending.is_empty() || answered != share {
        return Err(Status::internal(format!(
            "{answered} of {share} orders answered"
        )));
    }
    Ok(())
}
