//! Load shedding: `volley serve --delay 50ms --max-in-flight 200` (a capacity of 200 / 50 ms =
//! 4000 calls/s) under `volley bench --rps 8000`, twice that: the calls beyond the limit are
//! refused with RESOURCE_EXHAUSTED at once, the accepted ones keep p99 under twice the delay and
//! come at the capacity's rate, the server's own metrics count the refusals, and health checks
//! are still answered.

use std::{
    io::{Read, Write},
    process::Command,
};

use serde_json::Value;
use volley_testkit::{Volley, fails_in_one_line, ok_stdout, tool, volley};

const VOLLEY: Volley = volley!();

#[test]
fn calls_beyond_the_limit_are_refused_and_the_accepted_keep_their_latency() {
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
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("JSON");
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

    // The accepted calls came at about the capacity (4000/s over the run's ~2 s).
    let seconds = r["total"].as_f64().unwrap() / 1e9;
    let accepted_rate = ok as f64 / seconds;
    assert!(
        (3000.0..=4600.0).contains(&accepted_rate),
        "accepted {ok} calls in {seconds:.2} s: {accepted_rate:.0}/s"
    );
    // Their latency (errors are not in the distribution) stayed under twice the delay.
    let p99 = r["latencyDistribution"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["percentage"] == 99)
        .unwrap()["latency"]
        .as_f64()
        .unwrap()
        / 1e6;
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

#[test]
fn a_connection_over_the_cap_gets_goaway_and_the_others_keep_calling() {
    let server = VOLLEY.serve(&["--max-connections", "100"]);
    let addr = server.addr().to_string();
    // 100 connections busy for 3 s.
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
            "3s",
            "-O",
            "json",
            &addr,
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run volley bench");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // The 101st, from a client we did not write.
    let over = Command::new(tool("grpcurl"))
        .args(["-plaintext", "-d", r#"{"id":1}"#, &addr, "api.Users/Get"])
        .output()
        .unwrap();
    assert!(!over.status.success());
    // What it was told, read raw: the server's SETTINGS, then GOAWAY with the reason.
    let mut raw = std::net::TcpStream::connect(&addr).unwrap();
    raw.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    raw.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
        .unwrap();
    let mut got = Vec::new();
    let _ = raw.read_to_end(&mut got);
    assert!(got.len() > 18 && got[3] == 0x4 && got[12] == 0x7, "{got:?}");
    assert!(got.ends_with(b"too many connections"), "{got:?}");

    let out = busy.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let status = r["statusCodeDistribution"].as_object().unwrap();
    assert_eq!(status.keys().collect::<Vec<_>>(), ["OK"], "{status:?}");
    assert!(
        server
            .log()
            .contains("refused connections over --max-connections 100")
    );
}
