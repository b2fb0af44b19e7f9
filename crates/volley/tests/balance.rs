//! Several backends behind one target: `volley bench --lb-strategy round_robin` over three `volley
//! serve` processes (`ipv4:a:p,b:p,c:p`) spreads the calls within 10% of each other, counted by
//! each server's own A66 metrics; pick_first sends them all to the first; an address nobody
//! listens on is passed over with no failed call; a `dns:///` name is resolved to its addresses.

use std::process::Command;

use serde_json::Value;
use volley_testkit::{Volley, fails_in_one_line, ok_stdout, tool, volley};

const VOLLEY: Volley = volley!();

/// The calls to api.Users/Get a server's `/metrics` counts.
fn started(addr: &str) -> u64 {
    let text =
        ok_stdout(Command::new(tool("curl")).args(["-sf", &format!("http://{addr}/metrics")]));
    text.lines()
        .find_map(|l| {
            l.strip_prefix(r#"grpc_server_call_started_total{grpc_method="api.Users/Get"} "#)
        })
        .map_or(0, |v| v.trim().parse::<f64>().unwrap_or(0.0) as u64)
}

/// `volley bench` of api.Users.Get against `target` with `flags`: its status counts.
fn bench(target: &str, n: &str, flags: &[&str]) -> Value {
    let mut args = vec![
        "bench",
        "--insecure",
        "--call",
        "api.Users.Get",
        "-d",
        r#"{"id":228}"#,
        "-n",
        n,
        "-c",
        "30",
        "-O",
        "json",
    ];
    args.extend_from_slice(flags);
    args.push(target);
    let out = VOLLEY.command(&args).output().expect("run volley bench");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    report["statusCodeDistribution"].clone()
}

#[test]
fn round_robin_spreads_calls_over_three_backends() {
    let servers: Vec<_> = (0..3).map(|_| VOLLEY.serve(&["--metrics"])).collect();
    let addrs: Vec<String> = servers.iter().map(|s| s.addr().to_string()).collect();
    let list = format!("ipv4:{}", addrs.join(","));

    let status = bench(&list, "3000", &["--lb-strategy", "round_robin"]);
    assert_eq!(status, serde_json::json!({"OK": 3000}));
    let counts: Vec<u64> = addrs.iter().map(|a| started(a)).collect();
    assert_eq!(counts.iter().sum::<u64>(), 3000, "{counts:?}");
    for c in &counts {
        assert!(
            (900..=1100).contains(c),
            "within 10% of 1000 each: {counts:?}"
        );
    }

    // pick_first (the default): every call to the first address.
    let status = bench(&list, "600", &[]);
    assert_eq!(status, serde_json::json!({"OK": 600}));
    let after: Vec<u64> = addrs.iter().map(|a| started(a)).collect();
    assert_eq!(
        [
            after[0] - counts[0],
            after[1] - counts[1],
            after[2] - counts[2]
        ],
        [600, 0, 0]
    );
}

#[test]
fn an_address_nobody_listens_on_is_passed_over() {
    let a = VOLLEY.serve(&["--metrics"]);
    let b = VOLLEY.serve(&["--metrics"]);
    // A port that was free a moment ago: nothing listens there.
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap();
    let list = format!("ipv4:{},{dead},{}", a.addr(), b.addr());
    let status = bench(&list, "2000", &["--lb-strategy", "round_robin"]);
    assert_eq!(status, serde_json::json!({"OK": 2000}));
    let (ca, cb) = (
        started(&a.addr().to_string()),
        started(&b.addr().to_string()),
    );
    assert_eq!(ca + cb, 2000);
    assert!(
        ca >= 700 && cb >= 700,
        "both live backends take calls: {ca} {cb}"
    );

    // A name, resolved by the system (localhost: 127.0.0.1, and ::1 where nothing listens).
    let status = bench(
        &format!("dns:///localhost:{}", a.addr().port()),
        "500",
        &["--lb-strategy", "round_robin"],
    );
    assert_eq!(status, serde_json::json!({"OK": 500}));

    let line = fails_in_one_line(&mut VOLLEY.command(&[
        "bench",
        "--insecure",
        "--lb-strategy",
        "grpclb",
        "--call",
        "api.Users.Get",
        &a.addr().to_string(),
    ]));
    assert!(
        line.contains("expected pick_first or round_robin"),
        "{line}"
    );
    let line = fails_in_one_line(&mut VOLLEY.command(&[
        "bench",
        "--insecure",
        "--call",
        "api.Users.Get",
        "ipv4:127.0.0.1",
    ]));
    assert!(line.contains("ipv4:ip:port"), "{line}");
}
