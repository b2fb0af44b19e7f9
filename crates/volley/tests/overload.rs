//! Load shedding: `volley serve --delay 50ms --max-in-flight 200` (a capacity of 200 / 50 ms =
//! 4000 calls/s) under `volley bench --rps 8000`, twice that: the calls beyond the limit are
//! refused with RESOURCE_EXHAUSTED at once, the accepted ones keep p99 under twice the delay and
//! come at the capacity's rate, the server's own metrics count the refusals, and health checks
//! are still answered. The connection cap (`--max-connections`), memory per idle connection
//! (10,000 of them, the server's RSS read before and after), and an exhausted open-file limit
//! (one log line, and recovery once peers leave).

use std::{
    io::{Read, Write},
    process::Command,
};

use volley_testkit::{Volley, fails_in_one_line, json_report, latency_ms, ok_stdout, tool, volley};

const VOLLEY: Volley = volley!();

/// These tests load the machine (8000 calls/s, 10,000 connections, 100 busy connections) and
/// measure rates and latencies: one at a time, so none measures another's load.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Server memory per idle connection this test allows: the goal. Measured here: 7.5 KiB
/// in this debug build, 7.7 KiB in the release build (BENCHMARKS.md).
const MAX_KIB_PER_IDLE_CONNECTION: f64 = 8.0;

#[test]
fn calls_beyond_the_limit_are_refused_and_the_accepted_keep_their_latency() {
    let _alone = alone();
    let server = VOLLEY.serve(&["--delay", "50ms", "--max-in-flight", "200", "--metrics"]);
    let addr = server.addr().to_string();
    let out = VOLLEY
        .command(&[
            "bench",
            "--insecure",
            "--call",
            "api.Users.Get",
            "-d",
            r#"{"id":228}"#,
            "--rps",
            "8000",
            "-n",
            "16000",
            "-c",
            "800",
            "-O",
            "json",
            &addr,
        ])
        .output()
        .expect("run volley bench");
    let r = json_report(&out);
    let status = &r["statusCodeDistribution"];
    let ok = status["OK"].as_u64().unwrap_or(0);
    let refused = status["ResourceExhausted"].as_u64().unwrap_or(0);
    assert_eq!(
        ok + refused,
        16000,
        "only OK and RESOURCE_EXHAUSTED: {status}"
    );
    assert!(refused > 0, "{status}");
    let errors = r["errorDistribution"].to_string();
    assert!(
        errors.contains("the server is at its limit of 200 calls in flight"),
        "{errors}"
    );

    // The accepted calls kept every slot busy: by Little's law, slots in use = accepted rate x
    // the time each holds one, and the client sees each call (the median here: ghz's mean
    // counts the refused calls too) for at least as long as the server holds its slot. The rate
    // itself depends on the machine: 2844/s on the 2-core CI machine (stop 56), under the 3000/s
    // this test used to ask. Slots busy, measured: 0.98 (0.976-0.988, 3586-3618/s) on an idle 2-core machine;
    // 0.91 (2814/s) with one core taken by a busy loop. A limiter that leaked slots or held them
    // after the answer would keep fewer busy; 0.8 is the bound (0.11 under the loaded figure).
    // The rate never goes above the capacity.
    let seconds = r["total"].as_f64().unwrap() / 1e9;
    let accepted_rate = ok as f64 / seconds;
    let median_s = latency_ms(&r, 50) / 1e3;
    let busy = accepted_rate * median_s / 200.0;
    assert!(
        busy >= 0.8 && accepted_rate <= 4600.0,
        "accepted {ok} calls in {seconds:.2} s: {accepted_rate:.0}/s each held a median {:.1} ms: {busy:.2} of the slots busy",
        median_s * 1e3
    );
    // Their latency (errors are not in the distribution) stayed under twice the delay.
    let p99 = latency_ms(&r, 99);
    assert!(p99 < 100.0, "p99 of the accepted calls: {p99} ms");

    // The server's metrics count the refusals under their status.
    let metrics =
        ok_stdout(Command::new(tool("curl")).args(["-sf", &format!("http://{addr}/metrics")]));
    let counted = metrics
        .lines()
        .find_map(|l| {
            l.strip_prefix(
                r#"grpc_server_call_duration_seconds_count{grpc_method="api.Users/Get",grpc_status="RESOURCE_EXHAUSTED"} "#,
            )
        })
        .map_or(0, |v| v.trim().parse::<f64>().unwrap_or(0.0) as u64);
    assert_eq!(counted, refused, "{metrics}");
}

#[test]
fn health_checks_pass_while_every_call_slot_is_taken() {
    let _alone = alone();
    let server = VOLLEY.serve(&["--delay", "3s", "--max-in-flight", "1"]);
    let addr = server.addr().to_string();
    // One call holds the only slot for 3 s (from its start, well within the first 1.5 s).
    let mut holder = VOLLEY
        .command(&[
            "bench",
            "--insecure",
            "--call",
            "api.Users.Get",
            "-n",
            "1",
            "-c",
            "1",
            &addr,
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("run volley bench");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let refused = Command::new(tool("grpcurl"))
        .args(["-plaintext", "-d", r#"{"id":1}"#, &addr, "api.Users/Get"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("ResourceExhausted"), "{said}");
    let health = ok_stdout(Command::new(tool("grpcurl")).args([
        "-plaintext",
        &addr,
        "grpc.health.v1.Health/Check",
    ]));
    assert!(health.contains("SERVING"), "{health}");
    assert!(holder.wait().unwrap().success());

    let line = fails_in_one_line(&mut VOLLEY.command(&["serve", "--max-in-flight", "0"]));
    assert!(line.contains("--max-in-flight"), "{line}");
}

/// What a raw HTTP/2 client is told on connecting: everything the server sends before it closes
/// (or within 2 s).
fn told_on_connecting(addr: &str) -> Vec<u8> {
    let mut raw = std::net::TcpStream::connect(addr).unwrap();
    raw.set_read_timeout(Some(std::time::Duration::from_secs(2)))
        .unwrap();
    raw.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
        .unwrap();
    let mut got = Vec::new();
    let _ = raw.read_to_end(&mut got);
    got
}

/// Whether `got` is the cap's answer: the server's SETTINGS, then GOAWAY with the reason.
fn is_refusal(got: &[u8]) -> bool {
    got.len() > 18 && got[3] == 0x4 && got[12] == 0x7 && got.ends_with(b"too many connections")
}

#[test]
fn a_connection_over_the_cap_gets_goaway_and_the_others_keep_calling() {
    let _alone = alone();
    let server = VOLLEY.serve(&["--max-connections", "100", "--metrics"]);
    let addr = server.addr().to_string();
    // 100 connections busy for 4 s.
    let busy = VOLLEY
        .command(&[
            "bench",
            "--insecure",
            "--call",
            "api.Users.Get",
            "-d",
            r#"{"id":228}"#,
            "-c",
            "100",
            "--connections",
            "100",
            "-z",
            "4s",
            "-O",
            "json",
            &addr,
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run volley bench");
    // Until the 100 are open (a probe that finds a slot is served and closed at once).
    std::thread::sleep(std::time::Duration::from_millis(1000));
    let full = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut probes = 0;
    let got = loop {
        probes += 1;
        let got = told_on_connecting(&addr);
        if is_refusal(&got) || std::time::Instant::now() > full {
            break got;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(is_refusal(&got), "after {probes} probes: {got:?}");
    // The 101st, from a client we did not write.
    let over = Command::new(tool("grpcurl"))
        .args(["-plaintext", "-d", r#"{"id":1}"#, &addr, "api.Users/Get"])
        .output()
        .unwrap();
    assert!(
        !over.status.success(),
        "grpcurl was served: {}",
        String::from_utf8_lossy(&over.stdout)
    );

    let out = busy.wait_with_output().unwrap();
    let r = json_report(&out);
    let status = r["statusCodeDistribution"].as_object().unwrap();
    assert_eq!(status.keys().collect::<Vec<_>>(), ["OK"], "{status:?}");
    assert!(
        server
            .log()
            .contains("refused connections over --max-connections 100")
    );
    // The server's metrics count them: the refused probe and grpcurl's attempts at least, and
    // the bench's 100 among the accepted; once the bench's have closed, only the scrape is open.
    let value = |text: &str, name: &str| -> f64 {
        let line = text.lines().find(|l| l.starts_with(&format!("{name} ")));
        line.and_then(|l| l.split(' ').nth(1)?.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in\n{text}"))
    };
    let settled = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let text = loop {
        let text =
            ok_stdout(Command::new(tool("curl")).args(["-sf", &format!("http://{addr}/metrics")]));
        if value(&text, "volley_server_connections_open") == 1.0
            || std::time::Instant::now() > settled
        {
            break text;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(
        value(&text, "volley_server_connections_open"),
        1.0,
        "{text}"
    );
    assert!(
        value(&text, "volley_server_connections_refused_total") >= 2.0,
        "{text}"
    );
    assert!(
        value(&text, "volley_server_connections_accepted_total") >= 101.0,
        "{text}"
    );
}

/// Opens `n` plaintext HTTP/2 connections that each read the server's SETTINGS and stay quiet.
fn idle_connections(addr: &str, n: usize) -> Vec<std::net::TcpStream> {
    (0..n)
        .map(|_| {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
                .unwrap();
            let mut head = [0u8; 9];
            s.read_exact(&mut head).unwrap();
            let mut payload =
                vec![0u8; u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize];
            s.read_exact(&mut payload).unwrap();
            s
        })
        .collect()
}

#[test]
fn ten_thousand_idle_connections_cost_little_server_memory() {
    let _alone = alone();
    // This process needs a descriptor per connection too (volley serve raises its own limit).
    let limit = volley_server::fds::raise_open_files().unwrap_or(1024) as usize;
    let n = 10_000.min(limit.saturating_sub(200));
    assert!(n >= 1000, "open-file limit {limit}: too low to measure");
    let server = VOLLEY.serve(&["--threads", "1"]);
    let addr = server.addr().to_string();
    drop(idle_connections(&addr, 100));
    std::thread::sleep(std::time::Duration::from_millis(500));
    let before = volley_testkit::rss_kib(server.pid());
    let conns = idle_connections(&addr, n);
    std::thread::sleep(std::time::Duration::from_secs(1));
    let after = volley_testkit::rss_kib(server.pid());
    let per = after.saturating_sub(before) as f64 / n as f64;
    eprintln!("{per:.1} KiB per idle connection over {n}");
    assert!(
        per <= MAX_KIB_PER_IDLE_CONNECTION,
        "{per:.1} KiB per idle connection over {n}"
    );
    drop(conns);
}

#[test]
fn running_out_of_file_descriptors_logs_one_line_and_recovers() {
    let _alone = alone();
    let server = VOLLEY.serve(&["--threads", "1"]);
    let addr = server.addr().to_string();
    let pid = rustix::process::Pid::from_raw(server.pid() as i32);
    let low = rustix::process::Rlimit {
        current: Some(64),
        maximum: Some(64),
    };
    rustix::process::prlimit(pid, rustix::process::Resource::Nofile, low).unwrap();
    // More connections than it can take: the rest wait in the listen queue while accept fails.
    let held: Vec<_> = (0..120)
        .map(|_| std::net::TcpStream::connect(&addr).unwrap())
        .collect();
    std::thread::sleep(std::time::Duration::from_secs(2));
    let lines = server.log().matches("accept failed").count();
    assert_eq!(
        lines,
        1,
        "one line for 2 s of failed accepts:\n{}",
        server.log()
    );
    drop(held);
    std::thread::sleep(std::time::Duration::from_millis(500));
    let ok = ok_stdout(Command::new(tool("grpcurl")).args([
        "-plaintext",
        &addr,
        "grpc.health.v1.Health/Check",
    ]));
    assert!(ok.contains("SERVING"), "{ok}");
}
