//! `volley call` against bad input and hostile servers: flags and JSON that once crashed it
//! are refused as grpcurl refuses them (the same first line, the same exit code, grpcurl run
//! beside it); a `-proto` named from the working directory under `-import-path` is found, as
//! grpcurl finds it; and HTTP/2 servers written here to misbehave (a Connect end-of-stream that
//! is not JSON, end frames announcing 4 GiB) get an error, not a success or a growing buffer.

use std::{
    net::SocketAddr,
    process::{Command, Output},
    time::{Duration, Instant},
};

use bytes::Bytes;
use volley_testkit::{Volley, tool, volley, workspace};

const VOLLEY: Volley = volley!();

fn first_line(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("run the command")
}

#[test]
fn a_flag_of_several_bytes_is_refused_as_grpcurl_refuses_it() {
    for flag in ["-é", "--é=1", "-ü=é", "-\u{1F600}"] {
        let ours = run(VOLLEY.command(&["call", flag]).env_remove("RUST_BACKTRACE"));
        let theirs = run(Command::new(tool("grpcurl")).arg(flag));
        assert_eq!(ours.status.code(), Some(2), "{flag}: {ours:?}");
        assert_eq!(ours.status.code(), theirs.status.code(), "{flag}");
        assert_eq!(first_line(&ours), first_line(&theirs), "{flag}");
        assert!(!String::from_utf8_lossy(&ours.stderr).contains("panicked"));
    }
}

#[test]
fn json_nested_past_go_s_depth_is_refused_as_grpcurl_refuses_it() {
    let server = VOLLEY.serve(&[]);
    let addr = server.addr().to_string();
    let deep = |n: usize| format!("{{\"name\":{}{}}}", "[".repeat(n), "]".repeat(n));
    for (depth, want) in [
        (200_000, "invalid character '[' exceeded max depth"),
        // 10,000 levels in all (the object is one): read, then refused by the schema.
        (9_999, "expecting string ; instead got ["),
    ] {
        let data = deep(depth);
        let ours = volley_testkit::output_with_stdin(
            &mut VOLLEY.command(&[
                "call",
                "-plaintext",
                "-d",
                "@",
                &addr,
                "helloworld.Greeter/SayHello",
            ]),
            data.as_bytes(),
        );
        let theirs = volley_testkit::output_with_stdin(
            Command::new(tool("grpcurl")).args([
                "-plaintext",
                "-d",
                "@",
                &addr,
                "helloworld.Greeter/SayHello",
            ]),
            data.as_bytes(),
        );
        assert_eq!(ours.status.code(), Some(1), "{depth}: {ours:?}");
        assert_eq!(ours.status.code(), theirs.status.code(), "{depth}");
        assert!(
            first_line(&ours).ends_with(want),
            "{depth}: {}",
            first_line(&ours)
        );
        assert!(
            first_line(&theirs).ends_with(want),
            "{depth}: {}",
            first_line(&theirs)
        );
    }
}

#[test]
fn a_proto_named_from_the_working_directory_under_an_import_path_is_found() {
    let server = VOLLEY.serve(&[]);
    let addr = server.addr().to_string();
    let args = [
        "-plaintext",
        "-proto",
        "proto/api/users.proto",
        "-import-path",
        "proto",
        "-d",
        r#"{"id":1}"#,
        &addr,
        "api.Users/Get",
    ];
    let ours = run(VOLLEY
        .command(&["call"])
        .args(args)
        .current_dir(workspace()));
    let theirs = run(Command::new(tool("grpcurl"))
        .args(args)
        .current_dir(workspace()));
    assert!(ours.status.success(), "{ours:?}");
    assert!(theirs.status.success(), "{theirs:?}");
    assert_eq!(ours.stdout, theirs.stdout);
    // A name found neither way is still refused, naming it.
    let missing = run(VOLLEY
        .command(&[
            "call",
            "-proto",
            "proto/api/nothere.proto",
            "-import-path",
            "proto",
        ])
        .args([&addr, "api.Users/Get"])
        .current_dir(workspace()));
    assert!(!missing.status.success());
    assert!(
        first_line(&missing).contains("open proto/api/nothere.proto: no such file"),
        "{}",
        first_line(&missing)
    );
}

/// One envelope: flags, the length it announces, and the bytes that follow.
fn envelope(flags: u8, announced: u32, payload: &[u8]) -> Bytes {
    let mut f = vec![flags];
    f.extend_from_slice(&announced.to_be_bytes());
    f.extend_from_slice(payload);
    Bytes::from(f)
}

/// An h2c server that answers every request with `content_type` and `body`; with `stall`, the
/// stream then stays open, sending nothing more.
fn hostile(content_type: &'static str, body: Vec<Bytes>, stall: bool) -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            while let Ok((sock, _)) = listener.accept().await {
                let body = body.clone();
                tokio::spawn(async move {
                    let Ok(mut conn) = h2::server::handshake(sock).await else {
                        return;
                    };
                    let mut held = Vec::new();
                    while let Some(Ok((_req, mut respond))) = conn.accept().await {
                        let resp = http::Response::builder()
                            .status(200)
                            .header("content-type", content_type)
                            .body(())
                            .unwrap();
                        let Ok(mut send) = respond.send_response(resp, false) else {
                            continue;
                        };
                        for chunk in &body {
                            let _ = send.send_data(chunk.clone(), false);
                        }
                        if stall {
                            held.push(send);
                        } else {
                            let _ = send.send_data(Bytes::new(), true);
                        }
                    }
                });
            }
        });
    });
    addr
}

/// `volley call -protocol PROTOCOL` of api.Users/List (a server stream) at `addr`, with a time
/// limit of its own: its output and how long it took.
fn call_list(addr: SocketAddr, protocol: &str) -> (Output, Duration) {
    let t = Instant::now();
    let out = run(&mut VOLLEY.command(&[
        "call",
        "-plaintext",
        "-protocol",
        protocol,
        "-import-path",
        workspace().join("proto").to_str().unwrap(),
        "-proto",
        "api/users.proto",
        "-max-time",
        "20",
        "-d",
        "{}",
        &addr.to_string(),
        "api.Users/List",
    ]));
    (out, t.elapsed())
}

#[test]
fn a_connect_end_of_stream_that_is_not_json_fails_the_call() {
    let addr = hostile(
        "application/connect+proto",
        vec![envelope(0, 0, b""), envelope(0x02, 9, b"{not json")],
        false,
    );
    let (out, _) = call_list(addr, "connect");
    let err = String::from_utf8_lossy(&out.stderr);
    // grpcurl's exit code for a call that failed: 64 + the code (INTERNAL, 13).
    assert_eq!(out.status.code(), Some(77), "{out:?}");
    assert!(
        err.contains("protocol error: the Connect end-of-stream message is not JSON"),
        "{err}"
    );
}

#[test]
fn end_frames_announcing_4_gib_are_refused_at_their_header() {
    // 1 MiB of the 4 GiB announced, then nothing: a reader that waits for the rest (or keeps
    // what it was sent) holds the call until -max-time.
    let filler = vec![b'x'; 1 << 20];
    for (protocol, content_type, flags) in [
        ("grpc-web", "application/grpc-web+proto", 0x80),
        ("connect", "application/connect+proto", 0x02),
    ] {
        let addr = hostile(
            content_type,
            vec![envelope(0, 0, b""), envelope(flags, u32::MAX, &filler)],
            true,
        );
        let (out, took) = call_list(addr, protocol);
        let err = String::from_utf8_lossy(&out.stderr);
        // RESOURCE_EXHAUSTED (8): 64 + 8.
        assert_eq!(out.status.code(), Some(72), "{protocol}: {out:?}");
        assert!(
            err.contains("received end-of-stream frame larger than max (4294967295 vs. 16777216)"),
            "{protocol}: {err}"
        );
        // Measured: well under a second; the bound is the -max-time it must not wait for.
        assert!(took < Duration::from_secs(10), "{protocol}: {took:?}");
    }
}
