//! `-protocol grpc-web|connect` (beyond grpcurl, as buf curl offers): the request headers each
//! protocol wants and the reply read back into gRPC's shape. gRPC-Web carries its trailers in a
//! last frame flagged 0x80; Connect answers a unary call with the bare message (trailers as
//! `trailer-` headers, errors as JSON with an HTTP status) and a stream in envelopes ending with
//! a JSON end-of-stream message. All three go over volley-client's HTTP/2 connection.

use http::{HeaderMap, HeaderValue};

use crate::{
    envelope::status_from_json,
    metadata::{self, Metadata},
    status::CallStatus,
};

/// The wire protocol of `-protocol`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// gRPC (HTTP/2, trailers).
    Grpc,
    /// gRPC-Web, binary.
    GrpcWeb,
    /// Connect with protobuf bodies.
    Connect,
}

impl Protocol {
    /// `grpc`, `grpc-web` or `connect`.
    pub fn parse(s: &str) -> Option<Protocol> {
        match s {
            "grpc" => Some(Protocol::Grpc),
            "grpc-web" => Some(Protocol::GrpcWeb),
            "connect" => Some(Protocol::Connect),
            _ => None,
        }
    }
}

/// Sets the protocol's own request headers.
pub(crate) fn protocol_headers(h: &mut HeaderMap, p: Protocol, unary: bool) {
    let ct = |s: &'static str| HeaderValue::from_static(s);
    match p {
        Protocol::Grpc => {
            h.insert(http::header::CONTENT_TYPE, ct("application/grpc"));
            h.insert(http::header::TE, ct("trailers"));
            h.insert("grpc-accept-encoding", ct("gzip"));
        }
        Protocol::GrpcWeb => {
            h.insert(http::header::CONTENT_TYPE, ct("application/grpc-web+proto"));
            h.insert("x-grpc-web", ct("1"));
        }
        Protocol::Connect => {
            let t = if unary {
                "application/proto"
            } else {
                "application/connect+proto"
            };
            h.insert(http::header::CONTENT_TYPE, ct(t));
            h.insert("connect-protocol-version", ct("1"));
        }
    }
}

/// What a response head says about the rest.
pub(crate) enum Head {
    /// Messages follow in the body.
    Stream,
    /// The call is over already (trailers-only, or an HTTP failure).
    Ended(CallStatus),
    /// Connect unary: the body is the message.
    ConnectUnary,
    /// Connect: a failure whose JSON is the body (the HTTP status given).
    ConnectError(u16),
}

/// Reads a response head as each protocol's client does.
pub(crate) fn check_head(p: Protocol, status: u16, h: &HeaderMap) -> Head {
    let ct = h
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    match p {
        Protocol::Grpc => {
            let grpc = ct.is_some_and(|c| {
                c == "application/grpc"
                    || c.starts_with("application/grpc+")
                    || c.starts_with("application/grpc;")
            });
            if !grpc {
                return Head::Ended(http_error(status, ct));
            }
            match CallStatus::from_headers(h) {
                Some(s) => Head::Ended(s),
                None => Head::Stream,
            }
        }
        Protocol::GrpcWeb => {
            if status != 200 {
                return Head::Ended(http_error(status, ct));
            }
            match CallStatus::from_headers(h) {
                Some(s) => Head::Ended(s),
                None => Head::Stream,
            }
        }
        Protocol::Connect if status != 200 => Head::ConnectError(status),
        Protocol::Connect if ct == Some("application/proto") => Head::ConnectUnary,
        Protocol::Connect => Head::Stream,
    }
}

/// grpc-go's status for a reply that is not gRPC.
fn http_error(status: u16, ct: Option<&str>) -> CallStatus {
    let code = match status {
        400 => 13,
        401 => 16,
        403 => 7,
        404 => 12,
        429 | 502..=504 => 14,
        _ => 2,
    };
    let reason = http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    let mut msg = format!("unexpected HTTP status code received from server: {status} ({reason})");
    match ct {
        None => msg.push_str("; malformed header: missing HTTP content-type"),
        Some(c) if !c.starts_with("application/grpc") => msg.push_str(&format!(
            "; transport: received unexpected content-type {}",
            crate::args::go_quote(c)
        )),
        Some(_) => {}
    }
    CallStatus::new(code, msg)
}

/// A Connect error body (`{"code": "not_found", "message": ..., "details": [...]}`).
pub fn connect_error(http_status: u16, body: &[u8]) -> CallStatus {
    let fallback = match http_status {
        400 => 13,
        401 => 16,
        403 => 7,
        404 => 12,
        429 | 502..=504 => 14,
        _ => 2,
    };
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(v) => status_from_json(&v, fallback),
        Err(_) => CallStatus::new(fallback, format!("HTTP status {http_status}")),
    }
}

/// A Connect unary reply's headers: those not starting `trailer-`.
pub(crate) fn connect_headers(h: &HeaderMap) -> Metadata {
    metadata::from_response(h)
        .into_iter()
        .filter(|(k, _)| !k.starts_with("trailer-"))
        .collect()
}

/// A Connect unary reply's trailers: its `trailer-` headers, without the prefix.
pub(crate) fn connect_trailers(h: &HeaderMap) -> Metadata {
    metadata::from_response(h)
        .into_iter()
        .filter_map(|(k, v)| k.strip_prefix("trailer-").map(|k| (k.to_owned(), v)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_errors() {
        let s = connect_error(404, br#"{"code":"not_found","message":"nope"}"#);
        assert_eq!((s.code, s.message.as_str()), (5, "nope"));
        assert_eq!(connect_error(503, b"<html>").code, 14);
    }

    #[test]
    fn grpc_go_words_for_http_failures() {
        let s = http_error(404, Some("text/plain"));
        assert_eq!(s.code, 12);
        assert_eq!(
            s.message,
            "unexpected HTTP status code received from server: 404 (Not Found); transport: received unexpected content-type \"text/plain\""
        );
    }
}
