//! The checkout tested against `MockServer`, as a user's crate would: volley-mock by version,
//! the client volley-build generated, mocks typed by the generated messages.

use std::{
    panic::{AssertUnwindSafe, catch_unwind},
    time::{Duration, Instant},
};

use serde_json::json;
use volley_client::{Code, Status};
use volley_example_mock_testing::{
    Checkout,
    pb::{FILE_DESCRIPTOR_SET, GetOrderRequest, Item, Note, Order, PayRequest, order},
};
use volley_mock::testing::{
    Mock, MockServer, error, header, method, reply, reply_json, reply_with, request, request_json,
    stream,
};

fn order(id: &str, status: order::Status) -> Order {
    Order {
        id: id.into(),
        status: status as i32,
        items: Vec::new(),
    }
}

/// The panic message of `f`, which must panic.
fn panic_of(f: impl FnOnce()) -> String {
    let payload = catch_unwind(AssertUnwindSafe(f)).expect_err("it panics");
    match payload.downcast::<String>() {
        Ok(s) => *s,
        Err(p) => p
            .downcast::<&str>()
            .map(|s| s.to_string())
            .unwrap_or_default(),
    }
}

#[tokio::test]
async fn a_unary_mock_answers_the_client_and_the_calls_are_kept_typed() {
    let server = MockServer::start(FILE_DESCRIPTOR_SET).await;
    Mock::given(method("orders.v1.Orders/GetOrder"))
        .and(request(|r: &GetOrderRequest| r.id == "o-1"))
        .respond_with(reply(order("o-1", order::Status::Paid)))
        .expect(1)
        .mount(&server)
        .await;
    // Over the loopback port, as the client connects to any server.
    let checkout = Checkout::connect(server.uri()).await.unwrap();
    assert_eq!(checkout.pay("o-1", 100).await.unwrap(), order::Status::Paid);
    let calls = server.received_requests().await;
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].method, "orders.v1.Orders/GetOrder");
    assert_eq!(
        calls[0].message::<GetOrderRequest>().unwrap(),
        GetOrderRequest { id: "o-1".into() }
    );
    assert_eq!(calls[0].json(), [json!({"id": "o-1"})]);
}

#[tokio::test]
async fn the_in_process_channel_needs_no_socket_and_answers_the_same() {
    let server = MockServer::start(FILE_DESCRIPTOR_SET).await;
    Mock::given(method("orders.v1.Orders/GetOrder"))
        .respond_with(reply_with(|r: &GetOrderRequest| Order {
            id: r.id.clone(),
            status: order::Status::Paid as i32,
            items: Vec::new(),
        }))
        .mount(&server)
        .await;
    let checkout = Checkout::new(server.channel());
    assert_eq!(checkout.pay("o-9", 1).await.unwrap(), order::Status::Paid);
    assert_eq!(server.received_requests().await.len(), 1);
}

#[tokio::test]
async fn streams_each_way_are_mocked() {
    let server = MockServer::start(FILE_DESCRIPTOR_SET).await;
    Mock::given(method("orders.v1.Orders/WatchOrder"))
        .respond_with(stream([
            order("o-1", order::Status::Pending),
            order("o-1", order::Status::Paid),
            order("o-1", order::Status::Shipped),
        ]))
        .mount(&server)
        .await;
    Mock::given(method("orders.v1.Orders/AddItems"))
        .and(request(|i: &Item| i.quantity > 0))
        .respond_with(reply_json(json!({"id": "o-7", "status": "PENDING"})))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("/orders.v1.Orders/Chat"))
        .and(request(|n: &Note| n.text == "ping"))
        .respond_with(stream([Note {
            text: "pong".into(),
        }]))
        .mount(&server)
        .await;
    Mock::given(method("orders.v1.Orders/Chat"))
        .respond_with(reply_with(|n: &Note| Note {
            text: n.text.to_uppercase(),
        }))
        .with_priority(9)
        .mount(&server)
        .await;
    let checkout = Checkout::new(server.channel());
    use order::Status::*;
    assert_eq!(
        checkout.follow("o-1").await.unwrap(),
        [Pending, Paid, Shipped]
    );
    let items = vec![
        Item {
            sku: "a".into(),
            quantity: 1,
        },
        Item {
            sku: "b".into(),
            quantity: 2,
        },
    ];
    assert_eq!(checkout.order(items).await.unwrap(), "o-7");
    assert_eq!(
        checkout.chat(&["ping", "hi", "ping"]).await.unwrap(),
        ["pong", "HI", "pong"]
    );
    let calls = server.received_requests().await;
    let add = calls
        .iter()
        .find(|c| c.method.ends_with("AddItems"))
        .unwrap();
    assert_eq!(add.messages::<Item>().len(), 2);
    let chat = calls.iter().find(|c| c.method.ends_with("Chat")).unwrap();
    assert_eq!(chat.messages::<Note>().len(), 3);
}

#[tokio::test]
async fn errors_carry_their_details_metadata_and_delays_hold() {
    let server = MockServer::start(FILE_DESCRIPTOR_SET).await;
    let detail = prost_types_any("type.googleapis.com/google.rpc.ErrorInfo", b"\x0a\x04SOLD");
    Mock::given(method("orders.v1.Orders/GetOrder"))
        .and(header("x-tenant", "t1"))
        .respond_with(error(Status::with_details(
            Code::NotFound,
            "no order o-2",
            vec![detail.clone()],
        )))
        .mount(&server)
        .await;
    Mock::given(method("orders.v1.Orders/GetOrder"))
        .respond_with(
            reply(order("o-2", order::Status::Pending))
                .delay(Duration::from_millis(150))
                .header("x-region", "eu")
                .trailer("x-trace", "abc"),
        )
        .mount(&server)
        .await;
    let client =
        volley_example_mock_testing::pb::orders_client::OrdersClient::new(server.channel());
    let mut req = volley_client::Request::new(GetOrderRequest { id: "o-2".into() });
    req.metadata_mut().insert("x-tenant", "t1".parse().unwrap());
    let e = client.get_order(req).await.unwrap_err();
    assert_eq!((e.code(), e.message()), (Code::NotFound, "no order o-2"));
    assert_eq!(e.detail_list(), [detail]);
    // The other mock, after its delay (150 ms; the bound allows the machine 0 ms early).
    let t = Instant::now();
    let ok = client
        .get_order(volley_client::Request::new(GetOrderRequest {
            id: "o-2".into(),
        }))
        .await
        .unwrap();
    assert!(
        t.elapsed() >= Duration::from_millis(150),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(ok.metadata()["x-region"], "eu");
    assert_eq!(ok.trailers()["x-trace"], "abc");
    assert_eq!(ok.into_inner().status(), order::Status::Pending);
}

fn prost_types_any(type_url: &str, value: &[u8]) -> prost_types::Any {
    prost_types::Any {
        type_url: type_url.into(),
        value: value.to_vec(),
    }
}

/// "The first GetOrder says PENDING, after Pay it says PAID": a scenario.
#[tokio::test]
async fn a_scenario_moves_on_when_the_order_is_paid() {
    let server = MockServer::start(FILE_DESCRIPTOR_SET).await;
    Mock::given(method("orders.v1.Orders/GetOrder"))
        .respond_with(reply(order("o-3", order::Status::Pending)))
        .in_scenario("payment")
        .when_scenario_state_is("Started")
        .mount(&server)
        .await;
    Mock::given(method("orders.v1.Orders/Pay"))
        .and(request(|p: &PayRequest| p.cents == 250))
        .respond_with(reply(order("o-3", order::Status::Paid)))
        .in_scenario("payment")
        .when_scenario_state_is("Started")
        .will_set_state_to("paid")
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("orders.v1.Orders/GetOrder"))
        .respond_with(reply(order("o-3", order::Status::Paid)))
        .in_scenario("payment")
        .when_scenario_state_is("paid")
        .mount(&server)
        .await;
    let checkout = Checkout::new(server.channel());
    assert_eq!(checkout.pay("o-3", 250).await.unwrap(), order::Status::Paid);
    assert_eq!(server.scenario_state("payment"), "paid");
    // Paid already: no second Pay (the Pay mock expects exactly one).
    assert_eq!(checkout.pay("o-3", 250).await.unwrap(), order::Status::Paid);
    let methods: Vec<String> = server
        .received_requests()
        .await
        .iter()
        .map(|c| c.method.rsplit('/').next().unwrap().to_owned())
        .collect();
    assert_eq!(methods, ["GetOrder", "Pay", "GetOrder", "GetOrder"]);
}

#[tokio::test]
async fn gripmock_stubs_answer_what_no_mock_matches() {
    let server = MockServer::start(FILE_DESCRIPTOR_SET).await;
    server
        .add_stubs(json!({"service": "orders.v1.Orders", "method": "GetOrder",
                          "input": {"equals": {"id": "o-4"}},
                          "output": {"data": {"id": "o-4", "status": "SHIPPED"}}}))
        .unwrap();
    let line = line!() + 1;
    Mock::given(method("orders.v1.Orders/GetOrder"))
        .and(request_json(json!({"id": "o-5"})))
        .respond_with(reply(order("o-5", order::Status::Paid)))
        .mount(&server)
        .await;
    let checkout = Checkout::new(server.channel());
    assert_eq!(
        checkout.pay("o-4", 1).await.unwrap_err().code(),
        Code::NotFound
    );
    assert_eq!(checkout.pay("o-5", 1).await.unwrap(), order::Status::Paid);
    let e = Checkout::new(server.channel())
        .pay("o-6", 1)
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    let (head, tail) = e.message().split_once("(written at ").unwrap();
    assert_eq!(
        head,
        "volley-mock: no mock matches orders.v1.Orders/GetOrder {\"id\":\"o-6\"}; 1 mock(s) of \
         the method did not match: mock #0 of orders.v1.Orders/GetOrder "
    );
    assert_eq!(
        tail,
        format!(
            "{}:{line}); and no stub matches {{\"id\":\"o-6\"}} for \
             orders.v1.Orders/GetOrder; closest: rest stub #1 (equals {{\"id\":\"o-4\"}})",
            file!()
        )
    );
    // A stub that does not fit the method: its problem in one line.
    let bad = server
        .add_stubs(json!({"service": "orders.v1.Orders", "method": "GetOrder",
                          "output": {"data": {"idd": 1}}}))
        .unwrap_err();
    assert!(bad.contains("idd"), "{bad}");
}

#[tokio::test]
async fn an_unmet_expectation_names_the_mock_and_lists_the_calls_that_came() {
    let server = MockServer::start(FILE_DESCRIPTOR_SET).await;
    let line = line!() + 1;
    Mock::given(method("orders.v1.Orders/Pay"))
        .respond_with(reply(order("o-1", order::Status::Paid)))
        .named("pays o-1")
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("orders.v1.Orders/GetOrder"))
        .respond_with(reply(order("o-1", order::Status::Paid)))
        .mount(&server)
        .await;
    let checkout = Checkout::new(server.channel());
    checkout.pay("o-1", 100).await.unwrap();
    let message = panic_of(|| server.verify());
    assert!(
        message.starts_with(
            "volley-mock: 1 expectation(s) not met:\n- mock \"pays o-1\" of orders.v1.Orders/Pay \
             (written at "
        ),
        "{message}"
    );
    assert!(
        message.contains(&format!("{}:{line})", file!())),
        "{message}"
    );
    assert!(
        message.ends_with(
            "expected exactly 1 call, received 0\nthe server received 1 call(s):\n  \
             1. orders.v1.Orders/GetOrder {\"id\":\"o-1\"}"
        ),
        "{message}"
    );
    // Dropped unmet, the server panics with the same message: seen from a thread of its own.
    server.reset().await;
    let dropped = std::thread::spawn(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async {
                let server = MockServer::start(FILE_DESCRIPTOR_SET).await;
                Mock::given(method("orders.v1.Orders/Pay"))
                    .respond_with(reply(order("o-1", order::Status::Paid)))
                    .expect(2..)
                    .mount(&server)
                    .await;
            })
    })
    .join()
    .expect_err("dropping an unmet expectation panics");
    let text = dropped.downcast::<String>().unwrap();
    assert!(
        text.contains("expected at least 2 calls, received 0"),
        "{text}"
    );
    assert!(text.ends_with("the server received no calls"), "{text}");
}

#[tokio::test]
async fn a_mock_of_a_method_the_service_lacks_is_refused_where_it_is_written() {
    let server = MockServer::start(FILE_DESCRIPTOR_SET).await;
    let line = line!() + 1;
    let mock = Mock::given(method("orders.v1.Orders/Refund")).respond_with(reply(Order::default()));
    let message = panic_of(|| {
        futures_executor_block_on(mock.mount(&server));
    });
    assert!(
        message.starts_with("volley-mock: the mock written at ")
            && message.contains(&format!("{}:{line} ", file!())),
        "{message}"
    );
    assert!(
        message.ends_with(
            "is for orders.v1.Orders/Refund, but orders.v1.Orders has no method \"Refund\" (its \
             methods: GetOrder, Pay, WatchOrder, AddItems, Chat)"
        ),
        "{message}"
    );
    let mock = Mock::given(method("orders.v1.Billing/Pay")).respond_with(reply(Order::default()));
    let message = panic_of(|| futures_executor_block_on(mock.mount(&server)));
    assert!(
        message.ends_with("which this server does not serve (it serves: orders.v1.Orders)"),
        "{message}"
    );
    let mock = Mock::given(method("orders.v1.Orders/Pay"))
        .respond_with(reply_json(json!({"state": "PAID"})));
    let message = panic_of(|| futures_executor_block_on(mock.mount(&server)));
    assert!(
        message.contains("reply #1: the reply's JSON does not fit orders.v1.Order"),
        "{message}"
    );
}

/// Mounting completes at once (it awaits nothing): polled once here, outside the runtime.
fn futures_executor_block_on<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let waker = std::task::Waker::noop();
    match f.as_mut().poll(&mut std::task::Context::from_waker(waker)) {
        std::task::Poll::Ready(v) => v,
        std::task::Poll::Pending => panic!("mount awaited something"),
    }
}
