//! Record and replay: `volley mock --record` in front of a real server (`volley serve`'s
//! built-in services) proxies 100 calls of three methods (unary, server stream, bidi) and an
//! error, writing stubs and NDJSON; with the upstream stopped, `volley mock --stub` answers the
//! same calls the same way, statuses included; `volley bench` replays the recorded requests as
//! load with no errors.

#[path = "mock_support/mod.rs"]
mod support;

use std::collections::HashMap;

use serde_json::Value;
use support::{Mock, TempDir, grpcurl};
use volley_client::{Grpc, Request};
use volley_testkit::{Volley, volley, workspace};

const VOLLEY: Volley = volley!();

#[derive(Clone, PartialEq, prost::Message)]
struct GetUserRequest {
    #[prost(int64, tag = "1")]
    id: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
struct ListUserRequest {}

#[derive(Clone, PartialEq, prost::Message)]
struct User {
    #[prost(int64, tag = "1")]
    id: i64,
    #[prost(string, tag = "2")]
    email: String,
    #[prost(string, tag = "3")]
    name: String,
    #[prost(double, tag = "4")]
    rating: f64,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Order {
    #[prost(int64, tag = "1")]
    instrument_id: i64,
    #[prost(int64, tag = "2")]
    price: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
struct OrderReply {
    #[prost(bool, tag = "1")]
    result: bool,
    #[prost(message, optional, tag = "2")]
    response_time: Option<prost_types::Timestamp>,
}

/// What a call answered: replies (debug text) and the status code.
type Seen = (Vec<String>, i32);

/// 40 unary calls (ids 0..40), 30 server streams, 30 bidi streams of two orders each.
async fn calls(addr: &str) -> HashMap<String, Seen> {
    let g = Grpc::connect(addr).await.expect("connect");
    let mut seen = HashMap::new();
    for id in 0..40 {
        let r = g
            .unary::<_, User>("/api.Users/Get", Request::new(GetUserRequest { id }))
            .await;
        let v = match r {
            Ok(u) => (vec![format!("{:?}", u.get_ref())], 0),
            Err(s) => (Vec::new(), s.code() as i32),
        };
        seen.insert(format!("get-{id}"), v);
    }
    for n in 0..30 {
        let mut out = Vec::new();
        let code = match g
            .server_streaming::<_, User>("/api.Users/List", Request::new(ListUserRequest {}))
            .await
        {
            Ok(r) => {
                let mut s = r.into_inner();
                loop {
                    match s.message().await {
                        Ok(Some(u)) => out.push(format!("{u:?}")),
                        Ok(None) => break 0,
                        Err(e) => break e.code() as i32,
                    }
                }
            }
            Err(e) => e.code() as i32,
        };
        seen.insert(format!("list-{n}"), (out, code));
    }
    for n in 0..30 {
        let orders = vec![
            Order {
                instrument_id: 1000 + 2 * n,
                price: 7,
            },
            Order {
                instrument_id: 1001 + 2 * n,
                price: 9,
            },
        ];
        let mut out = Vec::new();
        let code = match g
            .streaming::<_, OrderReply>(
                "/orders.OrderService/AddOrder",
                Request::new(futures_util::stream::iter(orders)),
            )
            .await
        {
            Ok(r) => {
                let mut s = r.into_inner();
                loop {
                    match s.message().await {
                        Ok(Some(o)) => out.push(format!("{o:?}")),
                        Ok(None) => break 0,
                        Err(e) => break e.code() as i32,
                    }
                }
            }
            Err(e) => e.code() as i32,
        };
        seen.insert(format!("bidi-{n}"), (out, code));
    }
    seen
}

const PROTOS: [&str; 3] = [
    "proto/api/users.proto",
    "proto/orders/order.proto",
    "proto/grpc/testing/test.proto",
];

fn mock_command(args: &[&str]) -> std::process::Command {
    let mut cmd = VOLLEY.command(&["mock", "--threads", "1", "--imports", "proto"]);
    cmd.args(args).args(PROTOS).current_dir(workspace());
    cmd
}

const ERROR_CALL: &str = r#"{"response_status": {"code": 5, "message": "gone away"}}"#;

#[test]
fn record_a_real_server_then_replay_it_without_it() {
    let dir = TempDir::new("record");
    let (stubs, data) = (dir.path("stubs"), dir.path("data"));
    let upstream = VOLLEY.serve(&[]);
    let recorder = Mock::start(mock_command(&[
        "--record",
        &upstream.addr().to_string(),
        "--stubs-out",
        &stubs,
        "--data-out",
        &data,
    ]));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let recorded = rt.block_on(calls(&recorder.target()));
    assert_eq!(recorded.len(), 100);
    assert!(
        recorded.values().all(|(_, code)| *code == 0),
        "{recorded:?}"
    );
    assert_eq!(recorded["list-0"].0.len(), 10, "ten users a stream");
    assert_eq!(recorded["bidi-0"].0.len(), 2, "a reply an order");
    let (ok, recorded_error) = grpcurl(
        &recorder.target(),
        &["-d", ERROR_CALL],
        "grpc.testing.TestService/UnaryCall",
    );
    assert!(
        !ok && recorded_error.contains("Code: NotFound") && recorded_error.contains("gone away"),
        "{recorded_error}"
    );
    // A Connect caller (JSON over HTTP) goes through the same recorder.
    let connect = |addr: &str| {
        support::curl(
            &[
                "-H",
                "content-type: application/json",
                "-d",
                r#"{"id": 99}"#,
            ],
            &format!("http://{addr}/api.Users/Get"),
        )
    };
    let (connect_recorded, code) = connect(&recorder.target());
    assert!(
        code == 200 && connect_recorded.contains(r#""id":"99""#),
        "{connect_recorded}"
    );
    drop(recorder);
    drop(upstream);

    // Each distinct call is a stub: 40 gets and the Connect one, 1 list, 30 bidi scripts, the
    // error.
    let count =
        |sub: &str| std::fs::read_dir(dir.0.join("stubs").join(sub)).map_or(0, |d| d.count());
    assert_eq!(count("api.Users"), 42);
    assert_eq!(count("orders.OrderService"), 30);
    assert_eq!(count("grpc.testing.TestService"), 1);
    let lines = std::fs::read_to_string(dir.0.join("data/api.Users.Get.ndjson")).unwrap();
    assert_eq!(lines.lines().count(), 41);
    let bidi =
        std::fs::read_to_string(dir.0.join("data/orders.OrderService.AddOrder.ndjson")).unwrap();
    let first: Value = serde_json::from_str(bidi.lines().next().unwrap()).unwrap();
    assert_eq!(
        first.as_array().map(Vec::len),
        Some(2),
        "a stream's messages on one line"
    );

    // No upstream now: the stubs answer the same calls the same way.
    let replay = Mock::start(mock_command(&["--stub", &stubs]));
    let replayed = rt.block_on(calls(&replay.target()));
    for (k, v) in &recorded {
        assert_eq!(&replayed[k], v, "{k}");
    }
    let (ok, replayed_error) = grpcurl(
        &replay.target(),
        &["-d", ERROR_CALL],
        "grpc.testing.TestService/UnaryCall",
    );
    assert!(
        !ok && replayed_error.contains("Code: NotFound")
            && replayed_error.contains("Message: gone away"),
        "{replayed_error}"
    );

    assert_eq!(connect(&replay.target()), (connect_recorded, 200));

    // The recorded requests as load.
    let out = VOLLEY
        .command(&[
            "bench",
            "--insecure",
            "--proto",
            "proto/api/users.proto",
            "--call",
            "api.Users.Get",
            "-D",
            &dir.path("data/api.Users.Get.ndjson"),
            "-n",
            "400",
            "-c",
            "8",
            "-O",
            "json",
            &replay.target(),
        ])
        .current_dir(workspace())
        .output()
        .expect("run volley bench");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{out:?}"));
    assert_eq!(
        report["statusCodeDistribution"],
        serde_json::json!({"OK": 400}),
        "{report}"
    );
}

mod interop {
    //! The same against grpc-go's interop server: 100 calls of TestService's UnaryCall,
    //! StreamingOutputCall and FullDuplexCall, an echoed response header among them.

    use super::*;

    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct Payload {
        #[prost(int32, tag = "1")]
        pub r#type: i32,
        #[prost(bytes = "vec", tag = "2")]
        pub body: Vec<u8>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct SimpleRequest {
        #[prost(int32, tag = "2")]
        pub response_size: i32,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct SimpleResponse {
        #[prost(message, optional, tag = "1")]
        pub payload: Option<Payload>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct ResponseParameters {
        #[prost(int32, tag = "1")]
        pub size: i32,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct StreamingOutputCallRequest {
        #[prost(message, repeated, tag = "2")]
        pub response_parameters: Vec<ResponseParameters>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct StreamingOutputCallResponse {
        #[prost(message, optional, tag = "1")]
        pub payload: Option<Payload>,
    }

    fn params(sizes: &[i32]) -> StreamingOutputCallRequest {
        StreamingOutputCallRequest {
            response_parameters: sizes
                .iter()
                .map(|s| ResponseParameters { size: *s })
                .collect(),
        }
    }

    async fn drain<T: prost::Message + Default + std::fmt::Debug>(
        r: Result<volley_client::Response<volley_client::Streaming<T>>, volley_client::Status>,
    ) -> Seen {
        let mut out = Vec::new();
        let code = match r {
            Ok(r) => {
                let mut s = r.into_inner();
                loop {
                    match s.message().await {
                        Ok(Some(m)) => out.push(format!("{m:?}")),
                        Ok(None) => break 0,
                        Err(e) => break e.code() as i32,
                    }
                }
            }
            Err(e) => e.code() as i32,
        };
        (out, code)
    }

    async fn calls(addr: &str) -> HashMap<String, Seen> {
        let g = Grpc::connect(addr).await.expect("connect");
        let mut seen = HashMap::new();
        for n in 0..34 {
            let mut req = Request::new(SimpleRequest { response_size: n });
            req.metadata_mut()
                .insert("x-grpc-test-echo-initial", "echoed".parse().unwrap());
            let r = g
                .unary::<_, SimpleResponse>("/grpc.testing.TestService/UnaryCall", req)
                .await;
            let v = match r {
                Ok(r) => {
                    let echoed = r.metadata().get("x-grpc-test-echo-initial").cloned();
                    (vec![format!("{:?} {echoed:?}", r.get_ref())], 0)
                }
                Err(s) => (Vec::new(), s.code() as i32),
            };
            seen.insert(format!("unary-{n}"), v);
        }
        for n in 0..33 {
            let r = g
                .server_streaming::<_, StreamingOutputCallResponse>(
                    "/grpc.testing.TestService/StreamingOutputCall",
                    Request::new(params(&[n, n + 1, 2])),
                )
                .await;
            seen.insert(format!("stream-{n}"), drain(r).await);
        }
        for n in 0..33 {
            let msgs = vec![params(&[n]), params(&[n + 100, 3])];
            let r = g
                .streaming::<_, StreamingOutputCallResponse>(
                    "/grpc.testing.TestService/FullDuplexCall",
                    Request::new(futures_util::stream::iter(msgs)),
                )
                .await;
            seen.insert(format!("bidi-{n}"), drain(r).await);
        }
        seen
    }

    #[test]
    fn record_grpc_gos_interop_server_then_replay() {
        let (mut server, upstream) = support::interop_server();
        let dir = TempDir::new("record-interop");
        let stubs = dir.path("stubs");
        let recorder = Mock::start(mock_command(&[
            "--record",
            &upstream,
            "--stubs-out",
            &stubs,
        ]));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let recorded = rt.block_on(calls(&recorder.target()));
        let _ = server.kill();
        let _ = server.wait();
        drop(recorder);
        assert_eq!(recorded.len(), 100);
        assert!(recorded.values().all(|(_, c)| *c == 0), "{recorded:?}");
        assert!(
            recorded["unary-3"].0[0].contains("echoed"),
            "{:?}",
            recorded["unary-3"]
        );
        assert_eq!(recorded["stream-4"].0.len(), 3);
        assert_eq!(recorded["bidi-4"].0.len(), 3);

        let replay = Mock::start(mock_command(&["--stub", &stubs]));
        let replayed = rt.block_on(calls(&replay.target()));
        for (k, v) in &recorded {
            assert_eq!(&replayed[k], v, "{k}");
        }
    }
}

/// One order as a gRPC frame.
fn order_frame(instrument_id: i64) -> bytes::Bytes {
    use prost::Message as _;
    let order = Order {
        instrument_id,
        price: 2,
    };
    let mut frame = vec![0];
    frame.extend_from_slice(&(order.encoded_len() as u32).to_be_bytes());
    frame.extend_from_slice(&order.encode_to_vec());
    frame.into()
}

/// `volley serve`'s built-in services, and a recorder in front of them writing stubs to
/// `dir/stubs` (with `extra` arguments: more protos).
fn recording(dir: &TempDir, extra: &[&str]) -> (volley_testkit::VolleyProcess, Mock) {
    let upstream = VOLLEY.serve(&[]);
    let stubs = dir.path("stubs");
    let addr = upstream.addr().to_string();
    let mut args = vec!["--record", addr.as_str(), "--stubs-out", stubs.as_str()];
    args.extend_from_slice(extra);
    let recorder = Mock::start(mock_command(&args));
    (upstream, recorder)
}

/// A bidi call whose second message is not an order: the caller's stream fails there (the
/// server cannot decode it), so the recorder cancels the upstream call rather than end its
/// request stream as if it were whole (which recorded a one-order stub), writes no stub, and
/// says why in one line; the caller gets the failure.
#[test]
fn a_call_whose_caller_sends_a_bad_message_is_not_recorded() {
    let dir = TempDir::new("record-bad");
    let (_upstream, recorder) = recording(&dir, &[]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let reply = rt.block_on(async {
        let client = volley_testkit::RawClient::connect(recorder.grpc)
            .await
            .unwrap();
        // A field 15 of wire type 7, which no protobuf message has.
        let bad = bytes::Bytes::from_static(&[0, 0, 0, 0, 1, 0x7f]);
        client
            .call(
                "/orders.OrderService/AddOrder",
                &[],
                vec![order_frame(1), bad],
            )
            .await
            .unwrap()
    });
    assert_ne!(reply.code(), volley_wire::Code::Ok, "{:?}", reply.status());
    // The recorder's line may follow the caller's answer by a moment (its task ends after).
    let line = "recording orders.OrderService.AddOrder: the caller's stream failed";
    let t = std::time::Instant::now();
    while !recorder.process.log().contains(line) && t.elapsed() < std::time::Duration::from_secs(10)
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let log = recorder.process.log();
    assert!(log.contains(line), "{log}");
    drop(recorder);
    let written =
        std::fs::read_dir(dir.0.join("stubs").join("orders.OrderService")).map_or(0, |d| d.count());
    assert_eq!(
        written, 0,
        "a stub was written for a call whose caller failed"
    );
}

/// A bidi call whose caller resets its stream after one order: the server drops the call, the
/// recorder's upstream call goes with it (cancelled) and no stub is written, one warning line
/// saying why.
#[test]
fn a_call_whose_caller_fails_mid_stream_is_not_recorded() {
    let dir = TempDir::new("record-reset");
    let (_upstream, recorder) = recording(&dir, &[]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = volley_testkit::RawClient::connect(recorder.grpc)
            .await
            .unwrap();
        let mut send = client.sender().ready().await.unwrap();
        let req = client.request("/orders.OrderService/AddOrder", &[]);
        let (resp, mut body) = send.send_request(req, false).unwrap();
        body.send_data(order_frame(1), false).unwrap();
        // The reply to the first order arrives: the upstream has the call.
        let resp = resp.await.unwrap();
        let mut replies = resp.into_body();
        let first = replies.data().await;
        assert!(
            first.is_some_and(|d| d.is_ok()),
            "no reply to the first order"
        );
        body.send_reset(h2::Reason::CANCEL);
        // The connection's task sends the reset: keep it running a moment.
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        drop(client);
    });
    // The recorder notices, and writes nothing for the call.
    let t = std::time::Instant::now();
    while !recorder
        .process
        .log()
        .contains("recording orders.OrderService.AddOrder: the caller")
        && t.elapsed() < std::time::Duration::from_secs(10)
    {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let log = recorder.process.log();
    println!("noticed {:?} after the reset", t.elapsed());
    assert!(
        log.contains("recording orders.OrderService.AddOrder: the caller")
            && log.contains("nothing is recorded"),
        "{log}"
    );
    drop(recorder);
    let written =
        std::fs::read_dir(dir.0.join("stubs").join("orders.OrderService")).map_or(0, |d| d.count());
    assert_eq!(
        written, 0,
        "a stub was written for a call whose caller failed"
    );
}

const GREETER: &str = "proto/helloworld/helloworld.proto";

/// What the upstream said comes back byte for byte: a reply that reads like a template (`{{`) is
/// not rendered on replay, a binary (`-bin`) trailer and a header value holding `;` are kept. The
/// calls are grpcurl's, recorded in front of `volley serve` and replayed with it stopped.
#[test]
fn a_replay_answers_byte_for_byte_templates_binary_trailers_and_odd_headers() {
    let dir = TempDir::new("record-bytes");
    let stubs = dir.path("stubs");
    let (upstream, recorder) = recording(&dir, &[GREETER]);
    let hello = |addr: &str| {
        grpcurl(
            addr,
            &["-d", r#"{"name": "{{ .Request.name }} {{uuid}} {{"}"#],
            "helloworld.Greeter/SayHello",
        )
    };
    // The interop service echoes `x-grpc-test-echo-initial` as a header and
    // `x-grpc-test-echo-trailing-bin` as a trailer; grpcurl -v prints both (binary in base64).
    let echo = |addr: &str| {
        let (ok, out) = grpcurl(
            addr,
            &[
                "-v",
                "-H",
                "x-grpc-test-echo-initial: a;b; c",
                "-H",
                "x-grpc-test-echo-trailing-bin: AAEC/3t7",
                "-d",
                r#"{"response_size": 3}"#,
            ],
            "grpc.testing.TestService/UnaryCall",
        );
        // What came back (grpcurl -v prints what it sent first).
        let echoed: Vec<String> = out
            .lines()
            .skip_while(|l| !l.starts_with("Response headers received"))
            .filter(|l| l.starts_with("x-grpc-test-echo"))
            .map(str::to_owned)
            .collect();
        (ok, echoed, out)
    };
    let (ok, said) = hello(&recorder.target());
    assert!(
        ok && said.contains("{{ .Request.name }} {{uuid}} {{"),
        "{said}"
    );
    let (ok, echoed, out) = echo(&recorder.target());
    assert!(ok, "{out}");
    assert_eq!(
        echoed,
        [
            "x-grpc-test-echo-initial: a;b; c",
            "x-grpc-test-echo-trailing-bin: AAEC/3t7"
        ],
        "{out}"
    );
    drop(recorder);
    drop(upstream);

    let replay = Mock::start(mock_command(&["--stub", &stubs, GREETER]));
    assert_eq!(hello(&replay.target()), (true, said));
    let (ok, replayed, out) = echo(&replay.target());
    assert!(ok, "{out}");
    assert_eq!(replayed, echoed, "{out}");
}
