//! Faults during `volley bench` runs, from outside: a server killed (SIGKILL) and started again on
//! its port, a link partitioned, connections reset, chunks lost as TCP loses them (late) and
//! chunks dropped for good by `volley lab link`. Where a service-config retry policy allows a
//! retry, no call is lost; where it does not, the failures are counted by status and every call
//! is in the report; the latency figures show the gap. Bytes dropped for good show what a retry
//! policy cannot recover (the call never fails, it times out, and DEADLINE_EXCEEDED is not
//! retried) and what a hedging policy does.
//! (One backend of three killed mid-run is in balance.rs.)

use std::{
    net::TcpListener,
    process::{Child, Stdio},
    time::Duration,
};

use serde_json::Value;
use volley_testkit::{Volley, VolleyProcess, json_report, latency_ms, volley};

const VOLLEY: Volley = volley!();

/// These runs time calls and kill processes: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Retries UNAVAILABLE up to five attempts, backing off 0.5 s, 1 s, 2 s (each drawn uniformly
/// below its bound, as gRPC does): time enough to ride out a restart.
const RETRY: &str = r#"{"methodConfig": [{"name": [{"service": "api.Users"}],
    "retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.5s", "maxBackoff": "2s",
    "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#;

/// Starts `volley bench` of api.Users.Get against `target`: `n` calls at `rps` per second over 20
/// workers, a JSON report, then `flags`.
fn start_bench(target: &str, n: usize, rps: usize, flags: &[&str]) -> Child {
    let (n, rps) = (n.to_string(), rps.to_string());
    let mut args = vec![
        "bench",
        "--insecure",
        "--call",
        "api.Users.Get",
        "-d",
        r#"{"id":228}"#,
        "-O",
        "json",
        "-n",
        &n,
        "--rps",
        &rps,
        "-c",
        "20",
    ];
    args.extend_from_slice(flags);
    args.push(target);
    VOLLEY
        .command(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run volley bench")
}

fn finish(child: Child) -> Value {
    json_report(&child.wait_with_output().expect("volley bench ends"))
}

fn count(report: &Value, status: &str) -> u64 {
    report["statusCodeDistribution"][status]
        .as_u64()
        .unwrap_or(0)
}

/// Every call asked for is in the report, as one status or another.
fn all_counted(report: &Value, n: u64) {
    let total: u64 = report["statusCodeDistribution"]
        .as_object()
        .expect("statusCodeDistribution")
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(total, n, "{}", report["statusCodeDistribution"]);
    assert_eq!(report["count"], n);
}

fn slowest_ms(report: &Value) -> f64 {
    report["slowest"].as_f64().expect("slowest") / 1e6
}

/// A free loopback port (bound and let go).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn serve_on(port: u16) -> VolleyProcess {
    let addr = format!("127.0.0.1:{port}");
    VolleyProcess::start(VOLLEY.bin(), &["serve", "--addr", &addr, "--threads", "1"])
}

/// 1500 calls at 500/s; 1 s in, the server is killed and started again on its port. Its status
/// counts and report.
fn restart_mid_run(flags: &[&str]) -> Value {
    let port = free_port();
    let mut server = serve_on(port);
    let bench = start_bench(&format!("127.0.0.1:{port}"), 1500, 500, flags);
    std::thread::sleep(Duration::from_secs(1));
    server.signal("KILL");
    server.wait_exit(Duration::from_secs(5)).expect("killed");
    let _again = serve_on(port);
    finish(bench)
}

#[test]
fn a_server_killed_and_restarted_loses_no_call_under_a_retry_policy() {
    let _one = serial();
    let report = restart_mid_run(&["--service-config", RETRY]);
    all_counted(&report, 1500);
    assert_eq!(count(&report, "OK"), 1500, "{report}");
    // The calls that waited out the restart show in the figures.
    println!(
        "restart, retry policy: slowest {:.0} ms, p99 {:.1} ms",
        slowest_ms(&report),
        latency_ms(&report, 99)
    );

    // Without the policy, the calls in flight and those made while the port was closed fail,
    // counted as UNAVAILABLE; the rest succeed.
    let report = restart_mid_run(&[]);
    all_counted(&report, 1500);
    let (ok, unavailable) = (count(&report, "OK"), count(&report, "Unavailable"));
    assert!(ok > 500 && unavailable > 0, "{report}");
    assert_eq!(ok + unavailable, 1500, "{report}");
}

fn link(to: &str, flags: &[&str]) -> VolleyProcess {
    let mut args = vec!["lab", "link", "--listen", "127.0.0.1:0", "--to", to];
    args.extend_from_slice(flags);
    VolleyProcess::start(VOLLEY.bin(), &args)
}

#[test]
fn a_partition_fails_the_calls_whose_deadline_it_outlasts_and_delays_the_others() {
    let _one = serial();
    let server = VOLLEY.serve(&["--threads", "1"]);
    // 1.2 s without a byte, from 1.5 s in (the link starts before the run, about 0.5 s ahead).
    let l = link(server.target(), &["--partition", "1200ms@1500ms"]);
    let bench = start_bench(
        l.target(),
        1000,
        400,
        &["--timeout", "300ms", "--service-config", RETRY],
    );
    let report = finish(bench);
    all_counted(&report, 1000);
    // DEADLINE_EXCEEDED is not retried (the policy names UNAVAILABLE only), so each call the
    // partition held past its deadline is counted as such; the calls after it succeed on the
    // same connection once the held bytes pass.
    let (ok, late) = (count(&report, "OK"), count(&report, "DeadlineExceeded"));
    assert!(late >= 50 && ok >= 500, "{report}");
    assert_eq!(ok + late, 1000, "{report}");
    assert!(
        l.log().contains("partitioned for 1.2s at 1.5s"),
        "{}",
        l.log()
    );

    // With no deadline to miss, every call succeeds; the slowest waited out the partition.
    let l = link(server.target(), &["--partition", "800ms@1s"]);
    let report = finish(start_bench(l.target(), 600, 300, &[]));
    all_counted(&report, 600);
    assert_eq!(count(&report, "OK"), 600, "{report}");
    assert!(slowest_ms(&report) >= 400.0, "{report}");
}

#[test]
fn resets_fail_calls_in_flight_unless_a_policy_retries_them() {
    let _one = serial();
    let server = VOLLEY.serve(&["--threads", "1", "--delay", "5ms"]);
    let l = link(server.target(), &["--reset", "0.5%"]);
    let report = finish(start_bench(
        l.target(),
        1500,
        1000,
        &["--service-config", RETRY],
    ));
    all_counted(&report, 1500);
    assert_eq!(count(&report, "OK"), 1500, "{report}");
    let resets = l.log().matches("reset a connection").count();
    assert!(resets >= 2, "the link reset connections: {}", l.log());

    let l = link(server.target(), &["--reset", "0.5%"]);
    let report = finish(start_bench(l.target(), 1500, 1000, &[]));
    all_counted(&report, 1500);
    let (ok, unavailable) = (count(&report, "OK"), count(&report, "Unavailable"));
    assert!(unavailable > 0 && ok + unavailable == 1500, "{report}");
    println!(
        "resets without a policy: {report}",
        report = report["statusCodeDistribution"]
    );
}

#[test]
fn chunks_lost_as_tcp_loses_them_delay_calls_by_a_retransmission_and_fail_none() {
    let _one = serial();
    let server = VOLLEY.serve(&["--threads", "1"]);
    // About ten chunks of the 2000 or so each way are lost; each holds up its connection (and
    // every call on it) for 200 ms.
    let l = link(server.target(), &["--retransmit", "0.5%"]);
    let report = finish(start_bench(l.target(), 1000, 200, &[]));
    all_counted(&report, 1000);
    assert_eq!(count(&report, "OK"), 1000, "{report}");
    let (p50, p99) = (latency_ms(&report, 50), latency_ms(&report, 99));
    println!("0.5% loss: p50 {p50:.1} ms, p99 {p99:.1} ms");
    assert!(p50 < 100.0, "most calls meet no loss: p50 {p50} ms");
    assert!(
        slowest_ms(&report) >= 200.0,
        "a lost chunk arrives 200 ms late: slowest {} ms",
        slowest_ms(&report)
    );
}

/// Hedges api.Users: up to three attempts, a new one every 100 ms until one answers.
const HEDGE: &str = r#"{"methodConfig": [{"name": [{"service": "api.Users"}],
    "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.1s",
    "nonFatalStatusCodes": ["UNAVAILABLE"]}}]}"#;

#[test]
fn bytes_dropped_for_good_time_calls_out_which_only_hedging_recovers() {
    let _one = serial();
    let server = VOLLEY.serve(&["--threads", "1"]);
    let run = |flags: &[&str]| {
        let l = link(server.target(), &["--drop", "0.5%"]);
        let mut all = vec!["--timeout", "1s"];
        all.extend_from_slice(flags);
        let report = finish(start_bench(l.target(), 1500, 500, &all));
        let dropped = l.log().matches("dropped").count();
        all_counted(&report, 1500);
        println!(
            "--drop 0.5% {flags:?}: {} chunks dropped, {}",
            dropped, report["statusCodeDistribution"]
        );
        assert!(dropped >= 2, "the link dropped chunks: {}", l.log());
        report
    };
    // A request or a reply whose bytes vanish never fails: it waits for its deadline. Measured
    // (three runs each): 5-21 of 1,500 DEADLINE_EXCEEDED, the rest OK, with or without the
    // retry policy, which retries UNAVAILABLE and so never sees these calls.
    for flags in [&[][..], &["--service-config", RETRY][..]] {
        let report = run(flags);
        let (ok, late) = (count(&report, "OK"), count(&report, "DeadlineExceeded"));
        assert!(late > 0, "{flags:?}: {report}");
        assert_eq!(ok + late, 1500, "{flags:?}: {report}");
    }
    // A hedging policy sends the call again after 100 ms whatever became of the first attempt:
    // every call succeeds (1,500 of 1,500 in two runs), the hedged ones 100 ms late.
    let report = run(&["--service-config", HEDGE]);
    assert_eq!(count(&report, "OK"), 1500, "{report}");
    assert!(slowest_ms(&report) >= 100.0, "{report}");
}
