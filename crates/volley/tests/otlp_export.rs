//! `volley serve --otlp-endpoint` as collectors expect it: the service name from
//! `OTEL_SERVICE_NAME`, an `https://` collector with a private CA
//! (`OTEL_EXPORTER_OTLP_CERTIFICATE`), and OTLP over gRPC (`OTEL_EXPORTER_OTLP_PROTOCOL=grpc`).
//! The collectors are written here (a TLS HTTP/1.1 receiver on rustls, a gRPC receiver on the h2
//! crate) and decode what they receive with the OpenTelemetry project's own types
//! (opentelemetry-proto). Spans come from calls `volley call` makes.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::TcpListener,
    process::Command,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use opentelemetry_proto::tonic::{
    collector::trace::v1::ExportTraceServiceRequest, common::v1::any_value::Value,
};
use prost::Message;
use volley_testkit::{Volley, VolleyProcess, otlp::OtlpReceiver, volley};

const VOLLEY: Volley = volley!();

type Bodies = Arc<Mutex<Vec<Vec<u8>>>>;

/// `volley serve` exporting to `url`, with `env` set.
fn serve(url: &str, env: &[(&str, &str)]) -> VolleyProcess {
    let mut cmd = Command::new(VOLLEY.bin());
    cmd.args(["serve", "--addr", "127.0.0.1:0", "--otlp-endpoint", url]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    VolleyProcess::from_command(cmd)
}

/// One call through the server, so it records a span.
fn make_a_call(server: &VolleyProcess) {
    let out = VOLLEY
        .command(&[
            "call",
            "-plaintext",
            "-d",
            r#"{"name":"otlp"}"#,
            &server.addr().to_string(),
            "helloworld.Greeter/SayHello",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// (service.name, span names) of every request received.
fn decode(bodies: &[Vec<u8>]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for b in bodies {
        for rs in ExportTraceServiceRequest::decode(b.as_slice())
            .unwrap()
            .resource_spans
        {
            let service = rs
                .resource
                .iter()
                .flat_map(|r| &r.attributes)
                .find(|kv| kv.key == "service.name")
                .and_then(|kv| kv.value.as_ref()?.value.as_ref())
                .map(|v| match v {
                    Value::StringValue(s) => s.clone(),
                    other => format!("{other:?}"),
                })
                .unwrap_or_default();
            for s in rs.scope_spans.iter().flat_map(|s| &s.spans) {
                out.push((service.clone(), s.name.clone()));
            }
        }
    }
    out
}

fn wait_for_span(bodies: &Bodies) -> Vec<(String, String)> {
    let start = Instant::now();
    loop {
        let got = decode(&bodies.lock().unwrap());
        if !got.is_empty() || start.elapsed() > Duration::from_secs(15) {
            return got;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_service_name_comes_from_otel_service_name() {
    let collector = OtlpReceiver::start();
    let server = serve(&collector.url(), &[("OTEL_SERVICE_NAME", "shop-frontend")]);
    make_a_call(&server);
    let bodies = collector.wait_for(Duration::from_secs(15), |b| !decode(b).is_empty());
    let spans = decode(&bodies);
    assert!(
        spans.contains(&("shop-frontend".into(), "helloworld.Greeter/SayHello".into())),
        "{spans:?}"
    );
}

#[test]
fn spans_reach_an_https_collector_with_a_private_ca() {
    let dir = std::env::temp_dir().join(format!("volley-otlp-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let params =
        rcgen::CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let cert = params.self_signed(&key).unwrap();
    let ca = dir.join("collector.pem");
    std::fs::write(&ca, cert.pem()).unwrap();
    let tls = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![cert.der().clone()],
        rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap(),
    )
    .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "https://127.0.0.1:{}",
        listener.local_addr().unwrap().port()
    );
    let bodies: Bodies = Arc::default();
    let keep = bodies.clone();
    let tls = Arc::new(tls);
    std::thread::spawn(move || {
        for tcp in listener.incoming().flatten() {
            let (tls, keep) = (tls.clone(), keep.clone());
            std::thread::spawn(move || {
                let conn = rustls::ServerConnection::new(tls).unwrap();
                let stream = rustls::StreamOwned::new(conn, tcp);
                serve_http1(stream, &keep);
            });
        }
    });
    let server = serve(
        &url,
        &[("OTEL_EXPORTER_OTLP_CERTIFICATE", &ca.display().to_string())],
    );
    make_a_call(&server);
    let spans = wait_for_span(&bodies);
    assert!(
        spans
            .iter()
            .any(|(svc, name)| svc == "volley-serve" && name == "helloworld.Greeter/SayHello"),
        "{spans:?}\n{}",
        server.log()
    );
}

/// HTTP/1.1 requests on one connection: each body kept, each answered 200.
fn serve_http1<S: Read + Write>(stream: S, keep: &Bodies) {
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut len = 0usize;
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                len = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; len];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        keep.lock().unwrap().push(body);
        let s = reader.get_mut();
        let _ = s.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n",
        );
        let _ = s.flush();
    }
}

#[test]
fn spans_reach_a_grpc_collector() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let bodies: Bodies = Arc::default();
    let keep = bodies.clone();
    rt.spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let keep = keep.clone();
            tokio::spawn(async move {
                let Ok(mut conn) = h2::server::handshake(tcp).await else {
                    return;
                };
                while let Some(Ok((req, mut respond))) = conn.accept().await {
                    let keep = keep.clone();
                    tokio::spawn(async move {
                        assert_eq!(
                            req.uri().path(),
                            "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
                        );
                        let mut body = req.into_body();
                        let mut all = Vec::new();
                        while let Some(Ok(chunk)) = body.data().await {
                            let _ = body.flow_control().release_capacity(chunk.len());
                            all.extend_from_slice(&chunk);
                        }
                        // One uncompressed gRPC frame: the request message after 5 bytes.
                        keep.lock().unwrap().push(all[5..].to_vec());
                        let head = http::Response::builder()
                            .header("content-type", "application/grpc")
                            .body(())
                            .unwrap();
                        let mut out = respond.send_response(head, false).unwrap();
                        out.send_data(bytes::Bytes::from_static(&[0, 0, 0, 0, 0]), false)
                            .unwrap();
                        let mut trailers = http::HeaderMap::new();
                        trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
                        out.send_trailers(trailers).unwrap();
                    });
                }
            });
        }
    });
    let server = serve(
        &url,
        &[
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_SERVICE_NAME", "orders"),
        ],
    );
    assert!(server.log().contains("(OTLP/gRPC)"), "{}", server.log());
    make_a_call(&server);
    let spans = wait_for_span(&bodies);
    assert!(
        spans.contains(&("orders".into(), "helloworld.Greeter/SayHello".into())),
        "{spans:?}\n{}",
        server.log()
    );
    drop(server);
    drop(rt);
}

/// The OpenTelemetry Collector built by its own builder (scripts/peers/otelcol, installed by
/// scripts/install-test-tools), receiving OTLP over HTTP and gRPC, both with TLS, and printing
/// what it receives (the debug exporter, detailed): stopped when dropped.
struct Collector {
    child: std::process::Child,
    log: Arc<Mutex<String>>,
    http: u16,
    grpc: u16,
}

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Collector {
    fn start(dir: &std::path::Path, cert: &str, key: &str) -> Collector {
        let (http, grpc) = (free_port(), free_port());
        let config = dir.join("otelcol.yaml");
        std::fs::write(
            &config,
            format!(
                "receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: 127.0.0.1:{grpc}\n\
                 \x20       tls: {{cert_file: {cert}, key_file: {key}}}\n      http:\n\
                 \x20       endpoint: 127.0.0.1:{http}\n        tls: {{cert_file: {cert}, key_file: {key}}}\n\
                 exporters:\n  debug:\n    verbosity: detailed\n\
                 service:\n  telemetry:\n    metrics:\n      level: none\n\
                 \x20 pipelines:\n    traces:\n      receivers: [otlp]\n      exporters: [debug]\n"
            ),
        )
        .unwrap();
        let mut child = Command::new(volley_testkit::tool("otelcol-volley"))
            .arg(format!("--config=file:{}", config.display()))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start the OpenTelemetry Collector");
        let log = Arc::new(Mutex::new(String::new()));
        let into = log.clone();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let mut l = into.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
        let c = Collector {
            child,
            log,
            http,
            grpc,
        };
        let start = Instant::now();
        while !c.log().contains("Everything is ready") {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the collector did not start:\n{}",
                c.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        c
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Waits until the collector has printed a span named `name` of service `service`.
    fn wait_for(&self, service: &str, name: &str) {
        let start = Instant::now();
        loop {
            let log = self.log();
            if log.contains(&format!("service.name: Str({service})"))
                && log.contains(&format!("Name           : {name}"))
            {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "no span {name} of {service} reached the collector:\n{log}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

#[test]
fn spans_reach_the_opentelemetry_collector_over_https_and_grpc_with_tls() {
    let dir = std::env::temp_dir().join(format!("volley-otelcol-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let params =
        rcgen::CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let cert = params.self_signed(&key).unwrap();
    let (cert_file, key_file) = (dir.join("collector.pem"), dir.join("collector.key"));
    std::fs::write(&cert_file, cert.pem()).unwrap();
    std::fs::write(&key_file, key.serialize_pem()).unwrap();
    let (c, k) = (
        cert_file.display().to_string(),
        key_file.display().to_string(),
    );
    let collector = Collector::start(&dir, &c, &k);
    // OTLP/HTTP over TLS, the CA given by flag, the service named by OTEL_SERVICE_NAME.
    let mut cmd = Command::new(VOLLEY.bin());
    cmd.args(["serve", "--addr", "127.0.0.1:0", "--otlp-endpoint"])
        .arg(format!("https://127.0.0.1:{}", collector.http))
        .args(["--otlp-cacert", &c])
        .env("OTEL_SERVICE_NAME", "shop-http");
    let server = VolleyProcess::from_command(cmd);
    make_a_call(&server);
    collector.wait_for("shop-http", "helloworld.Greeter/SayHello");
    drop(server);
    // OTLP/gRPC over TLS through volley's own client, the service named by
    // OTEL_RESOURCE_ATTRIBUTES.
    let mut cmd = Command::new(VOLLEY.bin());
    cmd.args(["serve", "--addr", "127.0.0.1:0", "--otlp-endpoint"])
        .arg(format!("https://127.0.0.1:{}", collector.grpc))
        .args(["--otlp-protocol", "grpc", "--otlp-cacert", &c])
        .env(
            "OTEL_RESOURCE_ATTRIBUTES",
            "service.name=shop-grpc,deployment.environment=test",
        );
    let server = VolleyProcess::from_command(cmd);
    make_a_call(&server);
    collector.wait_for("shop-grpc", "helloworld.Greeter/SayHello");
    assert!(
        collector
            .log()
            .contains("deployment.environment: Str(test)"),
        "{}",
        collector.log()
    );
    drop(server);
    // OTLP/gRPC chosen by OTEL_EXPORTER_OTLP_PROTOCOL (no flag), the service named by
    // OTEL_SERVICE_NAME, which wins over a service.name in OTEL_RESOURCE_ATTRIBUTES (the SDK
    // specification's order).
    let mut cmd = Command::new(VOLLEY.bin());
    cmd.args(["serve", "--addr", "127.0.0.1:0", "--otlp-endpoint"])
        .arg(format!("https://127.0.0.1:{}", collector.grpc))
        .args(["--otlp-cacert", &c])
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        .env("OTEL_SERVICE_NAME", "shop-grpc-env")
        .env("OTEL_RESOURCE_ATTRIBUTES", "service.name=not-this-one");
    let server = VolleyProcess::from_command(cmd);
    make_a_call(&server);
    collector.wait_for("shop-grpc-env", "helloworld.Greeter/SayHello");
    assert!(
        !collector.log().contains("not-this-one"),
        "{}",
        collector.log()
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn rust_log_sets_the_log_filter_as_in_every_tracing_program() {
    // RUST_LOG (no VOLLEY_LOG): the traced calls' debug events show.
    let mut cmd = Command::new(VOLLEY.bin());
    cmd.args([
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--otlp-endpoint",
        "http://127.0.0.1:9",
    ])
    .env_remove("VOLLEY_LOG")
    .env("RUST_LOG", "info,volley::call=debug");
    let server = VolleyProcess::from_command(cmd);
    make_a_call(&server);
    let start = Instant::now();
    while !server.log().contains("call ended") {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no debug event under RUST_LOG:\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Without it, info: no debug events.
    let mut cmd = Command::new(VOLLEY.bin());
    cmd.args([
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--otlp-endpoint",
        "http://127.0.0.1:9",
    ])
    .env_remove("VOLLEY_LOG")
    .env("RUST_LOG", "info");
    let quiet = VolleyProcess::from_command(cmd);
    make_a_call(&quiet);
    std::thread::sleep(Duration::from_millis(300));
    assert!(!quiet.log().contains("call ended"), "{}", quiet.log());
}
