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
    server::Shared,
    service::{FrameStream, Handler},
    streaming::RawStreaming,
    timeout::parse_grpc_timeout,
};

type HttpResponse = http::Response<ResponseBody>;

/// True for `application/grpc` and `application/grpc+proto` / `;params` variants.
pub(crate) fn is_grpc_content_type(headers: &HeaderMap) -> bool {
    headers.get(CONTENT_TYPE).is_some_and(|v| {
        let v = v.as_bytes();
        v.starts_with(b"application/grpc") && matches!(v.get(16), None | Some(b'+') | Some(b';'))
    })
}

/// Serves one request on the gRPC protocol.
pub(crate) async fn serve_grpc(shared: Arc<Shared>, req: http::Request<Incoming>) -> HttpResponse {
    let (parts, body) = req.into_parts();
    if parts.method != Method::POST {
        return plain(StatusCode::METHOD_NOT_ALLOWED, "gRPC requires POST\n");
    }
    let Some(handler) = shared.router.get(parts.uri.path()) else {
        return trailers_only(&shared.router.not_found(parts.uri.path()));
    };
    let headers = parts.headers;
    let encoding = match Encoding::from_header(headers.get("grpc-encoding")) {
        Ok(e) => e,
        Err(status) => return trailers_only(&status),
    };
    let compress = Encoding::Gzip
        .accepted_by(headers.get("grpc-accept-encoding"))
        .then_some(Encoding::Gzip)
        .filter(|_| shared.limits.send_compression);
    let deadline = match headers.get("grpc-timeout") {
        None => None,
        Some(v) => match parse_grpc_timeout(v.as_bytes()) {
            Some(d) => Some(Instant::now() + d),
            None => {
                return trailers_only(&Status::internal(format!(
                    "transport: malformed grpc-timeout: {v:?}"
                )));
            }
        },
    };
    let raw = RawStreaming::new(body, FrameDecoder::new(encoding, shared.limits.max_recv));
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
async fn within<T>(
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
