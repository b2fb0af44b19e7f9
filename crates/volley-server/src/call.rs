//! One gRPC call, start to end: check the request head, read the message(s), run the handler under
//! the deadline, and shape the HTTP response (headers, frames, status trailers).

use std::{future::Future, sync::Arc};

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode, header::CONTENT_TYPE};
use hyper::body::Incoming;
use tokio::time::Instant;

use crate::{
    Request, Response, Status,
    body::{GRPC_CONTENT_TYPE, ResponseBody, outgoing_frame, status_trailers},
    codec::FrameDecoder,
    compression::{ACCEPT_ENCODING, Encoding},
    envelope::{EnvelopeBody, Mode, connect_end},
    server::Shared,
    service::{FrameStream, Handler},
    streaming::{RawStreaming, Transform},
    timeout::parse_grpc_timeout,
};

pub(crate) type HttpResponse = http::Response<ResponseBody>;

/// The framed protocols, which share the call path and differ at the edges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Envelope {
    /// gRPC over HTTP/2.
    Grpc,
    /// gRPC-Web (`application/grpc-web[+proto]`, or `-text` for base64).
    Web {
        /// base64 bodies.
        text: bool,
    },
    /// Connect streaming (`application/connect+proto` or `+json`).
    Connect {
        /// JSON messages.
        json: bool,
    },
}

/// True for `application/grpc` and `application/grpc+proto` / `;params` variants.
pub(crate) fn is_grpc_content_type(headers: &HeaderMap) -> bool {
    headers.get(CONTENT_TYPE).is_some_and(|v| {
        let v = v.as_bytes();
        v.starts_with(b"application/grpc") && matches!(v.get(16), None | Some(b'+') | Some(b';'))
    })
}

/// What a request's content type asks for.
pub(crate) enum Protocol {
    /// A framed protocol.
    Framed(Envelope),
    /// Connect unary (`application/proto` or `application/json`).
    ConnectUnary {
        /// JSON body.
        json: bool,
    },
    /// Anything else.
    Other,
}

/// Reads the protocol from the content type (`;charset=…` and other parameters ignored).
pub(crate) fn protocol(headers: &HeaderMap) -> Protocol {
    if is_grpc_content_type(headers) {
        return Protocol::Framed(Envelope::Grpc);
    }
    let Some(ct) = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return Protocol::Other;
    };
    let ct = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match ct.as_str() {
        "application/grpc-web" | "application/grpc-web+proto" => {
            Protocol::Framed(Envelope::Web { text: false })
        }
        "application/grpc-web-text" | "application/grpc-web-text+proto" => {
            Protocol::Framed(Envelope::Web { text: true })
        }
        "application/connect+proto" => Protocol::Framed(Envelope::Connect { json: false }),
        "application/connect+json" => Protocol::Framed(Envelope::Connect { json: true }),
        "application/proto" => Protocol::ConnectUnary { json: false },
        "application/json" => Protocol::ConnectUnary { json: true },
        _ => Protocol::Other,
    }
}

/// Serves one request on a framed protocol.
pub(crate) async fn serve_grpc(
    shared: Arc<Shared>,
    req: http::Request<Incoming>,
    env: Envelope,
) -> HttpResponse {
    // Only Connect JSON needs the schema; gRPC pays nothing here.
    let (out_json, in_json) = match env {
        Envelope::Connect { json: true } => {
            let path = req.uri().path();
            match crate::connect::stream_output(&shared, path) {
                Some(d) => (Some(d), shared.descriptors.get(path).map(|m| m.input())),
                None => {
                    return plain(
                        StatusCode::UNSUPPORTED_MEDIA_TYPE,
                        "volley: JSON needs the method's schema registered\n",
                    );
                }
            }
        }
        _ => (None, None),
    };
    let resp = call(shared, req, env, in_json).await;
    match env {
        Envelope::Grpc => resp,
        Envelope::Web { text } => {
            let (mut parts, body) = resp.into_parts();
            parts.headers.insert(
                CONTENT_TYPE,
                http::HeaderValue::from_static(if text {
                    "application/grpc-web-text+proto"
                } else {
                    "application/grpc-web+proto"
                }),
            );
            let body = ResponseBody::other(EnvelopeBody::new(body, Mode::Web { text }));
            http::Response::from_parts(parts, body)
        }
        Envelope::Connect { json } => {
            let (mut parts, body) = resp.into_parts();
            let body = if parts.headers.contains_key("grpc-status") {
                // Trailers-only: Connect carries the status in the end-stream message.
                let end = connect_end(&parts.headers).freeze();
                parts.headers.remove("grpc-status");
                parts.headers.remove("grpc-message");
                ResponseBody::other(http_body_util::Full::new(end))
            } else {
                ResponseBody::other(EnvelopeBody::new(body, Mode::Connect { json: out_json }))
            };
            parts.headers.remove("grpc-accept-encoding");
            parts.headers.remove("grpc-encoding");
            parts.headers.insert(
                CONTENT_TYPE,
                http::HeaderValue::from_static(if json {
                    "application/connect+json"
                } else {
                    "application/connect+proto"
                }),
            );
            http::Response::from_parts(parts, body)
        }
    }
}

async fn call(
    shared: Arc<Shared>,
    req: http::Request<Incoming>,
    env: Envelope,
    in_json: Option<prost_reflect::MessageDescriptor>,
) -> HttpResponse {
    let (parts, body) = req.into_parts();
    if parts.method != Method::POST {
        return plain(StatusCode::METHOD_NOT_ALLOWED, "gRPC requires POST\n");
    }
    let Some(handler) = shared.router.get(parts.uri.path()) else {
        return trailers_only(&shared.router.not_found(parts.uri.path()));
    };
    let headers = parts.headers;
    let (enc_header, accept_header) = match env {
        Envelope::Connect { .. } => ("connect-content-encoding", "connect-accept-encoding"),
        _ => ("grpc-encoding", "grpc-accept-encoding"),
    };
    let encoding = match Encoding::from_header(headers.get(enc_header)) {
        Ok(e) => e,
        Err(status) => return trailers_only(&status),
    };
    let compress = Encoding::Gzip
        .accepted_by(headers.get(accept_header))
        .then_some(Encoding::Gzip)
        .filter(|_| shared.limits.send_compression && !matches!(env, Envelope::Connect { .. }));
    let deadline = if let Envelope::Connect { .. } = env {
        match crate::connect::timeout(&headers) {
            Ok(d) => d,
            Err(s) => return trailers_only(&s),
        }
    } else {
        match headers.get("grpc-timeout") {
            None => None,
            Some(v) => match parse_grpc_timeout(v.as_bytes()) {
                Some(d) => Some(Instant::now() + d),
                None => {
                    return trailers_only(&Status::internal(format!(
                        "transport: malformed grpc-timeout: {v:?}"
                    )));
                }
            },
        }
    };
    let transform = match (env, in_json) {
        (Envelope::Web { text: true }, _) => Transform::Base64(Default::default()),
        (_, Some(desc)) => Transform::Json(desc),
        _ => Transform::None,
    };
    let raw = RawStreaming::new(
        body,
        FrameDecoder::new(encoding, shared.limits.max_recv),
        transform,
    );
    let max_send = shared.limits.max_send;
    match handler {
        Handler::Unary(h) => {
            let call = async {
                let msg = raw.single().await?;
                h(Request::from_parts(headers, deadline, msg)).await
            };
            unary_response(within(deadline, call).await, compress, max_send)
        }
        Handler::ClientStreaming(h) => {
            let call = h(Request::from_parts(headers, deadline, raw));
            unary_response(within(deadline, call).await, compress, max_send)
        }
        Handler::ServerStreaming(h) => {
            let call = async {
                let msg = raw.single().await?;
                h(Request::from_parts(headers, deadline, msg)).await
            };
            stream_response(within(deadline, call).await, deadline, compress, max_send)
        }
        Handler::Bidi(h) => {
            let call = h(Request::from_parts(headers, deadline, raw));
            stream_response(within(deadline, call).await, deadline, compress, max_send)
        }
    }
}

/// Runs `call` until the deadline, if there is one.
pub(crate) async fn within<T>(
    deadline: Option<Instant>,
    call: impl Future<Output = Result<T, Status>>,
) -> Result<T, Status> {
    match deadline {
        None => call.await,
        Some(d) => tokio::time::timeout_at(d, call)
            .await
            .unwrap_or_else(|_| Err(Status::deadline_exceeded("context deadline exceeded"))),
    }
}

fn grpc_headers(mut headers: HeaderMap, compress: Option<Encoding>) -> HeaderMap {
    headers.insert(CONTENT_TYPE, GRPC_CONTENT_TYPE);
    headers.insert("grpc-accept-encoding", ACCEPT_ENCODING);
    if let Some(enc) = compress {
        headers.insert("grpc-encoding", enc.header_value());
    }
    headers
}

fn unary_response(
    res: Result<Response<Bytes>, Status>,
    compress: Option<Encoding>,
    max_send: usize,
) -> HttpResponse {
    let (metadata, frame, trailers) = match res {
        Ok(r) => r.into_parts(),
        Err(status) => return trailers_only(&status),
    };
    let frame = match outgoing_frame(frame, compress, max_send) {
        Ok(f) => f,
        Err(status) => return trailers_only(&status),
    };
    let mut resp = http::Response::new(ResponseBody::unary(frame, status_trailers(trailers, None)));
    *resp.headers_mut() = grpc_headers(metadata, compress);
    resp
}

fn stream_response(
    res: Result<Response<FrameStream>, Status>,
    deadline: Option<Instant>,
    compress: Option<Encoding>,
    max_send: usize,
) -> HttpResponse {
    let (metadata, frames, trailers) = match res {
        Ok(r) => r.into_parts(),
        Err(status) => return trailers_only(&status),
    };
    let body = ResponseBody::stream(frames, trailers, deadline, compress, max_send);
    let mut resp = http::Response::new(body);
    *resp.headers_mut() = grpc_headers(metadata, compress);
    resp
}

/// A response whose headers carry the status and whose body is empty ("Trailers-Only").
pub(crate) fn trailers_only(status: &Status) -> HttpResponse {
    let mut resp = http::Response::new(ResponseBody::empty());
    let h = resp.headers_mut();
    h.insert(CONTENT_TYPE, GRPC_CONTENT_TYPE);
    h.insert("grpc-accept-encoding", ACCEPT_ENCODING);
    status.write_to(h);
    resp
}

/// A plain-text HTTP answer (for requests that are not gRPC at all).
pub(crate) fn plain(code: StatusCode, text: &'static str) -> HttpResponse {
    let body = http_body_util::Full::new(Bytes::from_static(text.as_bytes()));
    let mut resp = http::Response::new(ResponseBody::other(body));
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}
