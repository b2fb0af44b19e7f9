//! volley-telemetry: OpenTelemetry tracing for volley's servers and clients.
//!
//! - [`ServerTracing`]: a server interceptor that reads the caller's W3C `traceparent` (a
//!   malformed one is ignored and the call starts a new trace) and records one span per call,
//!   with the method, peer, protocol, deadline and status as attributes.
//! - [`ClientTracing`]: a client interceptor that records one span per attempt, child of the
//!   caller's current context, and sends its `traceparent`.
//! - [`Exporter::start`]: the OTLP exporter, on a thread of its own: calls never wait for it,
//!   and an unreachable collector costs one log line. OTLP/HTTP (protobuf, `/v1/traces`) by
//!   default, over volley's HTTP client with rustls (`http_client`), or OTLP/gRPC through
//!   volley's gRPC client (`grpc_exporter`), both on a small runtime of their own
//!   (`background`); protocol, CA and service name as the OpenTelemetry environment variables
//!   say (`export`).
//!
//! Spans go to OpenTelemetry's global tracer provider, which [`Exporter::start`] sets; a server
//! started without one records nothing but still propagates nothing (no-op spans).

mod background;
mod export;
mod grpc_exporter;
mod http_client;
mod propagation;

pub use export::{ExportOptions, Exporter, ExporterError, OtlpProtocol};

use opentelemetry::{
    Context, KeyValue, global,
    trace::{SpanKind, Status as SpanStatus, TraceContextExt, Tracer},
};
use volley_client::grpc::{Attempt, AttemptEnd, ClientInterceptor};
use volley_server::intercept::{Call, CallEnd, CallProtocol, Interceptor};
use volley_wire::{Code, Status};

/// The instrumentation scope spans are recorded under.
const SCOPE: &str = "volley";

/// One span per server call, continuing the caller's trace.
#[derive(Clone, Copy, Debug, Default)]
pub struct ServerTracing;

impl Interceptor for ServerTracing {
    fn on_call(&self, call: &mut Call) -> impl Future<Output = Result<(), Status>> + Send {
        std::future::ready(self.on_call_now(call).unwrap_or(Ok(())))
    }

    fn on_call_now(&self, call: &mut Call) -> Option<Result<(), Status>> {
        let parent = propagation::extract(call.metadata());
        let method = call.method();
        let mut attrs = vec![
            KeyValue::new("rpc.system", "grpc"),
            KeyValue::new("rpc.service", method.service().to_owned()),
            KeyValue::new("rpc.method", method.name().to_owned()),
            KeyValue::new("rpc.volley.protocol", protocol_name(call.info().protocol())),
        ];
        if let Some(peer) = call.info().peer_addr() {
            attrs.push(KeyValue::new("network.peer.address", peer.ip().to_string()));
            attrs.push(KeyValue::new("network.peer.port", i64::from(peer.port())));
        }
        if let Some(left) = call.info().time_left() {
            attrs.push(KeyValue::new(
                "rpc.grpc.deadline_ms",
                left.as_millis() as i64,
            ));
        }
        let tracer = global::tracer(SCOPE);
        let span = tracer
            .span_builder(method.full_name().to_owned())
            .with_kind(SpanKind::Server)
            .with_attributes(attrs)
            .start_with_context(&tracer, &parent);
        let cx = parent.with_span(span);
        // The handler can start child spans from it.
        call.extensions_mut().insert(cx.clone());
        call.keep(cx);
        Some(Ok(()))
    }

    fn on_end(&self, end: &CallEnd<'_>) {
        if let Some(cx) = end.kept::<Context>() {
            // The call as a log event too, carrying its trace id (`RUST_LOG=info,volley::call=debug` for `volley serve`).
            tracing::debug!(
                target: "volley::call",
                method = end.info().method().full_name(),
                status = end.code().name(),
                elapsed_us = end.elapsed().as_micros() as u64,
                peer = ?end.info().peer_addr(),
                trace_id = %cx.span().span_context().trace_id(),
                "call ended"
            );
            finish(cx, end.code(), end.status().map(Status::message));
        }
    }
}

/// One span per client attempt, child of the current context, its `traceparent` sent along.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClientTracing;

impl ClientInterceptor for ClientTracing {
    fn on_attempt(&self, attempt: &mut Attempt<'_>) -> Result<(), Status> {
        let method = attempt.full_method();
        let (service, name) = method.rsplit_once('/').unwrap_or((method, ""));
        let mut attrs = vec![
            KeyValue::new("rpc.system", "grpc"),
            KeyValue::new("rpc.service", service.to_owned()),
            KeyValue::new("rpc.method", name.to_owned()),
            KeyValue::new("server.address", attempt.target().to_owned()),
            KeyValue::new("rpc.grpc.attempt", i64::from(attempt.number())),
        ];
        if let Some(d) = attempt.deadline() {
            let left = d.saturating_duration_since(tokio::time::Instant::now());
            attrs.push(KeyValue::new(
                "rpc.grpc.deadline_ms",
                left.as_millis() as i64,
            ));
        }
        let parent = Context::current();
        let tracer = global::tracer(SCOPE);
        let span = tracer
            .span_builder(method.to_owned())
            .with_kind(SpanKind::Client)
            .with_attributes(attrs)
            .start_with_context(&tracer, &parent);
        let cx = parent.with_span(span);
        propagation::inject(&cx, attempt.metadata_mut());
        attempt.keep(cx);
        Ok(())
    }

    fn on_end(&self, end: &AttemptEnd<'_>) {
        if let Some(cx) = end.kept::<Context>() {
            finish(cx, end.code(), end.status().map(Status::message));
        }
    }
}

/// Ends a call's or attempt's span with its status.
fn finish(cx: &Context, code: Code, message: Option<&str>) {
    let span = cx.span();
    span.set_attribute(KeyValue::new("rpc.grpc.status_code", code as i64));
    if code != Code::Ok {
        span.set_status(SpanStatus::error(format!(
            "{}: {}",
            code.name(),
            message.unwrap_or("")
        )));
    }
    span.end();
}

fn protocol_name(p: CallProtocol) -> &'static str {
    match p {
        CallProtocol::Grpc => "grpc",
        CallProtocol::GrpcWeb => "grpc-web",
        CallProtocol::Connect => "connect",
        CallProtocol::Rest => "rest",
    }
}
