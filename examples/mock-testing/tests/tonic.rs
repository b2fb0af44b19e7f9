//! tonic's generated client (tonic-prost-build, from the same protos) against `MockServer`:
//! over its loopback port, and in-process through tonic's `connect_with_connector`.

use hyper_util::rt::TokioIo;
use serde_json::json;
use tonic::{Code, transport::Endpoint};
use volley_example_mock_testing::pb::FILE_DESCRIPTOR_SET;
use volley_mock::testing::{
    Mock, MockServer, error, method, reply_json, request_json, stream_json,
};

/// tonic's code for `orders.v1` (its own message types).
mod tonic_pb {
    include!(concat!(env!("OUT_DIR"), "/tonic/orders.v1.rs"));
}

use tonic_pb::{GetOrderRequest, Note, orders_client::OrdersClient};

#[tokio::test]
async fn a_tonic_client_calls_the_mock_over_its_port_and_in_process() {
    let server = MockServer::start(FILE_DESCRIPTOR_SET).await;
    Mock::given(method("orders.v1.Orders/GetOrder"))
        .and(request_json(json!({"id": "o-1"})))
        .respond_with(reply_json(json!({"id": "o-1", "status": "PAID"})))
        .expect(2)
        .mount(&server)
        .await;
    Mock::given(method("orders.v1.Orders/GetOrder"))
        .respond_with(
            error(volley_server::Status::not_found("no such order")).trailer("x-trace", "t-9"),
        )
        .with_priority(9)
        .mount(&server)
        .await;
    Mock::given(method("orders.v1.Orders/Chat"))
        .respond_with(stream_json([json!({"text": "a"}), json!({"text": "b"})]))
        .mount(&server)
        .await;

    let mut over_tcp = OrdersClient::connect(server.uri()).await.unwrap();
    let pipes = server.in_process();
    let channel = Endpoint::from_static("http://mock.in-process")
        .connect_with_connector(tower::service_fn(move |_: http::Uri| {
            let io = pipes.connect();
            async move { io.map(TokioIo::new) }
        }))
        .await
        .unwrap();
    let mut in_process = OrdersClient::new(channel);

    for client in [&mut over_tcp, &mut in_process] {
        let o = client
            .get_order(GetOrderRequest { id: "o-1".into() })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(
            (o.id.as_str(), o.status()),
            ("o-1", tonic_pb::order::Status::Paid)
        );
    }
    let e = in_process
        .get_order(GetOrderRequest { id: "o-2".into() })
        .await
        .unwrap_err();
    assert_eq!((e.code(), e.message()), (Code::NotFound, "no such order"));
    assert_eq!(e.metadata().get("x-trace").unwrap(), "t-9");

    let notes = futures_util::stream::iter([Note { text: "x".into() }]);
    let mut replies = in_process.chat(notes).await.unwrap().into_inner();
    let mut back = Vec::new();
    while let Some(n) = replies.message().await.unwrap() {
        back.push(n.text);
    }
    assert_eq!(back, ["a", "b"]);
}
