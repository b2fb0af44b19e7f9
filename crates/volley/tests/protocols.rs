//! One port, every protocol: curl speaks Connect (JSON and proto, unary and streaming) and gRPC-Web
//! (binary and text) to `volley serve`, and gets what grpcurl gets over gRPC; wrk loads `GET /`;
//! bad requests get the right HTTP status and leave the server serving; `volley bench
//! --protocol` loads over gRPC-Web and Connect, which grpc-go's gRPC-only server refuses.

use std::process::Command;

use base64::{Engine, engine::general_purpose::STANDARD};
use serde_json::Value;
use volley_testkit::{Volley, ok_stdout, tool, volley};

const VOLLEY: Volley = volley!();

/// curl with a body from `data` (bytes via a temp file); returns (status, content-type, body).
fn curl(url: &str, content_type: &str, data: &[u8], extra: &[&str]) -> (u16, String, Vec<u8>) {
    let dir = std::env::temp_dir().join(format!(
        "volley-curl-{}-{}",
        std::process::id(),
        rand_suffix()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let body = dir.join("body");
    let out = dir.join("out");
    std::fs::write(&body, data).unwrap();
    let meta = ok_stdout(
        Command::new(tool("curl"))
            .args(["-sS", "-X", "POST", "-H"])
            .arg(format!("content-type: {content_type}"))
            .args(extra)
            .arg("--data-binary")
            .arg(format!("@{}", body.display()))
            .arg("-o")
            .arg(&out)
            .args(["-w", "%{http_code} %{content_type}"])
            .arg(url),
    );
    let (code, ct) = meta.split_once(' ').unwrap();
    let resp = std::fs::read(&out).unwrap_or_default();
    std::fs::remove_dir_all(dir).unwrap();
    (code.parse().unwrap(), ct.to_string(), resp)
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// Splits enveloped frames: (flag, payload).
fn frames(mut b: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    while b.len() >= 5 {
        let len = u32::from_be_bytes([b[1], b[2], b[3], b[4]]) as usize;
        out.push((b[0], b[5..5 + len].to_vec()));
        b = &b[5 + len..];
    }
    assert!(b.is_empty(), "trailing bytes");
    out
}

fn env(flag: u8, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![flag];
    v.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    v.extend_from_slice(payload);
    v
}

#[test]
fn connect_json_matches_grpcurl_over_grpc() {
    let p = VOLLEY.serve(&["--threads", "2"]);
    let addr = p.addr().to_string();
    let (code, ct, body) = curl(
        &format!("http://{addr}/api.Users/Get"),
        "application/json",
        br#"{"id": 228}"#,
        &[],
    );
    assert_eq!((code, ct.as_str()), (200, "application/json"));
    let connect: Value = serde_json::from_slice(&body).unwrap();
    let grpc: Value = serde_json::from_str(&ok_stdout(Command::new(tool("grpcurl")).args([
        "-plaintext",
        "-d",
        r#"{"id": 228}"#,
        &addr,
        "api.Users/Get",
    ])))
    .unwrap();
    assert_eq!(connect, grpc);
    assert_eq!(connect["name"], "Dmitry K.");

    // HTTP/2 (prior knowledge) too, and a deadline that is kept.
    let (code, _, body) = curl(
        &format!("http://{addr}/helloworld.Greeter/SayHello"),
        "application/json",
        br#"{"name": "connect"}"#,
        &[
            "--http2-prior-knowledge",
            "-H",
            "connect-timeout-ms: 5000",
            "-H",
            "connect-protocol-version: 1",
        ],
    );
    assert_eq!(code, 200);
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap()["message"],
        "Hello connect"
    );

    // Binary protobuf: GetUserRequest{id: 228} = 08 e4 01.
    let (code, ct, body) = curl(
        &format!("http://{addr}/api.Users/Get"),
        "application/proto",
        &[0x08, 0xe4, 0x01],
        &[],
    );
    assert_eq!((code, ct.as_str()), (200, "application/proto"));
    assert_eq!(&body[..3], &[0x08, 0xe4, 0x01], "id 228 first");
}

#[test]
fn connect_errors_and_bad_requests() {
    let p = VOLLEY.serve(&[
        "--threads",
        "2",
        "--max-recv-message-size",
        "1KiB",
        "--delay",
        "300ms",
    ]);
    let addr = p.addr().to_string();
    let url = format!("http://{addr}/api.Users/Get");
    let (code, _, body) = curl(&url, "application/json", br#"{"idd": 1}"#, &[]);
    assert_eq!(code, 400);
    let e: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(e["code"], "invalid_argument");
    assert!(e["message"].as_str().unwrap().contains("idd"), "{e}");

    let (code, _, body) = curl(
        &format!("http://{addr}/api.Users/Nope"),
        "application/json",
        b"{}",
        &[],
    );
    assert_eq!(code, 404);
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap()["code"],
        "unimplemented"
    );

    let big = format!(r#"{{"id": 1, "pad": "{}"}}"#, "x".repeat(4096));
    let (code, _, body) = curl(&url, "application/json", big.as_bytes(), &[]);
    assert_eq!(code, 413);
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap()["code"],
        "resource_exhausted"
    );

    let (code, _, _) = curl(&url, "text/xml", b"<id>1</id>", &[]);
    assert_eq!(code, 415);

    // The deadline reaches the handler (which sleeps 300 ms).
    let (code, _, body) = curl(
        &url,
        "application/json",
        br#"{"id": 1}"#,
        &["-H", "connect-timeout-ms: 50"],
    );
    assert_eq!(code, 504);
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap()["code"],
        "deadline_exceeded"
    );

    // Still serving.
    let (code, _, _) = curl(&url, "application/json", br#"{"id": 1}"#, &[]);
    assert_eq!(code, 200);
}

#[test]
fn connect_streaming_and_grpc_web() {
    let p = VOLLEY.serve(&["--threads", "2"]);
    let addr = p.addr().to_string();

    // Connect server streaming, JSON: ten users then an end-stream frame.
    let (code, ct, body) = curl(
        &format!("http://{addr}/api.Users/List"),
        "application/connect+json",
        &env(0, b"{}"),
        &[],
    );
    assert_eq!((code, ct.as_str()), (200, "application/connect+json"));
    let f = frames(&body);
    assert_eq!(f.len(), 11);
    let ninth: Value = serde_json::from_slice(&f[9].1).unwrap();
    assert_eq!(ninth["email"], "user9@test");
    assert_eq!(f[10].0, 2);
    assert_eq!(
        serde_json::from_slice::<Value>(&f[10].1).unwrap(),
        serde_json::json!({})
    );

    // Connect streaming error: the end-stream frame carries it, HTTP status 200.
    let (code, _, body) = curl(
        &format!("http://{addr}/api.Users/Nope"),
        "application/connect+proto",
        &env(0, b""),
        &[],
    );
    assert_eq!(code, 200);
    let f = frames(&body);
    assert_eq!(f.last().unwrap().0, 2);
    let end: Value = serde_json::from_slice(&f.last().unwrap().1).unwrap();
    assert_eq!(end["error"]["code"], "unimplemented");

    // gRPC-Web, binary: a message frame then a 0x80 trailer frame.
    let req = env(0, &[0x08, 0xe4, 0x01]);
    let (code, ct, body) = curl(
        &format!("http://{addr}/api.Users/Get"),
        "application/grpc-web+proto",
        &req,
        &[],
    );
    assert_eq!((code, ct.as_str()), (200, "application/grpc-web+proto"));
    let f = frames(&body);
    assert_eq!(f.len(), 2);
    assert_eq!(&f[0].1[..3], &[0x08, 0xe4, 0x01]);
    assert_eq!(f[1].0, 0x80);
    assert!(String::from_utf8_lossy(&f[1].1).contains("grpc-status: 0"));

    // gRPC-Web text: the same, in base64, server streaming too.
    let (code, ct, body) = curl(
        &format!("http://{addr}/api.Users/List"),
        "application/grpc-web-text",
        STANDARD.encode(env(0, b"")).as_bytes(),
        &[],
    );
    assert_eq!(
        (code, ct.as_str()),
        (200, "application/grpc-web-text+proto")
    );
    let text = String::from_utf8(body).unwrap();
    // Each frame is encoded on its own (with its own padding).
    let mut decoded = Vec::new();
    let mut rest = text.as_str();
    while !rest.is_empty() {
        let end = rest.find('=').map(|i| {
            let mut j = i;
            while rest.as_bytes().get(j) == Some(&b'=') {
                j += 1;
            }
            j
        });
        let (chunk, tail) = rest.split_at(end.unwrap_or(rest.len()));
        decoded.extend(STANDARD.decode(chunk).unwrap());
        rest = tail;
    }
    let f = frames(&decoded);
    assert_eq!(f.len(), 11);
    assert_eq!(f[10].0, 0x80);
}

#[test]
fn wrk_loads_get_root_and_http_addr_listens_too() {
    let p = VOLLEY.serve(&["--threads", "2", "--http-addr", "127.0.0.1:0"]);
    // The second listener's line follows the first.
    let mut log = p.log();
    for _ in 0..100 {
        if log.matches("listening on").count() >= 2 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        log = p.log();
    }
    let second = log
        .lines()
        .filter_map(|l| l.split("listening on ").nth(1))
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .expect("a second listener")
        .to_string();
    assert!(log.contains("--http-addr"), "{log}");
    for addr in [p.addr().to_string(), second] {
        let out = ok_stdout(
            Command::new(tool("wrk"))
                .args(["--connections=20", "--threads=2", "--duration=2s"])
                .arg(format!("http://{addr}/")),
        );
        assert!(out.contains("requests in"), "{out}");
        assert!(!out.contains("Non-2xx"), "{out}");
        assert!(!out.contains("Socket errors"), "{out}");
        let rps: f64 = out
            .lines()
            .find_map(|l| l.strip_prefix("Requests/sec:"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(rps > 100.0, "{out}");
    }
}

/// Blanks numbers (and unit suffixes glued to them) so two reports can be compared by layout.
fn layout(s: &str) -> Vec<String> {
    s.lines()
        .map(|l| {
            l.split_whitespace()
                .map(|w| {
                    if w.starts_with(|c: char| c.is_ascii_digit()) {
                        "N"
                    } else if w.starts_with("http://") {
                        "URL"
                    } else {
                        w
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

#[test]
fn http_load_with_volley_bench_reads_like_wrk() {
    let p = VOLLEY.serve(&["--threads", "2"]);
    let url = format!("http://{}/", p.addr());
    let wrk = ok_stdout(
        Command::new(tool("wrk"))
            .args(["--threads=2", "--connections=10", "--duration=1s"])
            .arg(&url),
    );
    let ours = ok_stdout(
        Command::new(VOLLEY.bin())
            .args(["bench", "-c", "10", "--cpus", "2", "-z", "1s", "-O", "wrk"])
            .arg(&url),
    );
    assert_eq!(layout(&wrk), layout(&ours), "wrk:\n{wrk}\nvolley:\n{ours}");
    assert!(ours.contains("  2 threads and 10 connections"), "{ours}");

    // The same engine, ghz's report, HTTP/2, a Connect call with a body and a header.
    let addr = p.addr().to_string();
    let json = ok_stdout(
        Command::new(VOLLEY.bin())
            .args([
                "bench",
                "--http2",
                "-c",
                "10",
                "-n",
                "500",
                "-H",
                "content-type: application/json",
                "-d",
                r#"{"id": 228}"#,
                "-O",
                "json",
            ])
            .arg(format!("http://{addr}/api.Users/Get")),
    );
    let r: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(r["statusCodeDistribution"]["OK"], 500);
    assert!(r["volley"]["bytesReceived"].as_u64().unwrap() >= 500 * 70);

    // A path that answers 415 counts as errors, as wrk's "Non-2xx" line.
    let out = ok_stdout(
        Command::new(VOLLEY.bin())
            .args([
                "bench", "-c", "2", "-n", "20", "--method", "POST", "-O", "wrk",
            ])
            .arg(format!("http://{addr}/nope")),
    );
    assert!(out.contains("Non-2xx or 3xx responses: 20"), "{out}");

    // -O wrk needs an HTTP target.
    let out = Command::new(VOLLEY.bin())
        .args(["bench", "--call", "a.B/C", "-O", "wrk", &addr])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("-O wrk is for HTTP targets"));
}

#[test]
fn rest_routes_of_the_built_in_services() {
    let p = VOLLEY.serve(&["--threads", "2"]);
    let addr = p.addr().to_string();
    let get = |path: &str| {
        ok_stdout(
            Command::new(tool("curl"))
                .args(["-sS", "-w", "\n%{http_code}"])
                .arg(format!("http://{addr}{path}")),
        )
    };
    let out = get("/v1/users/228");
    let (body, code) = out.rsplit_once('\n').unwrap();
    assert_eq!(code, "200");
    let rest: Value = serde_json::from_str(body).unwrap();
    let grpc: Value = serde_json::from_str(&ok_stdout(Command::new(tool("grpcurl")).args([
        "-plaintext",
        "-d",
        r#"{"id": 228}"#,
        &addr,
        "api.Users/Get",
    ])))
    .unwrap();
    assert_eq!(rest, grpc);

    let out = get("/v1/users");
    let lines: Vec<&str> = out.lines().filter(|l| l.starts_with('{')).collect();
    assert_eq!(lines.len(), 10);
    assert!(lines[9].contains("user9@test"));

    let out = get("/v1/greeter/hello/rest");
    assert!(out.starts_with(r#"{"message":"Hello rest"}"#), "{out}");
    let (code, _, body) = curl(
        &format!("http://{addr}/v1/hi"),
        "application/json",
        br#"{"name": "hyperf", "sex": 1}"#,
        &[],
    );
    assert_eq!(code, 200);
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap()["user"]["sex"],
        1
    );

    assert!(get("/v1/nothing").ends_with("404"));
    let out = get("/v1/users/abc");
    assert!(out.ends_with("400"), "{out}");
}

/// `volley bench --protocol P` against `volley serve`, `-O json`: the report.
fn bench_over(addr: &str, proto: &str, call: &str, data: &str, protocol: &str) -> Value {
    let out = VOLLEY
        .command(&[
            "bench",
            "--insecure",
            "--proto",
            proto,
            "--call",
            call,
            "-d",
            data,
            "-n",
            "200",
            "-c",
            "4",
            "--protocol",
            protocol,
            "-O",
            "json",
            addr,
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{protocol}: {out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn volley_bench_loads_over_grpc_web_and_connect() {
    let p = VOLLEY.serve(&["--threads", "2"]);
    let addr = p.addr().to_string();
    let users = volley_testkit::workspace_file("proto/api/users.proto");
    for protocol in ["grpc", "grpc-web", "connect"] {
        let r = bench_over(&addr, &users, "api.Users.Get", r#"{"id":228}"#, protocol);
        assert_eq!(r["count"], 200, "{protocol}: {r}");
        assert_eq!(r["statusCodeDistribution"]["OK"], 200, "{protocol}: {r}");
    }
    // grpc-go's server (route_guide) speaks gRPC only: it answers gRPC, and refuses the same
    // calls sent as gRPC-Web or Connect with HTTP 415, so those are not gRPC on the wire.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut rg = Command::new(tool("route-guide"))
        .args(["-port", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start route-guide");
    let rg_addr = format!("127.0.0.1:{port}");
    for _ in 0..200 {
        if std::net::TcpStream::connect(&rg_addr).is_ok() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    let proto = volley_testkit::workspace_file("scripts/peers/route-guide/route_guide.proto");
    let call = "routeguide.RouteGuide.GetFeature";
    let data = r#"{"latitude":409146138,"longitude":-746188906}"#;
    let grpc = bench_over(&rg_addr, &proto, call, data, "grpc");
    assert_eq!(grpc["statusCodeDistribution"]["OK"], 200, "{grpc}");
    for protocol in ["grpc-web", "connect"] {
        let r = bench_over(&rg_addr, &proto, call, data, protocol);
        assert_eq!(
            r["statusCodeDistribution"]["Unknown"], 200,
            "{protocol}: {r}"
        );
        assert!(
            r["errorDistribution"].to_string().contains("415"),
            "{protocol}: {r}"
        );
    }
    let _ = rg.kill();
    let _ = rg.wait();

    // A stream is refused in one line.
    let out = VOLLEY
        .command(&[
            "bench",
            "--insecure",
            "--proto",
            &users,
            "--call",
            "api.Users.List",
            "-d",
            "{}",
            "-n",
            "1",
            "--protocol",
            "connect",
            &addr,
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--protocol connect: volley bench makes unary calls over gRPC-Web and Connect; api.Users.List streams"),
        "{err}"
    );
}
