//! Protocols that carry the end of a call inside the body: gRPC-Web (trailers as a frame flagged
//! 0x80, optionally base64 text) and Connect streaming (an end-stream frame flagged 0x02 holding
//! JSON). Both wrap the gRPC response body, so every call kind works on them unchanged.

use std::{
    convert::Infallible,
    pin::Pin,
    task::{Context, Poll, ready},
};

use base64::{Engine, engine::general_purpose::STANDARD};
use bytes::{Bytes, BytesMut};
use http::HeaderMap;
use http_body::{Body, Frame};

use volley_wire::{Code, Status, codec::frame_payload as frame};

use super::ResponseBody;
use crate::transcode::error_json;

/// What the wrapper turns trailers into.
pub(crate) enum Mode {
    /// gRPC-Web: a 0x80 frame of `name: value\r\n` lines; `text` base64-encodes every frame.
    Web { text: bool },
    /// Connect streaming: a 0x02 frame with `{"error":…,"metadata":…}`.
    Connect,
}

/// A response body whose trailers travel in the body.
pub(crate) struct EnvelopeBody {
    inner: ResponseBody,
    mode: Mode,
    done: bool,
}

impl EnvelopeBody {
    pub(crate) fn new(inner: ResponseBody, mode: Mode) -> Self {
        EnvelopeBody {
            inner,
            mode,
            done: false,
        }
    }
}

/// gRPC-Web's trailer block: lower-case `name: value` lines.
pub(crate) fn web_trailers(t: &HeaderMap) -> BytesMut {
    let mut text = Vec::new();
    for (k, v) in t {
        text.extend_from_slice(k.as_str().as_bytes());
        text.extend_from_slice(b": ");
        text.extend_from_slice(v.as_bytes());
        text.extend_from_slice(b"\r\n");
    }
    frame(0x80, &text)
}

/// Connect's end-of-stream message for trailers holding a gRPC status.
pub(crate) fn connect_end(t: &HeaderMap) -> BytesMut {
    let status = Status::from_headers(t).unwrap_or_else(|| Status::new(Code::Ok, ""));
    let mut metadata = serde_json::Map::new();
    for (k, v) in t {
        let k = k.as_str();
        if k.starts_with("grpc-") {
            continue;
        }
        let entry = metadata
            .entry(k.to_owned())
            .or_insert_with(|| serde_json::Value::Array(Vec::new()));
        if let serde_json::Value::Array(a) = entry {
            a.push(String::from_utf8_lossy(v.as_bytes()).into_owned().into());
        }
    }
    let mut end = serde_json::Map::new();
    if status.code() != Code::Ok {
        end.insert("error".into(), error_json(&status));
    }
    if !metadata.is_empty() {
        end.insert("metadata".into(), metadata.into());
    }
    frame(0x02, serde_json::Value::Object(end).to_string().as_bytes())
}

impl EnvelopeBody {
    fn convert_data(&self, data: Bytes) -> Bytes {
        match &self.mode {
            Mode::Web { text: false } => data,
            Mode::Web { text: true } => Bytes::from(STANDARD.encode(&data)),
            Mode::Connect => data,
        }
    }

    fn convert_trailers(&self, t: &HeaderMap) -> Bytes {
        match &self.mode {
            Mode::Web { text } => {
                let f = web_trailers(t);
                if *text {
                    Bytes::from(STANDARD.encode(&f))
                } else {
                    f.freeze()
                }
            }
            Mode::Connect => connect_end(t).freeze(),
        }
    }
}

impl Body for EnvelopeBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.done {
            return Poll::Ready(None);
        }
        let next = ready!(Pin::new(&mut self.inner).poll_frame(cx));
        Poll::Ready(match next {
            None => {
                self.done = true;
                None
            }
            Some(Ok(f)) => match f.into_data() {
                Ok(d) => Some(Ok(Frame::data(self.convert_data(d)))),
                Err(f) => {
                    let t = f.into_trailers().unwrap_or_default();
                    self.done = true;
                    Some(Ok(Frame::data(self.convert_trailers(&t))))
                }
            },
            Some(Err(e)) => match e {},
        })
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

/// Decodes gRPC-Web text request bodies: base64 in 4-character quanta, across chunk boundaries,
/// allowing padded segments to follow each other.
#[derive(Default, Debug)]
pub(crate) struct Base64Decoder {
    pending: Vec<u8>,
}

impl Base64Decoder {
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Result<Bytes, Status> {
        self.pending
            .extend(chunk.iter().copied().filter(|b| !b.is_ascii_whitespace()));
        let whole = self.pending.len() / 4 * 4;
        let mut out = Vec::with_capacity(whole / 4 * 3);
        let mut start = 0;
        // Decode runs that end at a padded quantum separately: concatenated padded segments are legal.
        for q in (0..whole).step_by(4) {
            if self.pending[q + 3] == b'=' {
                decode_into(&self.pending[start..q + 4], &mut out)?;
                start = q + 4;
            }
        }
        decode_into(&self.pending[start..whole], &mut out)?;
        self.pending.drain(..whole);
        Ok(out.into())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }
}

fn decode_into(b64: &[u8], out: &mut Vec<u8>) -> Result<(), Status> {
    if b64.is_empty() {
        return Ok(());
    }
    STANDARD
        .decode_vec(b64, out)
        .map_err(|e| Status::invalid_argument(format!("grpc-web-text: invalid base64: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_across_chunks_and_padded_segments() {
        let a = STANDARD.encode(b"hello");
        let b = STANDARD.encode(b"world!");
        let all = format!("{a}{b}");
        for cut in 0..all.len() {
            let mut d = Base64Decoder::default();
            let mut out = d.push(&all.as_bytes()[..cut]).unwrap().to_vec();
            out.extend_from_slice(&d.push(&all.as_bytes()[cut..]).unwrap());
            assert_eq!(out, b"helloworld!", "cut {cut}");
            assert!(d.is_empty());
        }
        assert!(Base64Decoder::default().push(b"!!!!").is_err());
    }

    #[test]
    fn trailer_blocks() {
        let mut t = HeaderMap::new();
        t.insert("grpc-status", "0".parse().unwrap());
        let f = web_trailers(&t);
        assert_eq!(&f[..], b"\x80\0\0\0\x10grpc-status: 0\r\n");
        let mut t = HeaderMap::new();
        Status::not_found("no such user").write_to(&mut t);
        t.insert("x-id", "7".parse().unwrap());
        let f = connect_end(&t);
        assert_eq!(f[0], 2);
        let v: serde_json::Value = serde_json::from_slice(&f[5..]).unwrap();
        assert_eq!(v["error"]["code"], "not_found");
        assert_eq!(v["error"]["message"], "no such user");
        assert_eq!(v["metadata"]["x-id"][0], "7");
    }
}
