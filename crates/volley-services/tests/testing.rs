//! grpc.testing.TestService's compression and echo behaviour, seen on the wire (the interop
//! clients cannot see whether a reply was compressed; this test reads the bytes).

use bytes::Bytes;
use volley_server::{Code, Server};
use volley_services::{
    pb::grpc::testing::{
        BoolValue, ResponseParameters, SimpleRequest, SimpleResponse, StreamingInputCallRequest,
        StreamingOutputCallRequest,
    },
    testing,
};
use volley_testkit::{RawClient, frame};
use volley_wire::compression::Encoding;

const GZIP: &[(&str, &str)] = &[("grpc-accept-encoding", "gzip"), ("grpc-encoding", "gzip")];

fn gzip_magic(m: &Bytes) -> bool {
    m.starts_with(&[0x1f, 0x8b])
}

fn flag(v: bool) -> Option<BoolValue> {
    Some(BoolValue { value: v })
}

async fn client() -> RawClient {
    let server = Server::builder()
        .add_service(testing::service())
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { server.serve(listener, std::future::pending()).await });
    RawClient::connect(addr).await.unwrap()
}

#[tokio::test]
async fn response_compression_follows_the_request_per_call_and_per_message() {
    let c = client().await;
    for (asked, compressed) in [(Some(true), true), (Some(false), false), (None, false)] {
        let req = SimpleRequest {
            response_size: 1000,
            response_compressed: asked.map(|v| BoolValue { value: v }),
            ..Default::default()
        };
        let r = c
            .call(
                "/grpc.testing.TestService/UnaryCall",
                GZIP,
                vec![frame(&req)],
            )
            .await
            .unwrap();
        assert_eq!(r.code(), Code::Ok);
        assert_eq!(gzip_magic(&r.messages[0]), compressed, "asked {asked:?}");
        assert_eq!(
            r.headers.get("grpc-encoding").is_some(),
            compressed,
            "asked {asked:?}"
        );
    }

    // Per reply: compressed, not, compressed.
    let req = StreamingOutputCallRequest {
        response_parameters: [true, false, true]
            .into_iter()
            .map(|c| ResponseParameters {
                size: 500,
                compressed: flag(c),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let r = c
        .call(
            "/grpc.testing.TestService/StreamingOutputCall",
            GZIP,
            vec![frame(&req)],
        )
        .await
        .unwrap();
    assert_eq!(r.code(), Code::Ok);
    let got: Vec<bool> = r.messages.iter().map(gzip_magic).collect();
    assert_eq!(got, [true, false, true]);

    // A client that does not accept gzip gets plain replies whatever it asked.
    let req = SimpleRequest {
        response_size: 100,
        response_compressed: flag(true),
        ..Default::default()
    };
    let r = c
        .call(
            "/grpc.testing.TestService/UnaryCall",
            &[],
            vec![frame(&req)],
        )
        .await
        .unwrap();
    assert!(!gzip_magic(&r.messages[0]));
    assert_eq!(
        r.decode::<SimpleResponse>()[0]
            .payload
            .as_ref()
            .unwrap()
            .body
            .len(),
        100
    );
}

#[tokio::test]
async fn expect_compressed_is_checked_against_how_the_request_arrived() {
    let c = client().await;
    let unary = |expect: bool| SimpleRequest {
        response_size: 10,
        expect_compressed: flag(expect),
        ..Default::default()
    };
    let gz = |b: Bytes| Encoding::Gzip.compress_frame(&b[5..]);
    for (req, body, want) in [
        (unary(true), frame(&unary(true)), Code::InvalidArgument),
        (unary(true), gz(frame(&unary(true))), Code::Ok),
        (
            unary(false),
            gz(frame(&unary(false))),
            Code::InvalidArgument,
        ),
        (unary(false), frame(&unary(false)), Code::Ok),
    ] {
        let r = c
            .call("/grpc.testing.TestService/UnaryCall", GZIP, vec![body])
            .await
            .unwrap();
        assert_eq!(r.code(), want, "{req:?}: {:?}", r.status());
    }

    // Client streaming: the second message claims compression but arrives plain.
    let m = |expect: bool| StreamingInputCallRequest {
        expect_compressed: flag(expect),
        ..Default::default()
    };
    let r = c
        .call(
            "/grpc.testing.TestService/StreamingInputCall",
            GZIP,
            vec![gz(frame(&m(true))), frame(&m(true))],
        )
        .await
        .unwrap();
    assert_eq!(r.code(), Code::InvalidArgument, "{:?}", r.status());
}

#[tokio::test]
async fn echoes_metadata_and_refuses_absurd_sizes() {
    let c = client().await;
    let echo = [
        ("x-grpc-test-echo-initial", "first"),
        ("x-grpc-test-echo-trailing-bin", "AAEC"),
    ];
    let req = SimpleRequest {
        response_size: 1,
        ..Default::default()
    };
    let r = c
        .call(
            "/grpc.testing.TestService/UnaryCall",
            &echo,
            vec![frame(&req)],
        )
        .await
        .unwrap();
    assert_eq!(r.code(), Code::Ok);
    assert_eq!(r.headers["x-grpc-test-echo-initial"], "first");
    assert_eq!(
        r.trailers.as_ref().unwrap()["x-grpc-test-echo-trailing-bin"],
        "AAEC"
    );

    for size in [-1, i32::MAX] {
        let req = SimpleRequest {
            response_size: size,
            ..Default::default()
        };
        let r = c
            .call(
                "/grpc.testing.TestService/UnaryCall",
                &[],
                vec![frame(&req)],
            )
            .await
            .unwrap();
        assert_eq!(r.code(), Code::InvalidArgument, "size {size}");
    }
    // The unimplemented method of the suite is not served.
    let r = c
        .call(
            "/grpc.testing.TestService/UnimplementedCall",
            &[],
            vec![frame(&req)],
        )
        .await
        .unwrap();
    assert_eq!(r.code(), Code::Unimplemented);
}
