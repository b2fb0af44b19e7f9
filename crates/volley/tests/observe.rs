//! Interceptors and observability of `volley serve`, checked with peers we did not write:
//! grpcurl with and without `--require-token`'s token, ghz's call count against the server's
//! `/metrics`, and the Prometheus project's own parser (prometheus_client) reading the
//! exposition. The tools come from `scripts/install-test-tools`.

use std::process::Command;

use serde_json::Value;
use volley_testkit::{
    Exposition, Volley, ok_stdout, prometheus_samples, sample, tool, volley, workspace,
};

const VOLLEY: Volley = volley!();

fn parse_metrics(text: &str) -> Vec<Value> {
    prometheus_samples(text, Exposition::OpenMetrics)
}

fn scrape(addr: &str) -> String {
    ok_stdout(Command::new(tool("curl")).args(["-sf", &format!("http://{addr}/metrics")]))
}

#[test]
fn require_token_refuses_grpcurl_without_it_and_keeps_health_and_reflection_open() {
    let p = VOLLEY.serve(&["--require-token", "s3cret"]);
    let addr = p.addr().to_string();
    let svc = "helloworld.Greeter/SayHello";

    let without = Command::new(tool("grpcurl"))
        .args(["-plaintext", "-d", r#"{"name":"volley"}"#, &addr, svc])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&without.stderr);
    assert!(!without.status.success(), "no token, yet: {err}");
    assert!(err.contains("Code: Unauthenticated"), "{err}");

    let wrong = Command::new(tool("grpcurl"))
        .args([
            "-plaintext",
            "-H",
            "authorization: Bearer nope",
            "-d",
            "{}",
            &addr,
            svc,
        ])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("Code: Unauthenticated"));

    let with = ok_stdout(Command::new(tool("grpcurl")).args([
        "-plaintext",
        "-H",
        "authorization: Bearer s3cret",
        "-d",
        r#"{"name":"volley"}"#,
        &addr,
        svc,
    ]));
    assert!(with.contains("Hello volley"), "{with}");

    // Reflection (grpcurl's `list` and its schema lookups) and health stay open.
    let list = ok_stdout(Command::new(tool("grpcurl")).args(["-plaintext", &addr, "list"]));
    assert!(list.contains("helloworld.Greeter"), "{list}");
    let health = ok_stdout(Command::new(tool("grpcurl")).args([
        "-plaintext",
        &addr,
        "grpc.health.v1.Health/Check",
    ]));
    assert!(health.contains("SERVING"), "{health}");
}

#[test]
fn metrics_count_what_ghz_sent_and_parse_with_prometheus_client() {
    let p = VOLLEY.serve(&["--metrics", "--threads", "2"]);
    let addr = p.addr().to_string();
    let proto = workspace().join("proto/api/users.proto");
    let summary = ok_stdout(
        Command::new(tool("ghz"))
            .args(["--insecure", "--proto"])
            .arg(&proto)
            .args([
                "--call",
                "api.Users.Get",
                "-d",
                r#"{"id":228}"#,
                "-c10",
                "-n700",
            ])
            .arg(&addr),
    );
    assert!(summary.contains("  Count:\t700\n"), "{summary}");
    assert!(summary.contains("[OK]   700 responses"), "{summary}");
    // A method the server does not have is recorded as `other` (A66's cardinality rule).
    let unknown = ok_stdout(Command::new(tool("curl")).args([
        "-s",
        "-H",
        "content-type: application/json",
        "-d",
        "{}",
        &format!("http://{addr}/no.Such/Method"),
    ]));
    assert!(unknown.contains("unimplemented"), "{unknown}");

    let text = scrape(&addr);
    assert!(
        text.contains(r#"grpc_server_call_duration_seconds_bucket{le="0.001",grpc_method="api.Users/Get",grpc_status="OK"}"#),
        "{text}"
    );
    let samples = parse_metrics(&text);
    let get = [("grpc_method", "api.Users/Get")];
    let get_ok = [("grpc_method", "api.Users/Get"), ("grpc_status", "OK")];
    assert_eq!(
        sample(&samples, "grpc_server_call_started_total", &get),
        Some(700.0)
    );
    assert_eq!(
        sample(&samples, "grpc_server_call_duration_seconds_count", &get_ok),
        Some(700.0),
        "the server's count equals ghz's"
    );
    let inf = [
        ("grpc_method", "api.Users/Get"),
        ("grpc_status", "OK"),
        ("le", "+Inf"),
    ];
    assert_eq!(
        sample(&samples, "grpc_server_call_duration_seconds_bucket", &inf),
        Some(700.0)
    );
    // {"id":228} is 3 bytes on the wire; the reply is larger than that and the same each time.
    assert_eq!(
        sample(
            &samples,
            "grpc_server_call_rcvd_total_compressed_message_size_bytes_sum",
            &get_ok
        ),
        Some(3.0 * 700.0)
    );
    let sent = sample(
        &samples,
        "grpc_server_call_sent_total_compressed_message_size_bytes_sum",
        &get_ok,
    )
    .unwrap();
    assert!(sent > 3.0 * 700.0 && sent % 700.0 == 0.0, "{sent}");
    assert_eq!(
        sample(
            &samples,
            "grpc_server_call_duration_seconds_count",
            &[("grpc_method", "other"), ("grpc_status", "UNIMPLEMENTED")]
        ),
        Some(1.0)
    );
    // The connections (volley's own, beside A66's): ghz's one, curl's call, and this scrape,
    // which is the one open while the page is made.
    assert_eq!(
        sample(&samples, "volley_server_connections_accepted_total", &[]),
        Some(3.0),
        "{text}"
    );
    assert_eq!(
        sample(&samples, "volley_server_connections_open", &[]),
        Some(1.0)
    );
    assert_eq!(
        sample(&samples, "volley_server_connections_refused_total", &[]),
        Some(0.0)
    );
}

#[test]
fn bench_reports_the_servers_figures_beside_its_own() {
    let p = VOLLEY.serve(&["--metrics"]);
    let addr = p.addr().to_string();
    let url = format!("http://{addr}/metrics");
    // Calls before the run are not the run's.
    ok_stdout(&mut VOLLEY.command(&[
        "bench",
        "--insecure",
        "--call",
        "helloworld.Greeter.SayHello",
        "-n",
        "50",
        &addr,
    ]));
    let json = ok_stdout(&mut VOLLEY.command(&[
        "bench",
        "--insecure",
        "--call",
        "helloworld.Greeter.SayHello",
        "-d",
        r#"{"name":"x"}"#,
        "-n",
        "300",
        "-c",
        "4",
        "-O",
        "json",
        "--server-metrics",
        &url,
        &addr,
    ]));
    let r: Value = serde_json::from_str(&json).unwrap();
    let server = &r["volley"]["serverMetrics"];
    assert_eq!(r["count"], 300);
    assert_eq!(server["count"], 300, "{server}");
    assert_eq!(server["method"], "helloworld.Greeter/SayHello");
    assert_eq!(server["statuses"]["OK"], 300);
    let server_avg = server["average"].as_u64().unwrap();
    assert!(
        server_avg > 0 && server_avg < r["average"].as_u64().unwrap(),
        "the server's time is part of the client's: {server_avg} vs {}",
        r["average"]
    );
    assert_eq!(server["latencyDistribution"].as_array().unwrap().len(), 5);

    let summary = ok_stdout(&mut VOLLEY.command(&[
        "bench",
        "--insecure",
        "--call",
        "helloworld.Greeter.SayHello",
        "-n",
        "100",
        "--server-metrics",
        &url,
        &addr,
    ]));
    assert!(
        summary.contains(&format!(
            "Server ({url}, helloworld.Greeter/SayHello):\n  Count:\t100\n"
        )),
        "{summary}"
    );

    // A mix: the server's figures of each method, beside that method's block.
    let json = ok_stdout(&mut VOLLEY.command(&[
        "bench",
        "--insecure",
        "--call",
        "helloworld.Greeter.SayHello:3",
        "--call",
        "api.Users/Get:1",
        "-n",
        "400",
        "-O",
        "json",
        "--server-metrics",
        &url,
        &addr,
    ]));
    let r: Value = serde_json::from_str(&json).unwrap();
    let methods = r["methods"].as_array().unwrap();
    assert_eq!(methods.len(), 2);
    for (m, label) in methods
        .iter()
        .zip(["helloworld.Greeter/SayHello", "api.Users/Get"])
    {
        let server = &m["volley"]["serverMetrics"];
        assert_eq!(server["method"], label, "{server}");
        assert_eq!(server["count"], m["count"], "{label}: {server}");
        assert_eq!(server["statuses"]["OK"], m["count"], "{label}: {server}");
    }
}

/// Every span in the OTLP/HTTP bodies a collector received.
fn spans(bodies: &[Vec<u8>]) -> Vec<opentelemetry_proto::tonic::trace::v1::Span> {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use prost::Message;
    bodies
        .iter()
        .flat_map(|b| {
            ExportTraceServiceRequest::decode(b.as_slice())
                .expect("an OTLP ExportTraceServiceRequest")
                .resource_spans
        })
        .flat_map(|r| r.scope_spans)
        .flat_map(|s| s.spans)
        .collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn a_span_per_call_reaches_an_otlp_collector_with_the_callers_trace_id() {
    let collector = volley_testkit::otlp::OtlpReceiver::start();
    let mut p = VOLLEY.serve(&["--otlp-endpoint", &collector.url()]);
    let addr = p.addr().to_string();
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let parent = "00f067aa0ba902b7";
    for header in [
        format!("traceparent: 00-{trace}-{parent}-01"),
        format!("traceparent: 00-{trace}-{parent}-01"),
        format!("traceparent: 00-{trace}-{parent}-01"),
        // Malformed: ignored, the call starts a trace of its own (and still succeeds).
        "traceparent: 00-not-a-trace-01".to_owned(),
    ] {
        let out = ok_stdout(Command::new(tool("grpcurl")).args([
            "-plaintext",
            "-H",
            &header,
            "-d",
            r#"{"name":"t"}"#,
            &addr,
            "helloworld.Greeter/SayHello",
        ]));
        assert!(out.contains("Hello t"), "{out}");
    }
    // SIGTERM drains the server, which flushes the spans still queued.
    p.signal("TERM");
    p.wait_exit(std::time::Duration::from_secs(15));
    let bodies = collector.wait_for(std::time::Duration::from_secs(10), |b| {
        spans(b)
            .iter()
            .filter(|s| s.name == "helloworld.Greeter/SayHello")
            .count()
            >= 4
    });
    let calls: Vec<_> = spans(&bodies)
        .into_iter()
        .filter(|s| s.name == "helloworld.Greeter/SayHello")
        .collect();
    assert_eq!(calls.len(), 4, "one span per call");
    let continued: Vec<_> = calls.iter().filter(|s| hex(&s.trace_id) == trace).collect();
    assert_eq!(continued.len(), 3, "the caller's trace id is kept");
    for s in &continued {
        assert_eq!(hex(&s.parent_span_id), parent);
        assert_eq!(s.kind, 2, "SPAN_KIND_SERVER");
        let attr = |k: &str| {
            s.attributes
                .iter()
                .find(|a| a.key == k)
                .map(|a| format!("{:?}", a.value))
        };
        assert!(
            attr("rpc.grpc.status_code")
                .unwrap()
                .contains("IntValue(0)"),
            "{s:?}"
        );
        assert!(
            attr("rpc.service").unwrap().contains("helloworld.Greeter"),
            "{s:?}"
        );
    }
    let fresh = calls.iter().find(|s| hex(&s.trace_id) != trace).unwrap();
    assert!(
        fresh.parent_span_id.is_empty(),
        "a malformed traceparent starts a new trace"
    );
    assert_eq!(fresh.trace_id.len(), 16);
}

#[test]
fn an_unreachable_collector_costs_one_log_line_and_no_failed_calls() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut p = VOLLEY.serve(&["--otlp-endpoint", &format!("http://127.0.0.1:{port}")]);
    let addr = p.addr().to_string();
    let json = ok_stdout(&mut VOLLEY.command(&[
        "bench",
        "--insecure",
        "--call",
        "helloworld.Greeter.SayHello",
        "-n",
        "2000",
        "-O",
        "json",
        &addr,
    ]));
    let r: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(r["statusCodeDistribution"]["OK"], 2000, "{json}");
    // Batches go out every second; wait for two to fail.
    std::thread::sleep(std::time::Duration::from_millis(2500));
    p.signal("TERM");
    p.wait_exit(std::time::Duration::from_secs(15));
    let log = p.log();
    let warnings = log
        .lines()
        .filter(|l| l.contains("cannot export spans"))
        .count();
    assert_eq!(warnings, 1, "{log}");
}
