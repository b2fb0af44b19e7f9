//! Message compression: the `grpc-encoding` values we speak (identity and gzip) and their codecs.

use std::io::{Read, Write};

use bytes::{BufMut, Bytes, BytesMut};
use flate2::{Compression, read::GzDecoder, write::GzEncoder};
use http::HeaderValue;

use crate::Status;

/// A message encoding named in `grpc-encoding` / `grpc-accept-encoding`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// gzip (RFC 1952).
    Gzip,
}

/// What the server advertises in `grpc-accept-encoding`.
pub const ACCEPT_ENCODING: HeaderValue = HeaderValue::from_static("gzip");

impl Encoding {
    /// Reads a `grpc-encoding` header: `Ok(None)` for identity, `Err` naming an encoding we lack.
    pub fn from_header(v: Option<&HeaderValue>) -> Result<Option<Encoding>, Status> {
        match v.map(HeaderValue::as_bytes) {
            None | Some(b"identity") => Ok(None),
            Some(b"gzip") => Ok(Some(Encoding::Gzip)),
            Some(other) => Err(Status::unimplemented(format!(
                "grpc: Decompressor is not installed for grpc-encoding \"{}\"",
                String::from_utf8_lossy(other)
            ))),
        }
    }

    /// True when a `grpc-accept-encoding` list names gzip.
    pub fn accepted_by(self, accept: Option<&HeaderValue>) -> bool {
        accept.is_some_and(|v| {
            v.as_bytes()
                .split(|b| *b == b',')
                .any(|e| e.trim_ascii() == b"gzip")
        })
    }

    /// The header value naming this encoding.
    pub fn header_value(self) -> HeaderValue {
        HeaderValue::from_static("gzip")
    }

    /// Compresses `payload` into a complete gRPC frame with the compressed flag set.
    pub fn compress_frame(self, payload: &[u8]) -> Bytes {
        let mut out = BytesMut::with_capacity(payload.len() / 2 + 32).writer();
        out.get_mut().put_slice(&[1, 0, 0, 0, 0]);
        let mut enc = GzEncoder::new(out, Compression::fast());
        enc.write_all(payload).expect("writing to memory");
        let mut buf = enc.finish().expect("writing to memory").into_inner();
        let len = (buf.len() - 5) as u32;
        buf[1..5].copy_from_slice(&len.to_be_bytes());
        buf.freeze()
    }

    /// Decompresses a message, refusing output larger than `max` bytes.
    pub fn decompress(self, payload: &[u8], max: usize) -> Result<Bytes, Status> {
        let mut out = Vec::with_capacity(payload.len() * 2);
        let mut dec = GzDecoder::new(payload).take(max as u64 + 1);
        dec.read_to_end(&mut out).map_err(|e| {
            Status::internal(format!("grpc: failed to decompress the message: {e}"))
        })?;
        if out.len() > max {
            return Err(Status::resource_exhausted(format!(
                "grpc: received message after decompression larger than max ({max})"
            )));
        }
        Ok(out.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Code;

    #[test]
    fn gzip_round_trip_with_limit() {
        let payload = vec![7u8; 10_000];
        let frame = Encoding::Gzip.compress_frame(&payload);
        assert_eq!(frame[0], 1);
        let len = u32::from_be_bytes(frame[1..5].try_into().unwrap()) as usize;
        assert_eq!(len, frame.len() - 5);
        let back = Encoding::Gzip.decompress(&frame[5..], 10_000).unwrap();
        assert_eq!(&back[..], &payload[..]);
        let err = Encoding::Gzip.decompress(&frame[5..], 9_999).unwrap_err();
        assert_eq!(err.code(), Code::ResourceExhausted);
        let err = Encoding::Gzip.decompress(b"not gzip", 100).unwrap_err();
        assert_eq!(err.code(), Code::Internal);
    }

    #[test]
    fn header_negotiation() {
        assert_eq!(Encoding::from_header(None).unwrap(), None);
        let gz = HeaderValue::from_static("gzip");
        assert_eq!(
            Encoding::from_header(Some(&gz)).unwrap(),
            Some(Encoding::Gzip)
        );
        let br = HeaderValue::from_static("br");
        assert_eq!(
            Encoding::from_header(Some(&br)).unwrap_err().code(),
            Code::Unimplemented
        );
        let list = HeaderValue::from_static("identity, deflate,gzip");
        assert!(Encoding::Gzip.accepted_by(Some(&list)));
        assert!(!Encoding::Gzip.accepted_by(Some(&HeaderValue::from_static("deflate"))));
        assert!(!Encoding::Gzip.accepted_by(None));
    }
}
