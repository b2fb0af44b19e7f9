//! `MockServer`'s costs, measured (BENCHMARKS.md, "The mock in Rust tests"):
//!
//! - start to first answer: `MockServer::start`, one mock mounted, one call answered through
//!   the in-process channel (a fresh connection), timed whole, `--starts` times;
//! - a call's cost through the in-process channel against the same call through the loopback
//!   socket: `--calls` sequential unary calls each way, alternated over `--rounds` rounds, wall
//!   time and the process's CPU time per call.
//!
//! `cargo run --release -p volley-mock --example mockserver -- [--starts N] [--calls N] [--rounds N]`

use std::time::{Duration, Instant};

use volley_client::{Channel, Grpc, Request, Strategy};
use volley_mock::testing::{Mock, MockServer, method, reply};
use volley_proto::pb::health::{HealthCheckRequest, HealthCheckResponse};

const CHECK: &str = "/grpc.health.v1.Health/Check";

/// This thread's CPU time (`/proc/thread-self/schedstat`, ns): the runtime is current-thread,
/// so the client, the server and their pipes or sockets all run here.
fn cpu() -> Duration {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let ns = text
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    Duration::from_nanos(ns)
}

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn descriptors() -> Vec<u8> {
    volley_mock::health::pool().encode_to_vec()
}

async fn server() -> MockServer {
    let s = MockServer::start(descriptors()).await;
    Mock::given(method("grpc.health.v1.Health/Check"))
        .respond_with(reply(HealthCheckResponse { status: 1 }))
        .mount(&s)
        .await;
    s
}

async fn call(g: &Grpc) {
    let r: volley_client::Response<HealthCheckResponse> = g
        .unary(CHECK, Request::new(HealthCheckRequest::default()))
        .await
        .expect("the mock answers");
    assert_eq!(r.get_ref().status, 1);
}

/// `n` calls on `g`: wall and CPU per call.
async fn calls(g: &Grpc, n: usize) -> (Duration, Duration) {
    call(g).await;
    let (t, c) = (Instant::now(), cpu());
    for _ in 0..n {
        call(g).await;
    }
    (t.elapsed() / n as u32, (cpu() - c) / n as u32)
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (starts, n, rounds) = (
        arg("--starts", 200),
        arg("--calls", 20_000),
        arg("--rounds", 3),
    );
    rt.block_on(async {
        let mut took = Vec::new();
        for _ in 0..starts {
            let t = Instant::now();
            let s = server().await;
            call(&Grpc::new(s.channel())).await;
            took.push(t.elapsed());
        }
        took.sort();
        let q = |p: f64| took[((took.len() - 1) as f64 * p) as usize];
        println!(
            "start to first answer ({starts} starts): p50 {:?}, p90 {:?}, max {:?}",
            q(0.5),
            q(0.9),
            took[took.len() - 1]
        );
        let s = server().await;
        let mem = Grpc::new(s.channel());
        let tcp = Grpc::new(Channel::new(
            volley_client::Endpoint::from_target_str(&s.uri()).unwrap(),
            Strategy::Single,
        ));
        for r in 1..=rounds {
            let (mw, mc) = calls(&mem, n).await;
            let (tw, tc) = calls(&tcp, n).await;
            println!(
                "round {r}: in-process {:.1} us wall, {:.1} us CPU per call; loopback {:.1} us \
                 wall, {:.1} us CPU; in-process/loopback CPU {:.2}",
                mw.as_secs_f64() * 1e6,
                mc.as_secs_f64() * 1e6,
                tw.as_secs_f64() * 1e6,
                tc.as_secs_f64() * 1e6,
                mc.as_secs_f64() / tc.as_secs_f64()
            );
        }
    });
}
