//! GripMock conformance, written from GripMock's documentation: for each feature of its stub
//! language one stub (under `fixtures/mock/stubs`, one file per theme), one call through
//! grpcurl (or, for streams, a client that sends and reads message by message), one expected
//! answer; errors with their details, headers and trailers included. The service is
//! `fixtures/mock/conformance.proto`, which imports googleapis' `google/rpc/error_details.proto`
//! with no `--imports` flag.

#[path = "mock_support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use support::{Mock, grpcurl};
use volley_testkit::{Volley, volley, workspace};

const VOLLEY: Volley = volley!();
const M: &str = "conformance.v1.Conformance";

fn fixtures() -> std::path::PathBuf {
    workspace().join("crates/volley/tests/fixtures/mock")
}

/// `volley mock --stub fixtures/mock/stubs fixtures/mock/conformance.proto`, from the fixtures'
/// folder, on ports chosen at run time.
fn mock() -> Mock {
    let mut cmd = VOLLEY.command(&[
        "mock",
        "--threads",
        "1",
        "--stub",
        "stubs",
        "conformance.proto",
    ]);
    cmd.current_dir(fixtures());
    Mock::start(cmd)
}

/// `Unary` with `data` (and `-H` headers): whether it succeeded, and grpcurl's words.
fn unary(mock: &Mock, data: &str, headers: &[&str]) -> (bool, String) {
    let mut args = vec!["-v", "-d", data];
    for h in headers {
        args.extend(["-H", h]);
    }
    grpcurl(&mock.target(), &args, &format!("{M}/Unary"))
}

/// The reply's `message` of a successful `Unary` call.
fn message(mock: &Mock, data: &str, headers: &[&str]) -> String {
    let (ok, out) = unary(mock, data, headers);
    assert!(ok, "{data}: {out}");
    let body = out.split("Response contents:").nth(1).unwrap_or(&out);
    let json = &body[..body.find("\n}").map_or(body.len(), |i| i + 2)];
    let v: serde_json::Value =
        serde_json::from_str(json.trim()).unwrap_or_else(|_| panic!("{out}"));
    v["message"].as_str().unwrap_or_default().to_owned()
}

fn failure(mock: &Mock, data: &str) -> String {
    let (ok, out) = unary(mock, data, &[]);
    assert!(!ok, "{data} should fail: {out}");
    out
}

#[test]
fn input_matchers_pick_their_stub() {
    let m = mock();
    assert_eq!(message(&m, r#"{"name":"equals"}"#, &[]), "equals");
    assert_eq!(message(&m, r#"{"tags":["a","b","c"]}"#, &[]), "contains");
    assert_eq!(message(&m, r#"{"name":"re-12"}"#, &[]), "matches");
    assert_eq!(message(&m, r#"{"file":"report_2024.pdf"}"#, &[]), "glob");
    // Several matchers in one input: all of them.
    assert_eq!(
        message(&m, r#"{"name":"both","file":"a.csv"}"#, &[]),
        "both"
    );
    assert!(failure(&m, r#"{"name":"both","file":"a.txt"}"#).contains("Code: NotFound"));
    // anyOf: one alternative is enough.
    assert_eq!(message(&m, r#"{"name":"any1"}"#, &[]), "anyOf");
    assert_eq!(message(&m, r#"{"name":"any-y"}"#, &[]), "anyOf");
    // ignoreArrayOrder: the same elements, counts included, in any order.
    assert_eq!(
        message(&m, r#"{"name":"unordered","tags":["y","x","y"]}"#, &[]),
        "unordered"
    );
    assert!(failure(&m, r#"{"name":"unordered","tags":["y","x","x"]}"#).contains("NotFound"));
    // A nested object in equals: that sub-message, its other fields at their defaults.
    assert_eq!(
        message(&m, r#"{"name":"nested","inner":{"city":"Paris"}}"#, &[]),
        "nested"
    );
    assert!(
        failure(&m, r#"{"name":"nested","inner":{"city":"Paris","zip":1}}"#).contains("NotFound")
    );
}

#[test]
fn ranking_is_specificity_then_priority() {
    let m = mock();
    assert_eq!(message(&m, r#"{"name":"prio"}"#, &[]), "high");
    // Two keys the request sets beat one, whatever the priority.
    assert_eq!(
        message(&m, r#"{"name":"spec-2","id":2}"#, &[]),
        "more-specific"
    );
    assert_eq!(message(&m, r#"{"name":"spec-3"}"#, &[]), "by-priority");
}

#[test]
fn headers_are_matched_and_sent_with_replies_and_errors() {
    let m = mock();
    let admin = ["x-env: production", "x-user: root-7"];
    assert_eq!(message(&m, r#"{"name":"headers"}"#, &admin), "admin");
    assert_eq!(
        message(
            &m,
            r#"{"name":"headers"}"#,
            &["x-env: production", "x-role: admin"]
        ),
        "admin"
    );
    assert_eq!(
        message(
            &m,
            r#"{"name":"headers"}"#,
            &["x-env: staging", "x-role: admin"]
        ),
        "plain"
    );
    assert_eq!(
        message(&m, r#"{"name":"headers"}"#, &["x-client: web-42"]),
        "web"
    );
    assert_eq!(message(&m, r#"{"name":"headers"}"#, &[]), "plain");

    let (ok, out) = unary(&m, r#"{"name":"trailers"}"#, &[]);
    assert!(ok, "{out}");
    let (head, tail) = out.split_once("Response trailers received:").unwrap();
    assert!(head.contains("x-channel: header"), "{out}");
    assert!(
        tail.contains("x-channel: trailer") && tail.contains("x-audit: done"),
        "{out}"
    );
    // With an error, no message is sent: the headers arrive with the status, as trailers.
    let out = failure(&m, r#"{"name":"error-headers"}"#);
    let tail = out
        .split("Response trailers received:")
        .nth(1)
        .unwrap_or_default();
    assert!(tail.contains("x-reason: policy"), "{out}");
    assert!(
        out.contains("Code: PermissionDenied") && out.contains("Message: refused"),
        "{out}"
    );
}

#[test]
fn errors_codes_and_details() {
    let m = mock();
    let out = failure(&m, r#"{"name":"details"}"#);
    assert!(
        out.contains("Code: InvalidArgument") && out.contains("Message: Unary validation failed"),
        "{out}"
    );
    assert!(
        out.contains(r#""@type": "type.googleapis.com/google.rpc.ErrorInfo""#),
        "{out}"
    );
    assert!(
        out.contains(r#""reason": "UNARY_INVALID""#) && out.contains(r#""field": "name""#),
        "{out}"
    );
    assert!(
        out.contains(r#""@type": "type.googleapis.com/google.rpc.BadRequest""#),
        "{out}"
    );
    assert!(
        out.contains(r#""description": "name must be set""#),
        "{out}"
    );
    // A code with no error: that code, an empty message.
    let out = failure(&m, r#"{"name":"code-only"}"#);
    assert!(
        out.contains("Code: NotFound\n  Message: \n") || out.ends_with("Message: \n"),
        "{out}"
    );
    // An error with no code: GripMock's ABORTED.
    assert!(failure(&m, r#"{"name":"error-only"}"#).contains("Code: Aborted"));
    // A code by its name.
    assert!(failure(&m, r#"{"name":"code-name"}"#).contains("Code: NotFound\n  Message: by name"));
    // Code 0 is success, whatever the error says.
    assert_eq!(message(&m, r#"{"name":"ok-code"}"#, &[]), "ok");
    // A template in the error.
    assert!(failure(&m, r#"{"name":"who-ann"}"#).contains("Message: no user who-ann"));
}

#[test]
fn templates_and_the_load_time_pass() {
    let m = mock();
    let (ok, out) = unary(
        &m,
        r#"{"user_id":"user_42","name":"ann","id":"41"}"#,
        &["x-user: bob"],
    );
    assert!(ok, "{out}");
    assert!(out.contains(r#""message": "42""#), "index and split: {out}");
    assert!(out.contains(r#""count": "42""#), "add, to an int64: {out}");
    assert!(
        out.contains("\"ANN\",\n    \"bob\",\n    \""),
        "upper, a header, faker: {out}"
    );
    // uuid2int64 and uuid2base64 ran when the file was read (unquoted in the YAML).
    let uuid = "e351220b-4847-42f5-8abb-c052b87ff2d4";
    let hex: String = uuid.chars().filter(|c| *c != '-').collect();
    let bytes: Vec<u8> = (0..16)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let high = i64::from_le_bytes(bytes[..8].try_into().unwrap());
    let low = i64::from_le_bytes(bytes[8..].try_into().unwrap());
    use base64::Engine;
    let raw = base64::engine::general_purpose::STANDARD.encode(&bytes);
    let req =
        format!(r#"{{"name":"uuids","uid":{{"high":"{high}","low":"{low}"}},"raw":"{raw}"}}"#);
    assert_eq!(message(&m, &req, &[]), "uuids-matched");
    // A delay before the reply.
    let started = Instant::now();
    assert_eq!(message(&m, r#"{"name":"delayed"}"#, &[]), "late");
    assert!(started.elapsed() >= Duration::from_millis(300));
}

#[test]
fn times_effects_and_sessions() {
    let m = mock();
    for _ in 0..2 {
        assert!(failure(&m, r#"{"name":"retry"}"#).contains("Code: Unavailable"));
    }
    assert_eq!(message(&m, r#"{"name":"retry"}"#, &[]), "recovered");
    // complete (times 1) upserts the status stub and deletes itself.
    assert!(failure(&m, r#"{"name":"status"}"#).contains("NotFound"));
    assert_eq!(message(&m, r#"{"name":"complete"}"#, &[]), "completed");
    assert_eq!(message(&m, r#"{"name":"status"}"#, &[]), "done by complete");
    let out = failure(&m, r#"{"name":"complete"}"#);
    assert!(out.contains("No similar stubs found."), "{out}");
    // A session's stub is for that session only.
    assert!(failure(&m, r#"{"name":"session"}"#).contains("NotFound"));
    assert_eq!(
        message(&m, r#"{"name":"session"}"#, &["x-gripmock-session: s1"]),
        "only-s1"
    );
}

#[test]
fn values_compare_by_value() {
    let m = mock();
    // The stub says amount 5 and id 7.0; the request sends 5.0 and 7.
    assert_eq!(
        message(&m, r#"{"name":"by-value","amount":5.0,"id":7}"#, &[]),
        "by-value"
    );
    // The largest float, in the stub's input and in its data.
    let (ok, out) = unary(&m, r#"{"name":"max-float","ratio":3.4028235e+38}"#, &[]);
    assert!(ok && out.contains(r#""ratio": 3.4028235e+38"#), "{out}");
    // An Any field reaches the matcher as its JSON with @type; a wrapper type as @type works.
    let any = r#"{"name":"any","extra":{"@type":"type.googleapis.com/google.protobuf.StringValue","value":"wrapped"}}"#;
    let (ok, out) = unary(&m, any, &[]);
    assert!(ok && out.contains(r#""value": "back""#), "{out}");
    let contains =
        r#"{"extra":{"@type":"type.googleapis.com/conformance.v1.Inner","city":"Oslo","zip":3}}"#;
    assert_eq!(message(&m, contains, &[]), "any-contains");
}

#[test]
fn not_found_is_gripmocks_text_with_field_names_as_sent() {
    let m = mock();
    let out = failure(&m, r#"{"name":"nobody","user_id":"u1"}"#);
    assert!(
        out.contains(
            "Message: No matching stub found\n\nService: conformance.v1.Conformance\nMethod: Unary\n\nRequest input:\n{\n\t\"amount\": 0,\n"
        ),
        "{out}"
    );
    assert!(out.contains("\t\"user_id\": \"u1\"\n"), "{out}");
    assert!(out.contains("\t\"inner\": null,\n"), "{out}");
    assert!(!out.contains("userid"), "{out}");
    // A close stub is shown with its rules.
    let out = failure(&m, r#"{"name":"both","file":"a.txt"}"#);
    assert!(
        out.contains("Closest match:\npriority: 0\ninput rules:\ninput.equals:")
            || out.contains("Closest match:\npriority: 0\ninput rules:\ninput.contains:"),
        "{out}"
    );
}

#[test]
fn server_streams_with_delays_markers_and_errors() {
    let m = mock();
    let call = |name: &str| {
        grpcurl(
            &m.target(),
            &["-d", &format!(r#"{{"name":"{name}"}}"#)],
            &format!("{M}/ServerStream"),
        )
    };
    let started = Instant::now();
    let (ok, out) = call("three");
    assert!(ok && out.matches("\"message\"").count() == 3, "{out}");
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "a delay before each message"
    );
    let (ok, out) = call("marker");
    assert!(
        !ok && out.contains(r#""message": "first""#) && !out.contains("never-sent"),
        "{out}"
    );
    assert!(
        out.contains("Code: ResourceExhausted") && out.contains("upstream ran out of budget"),
        "{out}"
    );
    let (ok, out) = call("after");
    assert!(
        !ok && out.contains(r#""message": "sent""#) && out.contains("Code: Unavailable"),
        "{out}"
    );
}

mod streams {
    //! Client and bidi streams through volley's client, message by message.

    use futures_util::StreamExt;
    use volley_client::{Code, Grpc, Request};

    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct Req {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(double, tag = "3")]
        pub amount: f64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct Reply {
        #[prost(string, tag = "1")]
        pub message: String,
        #[prost(int64, tag = "2")]
        pub count: i64,
        #[prost(double, tag = "6")]
        pub total: f64,
    }

    fn req(name: &str, amount: f64) -> Req {
        Req {
            name: name.into(),
            amount,
        }
    }

    async fn client_stream(addr: &str, msgs: Vec<Req>) -> Result<Reply, volley_client::Status> {
        let g = Grpc::connect(addr).await.expect("connect");
        let r = g
            .client_streaming::<_, Reply>(
                "/conformance.v1.Conformance/ClientStream",
                Request::new(futures_util::stream::iter(msgs)),
            )
            .await?;
        Ok(r.into_inner())
    }

    #[tokio::test]
    async fn client_streams_by_inputs_and_by_any_message() {
        let m = super::mock();
        let addr = m.target();
        let r = client_stream(&addr, vec![req("a", 0.0), req("b", 0.0)])
            .await
            .unwrap();
        assert_eq!(r.message, "a-then-b");
        let e = client_stream(&addr, vec![req("a", 0.0), req("c", 0.0)])
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::NotFound);
        assert!(
            e.message().contains("Request input (stream):\n[0]"),
            "{}",
            e.message()
        );
        // .Requests: every message.
        let r = client_stream(&addr, vec![req("sum", 10.0), req("", 20.5)])
            .await
            .unwrap();
        assert_eq!((r.message.as_str(), r.count, r.total), ("sum", 2, 30.5));
    }

    #[tokio::test]
    async fn bidi_answers_message_by_message() {
        let m = super::mock();
        let g = Grpc::connect(&m.target()).await.expect("connect");
        let (tx, rx) = tokio::sync::mpsc::channel::<Req>(4);
        let outgoing =
            futures_util::stream::unfold(
                rx,
                |mut rx| async move { rx.recv().await.map(|m| (m, rx)) },
            );
        tx.send(req("hello", 0.0)).await.unwrap();
        let mut replies = g
            .streaming::<_, Reply>("/conformance.v1.Conformance/Bidi", Request::new(outgoing))
            .await
            .expect("open")
            .into_inner();
        // One reply per message, each read before the next message is sent.
        assert_eq!(replies.next().await.unwrap().unwrap().message, "hi");
        tx.send(req("bye", 0.0)).await.unwrap();
        assert_eq!(replies.next().await.unwrap().unwrap().message, "ciao");
        // After the script's last message, the rest of its stream.
        assert_eq!(replies.next().await.unwrap().unwrap().message, "done");
        tx.send(req("echo-x", 0.0)).await.unwrap();
        assert_eq!(replies.next().await.unwrap().unwrap().message, "echo-x #2");
        drop(tx);
        assert!(replies.next().await.is_none());
    }
}

/// GripMock v3's admin API on the admin port, its JSON shapes, and v1's routes.
#[test]
fn admin_api_as_gripmock_v3() {
    use serde_json::{Value, json};
    let m = mock();
    let get = |path: &str| m.admin(&[], path);
    let post = |path: &str, body: &str| {
        m.admin(&["-H", "content-type: application/json", "-d", body], path)
    };
    let delete = |path: &str| m.admin(&["-X", "DELETE"], path);
    let json =
        |s: &str| -> Value { serde_json::from_str(s).unwrap_or_else(|_| panic!("not JSON: {s}")) };

    let (body, code) = get("/api/health/liveness");
    assert_eq!(code, 200);
    assert_eq!(json(&body)["message"], "ok");
    assert!(
        json(&body)["time"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z')),
        "{body}"
    );
    let (body, code) = get("/api/health/readiness");
    assert_eq!((json(&body)["message"].clone(), code), (json!("ok"), 200));

    // List: the files' stubs with ids, source and used; X-Total-Count; filters.
    let (body, code) = get("/api/stubs");
    assert_eq!(code, 200);
    let all = json(&body);
    let n = all.as_array().map_or(0, Vec::len);
    assert!(n > 30, "{body}");
    let first = &all[0];
    assert!(
        first["id"].as_str().is_some_and(|i| i.len() == 36),
        "{first}"
    );
    assert_eq!(
        (first["source"].clone(), first["used"].clone()),
        (json!("file"), json!(false))
    );
    let (body, _) = get("/api/stubs?method=Bidi");
    assert_eq!(json(&body).as_array().map(Vec::len), Some(2), "{body}");
    let out = std::process::Command::new(volley_testkit::tool("curl"))
        .args([
            "-s",
            "-D",
            "-",
            "-o",
            "/dev/null",
            &format!("http://{}/api/stubs?limit=2", m.admin),
        ])
        .output()
        .unwrap();
    let head = String::from_utf8_lossy(&out.stdout).to_ascii_lowercase();
    assert!(head.contains(&format!("x-total-count: {n}")), "{head}");

    // Add (one or a list): their UUIDs; a stub that does not fit: 400 with the reason.
    let stub = r#"{"id":"bbbbbbbb-0000-0000-0000-000000000001","service":"Conformance","method":"Unary",
        "input":{"equals":{"name":"added"}},"output":{"data":{"message":"from the API"}}}"#;
    let (body, code) = post("/api/stubs", stub);
    assert_eq!(
        (body.as_str(), code),
        (r#"["bbbbbbbb-0000-0000-0000-000000000001"]"#, 200)
    );
    assert_eq!(message(&m, r#"{"name":"added"}"#, &[]), "from the API");
    let (body, code) = post(
        "/api/stubs",
        r#"{"service":"Conformance","method":"Unary","output":{"data":{"colour":"red"}}}"#,
    );
    assert!(
        code == 400
            && json(&body)["error"]
                .as_str()
                .is_some_and(|e| e.contains("does not fit")),
        "{body}"
    );
    let (body, code) = post("/api/stubs", "{not json");
    assert_eq!(code, 500, "{body}");
    // Validate: checked, not added.
    let (body, code) = post(
        "/api/stubs/validate",
        r#"[{"service":"Conformance","method":"Unary","output":{"data":{}}}]"#,
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(json(&body).as_array().map(Vec::len), Some(1));

    // Get by id; unknown id: GripMock's 404.
    let (body, code) = get("/api/stubs/bbbbbbbb-0000-0000-0000-000000000001");
    assert_eq!(code, 200);
    let got = json(&body);
    assert_eq!(
        (got["source"].clone(), got["used"].clone()),
        (json!("rest"), json!(true))
    );
    let (body, code) = get("/api/stubs/bbbbbbbb-0000-0000-0000-00000000000f");
    assert_eq!(
        (json(&body)["error"].clone(), code),
        (
            json!("Stub with ID 'bbbbbbbb-0000-0000-0000-00000000000f' not found"),
            404
        )
    );

    // Used and unused.
    let (body, _) = get("/api/stubs/used");
    let used: Vec<String> = json(&body)
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        used.contains(&"bbbbbbbb-0000-0000-0000-000000000001".to_owned()),
        "{body}"
    );
    let (body, _) = get("/api/stubs/unused");
    assert_eq!(
        json(&body).as_array().map(Vec::len),
        Some(n - used.len() + 1),
        "{body}"
    );

    // Search: the output as written, no match counted; no match: 404 with the NOT_FOUND text.
    let (body, code) = post(
        "/api/stubs/search",
        r#"{"service":"Conformance","method":"Unary","data":{"name":"equals"}}"#,
    );
    assert_eq!(
        (json(&body), code),
        (json!({"data": {"message": "equals"}}), 200)
    );
    let (body, code) = post(
        "/api/stubs/search",
        r#"{"service":"conformance.v1.Conformance","method":"Unary","data":{"name":"zzz"}}"#,
    );
    assert!(
        code == 404
            && json(&body)["error"]
                .as_str()
                .is_some_and(|e| e.starts_with("No matching stub found")),
        "{body}"
    );
    let (body, code) = post(
        "/api/stubs/search",
        r#"{"service":"Conformance","method":"ClientStream","input":[{"name":"a"},{"name":"b"}]}"#,
    );
    assert_eq!(
        (json(&body)["data"]["message"].clone(), code),
        (json!("a-then-b"), 200),
        "{body}"
    );

    // History and verify.
    let (body, code) = get("/api/history?method=Unary");
    assert_eq!(code, 200);
    let calls = json(&body);
    let last = calls
        .as_array()
        .and_then(|a| a.last())
        .cloned()
        .unwrap_or_default();
    assert_eq!(last["service"], "conformance.v1.Conformance", "{body}");
    assert_eq!(
        last["stubId"], "bbbbbbbb-0000-0000-0000-000000000001",
        "{body}"
    );
    assert_eq!(last["requests"][0]["name"], "added", "{body}");
    assert_eq!(last["responses"][0]["message"], "from the API", "{body}");
    assert_eq!(last["code"], 0);
    let unary_calls = calls.as_array().map_or(0, Vec::len);
    let verify = format!(
        r#"{{"service":"conformance.v1.Conformance","method":"Unary","expectedCount":{unary_calls}}}"#
    );
    let (body, code) = post("/api/verify", &verify);
    assert_eq!(
        (json(&body)["message"].clone(), code),
        (json!("ok"), 200),
        "{body}"
    );
    let (body, code) = post(
        "/api/verify",
        r#"{"service":"conformance.v1.Conformance","method":"Unary","expectedCount":99}"#,
    );
    assert_eq!(code, 400);
    assert_eq!(
        json(&body),
        json!({"message": format!("expected conformance.v1.Conformance/Unary to be called 99 times, got {unary_calls}"),
               "expected": 99, "actual": unary_calls})
    );

    // Delete by id, batch delete, delete all the API's: 204, and gone.
    assert_eq!(
        delete("/api/stubs/bbbbbbbb-0000-0000-0000-000000000001").1,
        204
    );
    assert!(failure(&m, r#"{"name":"added"}"#).contains("NotFound"));
    let (body, _) = post("/api/stubs", &stub.replace("01\"", "02\""));
    assert_eq!(body, r#"["bbbbbbbb-0000-0000-0000-000000000002"]"#);
    assert_eq!(
        post(
            "/api/stubs/batchDelete",
            r#"["bbbbbbbb-0000-0000-0000-000000000002"]"#
        )
        .1,
        204
    );
    assert!(failure(&m, r#"{"name":"added"}"#).contains("NotFound"));
    post("/api/stubs", stub);
    assert_eq!(delete("/api/stubs"), (String::new(), 204));
    assert!(failure(&m, r#"{"name":"added"}"#).contains("NotFound"));
    assert_eq!(
        message(&m, r#"{"name":"equals"}"#, &[]),
        "equals",
        "the files' stubs stay"
    );
    let (body, code) = delete("/api/history");
    assert!(
        code == 200 && json(&body)["deletedCount"].as_u64().is_some_and(|n| n > 0),
        "{body}"
    );

    // GripMock v1's routes.
    let (body, code) = post("/add", stub);
    assert_eq!(
        (body.as_str(), code),
        (r#"["bbbbbbbb-0000-0000-0000-000000000001"]"#, 200)
    );
    let (body, code) = post(
        "/find",
        r#"{"service":"Conformance","method":"Unary","data":{"name":"added"}}"#,
    );
    assert_eq!(
        (json(&body)["data"]["message"].clone(), code),
        (json!("from the API"), 200)
    );
    assert_eq!(get("/clear").1, 200);
    assert!(failure(&m, r#"{"name":"added"}"#).contains("NotFound"));
}

/// What GripMock's own examples showed (their 150 `.gctf` cases were run against `volley mock`
/// with `scripts/gripmock-examples`; docs/mock.md): a folder given both as `--stub` and as the
/// proto argument, holding a file that is not a stub; a short service name two packages serve;
/// a template inside a quoted YAML string; an `Any` matched in GripMock's raw form; an `Any` of
/// a type nothing defines in a reply.
#[test]
fn a_tree_as_gripmocks_examples_are_laid_out() {
    let mut cmd = VOLLEY.command(&["mock", "--threads", "1", "--stub=tree", "tree"]);
    cmd.current_dir(fixtures());
    let m = Mock::start(cmd);
    let log = m.process.log();
    assert!(
        log.contains(
            "buf.yaml: not a stub file (nothing in it names a service or a method); skipped"
        ),
        "{log}"
    );
    let call = |method: &str, data: &str| grpcurl(&m.target(), &["-d", data], method);
    // The short name answers where the stub fits: sku is beta's field.
    let (ok, out) = call("beta.v1.Shop/Buy", r#"{"sku":"s1"}"#);
    assert!(
        ok && out.contains(r#""message": "beta bought s1""#),
        "{out}"
    );
    // The stub with no input fits both services, and its quoted template renders.
    let (ok, out) = call("alpha.v1.Shop/Buy", r#"{"item":"tea"}"#);
    assert!(ok && out.contains(r#""message": "Hello, tea!""#), "{out}");
    let (ok, out) = call("beta.v1.Shop/Buy", r#"{"sku":"s2"}"#);
    assert!(
        ok && out.contains(r#""message": "Hello, \u003cno value\u003e!""#),
        "{out}"
    );
    let (ok, out) = call("beta.v1.Shop/Sell", r#"{"sku":"s2"}"#);
    assert!(ok && out.contains(r#""message": "sold""#), "{out}");
    // An Any request matched by GripMock's form of it.
    let (ok, out) = call(
        "alpha.v1.Shop/Store",
        r#"{"payload":{"@type":"type.googleapis.com/google.protobuf.StringValue","value":"test"}}"#,
    );
    assert!(ok && out.contains(r#""success": true"#), "{out}");
    // A reply with an Any nothing defines: UNKNOWN, in Go's protojson words.
    let (ok, out) = call("alpha.v1.Shop/Buy", r#"{"item":"missing"}"#);
    assert!(!ok, "{out}");
    assert!(out.contains("Code: Unknown"), "{out}");
    assert!(
        out.contains(r#"unable to resolve "type.googleapis.com/alpha.v1.Missing": "not found""#),
        "{out}"
    );
}
