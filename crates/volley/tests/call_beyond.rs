//! `volley call` beyond grpcurl: `-protocol grpc-web|connect` give the answers gRPC gives (the
//! same stdout, the same status and exit code) against `volley serve`, which speaks all three on
//! one port, and against a connect-go server (`scripts/peers/connect-greeter`, built from the Go
//! module proxy by scripts/install-test-tools), where grpcurl over gRPC is the reference; and
//! `-O json` prints one document per call whose fields a script can read.

use std::path::Path;

use serde_json::Value;
use volley_testkit::{Volley, VolleyProcess, tool, volley};

const VOLLEY: Volley = volley!();

fn data(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/call")
        .join(name)
        .display()
        .to_string()
}

fn demo_server() -> VolleyProcess {
    VOLLEY.serve(&[
        "--no-builtin",
        "--proto",
        &data("demo.proto"),
        "--stubs",
        &data("stubs.json"),
    ])
}

/// `volley call ARGS`: exit code, stdout, stderr.
fn call(args: &[&str]) -> (i32, String, String) {
    let out = VOLLEY
        .command(&["call"])
        .args(args)
        .output()
        .expect("run volley call");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn grpc_web_and_connect_answer_as_grpc_does() {
    let demo = demo_server();
    let d = demo.addr().to_string();
    let cases: [(&str, &str); 5] = [
        (r#"{"name":"x"}"#, "demo.v1.Demo/Get"),
        (r#"{"name":"y"}"#, "demo.v1.Demo/Get"),
        (r#"{"name":"err"}"#, "demo.v1.Demo/Get"),
        (r#"{"name":"x"}"#, "demo.v1.Demo/Watch"),
        (r#"{"name":"nobody"}"#, "demo.v1.Demo/Get"),
    ];
    for (body, method) in cases {
        let grpc = call(&["-plaintext", "-d", body, &d, method]);
        for protocol in ["grpc-web", "connect"] {
            let other = call(&["-plaintext", "-protocol", protocol, "-d", body, &d, method]);
            assert_eq!(grpc, other, "{protocol} {method} {body}");
        }
    }
    // The response headers come through each protocol (the stub sets x-source).
    for protocol in ["grpc", "grpc-web", "connect"] {
        let (code, out, _) = call(&[
            "-plaintext",
            "-v",
            "-protocol",
            protocol,
            "-d",
            r#"{"name":"y"}"#,
            &d,
            "demo.v1.Demo/Get",
        ]);
        assert_eq!(code, 0);
        assert!(out.contains("\nx-source: stub\n"), "{protocol}: {out}");
    }
    // Connect streams requests too; gRPC-Web calls only what browsers can.
    let chat = r#"{"name":"a"}{"name":"b"}"#;
    let grpc = call(&["-plaintext", "-d", chat, &d, "demo.v1.Demo/Chat"]);
    assert_eq!(grpc.0, 0, "{grpc:?}");
    assert_eq!(
        call(&[
            "-plaintext",
            "-protocol",
            "connect",
            "-d",
            chat,
            &d,
            "demo.v1.Demo/Chat"
        ]),
        grpc
    );
    let upload = call(&[
        "-plaintext",
        "-protocol",
        "connect",
        "-d",
        chat,
        &d,
        "demo.v1.Demo/Upload",
    ]);
    assert_eq!(
        upload,
        call(&["-plaintext", "-d", chat, &d, "demo.v1.Demo/Upload"])
    );
    let (code, _, err) = call(&[
        "-plaintext",
        "-protocol",
        "grpc-web",
        "-d",
        chat,
        &d,
        "demo.v1.Demo/Chat",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with("-protocol grpc-web calls unary and server-streaming methods;"),
        "{err}"
    );
    let (code, _, err) = call(&["-plaintext", "-protocol", "http3", &d, "list"]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with("The -protocol option must be 'grpc', 'grpc-web' or 'connect'."),
        "{err}"
    );
}

#[test]
fn o_json_prints_one_document_per_call() {
    let demo = demo_server();
    let d = demo.addr().to_string();
    for protocol in ["grpc", "connect"] {
        let (code, out, err) = call(&[
            "-plaintext",
            "-O",
            "json",
            "-protocol",
            protocol,
            "-d",
            r#"{"name":"y"}"#,
            &d,
            "demo.v1.Demo/Get",
        ]);
        assert_eq!(code, 0, "{err}");
        let doc: Value = serde_json::from_str(&out).expect("one JSON document");
        assert_eq!(doc["method"], "demo.v1.Demo/Get");
        assert_eq!(doc["protocol"], protocol);
        assert_eq!(doc["target"], d.as_str());
        assert_eq!(doc["requests"], 1);
        assert_eq!(doc["status"]["code"], 0);
        assert_eq!(doc["status"]["name"], "OK");
        assert_eq!(doc["headers"]["x-source"][0], "stub");
        assert_eq!(doc["messages"].as_array().map(Vec::len), Some(1));
        assert_eq!(doc["messages"][0]["name"], "y");
        assert_eq!(
            doc["messages"][0]["extra"]["@type"],
            "type.googleapis.com/demo.v1.Item"
        );
        for t in ["dial_ms", "call_ms", "total_ms"] {
            assert!(
                doc["timing"][t].as_f64().is_some_and(|ms| ms >= 0.0),
                "{t}: {doc}"
            );
        }
        // The messages keep grpcurl's field order (serde_json's maps would sort them).
        let name = out.find("\"name\": \"y\"").unwrap();
        let text = out.find("\"text\": \"t\"").unwrap();
        assert!(name < text, "{out}");
    }
    // A stream: every message; a failure: its status, and grpcurl's exit code.
    let (code, out, _) = call(&[
        "-plaintext",
        "-O",
        "json",
        "-d",
        "{}",
        &d,
        "demo.v1.Demo/Watch",
    ]);
    assert_eq!(code, 0);
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["messages"].as_array().map(Vec::len), Some(3));
    let (code, out, err) = call(&[
        "-plaintext",
        "-O",
        "json",
        "-d",
        r#"{"name":"err"}"#,
        &d,
        "demo.v1.Demo/Get",
    ]);
    assert_eq!(code, 64 + 3);
    assert_eq!(err, "");
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["status"]["code"], 3);
    assert_eq!(doc["status"]["name"], "InvalidArgument");
    assert_eq!(doc["status"]["message"], "bad <thing> & stuff");
    assert_eq!(doc["messages"], Value::Array(vec![]));
}

#[test]
fn address_forms_of_volley_client_work() {
    let server = VOLLEY.serve(&[]);
    let port = server.addr().port();
    for target in [
        format!("dns:///127.0.0.1:{port}"),
        format!("ipv4:127.0.0.1:{port},127.0.0.1:{port}"),
        format!("127.0.0.1:{port}"),
    ] {
        let (code, out, err) = call(&["-plaintext", &target, "grpc.testing.TestService/EmptyCall"]);
        assert_eq!((code, out.as_str()), (0, "{}\n"), "{target}: {err}");
    }
}

/// The connect-go server, stopped when dropped.
struct ConnectGo(std::process::Child, String);

impl Drop for ConnectGo {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn connect_go() -> ConnectGo {
    use std::io::BufRead;
    let mut child = std::process::Command::new(tool("connect-greeter"))
        .args(["-addr", "127.0.0.1:0"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start connect-greeter");
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = lines
        .find_map(|l| l.ok()?.strip_prefix("listening on ").map(str::to_owned))
        .expect("connect-greeter's address");
    ConnectGo(child, addr)
}

#[test]
fn every_protocol_answers_a_connect_go_server_as_grpcurl_does_over_grpc() {
    let server = connect_go();
    let a = server.1.as_str();
    let cases: [(&str, &str); 4] = [
        (r#"{"name":"x"}"#, "helloworld.Greeter/SayHello"),
        ("{}", "helloworld.Greeter/SayHello"),
        (r#"{"id":7}"#, "api.Users/Get"),
        ("{}", "api.Users/List"),
    ];
    for (body, method) in cases {
        for extra in [&[][..], &["-v"][..]] {
            let mut args = vec!["-plaintext"];
            args.extend_from_slice(extra);
            args.extend_from_slice(&["-d", body, a, method]);
            let g = std::process::Command::new(tool("grpcurl"))
                .args(&args)
                .output()
                .expect("run grpcurl");
            let grpcurl = (
                g.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&g.stdout).into_owned(),
            );
            for protocol in ["grpc", "grpc-web", "connect"] {
                let mut args = vec!["-plaintext", "-protocol", protocol];
                args.extend_from_slice(extra);
                args.extend_from_slice(&["-d", body, a, method]);
                let (code, out, err) = call(&args);
                let out = if extra.is_empty() {
                    out
                } else {
                    // -v's headers are the transport's own (content-type, date, a gRPC-Web
                    // server's trailers in the body): compare the messages and the status.
                    only_messages(&out)
                };
                let want = if extra.is_empty() {
                    grpcurl.1.clone()
                } else {
                    only_messages(&grpcurl.1)
                };
                assert_eq!(
                    (code, out),
                    (grpcurl.0, want),
                    "{protocol} {method} {body} {extra:?}: {err}"
                );
            }
        }
    }
}

/// `-v` output without its metadata sections: the messages, in order.
fn only_messages(v: &str) -> String {
    let mut keep = String::new();
    let mut inside = false;
    for line in v.lines() {
        if line.starts_with("Response contents:") {
            inside = true;
            continue;
        }
        if inside && line.is_empty() {
            inside = false;
        }
        if inside {
            keep.push_str(line);
            keep.push('\n');
        }
    }
    keep
}
