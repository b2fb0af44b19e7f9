//! Bad input as one table: CLI flags, .proto files, JSON data, TLS, gRPC frames, headers and a
//! garbage preface, each with the exact error it must produce. The CLI exits non-zero with that
//! one line; the server answers with that status (or HTTP answer) and keeps serving everyone else.

use std::{
    io::{Read, Write},
    net::TcpStream,
    process::Command,
    time::Duration,
};

use bytes::Bytes;
use volley_services::pb::api::GetUserRequest;
use volley_testkit::{RawClient, Volley, VolleyProcess, frame, volley, workspace};
use volley_wire::{Code, compression::Encoding};

const VOLLEY: Volley = volley!();

/// A command line, run in the case directory, and the one line it must print (exit non-zero).
/// `{plain}`/`{tls}` stand for the two servers' addresses, `{users}` for users.proto.
const CLI: &[(&str, &str, &str)] = &[
    // -- flags
    (
        "zero concurrency",
        "bench --insecure --proto {users} --call api.Users/Get -c 0 -n 10 {plain}",
        "volley: error: -c must be at least 1",
    ),
    (
        "a count that is not a number",
        "bench --insecure --proto {users} --call api.Users/Get -n abc {plain}",
        "volley: error: invalid value 'abc' for '--total <TOTAL>': invalid digit found in string",
    ),
    (
        "a negative rate",
        "bench --insecure --proto {users} --call api.Users/Get --rps -5 {plain}",
        "volley: error: unexpected argument '-5' found",
    ),
    (
        "a pool of zero connections",
        "bench --insecure --proto {users} --call api.Users/Get --strategy pool:0 {plain}",
        "volley: error: --strategy: strategy \"pool:0\": \"0\" is not a connection count >= 1",
    ),
    (
        "a duration with an unknown unit",
        "bench --insecure --proto {users} --call api.Users/Get -z 5parsecs {plain}",
        "volley: error: -z: invalid duration \"5parsecs\" (expected e.g. 200ms, 10s, 1m30s)",
    ),
    (
        "a size with an unknown unit",
        "bench --insecure --proto {users} --call api.Users/Get --max-recv-message-size 1x {plain}",
        "volley: error: --max-recv-message-size: invalid size \"1x\" (expected e.g. 4194304, 4MB, 4MiB)",
    ),
    (
        "a listen address that is not one",
        "serve --addr notanaddr",
        "volley: error: invalid value 'notanaddr' for '--addr <ADDR>': \"notanaddr\" is neither host:port (127.0.0.1:9090) nor unix:/path/to/socket",
    ),
    (
        "orders with no clients",
        "orders --clients 0",
        "volley: error: --clients must be at least 1",
    ),
    (
        "an unreachable server",
        "bench --insecure --proto {users} --call api.Users/Get -n 5 127.0.0.1:1",
        "volley: error: connection error: cannot connect to 127.0.0.1:1: Connection refused (os error 111)",
    ),
    // -- .proto files
    (
        "a .proto with a syntax error",
        "bench --insecure --proto syntax.proto --call x.S/M {plain}",
        "volley: error: syntax.proto:3:26: expected ';' or '[', but found '}'",
    ),
    (
        "a .proto importing a missing file",
        "bench --insecure --proto imp.proto --call x.S/M {plain}",
        "volley: error: imp.proto:2:1: import 'nothere.proto' not found",
    ),
    (
        "a missing .proto",
        "bench --insecure --proto missing.proto --call x.S/M {plain}",
        "volley: error: cannot read --proto missing.proto: no such file",
    ),
    (
        "an unknown method",
        "bench --insecure --proto {users} --call api.Users/Nope {plain}",
        "volley: error: unknown --call \"api.Users/Nope\": service api.Users has no method Nope (it has: Get, List)",
    ),
    (
        "an unknown service",
        "bench --insecure --proto {users} --call api.Nobody/Get {plain}",
        "volley: error: unknown --call \"api.Nobody/Get\": service api.Nobody not found (services: api.Users)",
    ),
    (
        "a --call without a service",
        "bench --insecure --proto {users} --call nodot {plain}",
        "volley: error: invalid --call \"nodot\": expected package.Service/Method or package.Service.Method",
    ),
    // -- JSON data
    (
        "a string where an integer goes",
        "bench --insecure --proto {users} --call api.Users/Get -d '{\"id\": \"abc\"}' {plain}",
        "volley: error: -d: data does not fit api.GetUserRequest: invalid digit found in string",
    ),
    (
        "an unknown field",
        "bench --insecure --proto {users} --call api.Users/Get -d '{\"nosuch\": 1}' {plain}",
        "volley: error: -d: data does not fit api.GetUserRequest: unrecognized field name 'nosuch'",
    ),
    (
        "data that is not JSON",
        "bench --insecure --proto {users} --call api.Users/Get -d 'not json' {plain}",
        "volley: error: -d: data does not fit api.GetUserRequest: invalid JSON: expected ident at line 1 column 2",
    ),
    (
        "an array of numbers for a message",
        "bench --insecure --proto {users} --call api.Users/Get -d '[1,2]' {plain}",
        "volley: error: -d: data does not fit api.GetUserRequest: invalid type: integer `1`, expected a map",
    ),
    (
        "a missing data file",
        "bench --insecure --proto {users} --call api.Users/Get -D missing.json {plain}",
        "volley: error: cannot read -D missing.json: No such file or directory (os error 2)",
    ),
    (
        "a template naming an unknown field",
        "bench --insecure --proto {users} --call api.Users/Get -d '{\"id\": {{.Bogus}}}' {plain}",
        "volley: error: -d: template: can't evaluate field Bogus (known: WorkerID, RequestNumber, FullyQualifiedName, MethodName, ServiceName, InputName, OutputName, IsClientStreaming, IsServerStreaming, Timestamp, TimestampUnix, TimestampUnixMilli, TimestampUnixNano, UUID)",
    ),
    // -- mixes, stages, data files and scenarios
    (
        "weights that sum to zero",
        "bench --insecure --proto {users} --call api.Users/Get:0 --call api.Users/List:0 {plain}",
        "volley: error: the mix's weights sum to 0 (api.Users/Get:0, api.Users/List:0): give at least one entry a positive weight",
    ),
    (
        "a weight that is not a number",
        "bench --insecure --proto {users} --call api.Users/Get:most {plain}",
        "volley: error: --call api.Users/Get:most: the weight \"most\" is not a whole number (api.Users.Get:80)",
    ),
    (
        "an unknown method in the mix",
        "bench --insecure --proto {users} --call api.Users/Get:80 --call api.Users/Gte:20 {plain}",
        "volley: error: mix entry 2 (api.Users/Gte): unknown --call \"api.Users/Gte\": service api.Users has no method Gte (it has: Get, List)",
    ),
    (
        "a malformed stage",
        "bench --insecure --proto {users} --call api.Users/Get --stage 30s {plain}",
        "volley: error: --stage 30s: expected DURATION:RATE (30s:500: to 500 calls/s over 30 s)",
    ),
    (
        "a scenario stage that is neither a ramp nor a hold",
        "bench --scenario stages.yaml {plain}",
        "volley: error: stage 2: expected {to: RATE, over: DURATION} or {hold: DURATION}, not {\"to\":500}",
    ),
    (
        "an NDJSON line that does not fit the message",
        "bench --insecure --proto {users} --call api.Users/Get -D ids.ndjson {plain}",
        "volley: error: ids.ndjson line 3: data does not fit api.GetUserRequest: invalid digit found in string",
    ),
    (
        "a threshold naming a method the mix does not call",
        "bench --insecure --proto {users} --call api.Users/Get:1 --call api.Users/List:1 --threshold p99{call=api.Users.Lst}<1s {plain}",
        "volley: error: threshold \"p99{call=api.Users.Lst}<1s\": the mix has no method api.Users.Lst (it has api.Users/Get, api.Users/List)",
    ),
    // -- TLS
    (
        "plaintext to a TLS server",
        "bench --insecure --proto {users} --call api.Users/Get -n 5 {tls}",
        "volley: error: connection error: HTTP/2 handshake with {tls} failed: broken pipe (the server may want TLS: drop --insecure)",
    ),
    (
        "a server certificate from an unknown CA",
        "bench --proto {users} --call api.Users/Get -n 5 {tls}",
        "volley: error: connection error: TLS handshake with {tls} failed: we refused the server's certificate: it is not signed by a CA we trust; pass its CA (for a self-signed certificate, the certificate itself) with --cacert, or skip the check with --skipTLS",
    ),
    (
        "a certificate for another name",
        "bench --cacert tls/ca.pem --cname wrong.example --proto {users} --call api.Users/Get -n 5 {tls}",
        "volley: error: connection error: TLS handshake with {tls} failed: we refused the server's certificate: it is for localhost, 127.0.0.1, 0::1, not wrong.example; connect by one of those names or set --cname, or skip the check with --skipTLS",
    ),
    (
        "TLS to a plaintext server",
        "bench --cacert tls/ca.pem --proto {users} --call api.Users/Get -n 5 {plain}",
        "volley: error: connection error: TLS handshake with {plain} failed: the server did not speak TLS (InvalidContentType); is it plaintext? then use --insecure",
    ),
    (
        "a CA file with no certificate",
        "bench --cacert garbage.pem --proto {users} --call api.Users/Get -n 5 {tls}",
        "volley: error: garbage.pem: no certificate found in the file",
    ),
    (
        "a missing server certificate",
        "serve --addr 127.0.0.1:0 --tls-cert nonexist.pem --tls-key nonexist.key",
        "volley: error: cannot read TLS certificate nonexist.pem: No such file or directory (os error 2)",
    ),
    (
        "a server certificate file with no certificate",
        "serve --addr 127.0.0.1:0 --tls-cert garbage.pem --tls-key garbage.pem",
        "volley: error: garbage.pem: no certificate found in the file",
    ),
];

/// Splits a command line as a shell would (single quotes only).
fn words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in s.chars() {
        match c {
            '\'' => quoted = !quoted,
            ' ' if !quoted => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A call sent as raw bytes and the exact status it must get.
struct CallCase {
    name: &'static str,
    path: &'static str,
    headers: &'static [(&'static str, &'static str)],
    body: Vec<Bytes>,
    code: Code,
    message: &'static str,
}

fn frame_with(flag: u8, declared: u32, payload: &[u8]) -> Bytes {
    let mut b = vec![flag];
    b.extend_from_slice(&declared.to_be_bytes());
    b.extend_from_slice(payload);
    Bytes::from(b)
}

fn call_cases() -> Vec<CallCase> {
    let get = frame(&GetUserRequest { id: 1 });
    let gz = Encoding::Gzip.compress_frame(&get[5..]);
    vec![
        CallCase {
            name: "an unknown frame flag",
            path: "/api.Users/Get",
            headers: &[],
            body: vec![frame_with(2, 2, &[8, 1])],
            code: Code::Internal,
            message: "grpc: received unexpected payload format 2",
        },
        CallCase {
            name: "a frame over the 4 MiB limit",
            path: "/api.Users/Get",
            headers: &[],
            body: vec![frame_with(0, 5 << 20, &[0; 16])],
            code: Code::ResourceExhausted,
            message: "grpc: received message larger than max (5242880 vs. 4194304)",
        },
        CallCase {
            name: "a frame cut short",
            path: "/api.Users/Get",
            headers: &[],
            body: vec![frame_with(0, 10, &[8, 1])],
            code: Code::Internal,
            message: "grpc: the client ended the stream inside a message",
        },
        CallCase {
            name: "a compressed frame without grpc-encoding",
            path: "/api.Users/Get",
            headers: &[],
            body: vec![gz.clone()],
            code: Code::Internal,
            message: "grpc: compressed flag set with identity or empty encoding",
        },
        CallCase {
            name: "bytes that are not the message",
            path: "/api.Users/Get",
            headers: &[],
            body: vec![frame_with(0, 3, &[0xff, 0xff, 0xff])],
            code: Code::Internal,
            message: "grpc: error unmarshalling request: failed to decode Protobuf message: invalid varint",
        },
        CallCase {
            name: "gzip that is not gzip",
            path: "/api.Users/Get",
            headers: &[("grpc-encoding", "gzip")],
            body: vec![frame_with(1, 4, b"nope")],
            code: Code::Internal,
            message: "grpc: failed to decompress the message: unexpected end of file",
        },
        CallCase {
            name: "two messages on a unary call",
            path: "/api.Users/Get",
            headers: &[],
            body: vec![get.clone(), get.clone()],
            code: Code::Unimplemented,
            message: "grpc: the client sent more than one request message for a unary call",
        },
        CallCase {
            name: "an unknown method",
            path: "/api.Users/Nope",
            headers: &[],
            body: vec![get.clone()],
            code: Code::Unimplemented,
            message: "unknown method Nope for service api.Users",
        },
        CallCase {
            name: "an unknown service",
            path: "/api.Nobody/Get",
            headers: &[],
            body: vec![get.clone()],
            code: Code::Unimplemented,
            message: "unknown service api.Nobody",
        },
        CallCase {
            name: "a malformed grpc-timeout",
            path: "/api.Users/Get",
            headers: &[("grpc-timeout", "soon")],
            body: vec![get.clone()],
            code: Code::Internal,
            message: "transport: malformed grpc-timeout: \"soon\"",
        },
        CallCase {
            name: "an unsupported grpc-encoding",
            path: "/api.Users/Get",
            headers: &[("grpc-encoding", "br")],
            body: vec![get.clone()],
            code: Code::Unimplemented,
            message: "grpc: Decompressor is not installed for grpc-encoding \"br\"",
        },
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bad_input_gets_its_exact_error() {
    let dir = std::env::temp_dir().join(format!("volley-bad-input-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("syntax.proto"),
        "syntax = \"proto3\";\npackage x;\nmessage A { int32 id = 1 }\nservice S { rpc M (A) returns (A); }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("imp.proto"),
        "syntax = \"proto3\";\nimport \"nothere.proto\";\npackage x;\n",
    )
    .unwrap();
    std::fs::write(dir.join("garbage.pem"), "garbage\n").unwrap();
    std::fs::write(dir.join("ids.ndjson"), "{\"id\": 1}\n\n{\"id\": \"abc\"}\n").unwrap();
    std::fs::write(
        dir.join("stages.yaml"),
        "insecure: true\ncall: api.Users.Get\nstages: [{to: 500, over: 10s}, {to: 500}]\n",
    )
    .unwrap();
    let plain = VOLLEY.serve(&[]);
    let tls_dir = dir.join("tls");
    let tls = VolleyProcess::start(
        VOLLEY.bin(),
        &[
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--tls-self-signed",
            "--tls-dir",
            tls_dir.to_str().unwrap(),
        ],
    );
    let users = workspace()
        .join("proto/api/users.proto")
        .display()
        .to_string();
    let fill = |s: &str| {
        s.replace("{plain}", &plain.addr().to_string())
            .replace("{tls}", &tls.addr().to_string())
            .replace("{users}", &users)
    };

    let mut wrong = Vec::new();
    let mut checked = 0;
    for (name, line, want) in CLI {
        let out = Command::new(VOLLEY.bin())
            .args(words(&fill(line)))
            .current_dir(&dir)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let want = fill(want);
        checked += 1;
        if out.status.success() || stderr.trim_end() != want {
            wrong.push(format!(
                "{name}: `volley {line}`\n   exit {:?}\n   want {want}\n   got  {}",
                out.status.code(),
                stderr.trim_end()
            ));
        }
    }

    let c = RawClient::connect(plain.addr()).await.unwrap();
    for case in call_cases() {
        let r = c.call(case.path, case.headers, case.body).await.unwrap();
        let s = r.status();
        checked += 1;
        if s.code() != case.code || s.message() != case.message {
            wrong.push(format!(
                "{}: want {:?} {:?}, got {:?} {:?}",
                case.name,
                case.code,
                case.message,
                s.code(),
                s.message()
            ));
        }
    }

    // Plain HTTP answers: a gRPC content type the server cannot speak, a GET on a gRPC method,
    // and a garbage preface.
    for (name, req, want) in [
        (
            "an unknown gRPC codec",
            http::Request::post(format!("http://{}/api.Users/Get", plain.addr()))
                .header("content-type", "application/grpc+foo")
                .body(())
                .unwrap(),
            415,
        ),
        (
            "GET on a gRPC method",
            http::Request::get(format!("http://{}/api.Users/Get", plain.addr()))
                .header("content-type", "application/grpc")
                .body(())
                .unwrap(),
            405,
        ),
    ] {
        let r = c
            .send_request(req, vec![frame(&GetUserRequest { id: 1 })])
            .await
            .unwrap();
        checked += 1;
        if r.http_status != want {
            wrong.push(format!("{name}: want HTTP {want}, got {}", r.http_status));
        }
    }
    let mut s = TcpStream::connect(plain.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"\x16\x03\x01garbage that is no preface\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    checked += 1;
    let answer = String::from_utf8_lossy(&answer);
    if !answer.starts_with("HTTP/1.1 400 Bad Request") {
        wrong.push(format!(
            "a garbage preface: want HTTP/1.1 400, got {answer:?}"
        ));
    }

    assert!(
        wrong.is_empty(),
        "{} of {checked} bad inputs did not get their error:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert!(checked >= 30, "{checked} cases");

    // Everyone else is still served, and nothing panicked.
    let r = RawClient::connect(plain.addr())
        .await
        .unwrap()
        .call(
            "/api.Users/Get",
            &[],
            vec![frame(&GetUserRequest { id: 1 })],
        )
        .await
        .unwrap();
    assert_eq!(r.code(), Code::Ok);
    for p in [&plain, &tls] {
        assert!(!p.log().contains("panicked"), "{}", p.log());
    }
    println!("{checked} bad inputs, each with its exact error");
    let _ = std::fs::remove_dir_all(&dir);
}
