//! A request's header block as the fast path sends it, encoded once per call head (HPACK
//! literals without indexing, so that the same bytes serve every call). The frames around it are
//! HTTP/2's shared vocabulary, `volley_wire::h2`; a server frame's padding is read here too.

use bytes::Bytes;
use fluke_hpack::encoder::encode_integer_into;
use http::{HeaderName, HeaderValue};

use volley_wire::{
    Status,
    h2::{Head, flag},
};

use crate::CallHead;

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

    /// This block with `metadata` appended (per-call metadata: one copy of the block and a
    /// literal per pair; still no dynamic table state).
    pub fn with_metadata(&self, metadata: &[(HeaderName, HeaderValue)]) -> HeaderBlock {
        let extra: usize = metadata
            .iter()
            .map(|(k, v)| k.as_str().len() + v.len() + 12)
            .sum();
        let mut out = Vec::with_capacity(self.0.len() + extra);
        out.extend_from_slice(&self.0);
        for (k, v) in metadata {
            literal(&mut out, k.as_str().as_bytes(), v.as_bytes());
        }
        HeaderBlock(Bytes::from(out))
    }
}

/// A padded frame's (front, back) padding lengths.
pub(super) fn padding(h: Head, p: &[u8]) -> Result<(usize, usize), Status> {
    if h.flags & flag::PADDED == 0 {
        return Ok((0, 0));
    }
    let pad = usize::from(
        *p.first()
            .ok_or_else(|| Status::internal("a padded frame with no pad length"))?,
    );
    if pad + 1 > p.len() {
        return Err(Status::internal("a frame shorter than its padding"));
    }
    Ok((1, pad))
}

#[cfg(test)]
mod tests {
    use super::*;

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
