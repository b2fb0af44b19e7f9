//! `volley ui`: grpcui's command line and banner; its page's endpoints (`/metadata`, `/invoke/`
//! with the CSRF cookie and header) answered in grpcui's shapes, and the same requests given to
//! grpcui itself (built from the Go module proxy) against the same server, the JSON replies
//! compared; the page driven in headless Chromium as a person would (a scalar, a nested
//! message, a repeated field, a bidi stream batched and live, a value that does not fit) over
//! gRPC and Connect against volley's server and over gRPC against grpc-go's interop server; the
//! mock's page (`/ui` on the admin port) driven the same way.

#[path = "mock_support/mod.rs"]
mod support;

use std::{
    io::{BufRead, BufReader},
    process::{Child, Command, Stdio},
    time::Duration,
};

use serde_json::{Value, json};
use support::TempDir;
use volley_testkit::{Volley, ok_stdout, tool, volley, workspace};

const VOLLEY: Volley = volley!();

/// A grpcui-shaped page server (volley ui or grpcui) and the URL its banner printed.
struct Ui {
    child: Child,
    url: String,
}

impl Drop for Ui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `cmd` and reads grpcui's banner off its stdout.
fn start(mut cmd: Command) -> Ui {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the UI");
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("gRPC Web UI available at ") {
                let _ = tx.send(url.to_owned());
            }
        }
    });
    let url = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the banner `gRPC Web UI available at URL`");
    Ui { child, url }
}

fn volley_ui(target: &str, extra: &[&str]) -> Ui {
    let mut cmd = VOLLEY.command(&["ui", "-plaintext", "-port", "0"]);
    cmd.args(extra).arg(target).current_dir(workspace());
    start(cmd)
}

/// `curl` against the page: body and HTTP status.
fn curl(args: &[&str], url: &str) -> (String, u16) {
    support::curl(args, url)
}

/// The page's CSRF token, as its first GET sets it.
fn csrf(ui: &Ui) -> String {
    let out =
        ok_stdout(Command::new(tool("curl")).args(["-s", "-D", "-", "-o", "/dev/null", &ui.url]));
    out.lines()
        .find_map(|l| l.split("_grpcui_csrf_token=").nth(1))
        .map(|v| v.split(';').next().unwrap().trim().to_owned())
        .expect("a CSRF cookie")
}

/// `POST invoke/METHOD` with `body`: the reply and its status.
fn invoke(ui: &Ui, token: &str, method: &str, body: &Value) -> (String, u16) {
    curl(
        &[
            "-H",
            "content-type: application/json",
            "-H",
            &format!("x-grpcui-csrf-token: {token}"),
            "-b",
            &format!("_grpcui_csrf_token={token}"),
            "-d",
            &body.to_string(),
        ],
        &format!("{}invoke/{method}", ui.url),
    )
}

fn invoke_json(ui: &Ui, token: &str, method: &str, body: &Value) -> Value {
    let (text, code) = invoke(ui, token, method, body);
    assert_eq!(code, 200, "{text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// The requests both UIs are given: unary, an error with its message, a server stream, a
/// client stream, a bidi stream, metadata echoed back.
fn requests() -> Vec<(&'static str, Value)> {
    vec![
        (
            "grpc.testing.TestService.UnaryCall",
            json!({"data": [{"response_size": 3, "fill_username": true}]}),
        ),
        (
            "grpc.testing.TestService.UnaryCall",
            json!({"data": [{"response_status": {"code": 5, "message": "gone away"}}]}),
        ),
        (
            "grpc.testing.TestService.StreamingOutputCall",
            json!({"data": [{"response_parameters": [{"size": 1}, {"size": 2}]}]}),
        ),
        (
            "grpc.testing.TestService.StreamingInputCall",
            json!({"data": [{"payload": {"body": "AAA="}}, {"payload": {"body": "AAAA"}}]}),
        ),
        (
            "grpc.testing.TestService.FullDuplexCall",
            json!({"data": [{"response_parameters": [{"size": 1}]},
                            {"response_parameters": [{"size": 2}]}]}),
        ),
        (
            "grpc.testing.TestService.UnaryCall",
            json!({"metadata": [{"name": "x-grpc-test-echo-initial", "value": "hi"}],
                   "data": [{}]}),
        ),
    ]
}

#[test]
fn the_page_s_endpoints_answer_in_grpcui_s_shapes() {
    let server = VOLLEY.serve(&[]);
    let ui = volley_ui(&server.addr().to_string(), &[]);
    assert!(
        ui.url.starts_with("http://127.0.0.1:") && ui.url.ends_with('/'),
        "{}",
        ui.url
    );
    let token = csrf(&ui);

    let (meta, code) = curl(&[], &format!("{}metadata?method=api.Users.Get", ui.url));
    assert_eq!(code, 200, "{meta}");
    let meta: Value = serde_json::from_str(&meta).unwrap();
    assert_eq!(meta["requestType"], "api.GetUserRequest");
    assert_eq!(
        meta["messageTypes"]["api.GetUserRequest"][0]["protoName"],
        "id"
    );
    assert_eq!(
        meta["messageTypes"]["api.GetUserRequest"][0]["type"],
        "int64"
    );
    assert_eq!(
        meta["messageTypes"]["api.GetUserRequest"][0]["defaultVal"],
        "0"
    );
    let (_, code) = curl(&[], &format!("{}metadata?method=api.Users.Nope", ui.url));
    assert_eq!(code, 422);

    let got = invoke_json(&ui, &token, "api.Users.Get", &json!({"data": [{"id": 7}]}));
    assert_eq!(got["error"], Value::Null, "{got}");
    assert_eq!(got["responses"][0]["message"]["id"], "7", "{got}");
    assert_eq!(got["responses"][0]["isError"], false);
    assert_eq!(got["requests"], json!({"total": 1, "sent": 1}));

    let err = invoke_json(&ui, &token, requests()[1].0, &requests()[1].1);
    assert_eq!(
        err["error"],
        json!({"code": 5, "name": "NotFound", "message": "gone away", "details": []}),
        "{err}"
    );

    // grpcui's refusals: no CSRF header, not JSON, a request that does not fit, two messages
    // for a unary method.
    let (text, code) = curl(
        &["-H", "content-type: application/json", "-d", "{}"],
        &format!("{}invoke/api.Users.Get", ui.url),
    );
    assert_eq!((code, text.as_str()), (401, "incorrect CSRF token"));
    let (text, code) = curl(
        &[
            "-H",
            &format!("x-grpcui-csrf-token: {token}"),
            "-b",
            &format!("_grpcui_csrf_token={token}"),
            "-d",
            "{}",
        ],
        &format!("{}invoke/api.Users.Get", ui.url),
    );
    assert_eq!((code, text.as_str()), (415, "Request must be JSON"));
    let (text, code) = invoke(
        &ui,
        &token,
        "api.Users.Get",
        &json!({"data": [{"id": "seven"}]}),
    );
    assert_eq!(code, 500, "{text}");
    assert!(
        text.starts_with("Unexpected error: error getting request data: "),
        "{text}"
    );
    let (text, code) = invoke(&ui, &token, "api.Users.Get", &json!({"data": [{}, {}]}));
    assert_eq!(code, 500, "{text}");
    assert!(text.contains("request data contained 2 messages"), "{text}");
}

#[test]
fn grpcui_and_volley_ui_answer_the_same_requests_the_same() {
    let (mut interop, target) = support::interop_server();
    let protos = ["-import-path", "proto", "-proto", "grpc/testing/test.proto"];
    let ours = volley_ui(&target, &protos);
    let mut cmd = Command::new(tool("grpcui"));
    cmd.args(["-plaintext", "-port", "0"])
        .args(protos)
        .arg(&target)
        .current_dir(workspace());
    let theirs = start(cmd);
    let (t1, t2) = (csrf(&ours), csrf(&theirs));
    let mut differences = Vec::new();
    for (method, body) in requests() {
        let a = invoke_json(&ours, &t1, method, &body);
        let b = invoke_json(&theirs, &t2, method, &body);
        if a != b {
            differences.push(format!(
                "{method} {body}:\n  volley ui: {a}\n  grpcui:    {b}"
            ));
        }
    }
    let _ = interop.kill();
    let _ = interop.wait();
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

#[test]
fn a_person_calls_methods_from_the_page_in_chromium() {
    let dir = workspace().join("examples/browser");
    assert!(
        dir.join("node_modules/puppeteer-core").is_dir(),
        "examples/browser is not installed: run scripts/install-test-tools"
    );
    let server = VOLLEY.serve(&[]);
    // The same person's calls over gRPC (grpcui's only protocol) and over Connect.
    for protocol in ["grpc", "connect"] {
        page_calls_over(&server.addr().to_string(), &["-protocol", protocol], None);
    }
    // And against grpc-go's interop server (no reflection there: its protos given).
    let (mut interop, target) = support::interop_server();
    page_calls_over(
        &target,
        &["-import-path", "proto", "-proto", "grpc/testing/test.proto"],
        Some("interop"),
    );
    let _ = interop.kill();
    let _ = interop.wait();
}

fn page_calls_over(target: &str, flags: &[&str], peer: Option<&str>) {
    let dir = workspace().join("examples/browser");
    let ui = volley_ui(target, flags);
    let what = format!("{flags:?} {peer:?}");
    let shots = TempDir::new("ui-shots");
    let shots_dir = match (flags, peer) {
        (["-protocol", "grpc"], None) => {
            std::env::var("VOLLEY_UI_SHOTS").unwrap_or_else(|_| shots.path(""))
        }
        _ => shots.path(""),
    };
    let mut args = vec!["test/ui.mjs", &ui.url, &shots_dir];
    args.extend(peer);
    let out = ok_stdout(Command::new(tool("node")).args(args).current_dir(&dir));
    let seen: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    if peer.is_none() {
        assert_eq!(seen["unary"]["status"], "OK", "{what}: {seen}");
        assert_eq!(seen["unary"]["messages"][0]["id"], "7", "{seen}");
        // Not sent: the field says why.
        assert_eq!(seen["bad"]["sent"], 0, "{seen}");
        assert_eq!(
            seen["bad"]["reason"], "not an integer: int64 takes whole numbers",
            "{seen}"
        );
        assert!(
            seen["bad"]["status"]
                .as_str()
                .unwrap()
                .starts_with("Not sent: id: "),
            "{seen}"
        );
        assert_eq!(
            seen["bad"]["messages"],
            json!([]),
            "the last call's answer is cleared: {seen}"
        );
    }
    assert_eq!(
        seen["nested"]["messages"][0]["payload"]["body"], "AAAA",
        "{seen}"
    );
    assert_eq!(seen["error"]["status"], "NotFound (5): gone away", "{seen}");
    let sizes = |k: &str| -> Vec<usize> {
        seen[k]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["payload"]["body"].as_str().unwrap().len())
            .collect()
    };
    // base64 of 1, 2 and 3 zero bytes: 4 characters each.
    assert_eq!(sizes("stream"), [4, 4], "{seen}");
    assert_eq!(sizes("bidi"), [4, 4, 4], "{seen}");
    // Live: each reply on the page before the next message was sent (1, 2, 3 zero bytes).
    assert_eq!(
        seen["live"]["afterEach"],
        json!([["AA=="], ["AA==", "AAA="], ["AA==", "AAA=", "AAAA"]]),
        "{what}: {seen}"
    );
    assert_eq!(seen["live"]["statusWhileOpen"], "", "{seen}");
    assert_eq!(seen["live"]["status"], "OK", "{what}: {seen}");
    assert!(
        seen["logged"]
            .as_array()
            .unwrap()
            .iter()
            .all(|l| !l.as_str().unwrap().contains("error")),
        "{seen}"
    );
}

#[test]
fn with_a_ui_token_every_route_answers_to_it() {
    let server = VOLLEY.serve(&[]);
    let ui = volley_ui(&server.addr().to_string(), &["-ui-token", "s3cret"]);
    let csrf = [
        "-H",
        "content-type: application/json",
        "-H",
        "x-grpcui-csrf-token: csrf-value",
        "-b",
        "_grpcui_csrf_token=csrf-value",
    ];
    let routes: [(&str, &str, &str); 7] = [
        ("GET", "", ""),
        ("GET", "app.js", ""),
        ("GET", "app.css", ""),
        ("GET", "metadata?method=api.Users.Get", ""),
        ("POST", "invoke/api.Users.Get", r#"{"data": [{"id": 7}]}"#),
        ("GET", "examples", ""),
        ("GET", "favicon.ico", ""),
    ];
    for (method, path, body) in routes {
        let url = format!("{}{path}", ui.url);
        let mut args = vec!["-X", method];
        args.extend(csrf);
        if !body.is_empty() {
            args.extend(["-d", body]);
        }
        let (_, code) = curl(&args, &url);
        assert_eq!(code, 401, "{method} /{path} without the token");
        let mut wrong = args.clone();
        wrong.extend(["-H", "authorization: Bearer wrong"]);
        assert_eq!(
            curl(&wrong, &url).1,
            401,
            "{method} /{path} with a wrong token"
        );
        let mut right = args.clone();
        right.extend(["-H", "authorization: Bearer s3cret"]);
        let (text, code) = curl(&right, &url);
        assert!(
            (200..300).contains(&code),
            "{method} /{path} with the token: {code} {text}"
        );
    }
    // The link the start prints: its token kept as a cookie for the page's own requests.
    let out = ok_stdout(Command::new(tool("curl")).args([
        "-s",
        "-D",
        "-",
        "-o",
        "/dev/null",
        &format!("{}?token=s3cret", ui.url),
    ]));
    assert!(out.contains("_volley_ui_token=s3cret"), "{out}");
    let (_, code) = curl(
        &["-b", "_volley_ui_token=s3cret"],
        &format!("{}metadata?method=api.Users.Get", ui.url),
    );
    assert_eq!(code, 200);
}

/// `node test/mock.mjs ARGS` in examples/browser: what the page showed.
fn mock_page(args: &[&str]) -> Value {
    let out = ok_stdout(
        Command::new(tool("node"))
            .arg("test/mock.mjs")
            .args(args)
            .current_dir(workspace().join("examples/browser")),
    );
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"))
}

#[test]
fn the_mock_s_page_adds_a_stub_shows_its_calls_and_the_nearest_stub_of_a_miss() {
    assert!(
        workspace()
            .join("examples/browser/node_modules/puppeteer-core")
            .is_dir(),
        "examples/browser is not installed: run scripts/install-test-tools"
    );
    let dir = TempDir::new("mock-page");
    let file = dir.write(
        "stubs/one.json",
        // Another method's stub, never called: listed unused (and not the nearest of a Get).
        r#"{"service": "api.Users", "method": "List", "input": {"matches": {}},
            "output": {"stream": [{"id": "1", "name": "One"}]}}"#,
    );
    let mut cmd = VOLLEY.command(&[
        "mock",
        "--threads",
        "1",
        "--admin-token",
        "s3cret",
        "--stub",
        &file.display().to_string(),
    ]);
    cmd.arg("proto/api/users.proto").current_dir(workspace());
    let mock = support::Mock::start(cmd);
    // The page answers to the admin token, as every admin route does.
    let (_, code) = mock.admin(&[], "/ui");
    assert_eq!(code, 401);
    let (_, code) = mock.admin(&[], "/ui?token=wrong");
    assert_eq!(code, 401);
    let url = format!("http://{}/ui?token=s3cret", mock.admin);

    let added = mock_page(&[
        "add",
        &url,
        r#"{"service": "api.Users", "method": "Get", "input": {"equals": {"id": 7}}, "output": {"data": {"id": "7", "name": "Seven"}}}"#,
    ]);
    assert!(
        added["message"].as_str().unwrap().starts_with("saved "),
        "{added}"
    );
    // Called with grpcurl: the new stub answers id 7; id 8 matches nothing.
    let (ok, out) = support::grpcurl(&mock.target(), &["-d", r#"{"id": 7}"#], "api.Users/Get");
    assert!(ok && out.contains("Seven"), "{out}");
    let (ok, out) = support::grpcurl(&mock.target(), &["-d", r#"{"id": 8}"#], "api.Users/Get");
    assert!(!ok && out.contains("NotFound"), "{out}");

    let shots = TempDir::new("mock-shots");
    let shots_dir = std::env::var("VOLLEY_UI_SHOTS").unwrap_or_else(|_| shots.path(""));
    let seen = mock_page(&["see", &url, &shots_dir]);
    let new_id = added["message"].as_str().unwrap()["saved ".len()..].to_owned();
    let stubs = seen["stubs"].as_array().unwrap();
    assert_eq!(stubs.len(), 2, "{seen}");
    let row = |id: &str| stubs.iter().find(|s| s["id"] == id).cloned();
    let new = row(&new_id).unwrap_or_else(|| panic!("{new_id} listed: {seen}"));
    assert_eq!(
        (new["matched"].as_str(), new["unused"].as_bool()),
        (Some("1"), Some(false)),
        "{seen}"
    );
    let old = stubs.iter().find(|s| s["id"] != new_id.as_str()).unwrap();
    assert_eq!(
        (old["matched"].as_str(), old["unused"].as_bool()),
        (Some("0"), Some(true)),
        "{seen}"
    );
    // Newest first: the miss, then the call the new stub answered.
    let calls = seen["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2, "{seen}");
    assert_eq!(
        (calls[0]["status"].as_str(), calls[0]["stub"].as_str()),
        (Some("NotFound"), Some("")),
        "{seen}"
    );
    assert_eq!(calls[0]["nearest"], new_id.as_str(), "{seen}");
    assert_eq!(calls[0]["misses"], json!(["id: equals 7, got 8"]), "{seen}");
    assert_eq!(
        (calls[1]["status"].as_str(), calls[1]["stub"].as_str()),
        (Some("OK"), Some(new_id.as_str())),
        "{seen}"
    );
    // Deleted from its row: gone from the admin API too.
    assert_eq!(seen["deleted"], new_id.as_str(), "{seen}");
    let (listed, code) = mock.admin(&["-H", "authorization: Bearer s3cret"], "/api/stubs");
    assert_eq!(code, 200);
    assert!(!listed.contains(&new_id), "{listed}");
    for s in [&added, &seen] {
        assert_eq!(s["logged"], json!([]), "{s}");
    }
}

#[test]
fn a_target_down_or_on_tls_is_said_on_the_page_in_volley_call_s_words() {
    let dir = TempDir::new("ui-tls");
    let tls = VOLLEY.serve(&["--tls-self-signed", "--tls-dir", &dir.path("")]);
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    let schema = [
        "-connect-timeout",
        "1",
        "-import-path",
        "proto",
        "-proto",
        "api/users.proto",
    ];
    for target in [closed, tls.addr().to_string()] {
        let ui = volley_ui(&target, &schema);
        let token = csrf(&ui);
        let (text, code) = invoke(&ui, &token, "api.Users.Get", &json!({"data": [{}]}));
        let call = VOLLEY
            .command(&["call", "-plaintext", "-d", "{}"])
            .args(schema)
            .args([target.as_str(), "api.Users/Get"])
            .current_dir(workspace())
            .output()
            .unwrap();
        assert!(!call.status.success());
        let said = String::from_utf8_lossy(&call.stderr);
        let first = said.lines().next().unwrap_or_default();
        assert!(first.starts_with("Failed to dial target host"), "{said}");
        // The page shows the refusal's text as it is (`invoke()` in app.js).
        assert_eq!(code, 500, "{text}");
        assert!(
            text.starts_with(&format!("Unexpected error: {first}")),
            "{target}: the page says {text:?}, volley call {first:?}"
        );
    }
}
