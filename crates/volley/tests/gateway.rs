//! `volley serve gateway` (seed 002, on `volley gateway`): curl gets the backend's greeting
//! through every strategy; a backend that goes away gets 503 with one line, and the gateway
//! recovers by itself when it returns; `volley bench` loads `/performance`; a bad strategy is a
//! one-line CLI error.

use std::{
    process::Command,
    time::{Duration, Instant},
};

use serde_json::Value;
use volley_testkit::{Volley, VolleyProcess, ok_stdout, tool, volley};

const VOLLEY: Volley = volley!();

fn backend(addr: &str) -> VolleyProcess {
    VolleyProcess::start(VOLLEY.bin(), &["serve", "--addr", addr, "--threads", "1"])
}

fn gateway(backend: &str, strategy: &str) -> VolleyProcess {
    VolleyProcess::start(
        VOLLEY.bin(),
        &[
            "lab",
            "gateway",
            "--backend",
            backend,
            "--strategy",
            strategy,
            "--addr",
            "127.0.0.1:0",
            "--threads",
            "2",
        ],
    )
}

/// GET with curl: (HTTP status, body).
fn get(url: &str) -> (u16, String) {
    let out = ok_stdout(
        Command::new(tool("curl"))
            .args(["-sS", "-w", "\n%{http_code}", url])
            .env_remove("http_proxy"),
    );
    let (body, code) = out.rsplit_once('\n').unwrap();
    (code.trim().parse().unwrap(), body.to_owned())
}

#[test]
fn every_strategy_answers_through_the_gateway() {
    let be = backend("127.0.0.1:0");
    let be_addr = be.addr().to_string();
    for strategy in ["per-request", "single", "pool:3", "expanding:4"] {
        let gw = gateway(&be_addr, strategy);
        let url = format!("http://{}/performance", gw.addr());
        assert_eq!(get(&url), (200, r#""Hello ""#.to_owned()), "{strategy}");
        let (code, _) = get(&format!("http://{}/other", gw.addr()));
        assert_eq!(code, 404);

        // HTTP load through the gateway with volley bench: every call answered.
        let out = ok_stdout(
            Command::new(VOLLEY.bin()).args(["bench", "-c", "20", "-n", "400", "-O", "json", &url]),
        );
        let report: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(report["count"], 400, "{strategy}: {report}");
        assert_eq!(report["statusCodeDistribution"]["OK"], 400, "{strategy}");
    }
}

#[test]
fn a_backend_that_goes_away_gets_503_and_the_gateway_recovers() {
    let mut be = backend("127.0.0.1:0");
    let be_addr = be.addr().to_string();
    let gw = gateway(&be_addr, "expanding");
    let url = format!("http://{}/performance", gw.addr());
    assert_eq!(get(&url).0, 200);

    be.signal("TERM");
    be.wait_exit(Duration::from_secs(10))
        .expect("backend exits");
    let (code, body) = get(&url);
    assert_eq!(code, 503, "{body}");
    assert_eq!(body.lines().count(), 1, "{body}");
    assert!(
        body.starts_with(r#"{"code":14,"message":"connection error: cannot connect to"#),
        "{body}"
    );

    let _be = backend(&be_addr);
    let t = Instant::now();
    let mut last = (0, String::new());
    while t.elapsed() < Duration::from_secs(10) {
        last = get(&url);
        if last.0 == 200 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(last, (200, r#""Hello ""#.to_owned()));
}

#[test]
fn an_unknown_strategy_is_a_one_line_error() {
    let out = Command::new(VOLLEY.bin())
        .args([
            "lab",
            "gateway",
            "--backend",
            "127.0.0.1:1",
            "--strategy",
            "round-robin",
            "--addr",
            "127.0.0.1:0",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("--strategy: unknown strategy \"round-robin\""),
        "{err}"
    );
}
