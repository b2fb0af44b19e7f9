//! HTTP/2's wire vocabulary (RFC 9113): the connection preface, frame types, flags, error codes,
//! SETTINGS identifiers, the protocol's default sizes, and the 9-byte frame header.
//!
//! One home for the numbers the server (`volley-server`'s `conn`: telling HTTP/2 from other
//! protocols, refusing a connection over the cap) and the load engine's own HTTP/2 client
//! (`volley_client::load::fast`) both speak. The connections themselves are the h2 crate's
//! (vendored as `volley-h2`) or the fast client's; docs/http2.md says which stack owns what.

/// The client connection preface (RFC 9113 section 3.4).
pub const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Bytes in a frame header.
pub const FRAME_HEADER_LEN: usize = 9;

/// The flow-control window every connection and stream starts with (65,535).
pub const DEFAULT_WINDOW: u32 = 65_535;

/// The largest flow-control window (2^31 - 1).
pub const MAX_WINDOW: u32 = 0x7fff_ffff;

/// SETTINGS_MAX_FRAME_SIZE's initial value, and the smallest a peer may set (16,384).
pub const DEFAULT_MAX_FRAME_SIZE: usize = 16_384;

/// The largest SETTINGS_MAX_FRAME_SIZE a peer may set (2^24 - 1).
pub const MAX_MAX_FRAME_SIZE: usize = 16_777_215;

/// A stream identifier's 31 bits (the reserved bit cleared); also a GOAWAY's last stream and a
/// WINDOW_UPDATE's increment.
pub const STREAM_ID_MASK: u32 = 0x7fff_ffff;

/// Frame types (RFC 9113 section 6).
pub mod kind {
    /// DATA.
    pub const DATA: u8 = 0;
    /// HEADERS.
    pub const HEADERS: u8 = 1;
    /// PRIORITY.
    pub const PRIORITY: u8 = 2;
    /// RST_STREAM.
    pub const RST_STREAM: u8 = 3;
    /// SETTINGS.
    pub const SETTINGS: u8 = 4;
    /// PUSH_PROMISE.
    pub const PUSH_PROMISE: u8 = 5;
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
    /// END_STREAM (DATA, HEADERS).
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

/// SETTINGS identifiers (RFC 9113 section 6.5.2).
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
    /// SETTINGS_MAX_HEADER_LIST_SIZE.
    pub const MAX_HEADER_LIST_SIZE: u16 = 6;
}

/// Error codes of RST_STREAM and GOAWAY (RFC 9113 section 7).
pub mod reason {
    /// NO_ERROR.
    pub const NO_ERROR: u32 = 0x0;
    /// PROTOCOL_ERROR.
    pub const PROTOCOL_ERROR: u32 = 0x1;
    /// INTERNAL_ERROR.
    pub const INTERNAL_ERROR: u32 = 0x2;
    /// FLOW_CONTROL_ERROR.
    pub const FLOW_CONTROL_ERROR: u32 = 0x3;
    /// SETTINGS_TIMEOUT.
    pub const SETTINGS_TIMEOUT: u32 = 0x4;
    /// STREAM_CLOSED.
    pub const STREAM_CLOSED: u32 = 0x5;
    /// FRAME_SIZE_ERROR.
    pub const FRAME_SIZE_ERROR: u32 = 0x6;
    /// REFUSED_STREAM: the stream was not processed, and may be sent again.
    pub const REFUSED_STREAM: u32 = 0x7;
    /// CANCEL.
    pub const CANCEL: u32 = 0x8;
    /// COMPRESSION_ERROR.
    pub const COMPRESSION_ERROR: u32 = 0x9;
    /// CONNECT_ERROR.
    pub const CONNECT_ERROR: u32 = 0xa;
    /// ENHANCE_YOUR_CALM.
    pub const ENHANCE_YOUR_CALM: u32 = 0xb;
    /// INADEQUATE_SECURITY.
    pub const INADEQUATE_SECURITY: u32 = 0xc;
    /// HTTP_1_1_REQUIRED.
    pub const HTTP_1_1_REQUIRED: u32 = 0xd;
}

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
    #[inline]
    pub fn read(b: &[u8]) -> Head {
        Head {
            len: (usize::from(b[0]) << 16) | (usize::from(b[1]) << 8) | usize::from(b[2]),
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & STREAM_ID_MASK,
        }
    }

    /// Appends this header to `out`.
    #[inline]
    pub fn write(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.len as u32).to_be_bytes()[1..]);
        out.push(self.kind);
        out.push(self.flags);
        out.extend_from_slice(&self.stream.to_be_bytes());
    }
}

/// Appends a whole frame.
#[inline]
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
        assert_eq!(out.len(), FRAME_HEADER_LEN);
        assert_eq!(Head::read(&out), h);
        // The reserved bit is ignored on read.
        out[5] |= 0x80;
        assert_eq!(Head::read(&out).stream, 0x7fff_fffd);
    }

    #[test]
    fn a_frame_is_its_header_then_its_payload() {
        let mut out = Vec::new();
        write(&mut out, kind::PING, flag::ACK, 0, b"12345678");
        assert_eq!(out.len(), FRAME_HEADER_LEN + 8);
        let h = Head::read(&out);
        assert_eq!(
            (h.len, h.kind, h.flags, h.stream),
            (8, kind::PING, flag::ACK, 0)
        );
        assert_eq!(&out[FRAME_HEADER_LEN..], b"12345678");
    }
}
