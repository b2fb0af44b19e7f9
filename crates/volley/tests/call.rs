//! `volley call` against grpcurl (v1.9.4, installed by scripts/install-test-tools): the same
//! command line run with both against one `volley serve` on a port chosen at run time, stdout,
//! stderr and exit code compared byte for byte. grpcurl's own path in its `Try '... -help'` line
//! is the only thing rewritten (to `volley call`), and `-vv`'s durations the only thing dropped.
//! Where the bytes cannot match (the usage text is our own words), the first line and the exit
//! code are compared, and the test says why.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

use volley_testkit::{Volley, VolleyProcess, output_with_stdin, tool, volley};

const VOLLEY: Volley = volley!();

/// One run's results, grpcurl's path in its messages rewritten to `volley call`. volley's own
/// `Hint: ...` lines (after grpcurl's error, where grpcurl stops short of saying what to do) are
/// kept apart: the rest is compared with grpcurl's bytes, the hints by `hints_...` below.
#[derive(Debug)]
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
    hints: Vec<String>,
}

impl PartialEq for Ran {
    fn eq(&self, other: &Ran) -> bool {
        (self.code, &self.stdout, &self.stderr) == (other.code, &other.stdout, &other.stderr)
    }
}

fn ran(out: Output) -> Ran {
    let grpcurl = tool("grpcurl").display().to_string();
    let all = String::from_utf8_lossy(&out.stderr).replace(&grpcurl, "volley call");
    let mut stderr = String::new();
    let mut hints = Vec::new();
    for line in all.split_inclusive('\n') {
        match line.strip_prefix("Hint: ") {
            Some(h) => hints.push(h.trim_end().to_owned()),
            None => stderr.push_str(line),
        }
    }
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
        hints,
    }
}

/// grpcurl and `volley call` with `args` and `stdin`.
fn both(args: &[&str], stdin: &[u8]) -> (Ran, Ran) {
    let mut g = Command::new(tool("grpcurl"));
    g.args(args);
    let mut v = VOLLEY.command(&["call"]);
    v.args(args);
    (
        ran(output_with_stdin(&mut g, stdin)),
        ran(output_with_stdin(&mut v, stdin)),
    )
}

/// Asserts both print the same bytes (volley's hints aside) and exit alike; returns volley's run.
fn same_in(args: &[&str], stdin: &[u8]) -> Ran {
    let (g, v) = both(args, stdin);
    assert_eq!(
        g, v,
        "grpcurl (left) and volley call (right) differ for {args:?}"
    );
    assert!(g.hints.is_empty(), "grpcurl printed a Hint line: {g:?}");
    v
}

fn same(args: &[&str]) -> Ran {
    same_in(args, b"")
}

/// The demo schema and its stubs (maps, floats, escapes, well-known types, an `Any`, errors).
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

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("volley-call-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn list_and_describe_print_what_grpcurl_prints() {
    let server = VOLLEY.serve(&[]);
    let a = server.addr().to_string();
    let out = same(&["-plaintext", &a, "list"]);
    assert!(out.stdout.contains("grpc.testing.TestService\n"), "{out:?}");
    same(&["-plaintext", &a, "list", "grpc.testing.TestService"]);
    for symbol in [
        "grpc.testing.TestService",
        "grpc.testing.TestService.UnaryCall",
        "grpc.testing.SimpleRequest",
        "grpc.testing.SimpleRequest.response_size",
        "grpc.testing.PayloadType",
        "grpc.testing.PayloadType.COMPRESSABLE",
        "grpc.testing.LoadBalancerStatsResponse.RpcsByPeerEntry",
        ".grpc.testing.Empty",
    ] {
        assert_eq!(
            same(&["-plaintext", &a, "describe", symbol]).code,
            0,
            "{symbol}"
        );
    }
    same(&["-plaintext", &a, "describe"]);
    // Failures: exit 1 and grpcurl's words.
    for args in [
        ["list", "nope.X"],
        ["list", "grpc.testing.Empty"],
        ["describe", "nope.Nope"],
        ["describe", "grpc.testing.COMPRESSABLE"],
    ] {
        let out = same(&["-plaintext", &a, args[0], args[1]]);
        assert_eq!(out.code, 1, "{out:?}");
    }

    // A schema with comments, options, maps, oneofs, nested types and reserved ranges, by
    // reflection, from the .proto (-proto with -import-path) and from a protoset.
    let demo = demo_server();
    let d = demo.addr().to_string();
    let dir = temp_dir("describe");
    let set = dir.join("demo.pb").display().to_string();
    let mine = dir.join("mine.pb").display().to_string();
    for symbol in [
        "demo.v1.Demo",
        "demo.v1.Demo.Watch",
        "demo.v1.Item",
        "demo.v1.Item.choice",
        "demo.v1.Item.CountsEntry",
        "demo.v1.Color",
        "demo.v1.Color.GREEN",
    ] {
        same(&["-plaintext", &d, "describe", symbol]);
    }
    same(&[
        "-plaintext",
        "-msg-template",
        &d,
        "describe",
        "demo.v1.Item",
    ]);
    same(&[
        "-plaintext",
        "-msg-template",
        "-format",
        "text",
        &d,
        "describe",
        "demo.v1.Item",
    ]);
    // -protoset-out writes the same FileDescriptorSet, byte for byte.
    let g = Command::new(tool("grpcurl"))
        .args([
            "-plaintext",
            "-protoset-out",
            &set,
            &d,
            "describe",
            "demo.v1.Demo",
        ])
        .output()
        .unwrap();
    assert!(g.status.success());
    let v = VOLLEY
        .command(&[
            "call",
            "-plaintext",
            "-protoset-out",
            &mine,
            &d,
            "describe",
            "demo.v1.Demo",
        ])
        .output()
        .unwrap();
    assert_eq!(g.stdout, v.stdout);
    assert_eq!(std::fs::read(&set).unwrap(), std::fs::read(&mine).unwrap());
    let dir_arg = data("");
    for source in [
        ["-import-path", dir_arg.as_str(), "-proto", "demo.proto"],
        ["-protoset", set.as_str(), "-protoset", set.as_str()],
    ] {
        same(&[source[0], source[1], source[2], source[3], "list"]);
        same(&[
            source[0],
            source[1],
            source[2],
            source[3],
            "list",
            "demo.v1.Demo",
        ]);
        same(&[
            source[0],
            source[1],
            source[2],
            source[3],
            "describe",
            "demo.v1.Item",
        ]);
        same(&[
            source[0],
            source[1],
            source[2],
            source[3],
            "describe",
            "demo.v1.RED",
        ]);
    }
    // describe with no symbol lists services in Go's map order (random) for files; one service
    // here, so the bytes still match.
    same(&["-protoset", &set, "describe"]);
    same(&["-proto", "nope.proto", "list"]);
}

#[test]
fn unary_calls_print_what_grpcurl_prints() {
    let server = VOLLEY.serve(&[]);
    let a = server.addr().to_string();
    let unary = "grpc.testing.TestService/UnaryCall";
    let body = r#"{"response_size":3,"payload":{"body":"AAE="}}"#;
    let out = same(&["-plaintext", "-d", body, &a, unary]);
    assert_eq!(
        out.stdout,
        "{\n  \"payload\": {\n    \"body\": \"AAAA\"\n  }\n}\n"
    );
    same_in(&["-plaintext", "-d", "@", &a, unary], body.as_bytes());
    same(&["-plaintext", &a, "grpc.testing.TestService.EmptyCall"]);
    // -v with metadata: -H goes to the call and reflection, -rpc-header to the call only; the
    // test service echoes x-grpc-test-echo-initial and -trailing-bin back.
    same(&[
        "-plaintext",
        "-v",
        "-H",
        "x-grpc-test-echo-initial: hi",
        "-rpc-header",
        "x-grpc-test-echo-trailing-bin: AAE=",
        "-reflect-header",
        "x-only-reflection: 1",
        "-d",
        body,
        &a,
        unary,
    ]);
    same(&["-plaintext", "-v", &a, "grpc.testing.TestService/EmptyCall"]);
    // Metadata grpc-go refuses: INTERNAL for the call (exit 77), a failed reflection request.
    let bad = "Bad Key: 1";
    assert_eq!(
        same(&[
            "-plaintext",
            "-v",
            "-rpc-header",
            bad,
            &a,
            "grpc.testing.TestService/EmptyCall"
        ])
        .code,
        77
    );
    assert_eq!(
        same(&[
            "-plaintext",
            "-H",
            bad,
            &a,
            "grpc.testing.TestService/EmptyCall"
        ])
        .code,
        1
    );
    assert_eq!(same(&["-plaintext", "-H", bad, &a, "list"]).code, 1);
    same(&[
        "-plaintext",
        "-format",
        "text",
        "-d",
        "response_size: 3",
        &a,
        unary,
    ]);
    same(&[
        "-plaintext",
        "-v",
        "-format",
        "text",
        "-d",
        "response_size: 3",
        &a,
        unary,
    ]);
    same(&[
        "-plaintext",
        "-emit-defaults",
        "-d",
        r#"{"fill_username":true}"#,
        &a,
        unary,
    ]);
    // A status: ERROR block on stderr, exit 64 + code; with -format-error the status message.
    let failing = r#"{"response_status":{"code":5,"message":"nope <&>"}}"#;
    let failing_text = "response_status: <code: 5 message: \"nope <&>\">";
    for flags in [
        &["-v"][..],
        &[][..],
        &["-format-error"][..],
        &["-format-error", "-format", "text"][..],
        &["-format", "text"][..],
    ] {
        let mut args = vec!["-plaintext"];
        args.extend_from_slice(flags);
        let data = if flags.contains(&"text") {
            failing_text
        } else {
            failing
        };
        args.extend_from_slice(&["-d", data, &a, unary]);
        let out = same(&args);
        assert_eq!(out.code, 69, "{out:?}");
    }
    assert_eq!(
        same(&[
            "-plaintext",
            &a,
            "grpc.testing.TestService/UnimplementedCall"
        ])
        .code,
        76
    );
    // Bad input and bad names, in grpcurl's words (exit 1).
    for (data, method) in [
        (r#"{"nme":1}"#, unary),
        (r#"{"response_size":"x"}"#, unary),
        (r#"{"response_size":true}"#, unary),
        (r#"{"payload":{"body":1}}"#, unary),
        (r#"{"response_size":"#, unary),
        (r#"{"response_size" 1}"#, unary),
        ("[1]", unary),
        ("{}{}", unary),
        ("{}", "grpc.testing.TestService/Nope"),
        ("{}", "grpc.testing.Nope/UnaryCall"),
        ("{}", "UnaryCall"),
    ] {
        let out = same(&["-plaintext", "-d", data, &a, method]);
        assert_eq!(out.code, 1, "{out:?}");
    }
    for text in [
        "nme: 1",
        "response_type: NOPE",
        "  response_size: 1\n  nm: 2",
        r#"{"response_size":1}"#,
    ] {
        same(&["-plaintext", "-format", "text", "-d", text, &a, unary]);
    }
    // -max-time ends a slow call with DEADLINE_EXCEEDED (exit 68).
    let slow = r#"{"response_parameters":[{"size":1,"interval_us":3000000}]}"#;
    let out = same(&[
        "-plaintext",
        "-max-time",
        "0.5",
        "-d",
        slow,
        &a,
        "grpc.testing.TestService/StreamingOutputCall",
    ]);
    assert_eq!(out.code, 68);
}

#[test]
fn streams_print_what_grpcurl_prints() {
    let server = VOLLEY.serve(&[]);
    let a = server.addr().to_string();
    let out_call = "grpc.testing.TestService/StreamingOutputCall";
    let two = r#"{"response_parameters":[{"size":2},{"size":3}]}"#;
    let out = same(&["-plaintext", "-d", two, &a, out_call]);
    assert_eq!(out.stdout.matches("\"body\"").count(), 2);
    same(&["-plaintext", "-v", "-d", two, &a, out_call]);
    // Text output separates messages with 0x1E, except with -v.
    let two_text = "response_parameters: <size: 2> response_parameters: <size: 3>";
    let out = same(&[
        "-plaintext",
        "-format",
        "text",
        "-d",
        two_text,
        &a,
        out_call,
    ]);
    assert!(out.stdout.contains('\u{1e}'), "{out:?}");
    let input = "grpc.testing.TestService/StreamingInputCall";
    let uploads = "{\"payload\":{\"body\":\"AAE=\"}}\n{\"payload\":{\"body\":\"AAEC\"}}\n";
    same(&["-plaintext", "-d", uploads, &a, input]);
    same(&["-plaintext", "-v", "-d", uploads, &a, input]);
    same_in(
        &["-plaintext", "-v", "-d", "@", &a, input],
        uploads.as_bytes(),
    );
    same(&["-plaintext", "-v", &a, input]);
    let bidi = "grpc.testing.TestService/FullDuplexCall";
    let chat = r#"{"response_parameters":[{"size":2}]}{"response_parameters":[{"size":1}]} {"response_parameters":[{"size":3}]}"#;
    let out = same(&["-plaintext", "-d", chat, &a, bidi]);
    assert_eq!(out.stdout.matches("\"body\"").count(), 3);
    same_in(&["-plaintext", "-v", "-d", "@", &a, bidi], chat.as_bytes());
    let text = "response_parameters: <size: 2>\u{1e}response_parameters: <size: 3>";
    same_in(
        &["-plaintext", "-format", "text", "-d", "@", &a, bidi],
        text.as_bytes(),
    );
    // A bad message in the middle of a client stream.
    let out = same(&["-plaintext", "-d", "{}{\"nope\":1}", &a, input]);
    assert_eq!(out.code, 1);
}

#[test]
fn the_json_and_text_mappings_match_grpcurl() {
    let demo = demo_server();
    let d = demo.addr().to_string();
    // Floats in Go's forms, int64 as strings, maps sorted, HTML-escaped strings, well-known
    // types, an unknown enum number, `-0`, NaN and infinities; then emit-defaults with an Any
    // (its keys sorted, as Go re-marshals it) and a oneof.
    for args in [
        &["-d", r#"{"name":"x"}"#][..],
        &["-emit-defaults", "-d", r#"{"name":"y"}"#][..],
        &["-format", "text", "-d", "name: \"x\""][..],
        &["-format", "text", "-d", "name: \"y\""][..],
        &["-v", "-d", r#"{"name":"y"}"#][..],
        &["-d", r#"{"name":"err"}"#][..],
        &["-format-error", "-d", r#"{"name":"err"}"#][..],
        &["-d", r#"{"name":"x\u00e9"}"#][..],
    ] {
        let mut all = vec!["-plaintext"];
        all.extend_from_slice(args);
        all.extend_from_slice(&[&d, "demo.v1.Demo/Get"]);
        same(&all);
    }
    same(&[
        "-plaintext",
        "-d",
        r#"{"name":"x"}"#,
        &d,
        "demo.v1.Demo/Watch",
    ]);
    same(&["-plaintext", "-format", "text", &d, "demo.v1.Demo/Watch"]);
    same(&["-plaintext", "-d", "{}", &d, "demo.v1.Demo/Get"]);
    // The schema from the .proto, reflection off.
    let dir = data("");
    same(&[
        "-import-path",
        &dir,
        "-proto",
        "demo.proto",
        "-plaintext",
        "-d",
        r#"{"name":"x"}"#,
        &d,
        "demo.v1.Demo/Get",
    ]);
}

#[test]
fn vv_prints_grpcurl_timing_tree() {
    let server = VOLLEY.serve(&[]);
    let a = server.addr().to_string();
    let (g, v) = both(
        &[
            "-plaintext",
            "-vv",
            "-d",
            "{}",
            &a,
            "grpc.testing.TestService/UnaryCall",
        ],
        b"",
    );
    // Everything but the durations: the same bytes before the timing tree, the same tree.
    let before = |r: &Ran| {
        r.stdout
            .split("Timing Data")
            .next()
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(
        (g.code, before(&g), &g.stderr),
        (v.code, before(&v), &v.stderr)
    );
    assert!(v.stdout.contains("\nEstimated response size: "));
    for r in [&g, &v] {
        let tree: Vec<&str> = r
            .stdout
            .lines()
            .skip_while(|l| !l.starts_with("Timing Data"))
            .collect();
        let titles = [
            "Timing Data: ",
            "  Dial: ",
            "    BlockingDial: ",
            "  InvokeRPC: ",
        ];
        assert_eq!(tree.len(), titles.len(), "{tree:?}");
        for (line, title) in tree.iter().zip(titles) {
            assert!(line.starts_with(title), "{line}");
        }
    }
}

#[test]
fn tls_unix_sockets_and_dial_failures_match_grpcurl() {
    let dir = temp_dir("tls");
    let tls_dir = dir.display().to_string();
    let tls = VOLLEY.serve(&["--tls-self-signed", "--tls-dir", &tls_dir]);
    let t = tls.addr().to_string();
    let ca = dir.join("ca.pem").display().to_string();
    assert_eq!(same(&["-cacert", &ca, &t, "list"]).code, 0);
    same(&[
        "-cacert",
        &ca,
        "-v",
        &t,
        "grpc.testing.TestService/EmptyCall",
    ]);
    assert_eq!(same(&["-insecure", &t, "list"]).code, 0);
    assert_eq!(
        same(&["-cacert", &ca, "-authority", "localhost", &t, "list"]).code,
        0
    );
    // Plaintext to a TLS server: the server closes or resets the connection, and grpc-go
    // reports whichever it read (`EOF`, or a reset naming both ends' ports, which differ from
    // run to run): the same words up to the error.
    let (g, v) = both(&["-plaintext", &t, "list"], b"");
    let cut = |r: &Ran| {
        let (head, error) = r.stderr.split_once(": ").unwrap_or_default();
        let known = error == "EOF\n" || error.starts_with("read tcp ");
        (r.code, head.to_owned(), known)
    };
    assert_eq!(cut(&g), cut(&v), "{g:?}\n{v:?}");
    // Failures in Go's words: no trusted CA, the wrong name, files that are not there.
    for args in [
        &[t.as_str(), "list"][..],
        &["-cacert", &ca, "-servername", "foo", &t, "list"][..],
        &["-cacert", "/nope/ca.pem", &t, "list"][..],
        &["-cert", "/nope/c.pem", "-key", "/nope/k.pem", &t, "list"][..],
    ] {
        assert_eq!(same(args).code, 1, "{args:?}");
    }
    let plain = VOLLEY.serve(&[]);
    same(&["-cacert", &ca, &plain.addr().to_string(), "list"]);

    // A Unix socket: -unix with a path, and a unix:/// address.
    let sock = dir.join("s.sock").display().to_string();
    let _uds = VolleyProcess::start(VOLLEY.bin(), &["serve", "--addr", &format!("unix:{sock}")]);
    assert_eq!(same(&["-plaintext", "-unix", &sock, "list"]).code, 0);
    same(&[
        "-plaintext",
        "-unix",
        "-v",
        &sock,
        "grpc.testing.TestService/EmptyCall",
    ]);
    same(&["-plaintext", &format!("unix://{sock}"), "list"]);

    // Nothing listening (grpc-go retries until the dial deadline), no port, no socket.
    for target in ["127.0.0.1:1", "localhost", "unix:///nope/s.sock"] {
        let out = same(&["-plaintext", "-connect-timeout", "0.5", target, "list"]);
        assert_eq!(out.code, 1, "{out:?}");
        assert!(
            out.stderr.ends_with(": context deadline exceeded\n"),
            "{out:?}"
        );
    }
}

#[test]
fn usage_errors_match_grpcurl() {
    // Checks after the flags: the whole message and `Try '... -help'`, exit 2.
    for args in [
        &[][..],
        &["-plaintext"][..],
        &["-plaintext", "h:1", "list", "a", "b"][..],
        &["-plaintext", "-insecure", "h:1", "list"][..],
        &["-cert", "c.pem", "h:1", "list"][..],
        &["-format", "yaml", "h:1", "list"][..],
        &["-max-time=-1", "h:1", "list"][..],
        &["-proto", "a.proto", "-protoset", "b.pb", "list"][..],
        &["-use-reflection=false", "h:1", "list"][..],
        &["-proto", "a.proto", "a.B/C"][..],
    ] {
        assert_eq!(same(args).code, 2, "{args:?}");
    }
    // Flag errors print Go's message, then the usage text, whose prose is volley's own (and
    // lists volley's extra flags): the first line and the exit code match.
    for args in [
        &["-foo", "h:1", "list"][..],
        &["-max-time", "abc", "h:1", "list"][..],
        &["-plaintext=maybe", "h:1", "list"][..],
        &["-use-reflection=maybe", "h:1", "list"][..],
        &["-d"][..],
        &["---x"][..],
        &["-help"][..],
        &["-h"][..],
    ] {
        let (g, v) = both(args, b"");
        assert_eq!(g.code, v.code, "{args:?}");
        assert_eq!(g.stderr.lines().next(), v.stderr.lines().next(), "{args:?}");
        assert!(v.stderr.contains("Available flags:"), "{v:?}");
    }
    // Warnings go to stderr before the output.
    let server = VOLLEY.serve(&[]);
    let a = server.addr().to_string();
    same(&["-plaintext", "-d", "{}", "-rpc-header", "a: b", &a, "list"]);
    same(&[
        "-plaintext",
        "-emit-defaults",
        "-format",
        "text",
        "-import-path",
        "/tmp",
        &a,
        "list",
    ]);
    // Flags stop at the address: a trailing -plaintext is the list's symbol, and TLS is used.
    let out = same(&[&a, "list", "-plaintext"]);
    assert_eq!(out.code, 1);
}

/// grpc-go's interop server (no reflection: the schema comes from the repository's .proto).
struct GoServer(std::process::Child);

impl Drop for GoServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn against_grpc_gos_interop_server_too() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _server = GoServer(
        Command::new(tool("grpc-interop-server"))
            .arg(format!("--port={port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start grpc-interop-server"),
    );
    let a = format!("127.0.0.1:{port}");
    let start = std::time::Instant::now();
    while std::net::TcpStream::connect(&a).is_err() {
        assert!(
            start.elapsed().as_secs() < 20,
            "grpc-interop-server did not listen"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // No reflection: grpcurl's words for it, then the schema from -proto.
    assert_eq!(same(&["-plaintext", &a, "list"]).code, 1);
    let protos = volley_testkit::workspace_file("proto");
    let schema = [
        "-import-path",
        protos.as_str(),
        "-proto",
        "grpc/testing/test.proto",
    ];
    let call = |extra: &[&str], data: &str, method: &str| {
        let mut args = schema.to_vec();
        args.extend_from_slice(&["-plaintext"]);
        args.extend_from_slice(extra);
        args.extend_from_slice(&["-d", data, &a]);
        let method = format!("grpc.testing.TestService/{method}");
        args.push(&method);
        same(&args)
    };
    call(
        &["-v", "-H", "x-grpc-test-echo-initial: hi"],
        r#"{"response_size":3}"#,
        "UnaryCall",
    );
    let failing = r#"{"response_status":{"code":3,"message":"<x>"}}"#;
    assert_eq!(call(&[], failing, "UnaryCall").code, 67);
    assert_eq!(call(&["-format-error"], failing, "UnaryCall").code, 67);
    let two = r#"{"response_parameters":[{"size":2},{"size":3}]}"#;
    call(&["-v"], two, "StreamingOutputCall");
    call(
        &["-v"],
        r#"{"payload":{"body":"AAE="}} {"payload":{"body":"AAEC"}}"#,
        "StreamingInputCall",
    );
    call(
        &["-v"],
        r#"{"response_parameters":[{"size":2}]}{"response_parameters":[{"size":1}]}"#,
        "FullDuplexCall",
    );
    assert_eq!(call(&["-v"], "", "UnimplementedCall").code, 76);
    // Request data from stdin, defaults emitted, a method the service lacks.
    let mut args = schema.to_vec();
    args.extend_from_slice(&[
        "-plaintext",
        "-d",
        "@",
        &a,
        "grpc.testing.TestService/UnaryCall",
    ]);
    same_in(&args, br#"{"response_size":2}"#);
    call(&["-emit-defaults"], r#"{"response_size":1}"#, "UnaryCall");
    assert_eq!(call(&[], "{}", "Nope").code, 1);
    // describe from -proto (a service, a method, a message), then the same from a protoset
    // grpcurl writes (-protoset-out).
    let dir = temp_dir("interop-protoset");
    let protoset = dir.join("test.pb").display().to_string();
    for symbol in [
        "grpc.testing.TestService",
        "grpc.testing.TestService.UnaryCall",
        "grpc.testing.SimpleRequest",
    ] {
        let mut args = schema.to_vec();
        args.extend_from_slice(&["describe", symbol]);
        same(&args);
    }
    let mut args = schema.to_vec();
    args.extend_from_slice(&[
        "-protoset-out",
        &protoset,
        "describe",
        "grpc.testing.TestService",
    ]);
    same(&args);
    same(&[
        "-protoset",
        &protoset,
        "-plaintext",
        "-d",
        r#"{"response_size":3}"#,
        &a,
        "grpc.testing.TestService/UnaryCall",
    ]);
    // Over TLS, with grpc's test CA (grpc-go's interop server with its test certificate).
    let certs = volley_testkit::workspace_file("conformance/interop/certs");
    let tport = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _tls_server = GoServer(
        Command::new(tool("grpc-interop-server"))
            .args([
                format!("--port={tport}"),
                "--use_tls".to_owned(),
                format!("--tls_cert_file={certs}/server1.pem"),
                format!("--tls_key_file={certs}/server1.key"),
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start grpc-interop-server with TLS"),
    );
    let ta = format!("127.0.0.1:{tport}");
    let start = std::time::Instant::now();
    while std::net::TcpStream::connect(&ta).is_err() {
        assert!(
            start.elapsed().as_secs() < 20,
            "the TLS interop server did not listen"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let ca = format!("{certs}/ca.pem");
    let mut args = schema.to_vec();
    args.extend_from_slice(&[
        "-cacert",
        &ca,
        "-servername",
        "foo.test.google.fr",
        "-d",
        r#"{"response_size":3}"#,
        &ta,
        "grpc.testing.TestService/UnaryCall",
    ]);
    assert_eq!(same(&args).code, 0);
    // No trusted CA: Go's words for it, exit 1.
    let mut args = schema.to_vec();
    args.extend_from_slice(&["-d", "{}", &ta, "grpc.testing.TestService/EmptyCall"]);
    assert_eq!(same(&args).code, 1);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn hints_follow_grpcurls_error_where_it_stops_short() {
    // grpcurl's lines first, byte for byte (same_in checks them); then one line of volley's.
    let server = VOLLEY.serve(&[]);
    let addr = server.addr().to_string();
    let hint = |args: &[&str]| {
        let v = same(args);
        assert_eq!(v.hints.len(), 1, "{args:?}: {v:?}");
        v.hints[0].clone()
    };
    // A method the service lacks: the nearest, and what it has.
    let h = hint(&[
        "-plaintext",
        "-d",
        "{}",
        &addr,
        "helloworld.Greeter/SayHelo",
    ]);
    assert_eq!(
        h,
        "did you mean helloworld.Greeter/SayHello? (helloworld.Greeter has: SayHello)"
    );
    // A service the server does not expose: the nearest of its services.
    let h = hint(&[
        "-plaintext",
        "-d",
        "{}",
        &addr,
        "helloworld.Greter/SayHello",
    ]);
    assert!(
        h.starts_with("did you mean helloworld.Greeter? (the server has: "),
        "{h}"
    );
    // A field the message lacks.
    let h = hint(&[
        "-plaintext",
        "-d",
        r#"{"nmae":"x"}"#,
        &addr,
        "helloworld.Greeter/SayHello",
    ]);
    assert_eq!(
        h,
        "-d: did you mean name? (helloworld.HelloRequest has: name)"
    );
    // A value its field does not take: the field's path and type (grpcurl says only what it
    // expected); the second of two messages is named as such.
    let h = hint(&["-plaintext", "-d", r#"{"id":true}"#, &addr, "api.Users/Get"]);
    assert_eq!(h, "-d: id is a field of type int64; true does not fit it");
    let h = hint(&[
        "-plaintext",
        "-d",
        r#"{"id":1} {"id":"x"}"#,
        &addr,
        "api.Users/Get",
    ]);
    assert_eq!(
        h,
        "-d (message 2): id is a field of type int64; \"x\" does not fit it"
    );
    // JSON that breaks: where.
    let h = hint(&[
        "-plaintext",
        "-d",
        "{\n  \"name\": x}",
        &addr,
        "helloworld.Greeter/SayHello",
    ]);
    assert_eq!(h, "-d: the JSON goes wrong at line 2, column 11");
    // TLS to a plaintext server, and plaintext to a TLS one.
    let h = hint(&[&addr, "list"]);
    assert_eq!(h, "the server does not speak TLS: add -plaintext");
    let dir = temp_dir("hints");
    let tls = VOLLEY.serve(&["--tls-self-signed", "--tls-dir", &dir.display().to_string()]);
    let t = tls.addr().to_string();
    let h = hint(&[&t, "list"]);
    assert!(h.contains("give the CA that did with -cacert FILE"), "{h}");
    let ca = dir.join("ca.pem").display().to_string();
    let h = hint(&["-cacert", &ca, "-servername", "foo", &t, "list"]);
    assert!(h.contains("-servername NAME"), "{h}");
    let (g, v) = both(&["-plaintext", &t, "list"], b"");
    assert_eq!(g.code, v.code);
    assert!(
        v.hints
            .first()
            .is_some_and(|h| h.contains("leave -plaintext out")),
        "{v:?}"
    );
    // No reflection (grpc-go's interop server has none): which flags give the schema.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _go = GoServer(
        Command::new(tool("grpc-interop-server"))
            .arg(format!("--port={port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start grpc-interop-server"),
    );
    let a = format!("127.0.0.1:{port}");
    let start = std::time::Instant::now();
    while std::net::TcpStream::connect(&a).is_err() {
        assert!(
            start.elapsed().as_secs() < 20,
            "grpc-interop-server did not listen"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    for args in [
        &["-plaintext", a.as_str(), "list"][..],
        &[
            "-plaintext",
            a.as_str(),
            "describe",
            "grpc.testing.TestService",
        ][..],
        &[
            "-plaintext",
            "-d",
            "{}",
            a.as_str(),
            "grpc.testing.TestService/EmptyCall",
        ][..],
    ] {
        let h = hint(args);
        assert!(
            h.contains("-proto FILE (and -import-path DIR) or -protoset FILE"),
            "{h}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// An editions 2023 file loads as bench and mock load it (lowered to proto2 by the one loader,
/// `volley_proto::load::compile_files`), from `-proto` and from the descriptor set grpcurl
/// writes of it (`-protoset`): `list` and a call print what grpcurl prints. (Its
/// `describe` prints the lowered file, proto2 `optional`s, where grpcurl prints the editions
/// text: docs/call.md.)
#[test]
fn an_editions_2023_file_is_loaded_and_called_as_grpcurl_calls_it() {
    let dir = temp_dir("editions");
    std::fs::write(
        dir.join("echo.proto"),
        "edition = \"2023\";\npackage ed.v1;\n\
         message Ping { string name = 1; int32 n = 2 [features.field_presence = IMPLICIT]; }\n\
         service Echo { rpc Say(Ping) returns (Ping); }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("stubs.json"),
        r#"[{"service": "ed.v1.Echo", "method": "Say", "input": {"equals": {"name": "x"}},
             "output": {"data": {"name": "echoed", "n": 7}}}]"#,
    )
    .unwrap();
    let server = VOLLEY.serve(&[
        "--no-builtin",
        "--proto",
        dir.join("echo.proto").to_str().unwrap(),
        "--stubs",
        dir.join("stubs.json").to_str().unwrap(),
    ]);
    let addr = server.addr().to_string();
    let root = dir.display().to_string();
    let schema = ["-import-path", root.as_str(), "-proto", "echo.proto"];
    let listed = same(&[&schema[..], &["list"]].concat());
    assert_eq!(listed.stdout, "ed.v1.Echo\n");
    // grpcurl's rule: an absolute -proto needs an -import-path.
    let proto = dir.join("echo.proto").display().to_string();
    assert_eq!(same(&["-proto", &proto, "list"]).code, 1);
    // One call, beside grpcurl, with the schema from `schema`.
    let say = |schema: &[&str]| {
        let mut args = vec!["-plaintext"];
        args.extend_from_slice(schema);
        args.extend(["-d", r#"{"name": "x"}"#, &addr, "ed.v1.Echo/Say"]);
        let called = same(&args);
        assert_eq!(called.code, 0, "{called:?}");
        assert!(called.stdout.contains("\"echoed\""), "{called:?}");
    };
    say(&["-import-path", &root, "-proto", "echo.proto"]);
    // The same file as grpcurl writes it into a descriptor set (edition 2023 descriptors):
    // `-protoset` reads it through the same loader, lowered as `-proto` is.
    let set = dir.join("echo.pb").display().to_string();
    let wrote = Command::new(tool("grpcurl"))
        .args([
            "-import-path",
            &root,
            "-proto",
            "echo.proto",
            "-protoset-out",
            &set,
            "list",
        ])
        .output()
        .unwrap();
    assert!(wrote.status.success(), "{wrote:?}");
    let listed = same(&["-protoset", &set, "list"]);
    assert_eq!(listed.stdout, "ed.v1.Echo\n", "{listed:?}");
    say(&["-protoset", &set]);
    let _ = std::fs::remove_dir_all(dir);
}
