//! A reply's header block read into what a call needs (`:status`, `grpc-status`,
//! `grpc-message`), through fluke-hpack's decoder with a guard in front: fluke-hpack 0.3.1 panics
//! (an `unwrap`) on a dynamic-table size update whose integer is cut short or too long, where it
//! returns an error for every other malformed representation. Found by the `fast_frames` fuzz
//! target; a server's bytes must never panic the client, so each block is walked first. The walk
//! reads only the lengths (no table, no strings), a few nanoseconds per block.

use volley_wire::{Code, Status};

/// The largest reply header block taken (HEADERS and its CONTINUATION frames), grpc-go's default
/// limit on a header list (16 MiB): a server that sends CONTINUATION frames without end would
/// otherwise grow the block, and the client's memory, for as long as it keeps sending.
pub(super) const MAX_HEADER_BLOCK: usize = 16 << 20;

/// What a reply's header block says about its call.
#[derive(Debug, Default)]
pub(super) struct Said {
    /// `:status`.
    pub(super) http_status: Option<u16>,
    /// `grpc-status`.
    pub(super) grpc_code: Option<Code>,
    /// `grpc-message`.
    pub(super) message: Option<String>,
}

/// Decodes `block` with the connection's `decoder`; an error for a block that does not decode.
pub(super) fn decode(
    decoder: &mut fluke_hpack::Decoder<'static>,
    block: &[u8],
) -> Result<Said, Status> {
    if !size_updates_decode(block) {
        return Err(Status::internal(
            "a reply's headers do not decode: a table size update is cut short",
        ));
    }
    let mut said = Said::default();
    decoder
        .decode_with_cb(block, |k, v| match &k[..] {
            b":status" => {
                said.http_status = std::str::from_utf8(&v).ok().and_then(|s| s.parse().ok());
            }
            b"grpc-status" => {
                said.grpc_code = std::str::from_utf8(&v)
                    .ok()
                    .and_then(|s| s.parse::<i32>().ok())
                    .map(Code::from_i32);
            }
            b"grpc-message" => said.message = Some(String::from_utf8_lossy(&v).into_owned()),
            _ => {}
        })
        .map_err(|e| Status::internal(format!("a reply's headers do not decode: {e:?}")))?;
    Ok(said)
}

/// Whether every dynamic-table size update fluke-hpack would reach in `block` has a whole
/// integer. A representation cut short before one means fluke-hpack stops there with an error
/// of its own, so the rest is not looked at.
fn size_updates_decode(block: &[u8]) -> bool {
    let mut at = 0;
    while at < block.len() {
        let rest = &block[at..];
        let first = rest[0];
        let used = if first & 0x80 != 0 {
            integer(rest, 7).map(|(_, n)| n)
        } else if first & 0xC0 == 0x40 {
            literal(rest, 6)
        } else if first & 0xE0 == 0x20 {
            match integer(rest, 5) {
                Some((_, n)) => Some(n),
                None => return false,
            }
        } else {
            literal(rest, 4)
        };
        match used {
            Some(n) => at += n,
            None => return true,
        }
    }
    true
}

/// An HPACK integer with a `prefix`-bit prefix (RFC 7541 section 5.1), as fluke-hpack reads it:
/// at most five octets. Its value and the octets it takes.
fn integer(buf: &[u8], prefix: u8) -> Option<(usize, usize)> {
    let mask = (1u16 << prefix) as usize - 1;
    let mut value = (*buf.first()? as usize) & mask;
    if value < mask {
        return Some((value, 1));
    }
    for (i, &b) in buf.iter().enumerate().skip(1).take(4) {
        value += ((b & 127) as usize) << (7 * (i - 1));
        if b & 128 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// A literal field (an index with a `prefix`-bit prefix; a name string when it is 0; a value
/// string): the octets it takes.
fn literal(buf: &[u8], prefix: u8) -> Option<usize> {
    let (index, mut used) = integer(buf, prefix)?;
    let strings = if index == 0 { 2 } else { 1 };
    for _ in 0..strings {
        let (len, n) = integer(buf.get(used..)?, 7)?;
        used = used.checked_add(n)?.checked_add(len)?;
        if used > buf.len() {
            return None;
        }
    }
    Some(used)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_size_update_cut_short_is_caught_and_whole_blocks_pass() {
        // :status 200, a literal grpc-status: 0 (new name), a size update to 100.
        let mut ok = vec![0x88, 0x00, 11];
        ok.extend_from_slice(b"grpc-status");
        ok.extend_from_slice(&[1, b'0', 0x3f, 0x45]);
        assert!(size_updates_decode(&ok));
        assert!(size_updates_decode(&[]));
        // A size update whose integer never ends, or runs past five octets.
        assert!(!size_updates_decode(&[0x88, 0x3f, 0xff]));
        assert!(!size_updates_decode(&[
            0x3f, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01
        ]));
        // A literal cut short before it: fluke-hpack stops there with an error of its own.
        assert!(size_updates_decode(&[0x00, 0x05, b'a', 0x3f, 0xff]));
        // The input the fuzzer found (its header block, after the frame header).
        let found = [
            0x88, 0x00, 0x0b, 0x67, 0x72, 0x70, 0x63, 0x2d, 0x72, 0x70, 0x63, 0x2d, 0x00, 0x6d,
            0x00, 0x24, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x05, 0x00, 0x6d,
            0x00, 0x24, 0x01, 0x05, 0x00, 0x3f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        ];
        let mut dec = fluke_hpack::Decoder::new();
        assert!(!size_updates_decode(&found) || dec.decode(&found).is_err());
    }
}
