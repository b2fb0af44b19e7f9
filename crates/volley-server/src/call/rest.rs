//! REST calls: a request matched to a `google.api.http` route has its path variables, query
//! parameters and JSON body mapped onto the request message, the handler runs, and the reply goes
//! back as JSON (server streams as newline-delimited `{"result": ...}` objects, as grpc-gateway
//! writes them).

use std::{
    convert::Infallible,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use bytes::Bytes;
use http::{HeaderValue, StatusCode, header::CONTENT_TYPE};
use http_body::{Body, Frame};
use prost_reflect::{DescriptorPool, Kind, MessageDescriptor};
use serde_json::{Map, Value};
use volley_wire::{Code, Status, codec::HEADER_LEN};

use super::rest_shape;
use crate::{
    body::{FrameStream, HttpResponse, RequestBody, ResponseBody, read_limited},
    deadline::{connect_timeout, within},
    handler::{Handler, Request},
    intercept::{CallInfo, CallProtocol, Peer, Tally},
    route::Shared,
    transcode::{http_status, json_to_proto, proto_to_json, query_pairs},
};

/// Sets `a.b.c` in a JSON object to a value typed for the message field it names.
fn set_field(
    obj: &mut Map<String, Value>,
    desc: &MessageDescriptor,
    path: &str,
    raw: &str,
    repeated_ok: bool,
) -> Result<(), Status> {
    let (head, tail) = path
        .split_once('.')
        .map_or((path, None), |(h, t)| (h, Some(t)));
    let field = desc
        .get_field_by_name(head)
        .or_else(|| desc.get_field_by_json_name(head))
        .ok_or_else(|| {
            Status::invalid_argument(format!("{} has no field {head:?}", desc.full_name()))
        })?;
    let key = field.json_name().to_owned();
    if let Some(rest) = tail {
        let Kind::Message(inner) = field.kind() else {
            return Err(Status::invalid_argument(format!("{head} is not a message")));
        };
        let entry = obj.entry(key).or_insert_with(|| Value::Object(Map::new()));
        let Value::Object(m) = entry else {
            return Err(Status::invalid_argument(format!("{head} is set twice")));
        };
        return set_field(m, &inner, rest, raw, repeated_ok);
    }
    let value = match field.kind() {
        Kind::Bool => Value::Bool(raw == "true"),
        Kind::Double | Kind::Float => raw
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or_else(|| Value::String(raw.to_owned()), Value::Number),
        _ => Value::String(raw.to_owned()),
    };
    if field.is_list() && repeated_ok {
        match obj.entry(key).or_insert_with(|| Value::Array(Vec::new())) {
            Value::Array(a) => a.push(value),
            _ => return Err(Status::invalid_argument(format!("{head} is set twice"))),
        }
    } else {
        obj.insert(key, value);
    }
    Ok(())
}

/// A REST error in grpc-gateway's shape.
pub(crate) fn error_response(s: &Status) -> HttpResponse {
    error_response_in(s, None)
}

/// A REST error in grpc-gateway's shape, its details written as JSON when `pool` knows their
/// types; the status's metadata as `Grpc-Metadata-*` headers.
fn error_response_in(s: &Status, pool: Option<&DescriptorPool>) -> HttpResponse {
    let body = rest_shape::error_body(s, pool);
    let mut resp = http::Response::new(ResponseBody::other(http_body_util::Full::new(
        Bytes::from(body),
    )));
    *resp.status_mut() = if s.code() == Code::Unimplemented {
        StatusCode::NOT_FOUND
    } else {
        http_status(s.code())
    };
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    rest_shape::metadata_headers(s.metadata(), resp.headers_mut());
    // For the interceptors' end guard (`call::intercepted`), which reads the status here.
    resp.extensions_mut().insert(s.clone());
    resp
}

/// Serves a REST call.
pub(crate) async fn serve(
    shared: Arc<Shared>,
    peer: Arc<Peer>,
    req: http::Request<RequestBody>,
    route: usize,
    vars: Vec<(String, String)>,
) -> HttpResponse {
    let route = &shared.rest[route];
    let (mut parts, body) = req.into_parts();
    let Some(target) = shared.router.get(&route.grpc_path) else {
        return error_response(&shared.router.not_found(&route.grpc_path));
    };
    let handler = target.handler.clone();
    let deadline = match connect_timeout(&parts.headers) {
        Ok(d) => d,
        Err(s) => return error_response(&s),
    };
    let limit = shared.limits.max_recv;
    let tally = parts.extensions.remove::<Tally>();
    let input = async {
        let raw = read_limited(body, limit).await.map_err(|(s, _)| s)?;
        if let Some(t) = &tally {
            t.whole_message(raw.len());
        }
        let mut obj = Map::new();
        if !route.body.is_empty() && !raw.is_empty() {
            let v: Value = serde_json::from_slice(&raw)
                .map_err(|e| Status::invalid_argument(format!("invalid JSON body: {e}")))?;
            if route.body == "*" {
                match v {
                    Value::Object(m) => obj = m,
                    _ => return Err(Status::invalid_argument("the body must be a JSON object")),
                }
            } else {
                let f = route.input.get_field_by_name(&route.body).ok_or_else(|| {
                    Status::internal(format!("rule body names no field {:?}", route.body))
                })?;
                obj.insert(f.json_name().to_owned(), v);
            }
        }
        // A PATCH's mask, when it sends none, is what its body sets (before the path's
        // variables join the message, as grpc-gateway fills it).
        if parts.method == http::Method::PATCH
            && !matches!(route.body.as_str(), "" | "*")
            && let Some((k, v)) = rest_shape::patch_mask(&route.input, &route.body, &obj)
        {
            obj.insert(k, v);
        }
        for (field, value) in &vars {
            set_field(&mut obj, &route.input, field, value, false)?;
        }
        if route.body != "*"
            && let Some(q) = parts.uri.query()
        {
            for (k, v) in query_pairs(q) {
                set_field(&mut obj, &route.input, &k, &v, true)?;
            }
        }

        json_to_proto(&route.input, Value::Object(obj).to_string().as_bytes())
    };
    let msg = match within(deadline, input).await {
        Ok(m) => m,
        Err(s) => return error_response(&s),
    };
    let info = CallInfo::new(target.method.clone(), &peer, CallProtocol::Rest, deadline);
    let request = Request::from_parts(info, parts.headers, msg);
    let pool = route.output.parent_pool();
    let fail = |s: &Status| error_response_in(s, Some(pool));
    match handler {
        Handler::Unary(h) => match within(deadline, h(request)).await {
            Ok(resp) => {
                let (metadata, frame, _) = resp.into_parts();
                let json = proto_to_json(&route.output, &frame[HEADER_LEN..]).and_then(|j| {
                    match route.response_body.as_str() {
                        "" => Ok(j),
                        f => rest_shape::response_field(&j, f).map(Bytes::from),
                    }
                });
                match json {
                    Ok(json) => {
                        let mut r = json_response(json);
                        rest_shape::metadata_headers(&metadata, r.headers_mut());
                        r
                    }
                    Err(s) => fail(&s),
                }
            }
            Err(s) => fail(&s),
        },
        Handler::ServerStreaming(h) => match within(deadline, h(request)).await {
            Ok(resp) => {
                let (metadata, frames, _) = resp.into_parts();
                let body = NdJson {
                    frames: Some(frames),
                    output: route.output.clone(),
                    field: route.response_body.clone(),
                };
                let mut r = http::Response::new(ResponseBody::other(body));
                r.headers_mut()
                    .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                rest_shape::metadata_headers(&metadata, r.headers_mut());
                r
            }
            // As grpc-gateway answers a stream that fails before its first message: the
            // status's HTTP code, and the error as the stream's one line.
            Err(s) => {
                let mut r = http::Response::new(ResponseBody::other(http_body_util::Full::new(
                    Bytes::from(error_line(&s, &mut None)),
                )));
                *r.status_mut() = http_status(s.code());
                r.headers_mut()
                    .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                r.extensions_mut().insert(s);
                r
            }
        },
        _ => fail(&Status::unimplemented(
            "client and bidi streams have no REST mapping",
        )),
    }
}

fn json_response(json: Bytes) -> HttpResponse {
    let mut r = http::Response::new(ResponseBody::other(http_body_util::Full::new(json)));
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// A server stream as newline-delimited `{"result": ...}` / `{"error": ...}` objects.
struct NdJson {
    frames: Option<FrameStream>,
    output: MessageDescriptor,
    /// `response_body`: the field of each reply that is its result (empty: the reply).
    field: String,
}

impl Body for NdJson {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let Some(frames) = self.frames.as_mut() else {
            return Poll::Ready(None);
        };
        let line = match frames.as_mut().poll_next(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(None) => {
                self.frames = None;
                return Poll::Ready(None);
            }
            Poll::Ready(Some(Ok(frame))) => match proto_to_json(&self.output, &frame[HEADER_LEN..])
                .and_then(|j| match self.field.as_str() {
                    "" => Ok(j),
                    f => rest_shape::response_field(&j, f).map(Bytes::from),
                }) {
                Ok(json) => {
                    let mut l = b"{\"result\":".to_vec();
                    l.extend_from_slice(&json);
                    l.extend_from_slice(b"}\n");
                    l
                }
                Err(s) => error_line(&s, &mut self.frames),
            },
            // A stream ended by an OK status (its trailers, from a gateway's upstream) ends
            // the lines.
            Poll::Ready(Some(Err(s))) if s.code() == Code::Ok => {
                self.frames = None;
                return Poll::Ready(None);
            }
            Poll::Ready(Some(Err(s))) => error_line(&s, &mut self.frames),
        };
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(line)))))
    }
}

fn error_line(s: &Status, frames: &mut Option<FrameStream>) -> Vec<u8> {
    *frames = None;
    let mut l = format!("{{\"error\":{}}}", rest_shape::error_body(s, None)).into_bytes();
    l.push(b'\n');
    l
}
