//! `volley gateway` forwarding to servers volley did not write: grpc-go's interop client runs
//! every case through the gateway's gRPC pass-through to grpc-go's interop server; a web page in
//! headless Chromium calls through the gateway over Connect JSON, Connect proto and gRPC-Web
//! (connect-web, CORS from the gateway's flags), to `volley serve` and to grpc-go's interop
//! server; an upstream that goes away is 503 with one log
//! line per outage and the gateway recovers by itself; `--require-token` covers the gateway's
//! port; a rule that cannot be served, and an upstream with neither reflection nor files, are
//! refused at start with one line.

use std::{
    net::TcpListener,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use volley_testkit::{
    Volley, VolleyProcess, ok_stdout,
    pages::StaticFiles,
    peers::{
        BROWSER_PROTOCOLS, GO_INTEROP_CASES, assert_browser_example_results, drive_browser_example,
    },
    tool, volley, workspace,
};

const VOLLEY: Volley = volley!();

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// grpc-go's interop server (no reflection) on a port of its own.
struct InteropServer(std::process::Child, u16);

impl Drop for InteropServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn interop_server() -> InteropServer {
    let port = free_port();
    let child = Command::new(tool("grpc-interop-server"))
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start grpc-interop-server");
    let until = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < until, "grpc-interop-server did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    InteropServer(child, port)
}

fn gateway(upstream: &str, extra: &[&str]) -> VolleyProcess {
    let mut args = vec!["gateway", "--upstream", upstream, "--addr", "127.0.0.1:0"];
    args.extend(extra);
    VolleyProcess::start(VOLLEY.bin(), &args)
}

#[test]
fn grpc_gos_interop_client_passes_every_case_through_the_gateway_to_grpc_gos_server() {
    let server = interop_server();
    let proto = workspace().join("proto/grpc/testing/test.proto");
    let include = workspace().join("proto");
    let gw = gateway(
        &format!("127.0.0.1:{}", server.1),
        &[
            "--proto",
            proto.to_str().unwrap(),
            "-i",
            include.to_str().unwrap(),
        ],
    );
    let mut failed = Vec::new();
    for case in GO_INTEROP_CASES {
        let out = Command::new(tool("grpc-interop-client"))
            .args([
                "--server_host=127.0.0.1",
                &format!("--server_port={}", gw.addr().port()),
                &format!("--test_case={case}"),
            ])
            .stdin(Stdio::null())
            .output()
            .expect("run grpc-interop-client");
        if !out.status.success() {
            let text = String::from_utf8_lossy(&out.stderr).into_owned();
            failed.push(format!(
                "{case}: {}",
                text.lines().last().unwrap_or_default()
            ));
        }
    }
    assert!(
        failed.is_empty(),
        "cases failed through the gateway:\n{}",
        failed.join("\n")
    );
}

#[test]
fn a_web_page_calls_through_the_gateway_over_connect_and_grpc_web() {
    let pages = StaticFiles::serve(workspace().join("examples/browser"));
    let origin = format!("http://127.0.0.1:{}", pages.port());
    // The upstream speaks gRPC only to the gateway; the page reaches it through the gateway.
    let up = VOLLEY.serve(&[]);
    let gw = gateway(
        &up.addr().to_string(),
        &[
            "--cors-origin",
            &origin,
            "--cors-header",
            "x-grpc-test-echo-initial",
        ],
    );
    let seen = drive_browser_example(&format!("{origin}/index.html?api=http://{}", gw.addr()));
    // The header the page sends is echoed by the upstream and passed back by the gateway.
    assert_browser_example_results(&seen);
}

#[test]
fn a_web_page_calls_grpc_gos_interop_server_through_the_gateway() {
    let server = interop_server();
    let pages = StaticFiles::serve(workspace().join("examples/browser"));
    let origin = format!("http://127.0.0.1:{}", pages.port());
    let proto = workspace().join("proto/grpc/testing/test.proto");
    let include = workspace().join("proto");
    let gw = gateway(
        &format!("127.0.0.1:{}", server.1),
        &[
            "--proto",
            proto.to_str().unwrap(),
            "-i",
            include.to_str().unwrap(),
            "--cors-origin",
            &origin,
            "--cors-header",
            "x-grpc-test-echo-initial",
        ],
    );
    // Only the page's grpc.testing calls: grpc-go's server has no Greeter.
    let seen = drive_browser_example(&format!(
        "{origin}/index.html?api=http://{}&suite=interop",
        gw.addr()
    ));
    for p in BROWSER_PROTOCOLS {
        let r = &seen["results"][p];
        assert!(r.get("failure").is_none(), "{p}: {seen}");
        // Echoed by grpc-go's server, passed back by the gateway, exposed by CORS.
        assert_eq!(r["echoedHeader"], "from-the-page", "{p}: {r}");
        assert_eq!(r["testStream"], json!([1, 2, 3]), "{p}: {r}");
        assert_eq!(
            r["error"],
            json!({"code": "InvalidArgument", "message": "the page asked for this error"}),
            "{p}: {r}"
        );
    }
}

/// A Connect JSON call to the greeter through `gw`: (HTTP status, body).
fn hello(gw: &VolleyProcess, token: Option<&str>) -> (u16, String) {
    let mut cmd = Command::new(tool("curl"));
    cmd.args(["-s", "--max-time", "5", "-w", "\n%{http_code}"])
        .args([
            "-H",
            "content-type: application/json",
            "-d",
            r#"{"name":"gw"}"#,
        ]);
    if let Some(t) = token {
        cmd.args(["-H", &format!("authorization: Bearer {t}")]);
    }
    cmd.arg(format!("http://{}/helloworld.Greeter/SayHello", gw.addr()));
    let out = ok_stdout(&mut cmd);
    let (body, code) = out.rsplit_once('\n').unwrap();
    (code.trim().parse().unwrap(), body.to_owned())
}

#[test]
fn an_upstream_that_goes_away_is_503_with_one_line_and_the_gateway_recovers_by_itself() {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let serve =
        || VolleyProcess::start(VOLLEY.bin(), &["serve", "--addr", &addr, "--threads", "1"]);
    let up = serve();
    let gw = gateway(&addr, &["--threads", "1"]);
    assert_eq!(
        hello(&gw, None),
        (200, r#"{"message":"Hello gw"}"#.to_owned())
    );
    drop(up);
    for _ in 0..20 {
        let (code, body) = hello(&gw, None);
        assert_eq!(code, 503, "{body}");
        assert!(body.contains("\"unavailable\""), "{body}");
    }
    let lines = |what: &str| gw.log().lines().filter(|l| l.contains(what)).count();
    assert_eq!(
        lines("is unavailable"),
        1,
        "one line per outage:\n{}",
        gw.log()
    );
    let _back = serve();
    let until = Instant::now() + Duration::from_secs(10);
    while hello(&gw, None).0 != 200 {
        assert!(
            Instant::now() < until,
            "the gateway did not recover:\n{}",
            gw.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(lines("is back ("), 1, "{}", gw.log());
    assert!(
        gw.log().contains("call(s) answered UNAVAILABLE"),
        "{}",
        gw.log()
    );
}

#[test]
fn require_token_covers_the_gateways_port() {
    let up = VOLLEY.serve(&[]);
    let gw = gateway(&up.addr().to_string(), &["--require-token", "s3cret"]);
    let (code, body) = hello(&gw, None);
    assert_eq!(code, 401, "{body}");
    assert_eq!(hello(&gw, Some("wrong")).0, 401);
    assert_eq!(hello(&gw, Some("s3cret")).0, 200);
}

/// Runs `volley gateway` expecting it to refuse to start: its stderr.
fn refused(args: &[&str]) -> String {
    let out = VOLLEY
        .command(&[&["gateway", "--addr", "127.0.0.1:0"], args].concat())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success(), "it started: {out:?}");
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn a_rule_that_cannot_be_served_is_refused_at_start_naming_the_rule() {
    let dir = std::env::temp_dir().join(format!("volley-gw-rule-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let proto = dir.join("bad.proto");
    std::fs::write(
        &proto,
        r#"syntax = "proto3";
package bad.v1;
import "google/api/annotations.proto";
message Req { string id = 1; }
message Resp { string name = 1; }
service Bad {
  rpc Get(Req) returns (Resp) {
    option (google.api.http) = { get: "/v1/things/{id}" response_body: "title" };
  }
}
"#,
    )
    .unwrap();
    let include = workspace().join("proto");
    let err = refused(&[
        "--upstream",
        "127.0.0.1:1",
        "--proto",
        proto.to_str().unwrap(),
        "-i",
        include.to_str().unwrap(),
    ]);
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.contains("bad.v1.Bad.Get") && last.contains("response_body") && last.contains("title"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_upstream_without_reflection_and_no_files_is_one_clear_line() {
    let server = interop_server();
    let err = refused(&["--upstream", &format!("127.0.0.1:{}", server.1)]);
    let last = err.lines().last().unwrap_or_default();
    assert!(last.contains("--proto or --protoset"), "{err}");
}

#[test]
fn a_rule_file_gives_rest_to_a_server_whose_protos_have_no_rules() {
    let server = interop_server();
    let dir = std::env::temp_dir().join(format!("volley-gw-rules-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rules = dir.join("api_config.yaml");
    // grpc-gateway's --grpc-api-configuration file, as its docs write one.
    std::fs::write(
        &rules,
        "type: google.api.Service\nconfig_version: 3\nhttp:\n  rules:\n    \
         - selector: grpc.testing.TestService.UnaryCall\n      post: /v1/unary\n      body: \"*\"\n    \
         - selector: grpc.testing.TestService.EmptyCall\n      get: /v1/empty\n",
    )
    .unwrap();
    let proto = workspace().join("proto/grpc/testing/test.proto");
    let include = workspace().join("proto");
    let flags = [
        "--proto",
        proto.to_str().unwrap(),
        "-i",
        include.to_str().unwrap(),
        "--http-rules",
        rules.to_str().unwrap(),
    ];
    let gw = gateway(&format!("127.0.0.1:{}", server.1), &flags);
    let out = ok_stdout(Command::new(tool("curl")).args([
        "-s",
        "-d",
        r#"{"responseSize": 3, "fillUsername": true}"#,
        &format!("http://{}/v1/unary", gw.addr()),
    ]));
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["payload"]["body"], "AAAA", "{out}");
    let out = ok_stdout(
        Command::new(tool("curl")).args(["-s", &format!("http://{}/v1/empty", gw.addr())]),
    );
    assert_eq!(out.trim(), "{}");

    // A selector that names no method is refused at start, naming it.
    std::fs::write(
        &rules,
        "http:\n  rules:\n    - selector: grpc.testing.TestService.NoSuch\n      get: /v1/x\n",
    )
    .unwrap();
    let err = refused(
        &[
            &["--upstream", &format!("127.0.0.1:{}", server.1)][..],
            &flags,
        ]
        .concat(),
    );
    let last = err.lines().last().unwrap_or_default();
    assert!(last.contains("grpc.testing.TestService.NoSuch"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A shop proto with `methods` (each `rpc M(Req) returns (Resp)` with `GET /v1/m`).
fn shop_proto(dir: &std::path::Path, methods: &[&str]) -> std::path::PathBuf {
    let rpcs: String = methods
        .iter()
        .map(|m| {
            format!(
                "  rpc {m}(Req) returns (Resp) {{ option (google.api.http) = {{ get: \"/v1/{}\" }}; }}\n",
                m.to_lowercase()
            )
        })
        .collect();
    let file = dir.join("shop.proto");
    std::fs::write(
        &file,
        format!(
            "syntax = \"proto3\";\npackage shop.v1;\nimport \"google/api/annotations.proto\";\n\
             message Req {{ string id = 1; }}\nmessage Resp {{ string name = 1; }}\n\
             service Shop {{\n{rpcs}}}\n"
        ),
    )
    .unwrap();
    file
}

/// The HTTP status of `GET path` on `gw`.
fn status(gw: &VolleyProcess, path: &str) -> u16 {
    let out = ok_stdout(Command::new(tool("curl")).args([
        "-s",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        &format!("http://{}{path}", gw.addr()),
    ]));
    out.trim().parse().unwrap()
}

fn eventually(what: &str, gw: &VolleyProcess, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(15);
    while !done() {
        assert!(
            Instant::now() < until,
            "{what} did not happen:\n{}",
            gw.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn sighup_rereads_the_files_and_the_new_methods_are_served() {
    let dir = std::env::temp_dir().join(format!("volley-gw-hup-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let include = workspace().join("proto");
    let full = dir.join("upstream");
    std::fs::create_dir_all(&full).unwrap();
    let up_proto = shop_proto(&full, &["Get", "List"]);
    let up = VolleyProcess::start(
        VOLLEY.bin(),
        &[
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--no-builtin",
            "--proto",
            up_proto.to_str().unwrap(),
            "-i",
            include.to_str().unwrap(),
        ],
    );
    let proto = shop_proto(&dir, &["Get"]);
    let gw = gateway(
        &up.addr().to_string(),
        &[
            "--proto",
            proto.to_str().unwrap(),
            "-i",
            include.to_str().unwrap(),
        ],
    );
    assert_eq!(status(&gw, "/v1/get"), 200);
    assert_eq!(status(&gw, "/v1/list"), 404);
    shop_proto(&dir, &["Get", "List"]);
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(gw.pid() as i32).unwrap(),
        rustix::process::Signal::HUP,
    )
    .unwrap();
    eventually("serving List after SIGHUP", &gw, || {
        status(&gw, "/v1/list") == 200
    });
    assert_eq!(status(&gw, "/v1/get"), 200, "the old methods stay");
    assert!(
        gw.log().contains("the descriptors changed (SIGHUP)"),
        "{}",
        gw.log()
    );
    // Nothing changed: said so, nothing rebuilt.
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(gw.pid() as i32).unwrap(),
        rustix::process::Signal::HUP,
    )
    .unwrap();
    eventually("the unchanged line", &gw, || {
        gw.log().contains("SIGHUP: the descriptors are unchanged")
    });
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_change_in_the_upstreams_reflection_is_served_without_a_restart() {
    let dir = std::env::temp_dir().join(format!("volley-gw-refl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let include = workspace().join("proto");
    let addr = format!("127.0.0.1:{}", free_port());
    let serve = |methods: &[&str]| {
        let proto = shop_proto(&dir, methods);
        VolleyProcess::start(
            VOLLEY.bin(),
            &[
                "serve",
                "--addr",
                &addr,
                "--no-builtin",
                "--proto",
                proto.to_str().unwrap(),
                "-i",
                include.to_str().unwrap(),
            ],
        )
    };
    let up = serve(&["Get"]);
    let gw = gateway(&addr, &["--reload-interval", "300ms"]);
    assert_eq!(status(&gw, "/v1/get"), 200);
    assert_eq!(status(&gw, "/v1/list"), 404);
    drop(up);
    let _up = serve(&["Get", "List"]);
    eventually("serving List after the upstream changed", &gw, || {
        status(&gw, "/v1/list") == 200
    });
    assert!(
        gw.log()
            .contains("the descriptors changed (a change in the upstream's reflection)"),
        "{}",
        gw.log()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
