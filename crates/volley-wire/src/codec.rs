//! gRPC length-prefixed framing: encode a message into one frame, split a byte stream into messages.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use prost::Message;

use crate::{Status, compression::Encoding};

/// The length-prefix header: one flag byte and a big-endian u32 length.
pub const HEADER_LEN: usize = 5;

/// Default limit on a received message, as in grpc-go and tonic (4 MiB).
pub const DEFAULT_MAX_RECV: usize = 4 * 1024 * 1024;

/// Default limit on a sent message (grpc-go: `math.MaxInt32`).
pub const DEFAULT_MAX_SEND: usize = i32::MAX as usize;

/// Encodes a message into an uncompressed frame with one allocation of exactly the right size.
pub fn encode_frame<M: Message>(msg: &M) -> Bytes {
    encode_with_flag(0, msg)
}

fn encode_with_flag<M: Message>(flag: u8, msg: &M) -> Bytes {
    let len = msg.encoded_len();
    let mut buf = BytesMut::with_capacity(HEADER_LEN + len);
    buf.put_u8(flag);
    buf.put_u32(len as u32);
    msg.encode_raw(&mut buf);
    buf.freeze()
}

/// Flag bit of an outgoing frame between [`IntoFrame`] and the server's writer only: send this
/// message uncompressed even when the call's replies are compressed. Cleared before the frame
/// reaches the wire.
pub const FLAG_NO_COMPRESS: u8 = 0x80;

/// What a handler may reply with: any message, or a message with a compression choice
/// ([`Reply`]). Encodes into one uncompressed frame.
pub trait IntoFrame: Send + 'static {
    /// The frame of this reply.
    fn into_frame(self) -> Bytes;
}

impl<M: Message + Send + 'static> IntoFrame for M {
    fn into_frame(self) -> Bytes {
        encode_frame(&self)
    }
}

/// A reply with a per-message compression choice, as grpc-java's `setMessageCompression`:
/// `compress: false` sends this message uncompressed even when the call's replies are compressed
/// (see `volley_server::Response::set_compressed`); `true` follows the call.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reply<M> {
    /// The message.
    pub message: M,
    /// False: never compress this message.
    pub compress: bool,
}

impl<M: Message + Send + 'static> IntoFrame for Reply<M> {
    fn into_frame(self) -> Bytes {
        let flag = if self.compress { 0 } else { FLAG_NO_COMPRESS };
        encode_with_flag(flag, &self.message)
    }
}

/// A frame already encoded (what [`ReplyItem`] turns a stream's items into); sent as it is.
#[derive(Clone, Debug)]
pub struct Encoded(pub Bytes);

impl IntoFrame for Encoded {
    fn into_frame(self) -> Bytes {
        self.0
    }
}

/// What a reply stream of a typed service yields for messages of type `M`: `Result<M, Status>`,
/// or `Result<Reply<M>, Status>` to choose each message's compression. Generated service traits
/// bound their stream types with it (`Stream<Item: ReplyItem<M>>`), so both shapes are accepted.
pub trait ReplyItem<M>: Send + 'static {
    /// The item's frame, or the status that ends the stream.
    fn into_frame(self) -> Result<Encoded, Status>;
}

impl<M: Message + Send + 'static> ReplyItem<M> for Result<M, Status> {
    fn into_frame(self) -> Result<Encoded, Status> {
        self.map(|m| Encoded(encode_frame(&m)))
    }
}

impl<M: Message + Send + 'static> ReplyItem<M> for Result<Reply<M>, Status> {
    fn into_frame(self) -> Result<Encoded, Status> {
        self.map(|r| Encoded(IntoFrame::into_frame(r)))
    }
}

/// Frames an already-encoded payload with the given flag byte (0 plain, 1 compressed, and the
/// end-of-stream flags of gRPC-Web and Connect).
pub fn frame_payload(flag: u8, payload: &[u8]) -> BytesMut {
    let mut b = BytesMut::with_capacity(HEADER_LEN + payload.len());
    b.put_u8(flag);
    b.put_u32(payload.len() as u32);
    b.put_slice(payload);
    b
}

/// The payload of the first whole, uncompressed frame in `frames`, if there is one.
pub fn first_message(frames: &Bytes) -> Option<Bytes> {
    let header = frames.get(..HEADER_LEN)?;
    if header[0] != 0 {
        return None;
    }
    let len = u32::from_be_bytes([header[1], header[2], header[3], header[4]]) as usize;
    (frames.len() >= HEADER_LEN + len).then(|| frames.slice(HEADER_LEN..HEADER_LEN + len))
}

/// Splits request bytes into messages; checks sizes before buffering and inflates compressed ones.
///
/// The common case (a whole frame inside one DATA chunk) is split out of the chunk without a copy;
/// only frames that straddle chunks are gathered in `partial`.
#[derive(Debug)]
pub struct FrameDecoder {
    partial: BytesMut,
    current: Bytes,
    encoding: Option<Encoding>,
    max_len: usize,
    last_compressed: bool,
}

impl FrameDecoder {
    /// A decoder for a request sent with `encoding`, refusing messages over `max_len`.
    pub fn new(encoding: Option<Encoding>, max_len: usize) -> FrameDecoder {
        FrameDecoder {
            partial: BytesMut::new(),
            current: Bytes::new(),
            encoding,
            max_len,
            last_compressed: false,
        }
    }

    /// Whether the last message [`FrameDecoder::next_message`] returned arrived compressed.
    pub fn last_compressed(&self) -> bool {
        self.last_compressed
    }

    /// Adds received bytes.
    pub fn push(&mut self, chunk: Bytes) {
        if self.current.is_empty() {
            self.current = chunk;
        } else {
            self.partial.extend_from_slice(&self.current);
            self.current = chunk;
        }
    }

    /// True when no bytes are held (used to tell a clean end of stream from a truncated frame).
    pub fn is_empty(&self) -> bool {
        self.partial.is_empty() && self.current.is_empty()
    }

    /// The next complete message payload, `Ok(None)` when more bytes are needed.
    pub fn next_message(&mut self) -> Result<Option<Bytes>, Status> {
        if self.partial.is_empty() {
            if let Some((flag, len)) = self.header(&self.current)?
                && self.current.len() >= HEADER_LEN + len
            {
                self.current.advance(HEADER_LEN);
                let payload = self.current.split_to(len);
                return self.finish(flag, payload).map(Some);
            }
            if self.current.is_empty() {
                return Ok(None);
            }
        }
        // Slow path: gather into `partial`.
        let chunk = std::mem::take(&mut self.current);
        self.partial.extend_from_slice(&chunk);
        let Some((flag, len)) = self.header(&self.partial)? else {
            return Ok(None);
        };
        if self.partial.len() < HEADER_LEN + len {
            self.partial.reserve(HEADER_LEN + len - self.partial.len());
            return Ok(None);
        }
        self.partial.advance(HEADER_LEN);
        let payload = self.partial.split_to(len).freeze();
        self.finish(flag, payload).map(Some)
    }

    fn header(&self, b: &[u8]) -> Result<Option<(u8, usize)>, Status> {
        if b.len() < HEADER_LEN {
            return Ok(None);
        }
        let flag = b[0];
        let len = u32::from_be_bytes([b[1], b[2], b[3], b[4]]) as usize;
        if flag > 1 {
            return Err(Status::internal(format!(
                "grpc: received unexpected payload format {flag}"
            )));
        }
        if len > self.max_len {
            return Err(Status::resource_exhausted(format!(
                "grpc: received message larger than max ({len} vs. {})",
                self.max_len
            )));
        }
        Ok(Some((flag, len)))
    }

    fn finish(&mut self, flag: u8, payload: Bytes) -> Result<Bytes, Status> {
        self.last_compressed = flag == 1;
        if flag == 0 {
            return Ok(payload);
        }
        match self.encoding {
            Some(enc) => enc.decompress(&payload, self.max_len),
            None => Err(Status::internal(
                "grpc: compressed flag set with identity or empty encoding",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_message_takes_one_whole_plain_frame() {
        let mut two = frame_payload(0, b"abc");
        two.extend_from_slice(&frame_payload(0, b"de"));
        assert_eq!(first_message(&two.freeze()).unwrap(), &b"abc"[..]);
        assert!(first_message(&Bytes::from_static(&[0, 0, 0, 0, 9, 1])).is_none());
        assert!(first_message(&frame_payload(1, b"x").freeze()).is_none());
        assert!(first_message(&Bytes::new()).is_none());
    }
    use crate::Code;

    fn frame(payload: &[u8]) -> Vec<u8> {
        let mut v = vec![0];
        v.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        v.extend_from_slice(payload);
        v
    }

    #[test]
    fn whole_frames_in_one_chunk() {
        let mut d = FrameDecoder::new(None, 100);
        let mut bytes = frame(b"abc");
        bytes.extend(frame(b""));
        bytes.extend(frame(b"de"));
        d.push(bytes.into());
        assert_eq!(&d.next_message().unwrap().unwrap()[..], b"abc");
        assert_eq!(&d.next_message().unwrap().unwrap()[..], b"");
        assert_eq!(&d.next_message().unwrap().unwrap()[..], b"de");
        assert!(d.next_message().unwrap().is_none());
        assert!(d.is_empty());
    }

    #[test]
    fn frames_split_at_every_byte() {
        let mut all = frame(b"hello");
        all.extend(frame(b"world!"));
        for cut in 0..all.len() {
            let mut d = FrameDecoder::new(None, 100);
            let mut out = Vec::new();
            for part in [&all[..cut], &all[cut..]] {
                d.push(Bytes::copy_from_slice(part));
                while let Some(m) = d.next_message().unwrap() {
                    out.push(m);
                }
            }
            assert_eq!(out, vec![&b"hello"[..], &b"world!"[..]], "cut at {cut}");
            assert!(d.is_empty());
        }
    }

    #[test]
    fn one_byte_at_a_time() {
        let all = frame(&[9u8; 40]);
        let mut d = FrameDecoder::new(None, 100);
        let mut got = None;
        for b in all {
            d.push(Bytes::copy_from_slice(&[b]));
            if let Some(m) = d.next_message().unwrap() {
                got = Some(m);
            }
        }
        assert_eq!(got.unwrap().len(), 40);
    }

    #[test]
    fn oversized_is_refused_from_the_header() {
        let mut d = FrameDecoder::new(None, 10);
        d.push(Bytes::from_static(&[0, 0, 0, 0, 11]));
        let e = d.next_message().unwrap_err();
        assert_eq!(e.code(), Code::ResourceExhausted);
        assert!(e.message().contains("11 vs. 10"));
    }

    #[test]
    fn bad_flags() {
        let mut d = FrameDecoder::new(None, 10);
        d.push(Bytes::from_static(&[2, 0, 0, 0, 0]));
        assert_eq!(d.next_message().unwrap_err().code(), Code::Internal);
        let mut d = FrameDecoder::new(None, 10);
        d.push(Bytes::from_static(&[1, 0, 0, 0, 0]));
        assert_eq!(d.next_message().unwrap_err().code(), Code::Internal);
    }

    #[test]
    fn compressed_frames_inflate() {
        let f = Encoding::Gzip.compress_frame(b"squeeze me");
        let mut d = FrameDecoder::new(Some(Encoding::Gzip), 100);
        d.push(f);
        assert_eq!(&d.next_message().unwrap().unwrap()[..], b"squeeze me");
    }

    #[test]
    fn encode_frame_prefixes_length() {
        let msg = prost_types::Duration {
            seconds: 5,
            nanos: 0,
        };
        let f = encode_frame(&msg);
        assert_eq!(f[0], 0);
        assert_eq!(
            u32::from_be_bytes(f[1..5].try_into().unwrap()) as usize,
            f.len() - 5
        );
        assert_eq!(prost_types::Duration::decode(&f[5..]).unwrap(), msg);
    }
}
