//! gRPC's official interop suite, both ways.
//!
//! Server side: grpc-go's interop client (v1.85.0) and grpc-java's (io.grpc:grpc-interop-testing
//! 1.79.0, run with the JDK) against `volley serve`, plaintext and TLS (grpc's own test
//! certificate for `*.test.google.fr`, vendored in conformance/interop/certs).
//! Client side: volley-client and `volley bench` against grpc-go's interop server, every call kind.
//! The peers come from `scripts/install-test-tools`.

use std::{
    io::Read,
    net::{SocketAddr, TcpListener, TcpStream},
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use volley_client::{
    Channel, Endpoint, Request, Status, Strategy,
    endpoint::Target,
    grpc::{Attempt, ClientInterceptor},
    metrics::ClientMetrics,
};
use volley_services::pb::grpc::testing::{
    BoolValue, EchoStatus, Empty, Payload, ResponseParameters, SimpleRequest,
    StreamingInputCallRequest, StreamingOutputCallRequest, StreamingOutputCallResponse,
    test_service_client::TestServiceClient,
};
use volley_testkit::{VolleyProcess, ok_stdout, tool, workspace};
use volley_wire::Code;

/// The cases grpc-go's client and grpc-java's client both run.
const CASES: &[&str] = volley_testkit::peers::GO_INTEROP_CASES;

/// The cases only grpc-java's client has.
const JAVA_ONLY: &[&str] = &[
    "client_compressed_unary",
    "client_compressed_streaming",
    "server_compressed_unary",
    "server_compressed_streaming",
    "very_large_request",
];

/// The TLS name in grpc's test certificate.
const TEST_HOST: &str = "foo.test.google.fr";

/// The suites time their calls (the soak cases allow 1 s per call): one test at a time, so that
/// JVMs starting in a parallel test do not starve a running one on a 2-core machine.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn cert(name: &str) -> String {
    workspace()
        .join("conformance/interop/certs")
        .join(name)
        .display()
        .to_string()
}

/// `volley serve` as the interop suite needs it: a 16 MiB receive limit (grpc-java's interop
/// server's) for very_large_request.
fn serve(tls: bool) -> VolleyProcess {
    let bin = Path::new(env!("CARGO_BIN_EXE_volley"));
    let mut args = vec![
        "serve".to_owned(),
        "--addr".into(),
        "127.0.0.1:0".into(),
        "--max-recv-message-size".into(),
        "16MiB".into(),
    ];
    if tls {
        args.extend([
            "--tls-cert".into(),
            cert("server1.pem"),
            "--tls-key".into(),
            cert("server1.key"),
        ]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    VolleyProcess::start(bin, &args)
}

/// Runs a peer to completion within `limit`; Err carries its exit and the tail of its output.
fn run_bounded(cmd: &mut Command, limit: Duration) -> Result<String, String> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        let _ = err.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = reader.join().unwrap();
    let tail: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("at "))
        .collect();
    let tail = tail[tail.len().saturating_sub(6)..].join("\n");
    match status {
        Some(s) if s.success() => Ok(text),
        Some(s) => Err(format!("{s}: {tail}")),
        None => Err(format!("timed out after {limit:?}: {tail}")),
    }
}

fn go_client(port: u16, tls: bool, case: &str) -> Result<String, String> {
    let mut cmd = Command::new(tool("grpc-interop-client"));
    cmd.args([
        "--server_host=127.0.0.1",
        &format!("--server_port={port}"),
        &format!("--test_case={case}"),
    ]);
    if tls {
        cmd.args([
            "--use_tls",
            "--use_test_ca",
            &format!("--ca_file={}", cert("ca.pem")),
            &format!("--server_host_override={TEST_HOST}"),
        ]);
    }
    run_bounded(&mut cmd, Duration::from_secs(60))
}

fn java_client(port: u16, tls: bool, case: &str) -> Result<String, String> {
    let jars = workspace().join(".tools/java-interop");
    assert!(
        jars.is_dir(),
        "{} is missing: run scripts/install-test-tools",
        jars.display()
    );
    let mut cmd = Command::new("java");
    cmd.args([
        "-cp",
        &format!("{}/*", jars.display()),
        "io.grpc.testing.integration.TestServiceClient",
        "--server_host=127.0.0.1",
        &format!("--server_port={port}"),
        &format!("--test_case={case}"),
    ]);
    if tls {
        // grpc-java's --use_test_ca is grpc's test CA, the one that signed server1.pem.
        cmd.args([
            "--use_tls=true",
            "--use_test_ca=true",
            &format!("--server_host_override={TEST_HOST}"),
        ]);
    } else {
        cmd.arg("--use_tls=false");
    }
    let out = run_bounded(&mut cmd, Duration::from_secs(120))?;
    if !out.contains("Test completed.") {
        return Err(format!("exit 0 without 'Test completed.':\n{out}"));
    }
    Ok(out)
}

/// Runs every case against plaintext and TLS servers and fails listing every failed case.
fn suite(cases: &[&str], client: fn(u16, bool, &str) -> Result<String, String>, name: &str) {
    let mut failures = Vec::new();
    for tls in [false, true] {
        let server = serve(tls);
        let port = server.addr().port();
        for case in cases {
            if let Err(e) = client(port, tls, case) {
                failures.push(format!("{case} (tls={tls}): {e}"));
            }
        }
        assert!(
            !server.log().contains("panicked"),
            "the server panicked:\n{}",
            server.log()
        );
    }
    assert!(
        failures.is_empty(),
        "{name}: {} of {} runs failed:\n{}",
        failures.len(),
        cases.len() * 2,
        failures.join("\n")
    );
    println!(
        "{name}: {} cases x plaintext and TLS passed against volley serve",
        cases.len()
    );
}

#[test]
fn grpc_go_interop_client_passes_against_volley_serve() {
    let _serial = serial();
    suite(CASES, go_client, "grpc-go interop client");
}

#[test]
fn grpc_java_interop_client_passes_against_volley_serve() {
    let _serial = serial();
    let all: Vec<&str> = CASES.iter().chain(JAVA_ONLY).copied().collect();
    suite(&all, java_client, "grpc-java interop client");
}

/// The control for very_large_request: with the default 4 MiB limit the 10 MiB request is refused
/// with RESOURCE_EXHAUSTED, so the suite above passes because of the raised limit, not by luck.
#[test]
fn very_large_request_is_refused_under_the_default_limit() {
    let _serial = serial();
    let bin = Path::new(env!("CARGO_BIN_EXE_volley"));
    let server = VolleyProcess::start(bin, &["serve", "--addr", "127.0.0.1:0"]);
    let err = java_client(server.addr().port(), false, "very_large_request")
        .expect_err("a 10 MiB request must not pass a 4 MiB limit");
    assert!(err.contains("RESOURCE_EXHAUSTED"), "{err}");
}

// ---- client side: volley against grpc-go's interop server ----

/// grpc-go's interop server on a free port; killed on drop.
struct GoServer(Child, SocketAddr);

impl Drop for GoServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn go_server(tls: bool) -> GoServer {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cmd = Command::new(tool("grpc-interop-server"));
    cmd.arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if tls {
        cmd.args([
            "--use_tls",
            &format!("--tls_cert_file={}", cert("server1.pem")),
            &format!("--tls_key_file={}", cert("server1.key")),
        ]);
    }
    let child = cmd.spawn().expect("start grpc-interop-server");
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let start = Instant::now();
    while TcpStream::connect(addr).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "grpc-interop-server did not listen on {addr}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    GoServer(child, addr)
}

fn body_of(size: usize) -> Option<Payload> {
    Some(Payload {
        r#type: 0,
        body: vec![0; size],
    })
}

fn params(sizes: &[i32]) -> Vec<ResponseParameters> {
    sizes
        .iter()
        .map(|&size| ResponseParameters {
            size,
            ..Default::default()
        })
        .collect()
}

/// A request stream fed by the test as it goes (for ping_pong's one-at-a-time exchange).
fn fed() -> (
    tokio::sync::mpsc::UnboundedSender<StreamingOutputCallRequest>,
    impl futures_util::Stream<Item = StreamingOutputCallRequest> + Send + 'static,
) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let stream =
        futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|m| (m, rx)) });
    (tx, stream)
}

/// custom_metadata's two headers, which the server echoes as initial and trailing metadata.
fn ask_for_echoes(md: &mut http::HeaderMap) {
    md.insert(
        "x-grpc-test-echo-initial",
        http::HeaderValue::from_static("test_initial_metadata_value"),
    );
    md.insert(
        "x-grpc-test-echo-trailing-bin",
        http::HeaderValue::from_static("q6ur"),
    );
}

fn payload_len(r: &StreamingOutputCallResponse) -> usize {
    r.payload.as_ref().map_or(0, |p| p.body.len())
}

/// The generated TestService client (volley-build) drives grpc-go's interop server through the
/// interop cases a client runs, as grpc/doc/interop-test-descriptions.md words them:
/// empty_unary, large_unary, status_code_and_message,
/// special_status_message, custom_metadata (unary and full duplex), client_streaming,
/// server_streaming, ping_pong (one request, then its reply, four times), empty_stream,
/// timeout_on_sleeping_server, cancel_after_first_response and unimplemented_method, on every
/// connection strategy.
#[test]
fn generated_client_drives_grpc_go_interop_server() {
    let _serial = serial();
    let server = go_server(false);
    let addr = server.1;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        for strategy in ["single", "pool:2", "expanding:3", "per-request"] {
            let ep = Endpoint::new(Target::parse(&addr.to_string()).unwrap()).unwrap();
            let client =
                TestServiceClient::new(Channel::new(ep, Strategy::parse(strategy, 1).unwrap()));

            // empty_unary.
            let reply = client.empty_call(Empty {}).await.unwrap();
            assert_eq!(reply.into_inner(), Empty {}, "{strategy}");

            // large_unary.
            let req = SimpleRequest {
                response_size: 314_159,
                payload: body_of(271_828),
                ..Default::default()
            };
            let reply = client.unary_call(req.clone()).await.unwrap().into_inner();
            assert_eq!(reply.payload.unwrap().body.len(), 314_159, "{strategy}");

            // A gzipped request: grpc-go's interop server has no gzip decompressor registered, so
            // it refuses the encoding our header names (the case itself runs against volley
            // serve below).
            let mut compressed = Request::new(req);
            compressed.set_compressed(true);
            let err = client.unary_call(compressed).await.unwrap_err();
            assert_eq!(err.code(), Code::Unimplemented, "{strategy}: {err:?}");
            assert!(err.message().contains("\"gzip\""), "{err:?}");

            // status_code_and_message and special_status_message.
            for message in [
                "test status message",
                "\t\ntest with whitespace\r\nand Unicode BMP \u{263a} and non-BMP \u{1f608}\t\n",
            ] {
                let req = SimpleRequest {
                    response_status: Some(EchoStatus {
                        code: 2,
                        message: message.into(),
                    }),
                    ..Default::default()
                };
                let err = client.unary_call(req).await.unwrap_err();
                assert_eq!(err.code(), Code::Unknown, "{strategy}");
                assert_eq!(err.message(), message, "{strategy}");
            }

            // custom_metadata, unary: initial metadata on the headers, trailing on the trailers.
            let mut req = Request::new(SimpleRequest {
                response_size: 314_159,
                payload: body_of(271_828),
                ..Default::default()
            });
            ask_for_echoes(req.metadata_mut());
            let reply = client.unary_call(req).await.unwrap();
            assert_eq!(
                reply.metadata()["x-grpc-test-echo-initial"],
                "test_initial_metadata_value",
                "{strategy}"
            );
            assert_eq!(reply.trailers()["x-grpc-test-echo-trailing-bin"], "q6ur");

            // custom_metadata, full duplex: the same, the trailers read after the stream.
            let mut req = Request::new(futures_util::stream::iter([StreamingOutputCallRequest {
                response_parameters: params(&[314_159]),
                payload: body_of(271_828),
                ..Default::default()
            }]));
            ask_for_echoes(req.metadata_mut());
            let reply = client.full_duplex_call(req).await.unwrap();
            assert_eq!(
                reply.metadata()["x-grpc-test-echo-initial"],
                "test_initial_metadata_value"
            );
            let mut replies = reply.into_inner();
            assert_eq!(
                payload_len(&replies.message().await.unwrap().unwrap()),
                314_159
            );
            assert!(replies.message().await.unwrap().is_none(), "{strategy}");
            assert_eq!(
                replies.trailers().unwrap()["x-grpc-test-echo-trailing-bin"],
                "q6ur"
            );

            // client_streaming: 27182 + 8 + 1828 + 45904 = 74922.
            let sizes = [27_182, 8, 1_828, 45_904];
            let reqs = sizes.map(|n| StreamingInputCallRequest {
                payload: body_of(n),
                ..Default::default()
            });
            let reply = client
                .streaming_input_call(futures_util::stream::iter(reqs))
                .await
                .unwrap();
            assert_eq!(
                reply.get_ref().aggregated_payload_size,
                74_922,
                "{strategy}"
            );

            // server_streaming.
            let out_sizes = [31_415, 9, 2_653, 58_979];
            let req = StreamingOutputCallRequest {
                response_parameters: params(&out_sizes),
                ..Default::default()
            };
            let mut replies = client
                .streaming_output_call(req)
                .await
                .unwrap()
                .into_inner();
            let mut got = Vec::new();
            while let Some(r) = replies.message().await.unwrap() {
                got.push(payload_len(&r));
            }
            assert_eq!(got, [31_415, 9, 2_653, 58_979], "{strategy}");

            // ping_pong: each request sent only after the previous reply arrived.
            let (tx, requests) = fed();
            let ping = |i: usize| StreamingOutputCallRequest {
                response_parameters: params(&[out_sizes[i]]),
                payload: body_of(sizes[i]),
                ..Default::default()
            };
            tx.send(ping(0)).unwrap();
            let mut replies = client
                .full_duplex_call(requests)
                .await
                .unwrap()
                .into_inner();
            for (i, &size) in out_sizes.iter().enumerate() {
                let r = replies.message().await.unwrap().expect("a reply per ping");
                assert_eq!(payload_len(&r), size as usize, "{strategy}");
                if i < 3 {
                    tx.send(ping(i + 1)).unwrap();
                }
            }
            drop(tx);
            assert!(replies.message().await.unwrap().is_none(), "{strategy}");

            // empty_stream.
            let none: [StreamingOutputCallRequest; 0] = [];
            let mut replies = client
                .full_duplex_call(futures_util::stream::iter(none))
                .await
                .unwrap()
                .into_inner();
            assert!(replies.message().await.unwrap().is_none(), "{strategy}");

            // timeout_on_sleeping_server: a 1 ms deadline on a call the server holds open.
            let (tx, requests) = fed();
            tx.send(StreamingOutputCallRequest {
                payload: body_of(27_182),
                ..Default::default()
            })
            .unwrap();
            let mut req = Request::new(requests);
            req.set_timeout(Duration::from_millis(1));
            let code = match client.full_duplex_call(req).await {
                Err(e) => e.code(),
                Ok(r) => r.into_inner().message().await.unwrap_err().code(),
            };
            assert_eq!(code, Code::DeadlineExceeded, "{strategy}");
            drop(tx);

            // cancel_after_first_response: dropping the reply stream cancels the call, and the
            // client goes on working.
            let (tx, requests) = fed();
            tx.send(ping(0)).unwrap();
            let mut replies = client
                .full_duplex_call(requests)
                .await
                .unwrap()
                .into_inner();
            assert!(replies.message().await.unwrap().is_some());
            drop(replies);
            drop(tx);
            assert!(client.empty_call(Empty {}).await.is_ok(), "{strategy}");

            // unimplemented_method.
            let err = client.unimplemented_call(Empty {}).await.unwrap_err();
            assert_eq!(err.code(), Code::Unimplemented, "{strategy}");
        }
    });
}

/// client_compressed_unary with the generated client, against `volley serve` (grpc-go's interop
/// server takes no gzip; grpc-java's client passes the case against this server above): the
/// server checks the compression flag it was promised both ways.
#[test]
fn generated_client_compresses_requests() {
    // Serial too: a server bound to port 0 here could take the port `go_server` has just
    // released for grpc-go's server, which then cannot listen (seen once as "connection refused").
    let _serial = serial();
    let server = VolleyProcess::start(
        env!("CARGO_BIN_EXE_volley").as_ref(),
        &["serve", "--addr", "127.0.0.1:0"],
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = TestServiceClient::connect(&server.addr().to_string())
            .await
            .unwrap();
        let req = |expect: bool| SimpleRequest {
            response_size: 314_159,
            payload: body_of(271_828),
            expect_compressed: Some(BoolValue { value: expect }),
            ..Default::default()
        };
        let mut compressed = Request::new(req(true));
        compressed.set_compressed(true);
        let reply = client.unary_call(compressed).await.unwrap().into_inner();
        assert_eq!(reply.payload.unwrap().body.len(), 314_159);
        let err = client.unary_call(req(true)).await.unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");

        // The client's default, then a call that opts out of it.
        let client = client.send_compressed(true);
        assert!(client.unary_call(req(true)).await.is_ok());
        let mut plain = Request::new(req(false));
        plain.set_compressed(false);
        assert!(client.unary_call(plain).await.is_ok());
    });
}

fn volley_bench(args: &[&str]) -> serde_json::Value {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_volley"));
    cmd.arg("bench").args(args).args(["-O", "json"]);
    serde_json::from_str(&ok_stdout(&mut cmd)).unwrap()
}

/// `volley bench` drives grpc-go's interop server through all four call kinds, plaintext and TLS,
/// and every call is OK.
#[test]
fn volley_bench_drives_grpc_go_interop_server_every_call_kind() {
    let _serial = serial();
    let proto = workspace()
        .join("proto/grpc/testing/test.proto")
        .display()
        .to_string();
    let imports = workspace().join("proto").display().to_string();
    let calls: [(&str, &str); 4] = [
        (
            "UnaryCall",
            r#"{"response_size": 1000, "payload": {"body": "AAAAAAAA"}}"#,
        ),
        (
            "StreamingOutputCall",
            r#"{"response_parameters": [{"size": 100}, {"size": 200}, {"size": 300}]}"#,
        ),
        (
            "StreamingInputCall",
            r#"[{"payload": {"body": "AAAA"}}, {"payload": {"body": "AAAAAAAA"}}]"#,
        ),
        (
            "FullDuplexCall",
            r#"[{"response_parameters": [{"size": 10}]}, {"response_parameters": [{"size": 20}]}]"#,
        ),
    ];
    for tls in [false, true] {
        let server = go_server(tls);
        let addr = server.1.to_string();
        let ca = cert("ca.pem");
        for (method, data) in calls {
            let call = format!("grpc.testing.TestService/{method}");
            let mut args = vec![
                "--proto",
                &proto,
                "--import-paths",
                &imports,
                "--call",
                &call,
                "-d",
                data,
                "-n",
                "200",
                "-c",
                "10",
            ];
            if tls {
                args.extend(["--cacert", &ca, "--cname", TEST_HOST]);
            } else {
                args.push("--insecure");
            }
            args.push(&addr);
            let r = volley_bench(&args);
            assert_eq!(
                r["statusCodeDistribution"]["OK"], 200,
                "{method} tls={tls}: {}",
                r["statusCodeDistribution"]
            );
            assert_eq!(
                r["statusCodeDistribution"].as_object().unwrap().len(),
                1,
                "{method} tls={tls}: only OK: {}",
                r["statusCodeDistribution"]
            );
        }
    }
}

/// Adds grpc-go's echo header to every attempt.
struct AskForEcho;

impl ClientInterceptor for AskForEcho {
    fn on_attempt(&self, attempt: &mut Attempt<'_>) -> Result<(), Status> {
        ask_for_echoes(attempt.metadata_mut());
        Ok(())
    }
}

/// Client interceptors on a generated client against grpc-go's interop server: one adds
/// metadata (grpc-go echoes it back), the A66 metrics interceptor counts the attempts, their
/// statuses and bytes.
#[test]
fn client_interceptors_and_metrics_on_a_generated_client() {
    let _serial = serial();
    let server = go_server(false);
    let addr = server.1;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let ep = Endpoint::new(Target::parse(&addr.to_string()).unwrap()).unwrap();
        let metrics = ClientMetrics::new();
        let client = TestServiceClient::new(Channel::new(ep, Strategy::Single))
            .with_interceptor(AskForEcho)
            .with_interceptor(metrics.clone());
        let reply = client
            .unary_call(SimpleRequest {
                response_size: 10,
                payload: body_of(100),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(
            reply.metadata().get("x-grpc-test-echo-initial").unwrap(),
            "test_initial_metadata_value",
            "the interceptor's metadata reached the server"
        );
        let failed = client
            .unary_call(SimpleRequest {
                response_status: Some(EchoStatus {
                    code: 2,
                    message: "asked".into(),
                }),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(failed.code(), Code::Unknown);
        let mut stream = client
            .streaming_output_call(StreamingOutputCallRequest {
                response_parameters: (0..3)
                    .map(|_| ResponseParameters {
                        size: 7,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        while stream.message().await.unwrap().is_some() {}
        drop(stream);

        let text = metrics.render();
        let target = addr.to_string();
        let unary = format!(r#"grpc_method="grpc.testing.TestService/UnaryCall",grpc_target="{target}""#);
        for line in [
            format!("grpc_client_attempt_started_total{{{unary}}} 2"),
            format!(r#"grpc_client_call_duration_seconds_count{{{unary},grpc_status="OK"}} 1"#),
            format!(r#"grpc_client_call_duration_seconds_count{{{unary},grpc_status="UNKNOWN"}} 1"#),
            // response_size (2 bytes) and a 100-byte payload (104 bytes with its tags and
            // lengths); the 10-byte reply payload is 14 bytes; each 7-byte stream reply 11.
            format!(r#"grpc_client_attempt_sent_total_compressed_message_size_bytes_sum{{{unary},grpc_status="OK"}} 106.0"#),
            format!(r#"grpc_client_attempt_rcvd_total_compressed_message_size_bytes_sum{{{unary},grpc_status="OK"}} 14.0"#),
            format!(r#"grpc_client_attempt_rcvd_total_compressed_message_size_bytes_sum{{grpc_method="grpc.testing.TestService/StreamingOutputCall",grpc_target="{target}",grpc_status="OK"}} 33.0"#),
        ] {
            assert!(text.contains(&line), "{line}\n{text}");
        }
    });
}
