//! Several backends behind one target: `volley bench --lb-strategy round_robin` over three `volley
//! serve` processes (`ipv4:a:p,b:p,c:p`) spreads the calls within 10% of each other, counted by
//! each server's own A66 metrics; pick_first sends them all to the first; an address nobody
//! listens on is passed over with no failed call; a `dns:///` name is resolved to its addresses.
//! With `--service-config`: one backend killed mid-run fails no call under a retry policy (and
//! fails some without it); hedging past a slow backend cuts p99 below the slow backend's delay.

use std::{
    process::{Command, Stdio},
    time::Duration,
};

use serde_json::Value;
use volley_testkit::{
    Volley, client_path as path_of, fails_in_one_line, json_report, latency_ms, ok_stdout, tool,
    volley,
};

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

/// `volley bench` arguments: api.Users.Get, a JSON report, then `flags`, then `target`.
fn users_get<'a>(flags: &[&'a str], target: &'a str) -> Vec<&'a str> {
    let mut args = vec![
        "bench",
        "--insecure",
        "--call",
        "api.Users.Get",
        "-d",
        r#"{"id":228}"#,
        "-O",
        "json",
    ];
    args.extend_from_slice(flags);
    args.push(target);
    args
}

/// `volley bench` of api.Users.Get against `target` with `flags`: its JSON report.
fn report(target: &str, n: &str, flags: &[&str]) -> Value {
    let args = users_get(&[&["-n", n, "-c", "30"], flags].concat(), target);
    let out = VOLLEY.command(&args).output().expect("run volley bench");
    json_report(&out)
}

/// `volley bench` of api.Users.Get against `target` with `flags`: its status counts.
fn bench(target: &str, n: &str, flags: &[&str]) -> Value {
    report(target, n, flags)["statusCodeDistribution"].clone()
}

#[test]
fn round_robin_spreads_calls_over_three_backends() {
    let servers: Vec<_> = (0..3).map(|_| VOLLEY.serve(&["--metrics"])).collect();
    let addrs: Vec<String> = servers.iter().map(|s| s.addr().to_string()).collect();
    let list = format!("ipv4:{}", addrs.join(","));

    let r = report(&list, "3000", &["--lb-strategy", "round_robin"]);
    assert_eq!(r["statusCodeDistribution"], serde_json::json!({"OK": 3000}));
    // An address list is balanced on the fast path.
    assert_eq!(r["volley"]["clientPath"], path_of("fast"));
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

    // A name, resolved by the system (localhost: 127.0.0.1, and ::1 where the system lists it
    // and nothing listens, passed over): round robin over what it resolves to, on the fast
    // path, with a connection per address or one per call.
    let before = started(&a.addr().to_string());
    let name = format!("dns:///localhost:{}", a.addr().port());
    for strategy in ["single", "per-request"] {
        let r = report(
            &name,
            "500",
            &["--lb-strategy", "round_robin", "--strategy", strategy],
        );
        assert_eq!(
            r["statusCodeDistribution"],
            serde_json::json!({"OK": 500}),
            "{strategy}"
        );
        assert_eq!(r["volley"]["clientPath"], path_of("fast"), "{strategy}");
    }
    assert_eq!(started(&a.addr().to_string()) - before, 1000);

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

/// `volley bench` of api.Users.Get at 1000 calls/s for 3 s over three backends that each take
/// 20 ms a call, round robin, with `flags`; the second backend is killed (SIGKILL, calls in
/// flight) after 1 s. Its status counts.
fn kill_one_mid_run(flags: &[&str]) -> Value {
    let servers: Vec<_> = (0..3).map(|_| VOLLEY.serve(&["--delay", "20ms"])).collect();
    let addrs: Vec<String> = servers.iter().map(|s| s.addr().to_string()).collect();
    let list = format!("ipv4:{}", addrs.join(","));
    let fixed = [
        "-n",
        "3000",
        "--rps",
        "1000",
        "-c",
        "60",
        "--lb-strategy",
        "round_robin",
    ];
    let args = users_get(&[&fixed[..], flags].concat(), &list);
    let child = VOLLEY
        .command(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run volley bench");
    std::thread::sleep(Duration::from_secs(1));
    servers[1].signal("KILL");
    let out = child.wait_with_output().expect("volley bench ends");
    json_report(&out)["statusCodeDistribution"].clone()
}

const RETRY: &str = r#"{"methodConfig": [{"name": [{"service": "api.Users"}],
    "retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.01s", "maxBackoff": "0.1s",
    "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#;

#[test]
fn one_backend_killed_mid_run_fails_no_call_under_a_retry_policy() {
    let status = kill_one_mid_run(&["--service-config", RETRY]);
    assert_eq!(status, serde_json::json!({"OK": 3000}));

    // The same run without the policy: the calls in flight on the killed backend fail.
    let status = kill_one_mid_run(&[]);
    let ok = status["OK"].as_u64().unwrap_or(0);
    assert!(
        ok < 3000,
        "some calls fail without a retry policy: {status}"
    );
}

/// The p99 latency, in milliseconds, of `volley bench` one call at a time over `list`.
fn p99_ms(list: &str, flags: &[&str]) -> f64 {
    let fixed = ["-n", "40", "-c", "1", "--lb-strategy", "round_robin"];
    let args = users_get(&[&fixed[..], flags].concat(), list);
    let report = json_report(&VOLLEY.command(&args).output().expect("run volley bench"));
    assert_eq!(
        report["statusCodeDistribution"],
        serde_json::json!({"OK": 40})
    );
    latency_ms(&report, 99)
}

#[test]
fn hedging_past_a_slow_backend_cuts_p99() {
    let slow = VOLLEY.serve(&["--delay", "300ms"]);
    let fast = VOLLEY.serve(&[]);
    let list = format!("ipv4:{},{}", slow.addr(), fast.addr());
    let hedged = r#"{"methodConfig": [{"name": [{}],
        "hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "0.03s"}}]}"#;
    let plain = p99_ms(&list, &[]);
    let with_hedging = p99_ms(&list, &["--service-config", hedged]);
    assert!(
        plain >= 300.0,
        "half the calls wait for the slow backend: p99 {plain} ms"
    );
    assert!(
        with_hedging < 150.0,
        "the hedge, 30 ms later, answers from the fast one: p99 {with_hedging} ms"
    );
}

#[test]
fn a_bad_service_config_fails_in_one_line() {
    for (config, says) in [
        (
            "{\"methodConfig\": 3}",
            "--service-config: service config: invalid type",
        ),
        (
            "{\"methodConfig\": [{\"retryPolicy\": {\"maxAttempts\": 1}}]}",
            "methodConfig[0].retryPolicy.maxAttempts must be at least 2 (it is 1)",
        ),
        (
            "/nonexistent/sc.json",
            "--service-config: cannot read /nonexistent/sc.json",
        ),
    ] {
        let line = fails_in_one_line(&mut VOLLEY.command(&[
            "bench",
            "--insecure",
            "--call",
            "api.Users.Get",
            "--service-config",
            config,
            "127.0.0.1:1",
        ]));
        assert!(line.contains(says), "{config}: {line}");
    }
}
