//! Framed calls, start to end (gRPC, gRPC-Web, Connect streaming): check the request head, read
//! the message(s), run the handler under the deadline, and shape the HTTP response (headers,
//! frames, status trailers, and the protocol's envelope).

use std::{future::Future, sync::Arc};

use bytes::Bytes;
use futures_util::{FutureExt, StreamExt};
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header::CONTENT_TYPE};
use prost_reflect::MessageDescriptor;
use tokio::time::Instant;
use volley_wire::{
    Status,
    codec::{FLAG_NO_COMPRESS, FrameDecoder, HEADER_LEN, frame_payload},
    compression::{ACCEPT_ENCODING, Encoding},
    names::{
        CONNECT_ACCEPT_ENCODING, CONNECT_ENCODING, GRPC_ACCEPT_ENCODING, GRPC_ENCODING,
        GRPC_MESSAGE, GRPC_STATUS, GRPC_STATUS_DETAILS, GRPC_TIMEOUT,
    },
    timeout::parse_grpc_timeout,
};

use crate::{
    body::{
        EnvelopeBody, FrameStream, HttpResponse, Mode, RawStreaming, RequestBody, ResponseBody,
        connect_end, outgoing_frame, plain, status_trailers, trailers_only,
    },
    deadline::{connect_timeout, within},
    handler::{Handler, Request, Response},
    intercept::{CallInfo, CallProtocol, Peer, Tally},
    route::{Envelope, Shared, content_type},
    transcode::proto_to_json,
};

/// Serves one request on a framed protocol. The head is checked before the returned future
/// exists, so the future carries only the prepared call (see [`Prepared`]).
pub(crate) fn serve(
    shared: &Shared,
    peer: &Arc<Peer>,
    req: http::Request<RequestBody>,
    env: Envelope,
    json: bool,
) -> impl Future<Output = HttpResponse> + Send + 'static {
    answer(shared, peer, req, env, json, None).map(move |resp| shape(resp, env, json))
}

/// The call's response before [`shape`] gives it its protocol's envelope (interceptors add
/// their headers and trailers in between, and count what is read into `tally`).
pub(crate) fn answer(
    shared: &Shared,
    peer: &Arc<Peer>,
    req: http::Request<RequestBody>,
    env: Envelope,
    json: bool,
    tally: Option<Tally>,
) -> impl Future<Output = HttpResponse> + Send + 'static {
    // Only the JSON codec needs the schema; protobuf pays nothing here.
    let mut prepared = if json {
        match shared.descriptors.get(req.uri().path()) {
            Some(m) => prepare(shared, peer, req, env, Some((m.input(), m.output())), tally),
            None => Err(plain(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "volley: JSON needs the method's schema registered\n",
            )),
        }
    } else {
        prepare(shared, peer, req, env, None, tally)
    };
    async move {
        match &mut prepared {
            Ok(call) => call.run().await,
            Err(resp) => std::mem::take(resp),
        }
    }
}

/// Gives a framed call's response its protocol's content type and envelope.
///
/// A gRPC response is changed in place: taking it apart and back moved it twice more per call.
pub(crate) fn shape(mut resp: HttpResponse, env: Envelope, json: bool) -> HttpResponse {
    if resp.status() != StatusCode::OK {
        return resp; // a plain-HTTP refusal (405, 415)
    }
    resp.headers_mut()
        .insert(CONTENT_TYPE, content_type(env, json));
    match env {
        Envelope::Grpc => resp,
        Envelope::Web { text } => {
            resp.map(|body| ResponseBody::other(EnvelopeBody::new(body, Mode::Web { text })))
        }
        Envelope::Connect => connect_envelope(resp),
    }
}

/// A Connect streaming response: the status of a trailers-only answer moved into the
/// end-stream message, and the encoding headers under Connect's names.
fn connect_envelope(resp: HttpResponse) -> HttpResponse {
    let (mut parts, body) = resp.into_parts();
    let body = if parts.headers.contains_key(GRPC_STATUS) {
        // Trailers-only: Connect carries the status in the end-stream message.
        let end = connect_end(&parts.headers).freeze();
        for h in [GRPC_STATUS, GRPC_MESSAGE, GRPC_STATUS_DETAILS] {
            parts.headers.remove(h);
        }
        ResponseBody::other(http_body_util::Full::new(end))
    } else {
        ResponseBody::other(EnvelopeBody::new(body, Mode::Connect))
    };
    for (from, to) in [
        (GRPC_ACCEPT_ENCODING, CONNECT_ACCEPT_ENCODING),
        (GRPC_ENCODING, CONNECT_ENCODING),
    ] {
        if let Some(v) = parts.headers.remove(from) {
            parts.headers.insert(to, v);
        }
    }
    http::Response::from_parts(parts, body)
}

/// Re-encodes an outgoing (uncompressed) protobuf frame as a JSON frame of `desc`.
fn json_frame(desc: &MessageDescriptor, frame: &Bytes) -> Result<Bytes, Status> {
    let json = proto_to_json(desc, &frame[HEADER_LEN..])?;
    Ok(frame_payload(frame[0] & FLAG_NO_COMPRESS, &json).freeze())
}

/// A call whose request head has been checked: what its async part needs, and nothing more (the
/// whole call future is moved by value several times per call, so its size is a hot-path cost).
struct Prepared {
    handler: Handler,
    info: CallInfo,
    headers: HeaderMap,
    extensions: http::Extensions,
    raw: RawStreaming,
    compress: Compress,
    max_send: usize,
    out_json: Option<MessageDescriptor>,
}

/// Checks a framed call's head (method, path, encodings, deadline) without awaiting anything; an
/// answer in `Err` ends the call there.
// The `Err` answer (240 bytes) is smaller than the `Ok` call it replaces, so boxing it saves
// nothing.
#[allow(clippy::result_large_err)]
fn prepare(
    shared: &Shared,
    peer: &Arc<Peer>,
    req: http::Request<RequestBody>,
    env: Envelope,
    json: Option<(MessageDescriptor, MessageDescriptor)>,
    tally: Option<Tally>,
) -> Result<Prepared, HttpResponse> {
    let (parts, body) = req.into_parts();
    if parts.method != Method::POST {
        return Err(plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "gRPC requires POST\n",
        ));
    }
    let Some(route) = shared.router.get(parts.uri.path()) else {
        return Err(trailers_only(&shared.router.not_found(parts.uri.path())));
    };
    let headers = parts.headers;
    let (enc_header, accept_header) = match env {
        Envelope::Connect => (CONNECT_ENCODING, CONNECT_ACCEPT_ENCODING),
        _ => (GRPC_ENCODING, GRPC_ACCEPT_ENCODING),
    };
    let [enc, accept, timeout] = first_of(&headers, [&enc_header, &accept_header, &GRPC_TIMEOUT]);
    let encoding = Encoding::from_header(enc).map_err(|s| trailers_only(&s))?;
    let compress = Compress {
        accepted: Encoding::Gzip.accepted_by(accept).then_some(Encoding::Gzip),
        default: shared.limits.send_compression,
        advertise: enc.is_some() || accept.is_some(),
    };
    let deadline = if let Envelope::Connect = env {
        connect_timeout(&headers).map_err(|s| trailers_only(&s))?
    } else {
        match timeout {
            None => None,
            Some(v) => match parse_grpc_timeout(v.as_bytes()) {
                Some(d) => Some(Instant::now() + d),
                None => {
                    return Err(trailers_only(&Status::internal(format!(
                        "transport: malformed grpc-timeout: {v:?}"
                    ))));
                }
            },
        }
    };
    let (in_json, out_json) = json.unzip();
    let extensions = parts.extensions;
    let raw = RawStreaming::new(
        body,
        FrameDecoder::new(encoding, shared.limits.max_recv),
        env == Envelope::Web { text: true },
        in_json,
    )
    .with_tally(tally);
    let protocol = match env {
        Envelope::Grpc => CallProtocol::Grpc,
        Envelope::Web { .. } => CallProtocol::GrpcWeb,
        Envelope::Connect => CallProtocol::Connect,
    };
    Ok(Prepared {
        handler: route.handler.clone(),
        info: CallInfo::new(route.method.clone(), peer, protocol, deadline),
        headers,
        extensions,
        raw,
        compress,
        max_send: shared.limits.max_send,
        out_json,
    })
}

impl Prepared {
    /// Reads the request, runs the handler under the deadline, and shapes the response. The
    /// pieces are borrowed, not moved, into the inner futures, so the call is stored once.
    async fn run(&mut self) -> HttpResponse {
        let Prepared {
            handler,
            info,
            headers,
            extensions,
            raw,
            compress,
            max_send,
            out_json,
        } = self;
        let (deadline, compress, max_send) = (info.deadline(), *compress, *max_send);
        let mut head = (info, headers, extensions);
        match handler {
            Handler::Unary(h) => {
                let call = async {
                    let (msg, compressed) = raw.single().await?;
                    h(request(&mut head, msg).with_compressed(compressed)).await
                };
                let res = within(deadline, call).await;
                unary_response(to_json(res, out_json.as_ref()), compress, max_send)
            }
            Handler::ClientStreaming(h) => {
                let res = within(deadline, h(request(&mut head, raw.take()))).await;
                unary_response(to_json(res, out_json.as_ref()), compress, max_send)
            }
            Handler::ServerStreaming(h) => {
                let call = async {
                    let (msg, compressed) = raw.single().await?;
                    h(request(&mut head, msg).with_compressed(compressed)).await
                };
                let res = within(deadline, call).await;
                stream_response(
                    stream_to_json(res, out_json.take()),
                    deadline,
                    compress,
                    max_send,
                )
            }
            Handler::Bidi(h) => {
                let res = within(deadline, h(request(&mut head, raw.take()))).await;
                stream_response(
                    stream_to_json(res, out_json.take()),
                    deadline,
                    compress,
                    max_send,
                )
            }
        }
    }
}

/// The handler's request: the message with the call's head, taken from the prepared call.
fn request<T>(
    (info, headers, extensions): &mut (&mut CallInfo, &mut HeaderMap, &mut http::Extensions),
    message: T,
) -> Request<T> {
    Request::from_parts(std::mem::take(*info), std::mem::take(*headers), message)
        .with_extensions(std::mem::take(*extensions))
}

/// The JSON codec for a unary reply.
fn to_json(
    res: Result<Response<Bytes>, Status>,
    desc: Option<&MessageDescriptor>,
) -> Result<Response<Bytes>, Status> {
    match desc {
        None => res,
        Some(d) => {
            let r = res?;
            let json = json_frame(d, r.get_ref())?;
            Ok(r.map(|_| json))
        }
    }
}

/// The JSON codec for a reply stream (one more boxed stream, only for JSON calls).
fn stream_to_json(
    res: Result<Response<FrameStream>, Status>,
    desc: Option<MessageDescriptor>,
) -> Result<Response<FrameStream>, Status> {
    match desc {
        None => res,
        Some(d) => Ok(res?.map(|frames| -> FrameStream {
            Box::pin(frames.map(move |f| f.and_then(|b| json_frame(&d, &b))))
        })),
    }
}

/// The first value of each of `names`, found in one pass over the request's fields (a gRPC
/// request holds four or five): a lookup each hashed its name, ~180 instructions apiece of a
/// unary call.
fn first_of<'a, const N: usize>(
    headers: &'a HeaderMap,
    names: [&HeaderName; N],
) -> [Option<&'a HeaderValue>; N] {
    let mut found = [None; N];
    for (name, value) in headers {
        if let Some(k) = names.iter().position(|n| *n == name) {
            found[k].get_or_insert(value);
        }
    }
    found
}

/// The response headers of a call (the content type is set once, by `shape`): the handler's
/// metadata, the reply's encoding, and the encodings the server accepts when the client showed it
/// speaks compression (see [`Compress::advertise`]).
fn grpc_headers(mut headers: HeaderMap, compress: Option<Encoding>, advertise: bool) -> HeaderMap {
    if advertise {
        headers.insert(GRPC_ACCEPT_ENCODING, ACCEPT_ENCODING);
    }
    if let Some(enc) = compress {
        headers.insert(GRPC_ENCODING, enc.header_value());
    }
    headers
}

/// How a call's replies may be compressed: what the client accepts, and the server's default.
#[derive(Clone, Copy)]
struct Compress {
    accepted: Option<Encoding>,
    default: bool,
    /// The request named an encoding or the encodings it accepts, so the reply says which ones
    /// the server accepts (`grpc-accept-encoding`). A client that shows neither gets no such
    /// header, as grpc-go's server sends none: the field is optional (PROTOCOL-HTTP2.md), and
    /// hashing and HPACK-coding it was ~2 % of a unary call for clients that never compress
    /// (BENCHMARKS.md, "grpc-accept-encoding only to clients that ask"). A refusal of an
    /// unknown encoding always names them (`trailers_only`).
    advertise: bool,
}

impl Compress {
    /// The encoding of this response: the handler's choice, else the server's default.
    fn choose<T>(self, res: &Response<T>) -> Option<Encoding> {
        self.accepted
            .filter(|_| res.compression().unwrap_or(self.default))
    }
}

fn unary_response(
    res: Result<Response<Bytes>, Status>,
    compress: Compress,
    max_send: usize,
) -> HttpResponse {
    let advertise = compress.advertise;
    let (compress, (metadata, frame, trailers)) = match res {
        Ok(r) => (compress.choose(&r), r.into_parts()),
        Err(status) => return trailers_only(&status),
    };
    let frame = match outgoing_frame(frame, compress, max_send) {
        Ok(f) => f,
        Err(status) => return trailers_only(&status),
    };
    let mut resp = http::Response::new(ResponseBody::unary(frame, status_trailers(trailers, None)));
    *resp.headers_mut() = grpc_headers(metadata, compress, advertise);
    resp
}

fn stream_response(
    res: Result<Response<FrameStream>, Status>,
    deadline: Option<Instant>,
    compress: Compress,
    max_send: usize,
) -> HttpResponse {
    let advertise = compress.advertise;
    let (compress, (metadata, frames, trailers)) = match res {
        Ok(r) => (compress.choose(&r), r.into_parts()),
        Err(status) => return trailers_only(&status),
    };
    let body = ResponseBody::stream(frames, trailers, deadline, compress, max_send);
    let mut resp = http::Response::new(body);
    *resp.headers_mut() = grpc_headers(metadata, compress, advertise);
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_of_finds_each_fields_first_value_in_one_pass() {
        let mut h = HeaderMap::new();
        h.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
        h.append(GRPC_TIMEOUT, HeaderValue::from_static("1S"));
        h.append(GRPC_TIMEOUT, HeaderValue::from_static("2S"));
        h.insert(GRPC_ACCEPT_ENCODING, HeaderValue::from_static("gzip"));
        let [enc, accept, timeout] =
            first_of(&h, [&GRPC_ENCODING, &GRPC_ACCEPT_ENCODING, &GRPC_TIMEOUT]);
        assert_eq!(enc, None);
        assert_eq!(accept, h.get(GRPC_ACCEPT_ENCODING));
        assert_eq!(
            timeout.unwrap(),
            "1S",
            "the first value, as HeaderMap::get gives"
        );
    }

    /// The per-call future is moved by value (hyper, tokio) and each move is a memcpy of its
    /// whole size: before it was trimmed it was ~3.7 KiB and memmove was 20% of a unary call.
    /// The call's facts for handlers (`CallInfo`) and its extensions added 32 bytes (the
    /// interceptors; docs/benchmarks-history.md, "Interceptors, metrics and traces", measures
    /// the call with and without them).
    #[test]
    fn the_grpc_call_future_stays_small() {
        let shared = Shared::empty();
        let req = http::Request::new(RequestBody::ended());
        let peer = Arc::new(Peer::new(
            Some(([127, 0, 0, 1], 1).into()),
            false,
            Vec::new(),
        ));
        let fut = serve(&shared, &peer, req, Envelope::Grpc, false);
        let size = std::mem::size_of_val(&fut);
        assert!(size <= 672, "grpc::serve's future is {size} bytes");
    }
}
