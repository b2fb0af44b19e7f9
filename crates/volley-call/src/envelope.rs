//! Envelopes of gRPC-Web and Connect streaming bodies: five-byte headers, gRPC-Web's trailer
//! frame (flag 0x80, `name: value` lines) and Connect's end-of-stream JSON (flag 0x02), read back
//! into messages, a status and trailers. A Connect unary body is one message and OK.

use base64::Engine as _;
use bytes::{Buf, Bytes, BytesMut};
use http::{HeaderMap, HeaderName, HeaderValue};

use crate::{
    metadata::{self, Metadata},
    status::CallStatus,
};

pub(crate) fn status_from_json(v: &serde_json::Value, fallback: i32) -> CallStatus {
    let code = v["code"]
        .as_str()
        .and_then(connect_code)
        .unwrap_or(fallback);
    let mut s = CallStatus::new(code, v["message"].as_str().unwrap_or_default());
    for d in v["details"].as_array().into_iter().flatten() {
        let value = d["value"].as_str().unwrap_or_default();
        let value = base64::engine::general_purpose::STANDARD_NO_PAD
            .decode(value.trim_end_matches('='))
            .unwrap_or_default();
        s.details.push(prost_types::Any {
            type_url: format!(
                "type.googleapis.com/{}",
                d["type"].as_str().unwrap_or_default()
            ),
            value,
        });
    }
    s
}

fn connect_code(s: &str) -> Option<i32> {
    const NAMES: [&str; 17] = [
        "ok",
        "canceled",
        "unknown",
        "invalid_argument",
        "deadline_exceeded",
        "not_found",
        "already_exists",
        "permission_denied",
        "resource_exhausted",
        "failed_precondition",
        "aborted",
        "out_of_range",
        "unimplemented",
        "internal",
        "unavailable",
        "data_loss",
        "unauthenticated",
    ];
    NAMES.iter().position(|n| *n == s).map(|i| i as i32)
}

/// One step of reading envelopes.
pub enum Item {
    /// A message.
    Message(Bytes),
    /// The end: status and trailers.
    End(CallStatus, Metadata),
    /// More bytes are needed.
    More,
}

/// The largest end frame read (gRPC-Web's trailer block, Connect's end-of-stream JSON): grpc-go's
/// default bound on a header list (16 MiB), which trailers are on HTTP/2.
pub(crate) const MAX_END: usize = 16 << 20;

/// Envelopes of a gRPC-Web or Connect streaming body (or a Connect unary body).
pub struct Envelopes {
    connect: bool,
    buf: BytesMut,
    max: usize,
    unary: Option<(Option<Bytes>, Metadata)>,
}

impl Envelopes {
    /// A reader for gRPC-Web's envelopes, or Connect's when `connect`.
    pub fn new(connect: bool, max: usize) -> Envelopes {
        Envelopes {
            connect,
            buf: BytesMut::new(),
            max,
            unary: None,
        }
    }

    /// A Connect unary body: one message, then OK with `trailers`.
    pub fn unary(body: Bytes, trailers: Metadata) -> Envelopes {
        Envelopes {
            connect: true,
            buf: BytesMut::new(),
            max: usize::MAX,
            unary: Some((Some(body), trailers)),
        }
    }

    /// Adds body bytes.
    pub fn push(&mut self, chunk: Bytes) {
        self.buf.extend_from_slice(&chunk);
    }

    /// The next item.
    pub fn next_item(&mut self) -> Result<Item, CallStatus> {
        if let Some((body, trailers)) = &mut self.unary {
            return Ok(match body.take() {
                Some(b) => Item::Message(b),
                None => Item::End(CallStatus::default(), std::mem::take(trailers)),
            });
        }
        if self.buf.len() < 5 {
            return Ok(Item::More);
        }
        let flags = self.buf[0];
        let len = u32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]]) as usize;
        // A message past -max-msg-sz, or an end frame (gRPC-Web's trailers, Connect's
        // end-of-stream) past MAX_END: refused at its header, before its bytes are buffered.
        let end = flags & if self.connect { 0x02 } else { 0x80 } != 0;
        let (max, what) = match end {
            false => (self.max, "message"),
            true => (MAX_END, "end-of-stream frame"),
        };
        if len > max {
            return Err(CallStatus::new(
                8,
                format!("grpc: received {what} larger than max ({len} vs. {max})"),
            ));
        }
        if self.buf.len() < 5 + len {
            return Ok(Item::More);
        }
        self.buf.advance(5);
        let payload = self.buf.split_to(len).freeze();
        match (self.connect, flags) {
            (false, f) if f & 0x80 != 0 => {
                let trailers = web_trailers(&payload);
                let status = CallStatus::from_headers(&trailers).unwrap_or_else(|| {
                    CallStatus::new(13, "gRPC-Web trailers without grpc-status")
                });
                Ok(Item::End(status, metadata::from_response(&trailers)))
            }
            (true, f) if f & 0x02 != 0 => {
                let v: serde_json::Value = match serde_json::from_slice(&payload) {
                    Ok(v @ serde_json::Value::Object(_)) => v,
                    Ok(_) => {
                        return Err(CallStatus::new(
                            13,
                            "protocol error: the Connect end-of-stream message is not a JSON object",
                        ));
                    }
                    Err(e) => {
                        return Err(CallStatus::new(
                            13,
                            format!(
                                "protocol error: the Connect end-of-stream message is not JSON: {e}"
                            ),
                        ));
                    }
                };
                let status = match v.get("error") {
                    Some(e) => status_from_json(e, 2),
                    None => CallStatus::default(),
                };
                let mut md = Metadata::new();
                if let Some(obj) = v["metadata"].as_object() {
                    for (k, vals) in obj {
                        for val in vals.as_array().into_iter().flatten() {
                            md.push((
                                k.to_lowercase(),
                                val.as_str().unwrap_or_default().as_bytes().to_vec(),
                            ));
                        }
                    }
                }
                Ok(Item::End(status, md))
            }
            (_, f) if f & 0x01 != 0 => Err(CallStatus::new(
                13,
                "grpc: compressed flag set with identity or empty encoding",
            )),
            _ => Ok(Item::Message(payload)),
        }
    }
}

/// gRPC-Web's trailer block: `name: value` lines, CRLF-separated.
fn web_trailers(block: &[u8]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for line in String::from_utf8_lossy(block).split("\r\n") {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        if let (Ok(k), Ok(v)) = (
            HeaderName::from_bytes(k.trim().to_lowercase().as_bytes()),
            HeaderValue::from_str(v.trim()),
        ) {
            h.append(k, v);
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_web_trailer_frame() {
        let mut e = Envelopes::new(false, 1 << 20);
        let block = b"grpc-status: 5\r\ngrpc-message: gone\r\nx-t: 1\r\n";
        let mut frame = vec![0, 0, 0, 0, 1, 7, 0x80];
        frame.extend_from_slice(&(block.len() as u32).to_be_bytes());
        frame.extend_from_slice(block);
        e.push(Bytes::from(frame));
        assert!(matches!(e.next_item().unwrap(), Item::Message(m) if m[..] == [7]));
        match e.next_item().unwrap() {
            Item::End(s, md) => {
                assert_eq!((s.code, s.message.as_str()), (5, "gone"));
                assert_eq!(md, vec![("x-t".to_owned(), b"1".to_vec())]);
            }
            _ => panic!("no end"),
        }
    }

    fn frame(flags: u8, len: u32, payload: &[u8]) -> Bytes {
        let mut f = vec![flags];
        f.extend_from_slice(&len.to_be_bytes());
        f.extend_from_slice(payload);
        Bytes::from(f)
    }

    #[test]
    fn an_end_frame_past_its_bound_is_refused_at_its_header() {
        // gRPC-Web trailers and Connect's end-of-stream announcing 4 GiB: refused before any of
        // it is buffered, as a message past -max-msg-sz is.
        for (connect, flags) in [(false, 0x80), (true, 0x02)] {
            let mut e = Envelopes::new(connect, 1 << 20);
            e.push(frame(flags, u32::MAX, b""));
            let st = match e.next_item() {
                Err(st) => st,
                Ok(_) => panic!("a 4 GiB end frame was waited for"),
            };
            assert_eq!(st.code, 8);
            assert_eq!(
                st.message,
                format!(
                    "grpc: received end-of-stream frame larger than max (4294967295 vs. {MAX_END})"
                )
            );
        }
        let mut e = Envelopes::new(true, 10);
        e.push(frame(0, 11, b""));
        assert!(matches!(e.next_item(), Err(st) if st.code == 8));
    }

    #[test]
    fn a_connect_end_of_stream_that_is_not_json_is_an_error() {
        for body in [&b"{not json"[..], b"[1]", b""] {
            let mut e = Envelopes::new(true, 1 << 20);
            e.push(frame(0x02, body.len() as u32, body));
            match e.next_item() {
                Err(st) => {
                    assert_eq!(st.code, 13, "{body:?}");
                    assert!(
                        st.message
                            .starts_with("protocol error: the Connect end-of-stream")
                    );
                }
                Ok(_) => panic!("{body:?} read as the end of a good call"),
            }
        }
        // `{}` is a clean end.
        let mut e = Envelopes::new(true, 1 << 20);
        e.push(frame(0x02, 2, b"{}"));
        assert!(matches!(e.next_item(), Ok(Item::End(s, _)) if s.code == 0));
    }
}
