//! HTTP/2 frames as the fast path reads and writes them (RFC 9113 section 4 and 6): the 9-byte
//! header, the frame types and flags it uses, and the request's header block encoded once per
//! call head (HPACK literals without indexing, so that the same bytes serve every call).

use bytes::Bytes;
use fluke_hpack::encoder::encode_integer_into;

use crate::CallHead;

/// The client connection preface.
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Frame types.
pub mod kind {
    /// DATA.
    pub const DATA: u8 = 0;
    /// HEADERS.
    pub const HEADERS: u8 = 1;
    /// RST_STREAM.
    pub const RST_STREAM: u8 = 3;
    /// SETTINGS.
    pub const SETTINGS: u8 = 4;
    /// PING.
    pub const PING: u8 = 6;
    /// GOAWAY.
    pub const GOAWAY: u8 = 7;
    /// WINDOW_UPDATE.
    pub const WINDOW_UPDATE: u8 = 8;
    /// CONTINUATION.
    pub const CONTINUATION: u8 = 9;
}

/// Frame flags.
pub mod flag {
    /// END_STREAM (DATA, HEADERS); ACK (SETTINGS, PING).
    pub const END_STREAM: u8 = 0x1;
    /// ACK (SETTINGS, PING).
    pub const ACK: u8 = 0x1;
    /// END_HEADERS (HEADERS, CONTINUATION).
    pub const END_HEADERS: u8 = 0x4;
    /// PADDED (DATA, HEADERS).
    pub const PADDED: u8 = 0x8;
    /// PRIORITY (HEADERS).
    pub const PRIORITY: u8 = 0x20;
}

/// SETTINGS identifiers.
pub mod setting {
    /// SETTINGS_HEADER_TABLE_SIZE.
    pub const HEADER_TABLE_SIZE: u16 = 1;
    /// SETTINGS_ENABLE_PUSH.
    pub const ENABLE_PUSH: u16 = 2;
    /// SETTINGS_MAX_CONCURRENT_STREAMS.
    pub const MAX_CONCURRENT_STREAMS: u16 = 3;
    /// SETTINGS_INITIAL_WINDOW_SIZE.
    pub const INITIAL_WINDOW_SIZE: u16 = 4;
    /// SETTINGS_MAX_FRAME_SIZE.
    pub const MAX_FRAME_SIZE: u16 = 5;
}

/// The largest flow-control window (2^31 - 1).
pub const MAX_WINDOW: u32 = 0x7fff_ffff;

/// A frame's 9-byte header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    /// Payload length.
    pub len: usize,
    /// Type.
    pub kind: u8,
    /// Flags.
    pub flags: u8,
    /// Stream identifier (the reserved bit cleared).
    pub stream: u32,
}

impl Head {
    /// Reads a header from the first 9 bytes of `b` (which must hold them).
    pub fn read(b: &[u8]) -> Head {
        Head {
            len: (usize::from(b[0]) << 16) | (usize::from(b[1]) << 8) | usize::from(b[2]),
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff,
        }
    }

    /// Appends this header to `out`.
    pub fn write(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.len as u32).to_be_bytes()[1..]);
        out.push(self.kind);
        out.push(self.flags);
        out.extend_from_slice(&self.stream.to_be_bytes());
    }
}

/// Appends a whole frame.
pub fn write(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    Head {
        len: payload.len(),
        kind,
        flags,
        stream,
    }
    .write(out);
    out.extend_from_slice(payload);
}

/// A request's header block, encoded once: `:method POST`, `:scheme`, `:path`, `:authority`,
/// then the head's headers, each an HPACK literal without indexing (no dynamic table state, so
/// the bytes are the same for every call on every connection).
#[derive(Clone, Debug)]
pub struct HeaderBlock(pub Bytes);

fn literal(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    // "Literal Header Field without Indexing -- New Name" (RFC 7541 section 6.2.2).
    out.push(0);
    let _ = encode_integer_into(name.len(), 7, 0, out);
    out.extend_from_slice(name);
    let _ = encode_integer_into(value.len(), 7, 0, out);
    out.extend_from_slice(value);
}

impl HeaderBlock {
    /// The block of a call head.
    pub fn of(head: &CallHead) -> HeaderBlock {
        let req = head.request();
        let uri = req.uri();
        let mut out = Vec::with_capacity(128);
        out.push(0x83); // :method POST (static index 3)
        out.push(if uri.scheme_str() == Some("https") {
            0x87 // :scheme https (7)
        } else {
            0x86 // :scheme http (6)
        });
        literal(&mut out, b":path", head.path().as_bytes());
        literal(
            &mut out,
            b":authority",
            uri.authority().map_or("", |a| a.as_str()).as_bytes(),
        );
        for (k, v) in req.headers() {
            literal(&mut out, k.as_str().as_bytes(), v.as_bytes());
        }
        HeaderBlock(Bytes::from(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_round_trips() {
        let h = Head {
            len: 70_000,
            kind: kind::HEADERS,
            flags: flag::END_HEADERS | flag::END_STREAM,
            stream: 0x7fff_fffd,
        };
        let mut out = Vec::new();
        h.write(&mut out);
        assert_eq!(out.len(), 9);
        assert_eq!(Head::read(&out), h);
        // The reserved bit is ignored on read.
        out[5] |= 0x80;
        assert_eq!(Head::read(&out).stream, 0x7fff_fffd);
    }

    #[test]
    fn the_header_block_decodes_to_the_heads_headers() {
        let head = CallHead::new(
            "http",
            "127.0.0.1:9090",
            "/api.Users/Get",
            &[(
                http::HeaderName::from_static("x-k"),
                http::HeaderValue::from_static("v"),
            )],
            Some(std::time::Duration::from_secs(20)),
            false,
        )
        .unwrap();
        let block = HeaderBlock::of(&head);
        let mut dec = fluke_hpack::Decoder::new();
        let fields: Vec<(String, String)> = dec
            .decode(&block.0)
            .unwrap()
            .into_iter()
            .map(|(k, v)| (String::from_utf8(k).unwrap(), String::from_utf8(v).unwrap()))
            .collect();
        let get = |k: &str| fields.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get(":method"), Some("POST"));
        assert_eq!(get(":scheme"), Some("http"));
        assert_eq!(get(":path"), Some("/api.Users/Get"));
        assert_eq!(get(":authority"), Some("127.0.0.1:9090"));
        assert_eq!(get("content-type"), Some("application/grpc"));
        assert_eq!(get("te"), Some("trailers"));
        assert!(get("grpc-timeout").is_some());
        assert_eq!(get("x-k"), Some("v"));
        // The decoder's table is untouched: the block is the same on every call.
        assert_eq!(dec.decode(&block.0).unwrap().len(), fields.len());
    }
}
