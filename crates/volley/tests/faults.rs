//! Faults and load against a real `volley serve` process: silent, stalled and slow peers cannot
//! starve others; the HTTP/2 rapid-reset pattern is bounded; `volley bench -z` ends with zero
//! errors; 10,000 concurrent streams over 100 connections run without error in flat memory.
//! (SIGTERM under load is in serve.rs; the 60 s soak is `scripts/soak`.)

use std::{
    io::{Read, Write},
    net::TcpStream,
    process::Command,
    time::{Duration, Instant},
};

use volley_server::Code;
use volley_services::pb::{
    api::GetUserRequest,
    grpc::testing::{ResponseParameters, StreamingOutputCallRequest},
};
use volley_testkit::{RawClient, Volley, frame, ok_stdout, rss_kib, tool, volley, workspace};

const VOLLEY: Volley = volley!();

/// The tests here load the machine and time calls: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// `n` sequential Users.Get calls on a fresh connection; returns the slowest.
async fn legit_calls(c: &RawClient, n: usize) -> Duration {
    let mut worst = Duration::ZERO;
    for _ in 0..n {
        let t = Instant::now();
        let r = c
            .call(
                "/api.Users/Get",
                &[],
                vec![frame(&GetUserRequest { id: 1 })],
            )
            .await
            .unwrap();
        assert_eq!(r.code(), Code::Ok, "{:?}", r.status());
        worst = worst.max(t.elapsed());
    }
    worst
}

/// True when the server closed `s` (EOF or reset) within `limit`.
fn closed_by_server(s: &mut &TcpStream, limit: Duration) -> bool {
    s.set_read_timeout(Some(limit)).unwrap();
    let mut buf = [0u8; 256];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return false,
            Err(_) => return true,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
// The guard serialises whole tests (each on its own runtime); no task of this one waits for it.
#[allow(clippy::await_holding_lock)]
async fn silent_stalled_and_slow_peers_cannot_starve_others() {
    let _serial = serial();
    let p = VOLLEY.serve(&["--threads", "1", "--handshake-timeout", "1s"]);
    let addr = p.addr();
    let rss_before = rss_kib(p.pid());

    // 300 peers that never send a preface, 100 that stop inside it.
    let silent: Vec<TcpStream> = (0..300)
        .map(|_| TcpStream::connect(addr).unwrap())
        .collect();
    let partial: Vec<TcpStream> = (0..100)
        .map(|_| {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(b"PRI * HTTP/2.0\r\n").unwrap();
            s
        })
        .collect();
    // 100 slowloris HTTP/1.1 requests: a request line and one header, then a byte now and then.
    let mut slowloris: Vec<TcpStream> = (0..100)
        .map(|_| {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(b"POST /api.Users/Get HTTP/1.1\r\nHost: x\r\nX-Slow: a")
                .unwrap();
            s
        })
        .collect();
    // 20 stalled readers: each asks for 64 MiB of replies and never reads them.
    let mut stalled = Vec::new();
    for _ in 0..20 {
        let c = RawClient::connect(addr).await.unwrap();
        let req = StreamingOutputCallRequest {
            response_parameters: (0..1024)
                .map(|_| ResponseParameters {
                    size: 64 * 1024,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let mut send = c.sender().ready().await.unwrap();
        let (resp, mut body) = send
            .send_request(
                c.request("/grpc.testing.TestService/StreamingOutputCall", &[]),
                false,
            )
            .unwrap();
        body.send_data(frame(&req), true).unwrap();
        stalled.push((c, resp, body));
    }

    // Everyone else is served promptly meanwhile.
    let c = RawClient::connect(addr).await.unwrap();
    for s in &mut slowloris {
        s.write_all(b"a").unwrap();
    }
    let worst = legit_calls(&c, 300).await;
    assert!(
        worst < Duration::from_millis(500),
        "slowest call {worst:?} beside 620 bad peers"
    );

    // The handshake timeout closes silent and half-preface peers; memory stayed bounded.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let silent_closed = silent
        .iter()
        .filter(|s| closed_by_server(&mut &**s, Duration::from_secs(2)))
        .count();
    let partial_closed = partial
        .iter()
        .filter(|s| closed_by_server(&mut &**s, Duration::from_secs(2)))
        .count();
    assert_eq!(silent_closed, 300, "silent peers closed");
    assert_eq!(
        partial_closed, 100,
        "peers stalled inside the preface closed"
    );
    let grown = rss_kib(p.pid()).saturating_sub(rss_before);
    // 20 stalled streams hold at most their flow-control windows (64 KiB each by default here)
    // plus what the handler has produced ahead: far from 20 x 64 MiB.
    assert!(grown < 96 * 1024, "server RSS grew {grown} KiB");
    let worst = legit_calls(&c, 100).await;
    assert!(worst < Duration::from_millis(500), "after: {worst:?}");
    println!(
        "bad peers: 300 silent + 100 half-preface closed after the 1 s handshake timeout; \
         slowest good call {worst:?}; server RSS +{grown} KiB"
    );
    drop(stalled);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
// The guard serialises whole tests (each on its own runtime); no task of this one waits for it.
#[allow(clippy::await_holding_lock)]
async fn rapid_reset_is_bounded() {
    let _serial = serial();
    let p = VOLLEY.serve(&["--threads", "1", "--delay", "50ms"]);
    let addr = p.addr();
    let rss_before = rss_kib(p.pid());
    let attacker = RawClient::connect(addr).await.unwrap();
    // The attack: open a stream with a whole request and reset it at once, as fast as h2 allows.
    let attack = tokio::spawn(async move {
        let body = frame(&GetUserRequest { id: 1 });
        let mut sent = 0u32;
        let t = Instant::now();
        let mut cut_off = None;
        while sent < 50_000 && t.elapsed() < Duration::from_secs(10) {
            let opened = match attacker.sender().ready().await {
                Ok(mut send) => send.send_request(attacker.request("/api.Users/Get", &[]), false),
                Err(e) => Err(e),
            };
            let (resp, mut stream) = match opened {
                Ok(s) => s,
                Err(e) => {
                    cut_off = Some(e);
                    break;
                }
            };
            // A stream the server already closed refuses data; the next open tells why.
            let _ = stream.send_data(body.clone(), true);
            stream.send_reset(h2::Reason::CANCEL);
            drop(resp);
            sent += 1;
            if sent.is_multiple_of(64) {
                tokio::task::yield_now().await;
            }
        }
        (sent, t.elapsed(), cut_off)
    });
    let c = RawClient::connect(addr).await.unwrap();
    let worst = legit_calls(&c, 40).await;
    let (sent, took, cut_off) = attack.await.unwrap();
    // A guard ends the attacking connection with GOAWAY ENHANCE_YOUR_CALM: h2's (20 remotely
    // reset streams not yet accepted) when the server falls behind, else volley's (more than
    // half of a block of 1,000 streams reset before their reply; `conn/h2.rs`).
    let e = cut_off.unwrap_or_else(|| panic!("{sent} resets in {took:?} and still connected"));
    assert!(
        e.is_go_away() && e.reason() == Some(h2::Reason::ENHANCE_YOUR_CALM),
        "attacker cut off by {e:?}"
    );
    let grown = rss_kib(p.pid()).saturating_sub(rss_before);
    assert!(
        worst < Duration::from_secs(1),
        "slowest good call {worst:?} under the attack"
    );
    assert!(
        grown < 64 * 1024,
        "server RSS grew {grown} KiB after {sent} resets"
    );
    // Still serving once the attack ends.
    legit_calls(&RawClient::connect(addr).await.unwrap(), 10).await;
    println!(
        "rapid reset: {sent} streams opened and reset in {took:?}; slowest good call {worst:?}; \
         server RSS +{grown} KiB"
    );
}

fn bench_json(args: &[&str]) -> serde_json::Value {
    let mut cmd = Command::new(VOLLEY.bin());
    cmd.arg("bench").args(args).args(["-O", "json"]);
    serde_json::from_str(&ok_stdout(&mut cmd)).unwrap()
}

/// Seed 001's duration run: ghz ends it with ~100 "transport is closing" errors (the calls its
/// clock cut off); volley leaves cut-off calls out and reports zero errors.
#[test]
fn a_duration_run_ends_with_zero_errors() {
    let _serial = serial();
    let p = VOLLEY.serve(&["--delay", "20ms"]);
    let addr = p.addr().to_string();
    let proto = workspace()
        .join("proto/grpc/hi.proto")
        .display()
        .to_string();
    let args = [
        "--insecure",
        "--proto",
        &proto,
        "--call",
        "grpc.hi/sayHello",
        "--duration=2s",
        "--concurrency=100",
        "--connections=6",
        &addr,
    ];
    let r = bench_json(&args);
    let dist = r["statusCodeDistribution"].as_object().unwrap();
    assert_eq!(dist.keys().collect::<Vec<_>>(), ["OK"], "{dist:?}");
    assert!(dist["OK"].as_u64().unwrap() > 1000, "{dist:?}");
    assert!(
        r["errorDistribution"]
            .as_object()
            .is_none_or(|e| e.is_empty()),
        "{}",
        r["errorDistribution"]
    );
    // The same run with ghz, for the record (not asserted: it is ghz's behaviour).
    let out = Command::new(tool("ghz"))
        .args(args)
        .args(["-O", "json"])
        .output()
        .unwrap();
    let g: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    println!(
        "-z 2s c=100: volley {} OK, no errors; ghz statusCodeDistribution {}",
        dist["OK"], g["statusCodeDistribution"]
    );
}

/// Samples the server's RSS while `volley bench` holds 10,000 streams open over 100 connections.
fn streams_soak(seconds: u64) -> (serde_json::Value, Vec<u64>) {
    let p = VOLLEY.serve(&[]);
    let addr = p.addr().to_string();
    let proto = workspace()
        .join("proto/grpc/testing/test.proto")
        .display()
        .to_string();
    let imports = workspace().join("proto").display().to_string();
    // Each stream lasts about a second: five replies 200 ms apart.
    let data = r#"{"response_parameters": [
        {"size": 64, "interval_us": 200000}, {"size": 64, "interval_us": 200000},
        {"size": 64, "interval_us": 200000}, {"size": 64, "interval_us": 200000},
        {"size": 64, "interval_us": 200000}]}"#;
    let pid = p.pid();
    let sampler = std::thread::spawn(move || {
        let mut samples = Vec::new();
        for _ in 0..seconds + 2 {
            std::thread::sleep(Duration::from_secs(1));
            match std::fs::read_to_string(format!("/proc/{pid}/status")) {
                Ok(_) => samples.push(rss_kib(pid)),
                Err(_) => break,
            }
        }
        samples
    });
    let duration = format!("{seconds}s");
    let r = bench_json(&[
        "--proto",
        &proto,
        "--import-paths",
        &imports,
        "--call",
        "grpc.testing.TestService/StreamingOutputCall",
        "-d",
        data,
        "--insecure",
        "-c",
        "10000",
        "--connections",
        "100",
        "-z",
        &duration,
        &addr,
    ]);
    let samples = sampler.join().unwrap();
    (r, samples)
}

#[test]
fn ten_thousand_streams_over_a_hundred_connections_in_flat_memory() {
    let _serial = serial();
    // 12 s in the test suite; scripts/soak sets 60.
    let secs: u64 = std::env::var("VOLLEY_SOAK_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(12);
    let (r, rss) = streams_soak(secs);
    let dist = r["statusCodeDistribution"].as_object().unwrap();
    assert_eq!(
        dist.keys().collect::<Vec<_>>(),
        ["OK"],
        "{dist:?} {}",
        r["errorDistribution"]
    );
    // 10,000 workers each keep one stream of ~1 s open (longer when 2 cores run server and
    // generator, in a debug build ~1.8 s): well over 3,000 finish per second only if thousands
    // are open at once.
    let ok = dist["OK"].as_u64().unwrap();
    assert!(
        ok > 3_000 * secs,
        "only {ok} streams finished: not 10,000 at a time"
    );
    // Flat: after the first seconds (pools and buffers filled), RSS stays within 20%.
    let warm = rss[3];
    let peak = *rss[3..rss.len().min(secs as usize)].iter().max().unwrap();
    assert!(
        peak <= warm + warm / 5,
        "RSS grew from {warm} to {peak} KiB: {rss:?}"
    );
    println!(
        "10k streams / 100 conns, {secs} s: {ok} streams OK; server RSS KiB per second {rss:?}"
    );
}
