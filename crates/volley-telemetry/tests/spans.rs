//! A traced client calling a traced server, both in this process, spans exported over OTLP/HTTP
//! to a collector in the test and decoded with the OpenTelemetry project's own types: the
//! client's attempt span and the server's call span share a trace, the server's span is the
//! attempt's child, and a failed call carries its status. One test per process: the tracer
//! provider is global.

use std::time::Duration;

use opentelemetry::{
    Context,
    trace::{TraceContextExt, Tracer},
};
use opentelemetry_proto::tonic::{
    collector::trace::v1::ExportTraceServiceRequest, trace::v1::Span,
};
use prost::Message;
use volley_client::{Channel, Endpoint, Strategy, endpoint::Target};
use volley_server::Server;
use volley_services::{
    Options,
    pb::helloworld::{HelloRequest, greeter_client::GreeterClient},
};
use volley_telemetry::{ClientTracing, Exporter, ServerTracing};
use volley_testkit::otlp::OtlpReceiver;

fn spans(bodies: &[Vec<u8>]) -> Vec<Span> {
    bodies
        .iter()
        .flat_map(|b| {
            ExportTraceServiceRequest::decode(b.as_slice())
                .unwrap()
                .resource_spans
        })
        .flat_map(|r| r.scope_spans)
        .flat_map(|s| s.spans)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_attempt_and_server_call_share_a_trace() {
    let collector = OtlpReceiver::start();
    let exporter = Exporter::start(&collector.url(), "volley-telemetry-test").unwrap();

    let mut builder = Server::builder().intercept(ServerTracing);
    for s in volley_services::all(Options::default()) {
        builder = builder.add_service(s);
    }
    let server = builder.build().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { server.serve(listener, std::future::pending()).await });

    let ep = Endpoint::new(Target::parse(&addr.to_string()).unwrap()).unwrap();
    let client =
        GreeterClient::new(Channel::new(ep, Strategy::Single)).with_interceptor(ClientTracing);
    // The caller's own span: the attempt's parent.
    let tracer = opentelemetry::global::tracer("test");
    let root = tracer.start("caller");
    let cx = Context::current_with_span(root);
    let root_id = cx.span().span_context().span_id().to_string();
    let reply = {
        let _entered = cx.clone().attach();
        client
            .say_hello(HelloRequest { name: "t".into() })
            .await
            .unwrap()
    };
    assert_eq!(reply.into_inner().message, "Hello t");
    cx.span().end();
    exporter.flush();
    let bodies = collector.wait_for(Duration::from_secs(10), |b| spans(b).len() >= 3);
    let all = spans(&bodies);
    let client_span = all.iter().find(|s| s.kind == 3).expect("a client span");
    let server_span = all.iter().find(|s| s.kind == 2).expect("a server span");
    assert_eq!(client_span.name, "helloworld.Greeter/SayHello");
    assert_eq!(server_span.name, "helloworld.Greeter/SayHello");
    assert_eq!(client_span.trace_id, server_span.trace_id, "one trace");
    assert_eq!(
        server_span.parent_span_id, client_span.span_id,
        "the server's span is the attempt's child"
    );
    let hex: String = client_span
        .parent_span_id
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(hex, root_id, "the attempt is the caller's child");
    drop(exporter);
}
