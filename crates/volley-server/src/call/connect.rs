//! The Connect protocol's unary calls: plain POSTs (`application/proto` or `application/json`,
//! errors as JSON with an HTTP status) and GETs for side-effect-free methods. JSON is transcoded
//! with the method's descriptors; the handler is the same one gRPC calls. (Connect streaming is a
//! framed protocol: `call::grpc` serves it, `body::envelope` writes its end-of-stream message.)

use std::sync::Arc;

use base64::{Engine, engine::general_purpose::STANDARD_NO_PAD};
use bytes::Bytes;
use http::{HeaderValue, StatusCode, header::CONTENT_TYPE};
use prost_types::method_options::IdempotencyLevel;
use volley_wire::{Code, Status, codec::HEADER_LEN, compression::Encoding};

use crate::{
    body::{HttpResponse, RequestBody, ResponseBody, read_limited},
    deadline::{connect_timeout, within},
    handler::{Handler, Request},
    intercept::{CallInfo, CallProtocol, Peer, Tally},
    route::Shared,
    transcode::{error_json, http_status, json_to_proto, proto_to_json, query_pairs},
};

/// A unary Connect error response (HTTP status from the code, or `status` when given).
pub(crate) fn error_response(s: &Status, status: Option<StatusCode>) -> HttpResponse {
    let body = http_body_util::Full::new(Bytes::from(error_json(s).to_string()));
    let mut resp = http::Response::new(ResponseBody::other(body));
    *resp.status_mut() = status.unwrap_or_else(|| http_status(s.code()));
    let h = resp.headers_mut();
    for (k, v) in s.metadata() {
        h.append(k.clone(), v.clone());
    }
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    // For the interceptors' end guard (`call::intercepted`), which reads the status here.
    resp.extensions_mut().insert(s.clone());
    resp
}

/// The query string of a Connect GET request, attached to the handler's
/// [`Request::extensions`](crate::Request::extensions) (the Connect spec's `message`, `encoding`,
/// `base64`, `compression` and `connect` parameters, still percent-encoded).
#[derive(Clone, Debug)]
pub struct ConnectGetQuery(pub String);

/// Serves a Connect unary call sent as a POST.
pub(crate) async fn serve_unary(
    shared: Arc<Shared>,
    peer: Arc<Peer>,
    req: http::Request<RequestBody>,
    json: bool,
) -> HttpResponse {
    let (parts, body) = req.into_parts();
    let encoding = parts.headers.get("content-encoding").cloned();
    let limit = shared.limits.max_recv;
    let body = async move { read_limited(body, limit).await.map_err(|(s, _)| s) };
    unary_call(shared, &peer, parts, json, encoding, body).await
}

/// Serves a Connect unary call sent as a GET (`?message=…&encoding=json|proto[&base64=1]
/// [&compression=gzip][&connect=v1]`), allowed for methods marked `NO_SIDE_EFFECTS`.
pub(crate) async fn serve_get(
    shared: Arc<Shared>,
    peer: Arc<Peer>,
    req: http::Request<RequestBody>,
) -> HttpResponse {
    let (mut parts, mut body) = req.into_parts();
    // The request read to its end first (free for a GET with END_STREAM on its headers, as
    // Connect's are): an answer sent while the peer can still send on the stream ends it with
    // our RST_STREAM(NO_ERROR), and what the peer sends next on it (a reset, more headers, a
    // window overflow) would go unanswered (h2spec -P /pkg.Svc/Method, 5.1/9 and 6.9.1/3).
    crate::body::discard(&mut body).await;
    let path = parts.uri.path();
    let side_effect_free = shared.descriptors.get(path).is_some_and(|m| {
        m.method_descriptor_proto()
            .options
            .as_ref()
            .is_some_and(|o| o.idempotency_level() == IdempotencyLevel::NoSideEffects)
    });
    if !side_effect_free {
        let mut resp = error_response(
            &Status::unimplemented(format!(
                "{path} does not allow GET: only methods with idempotency_level = NO_SIDE_EFFECTS do"
            )),
            Some(StatusCode::METHOD_NOT_ALLOWED),
        );
        resp.headers_mut()
            .insert(http::header::ALLOW, HeaderValue::from_static("POST"));
        return resp;
    }
    let query = parts.uri.query().unwrap_or("").to_owned();
    let (mut message, mut json, mut base64, mut compression) = (None, None, false, None);
    for (k, v) in query_pairs(&query) {
        match k.as_str() {
            "message" => message = Some(v),
            "encoding" => json = Some(v),
            "base64" => base64 = v == "1",
            "compression" => compression = Some(v),
            "connect" if v != "v1" => {
                return error_response(
                    &Status::invalid_argument(format!(
                        "connect: unsupported protocol version {v:?}"
                    )),
                    None,
                );
            }
            _ => {}
        }
    }
    let json = match json.as_deref() {
        Some("json") => true,
        Some("proto") => false,
        Some(other) => {
            return error_response(
                &Status::unimplemented(format!("connect: unsupported encoding {other:?}")),
                Some(StatusCode::UNSUPPORTED_MEDIA_TYPE),
            );
        }
        None => {
            return error_response(
                &Status::invalid_argument("connect: GET request is missing the encoding parameter"),
                None,
            );
        }
    };
    let message = message.unwrap_or_default();
    let raw = if base64 {
        let trimmed = message.trim_end_matches('=');
        match base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(trimmed)
            .or_else(|_| STANDARD_NO_PAD.decode(trimmed))
        {
            Ok(b) => Bytes::from(b),
            Err(e) => {
                return error_response(
                    &Status::invalid_argument(format!("connect: message is not base64: {e}")),
                    None,
                );
            }
        }
    } else {
        Bytes::from(message.into_bytes())
    };
    let encoding = match compression {
        None => None,
        Some(c) => match HeaderValue::from_str(&c) {
            Ok(v) => Some(v),
            Err(_) => {
                return error_response(
                    &Status::unimplemented(format!("connect: unsupported compression {c:?}")),
                    None,
                );
            }
        },
    };
    if raw.len() > shared.limits.max_recv {
        return error_response(
            &Status::resource_exhausted(format!(
                "request message larger than max ({} bytes)",
                shared.limits.max_recv
            )),
            None,
        );
    }
    parts.extensions.insert(ConnectGetQuery(query));
    unary_call(
        shared,
        &peer,
        parts,
        json,
        encoding,
        std::future::ready(Ok(raw)),
    )
    .await
}

/// The Connect unary call itself: find the handler, read and decode the message, run under the
/// deadline, and write the reply (or the error JSON).
async fn unary_call(
    shared: Arc<Shared>,
    peer: &Arc<Peer>,
    parts: http::request::Parts,
    json: bool,
    encoding: Option<HeaderValue>,
    body: impl std::future::Future<Output = Result<Bytes, Status>>,
) -> HttpResponse {
    let path = parts.uri.path();
    let Some(route) = shared.router.get(path) else {
        return error_response(&shared.router.not_found(path), Some(StatusCode::NOT_FOUND));
    };
    let Handler::Unary(h) = &route.handler else {
        return error_response(
            &Status::unimplemented(format!(
                "{path} is a streaming method: use application/connect+proto or +json"
            )),
            Some(StatusCode::UNSUPPORTED_MEDIA_TYPE),
        );
    };
    let method = shared.descriptors.get(path);
    if json && method.is_none() {
        return error_response(
            &Status::unimplemented(format!("no schema registered for {path}: JSON needs one")),
            Some(StatusCode::UNSUPPORTED_MEDIA_TYPE),
        );
    }
    let deadline = match connect_timeout(&parts.headers) {
        Ok(d) => d,
        Err(s) => return error_response(&s, None),
    };
    let limit = shared.limits.max_recv;
    // The handler takes the headers and extensions; `path` keeps borrowing the URI.
    let (headers, mut extensions) = (parts.headers, parts.extensions);
    let tally = extensions.remove::<Tally>();
    let info = CallInfo::new(route.method.clone(), peer, CallProtocol::Connect, deadline);
    let call = async {
        let mut raw = body.await?;
        if let Some(t) = &tally {
            t.whole_message(raw.len());
        }
        let mut compressed = false;
        match encoding.as_ref().map(HeaderValue::as_bytes) {
            None | Some(b"identity") => {}
            Some(b"gzip") => {
                raw = Encoding::Gzip.decompress(&raw, limit)?;
                compressed = true;
            }
            Some(other) => {
                return Err(Status::unimplemented(format!(
                    "unsupported content-encoding {:?}",
                    String::from_utf8_lossy(other)
                )));
            }
        }
        if let (true, Some(m)) = (json, method) {
            raw = json_to_proto(&m.input(), &raw)?;
        }
        let req = Request::from_parts(info, headers, raw).with_compressed(compressed);
        h(req.with_extensions(extensions)).await
    };
    let result = within(deadline, call).await;
    let resp = match result {
        Ok(r) => r,
        Err(s) => {
            let too_big =
                s.code() == Code::ResourceExhausted && s.message().starts_with("request body");
            return error_response(&s, too_big.then_some(StatusCode::PAYLOAD_TOO_LARGE));
        }
    };
    let (metadata, frame, trailers) = resp.into_parts();
    let mut payload = frame.slice(HEADER_LEN..);
    if let (true, Some(m)) = (json, method) {
        payload = match proto_to_json(&m.output(), &payload) {
            Ok(p) => p,
            Err(s) => return error_response(&s, None),
        };
    }
    let mut resp = http::Response::new(ResponseBody::other(http_body_util::Full::new(payload)));
    let h = resp.headers_mut();
    *h = metadata;
    for (k, v) in &trailers {
        if let Ok(name) = http::HeaderName::from_bytes(format!("trailer-{}", k.as_str()).as_bytes())
        {
            h.append(name, v.clone());
        }
    }
    h.insert(
        CONTENT_TYPE,
        HeaderValue::from_static(if json {
            "application/json"
        } else {
            "application/proto"
        }),
    );
    resp
}
