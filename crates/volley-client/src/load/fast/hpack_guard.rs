//! A guard in front of fluke-hpack's decoder: fluke-hpack 0.3.1 panics (an `unwrap`) on a
//! dynamic-table size update whose integer is cut short or too long, where it returns an error
//! for every other malformed representation. Found by the `fast_frames` fuzz target; a server's
//! bytes must never panic the client, so each reply's header block is walked first. The walk
//! reads only the lengths (no table, no strings), a few nanoseconds per block.

/// Whether every dynamic-table size update fluke-hpack would reach in `block` has a whole
/// integer. A representation cut short before one means fluke-hpack stops there with an error
/// of its own, so the rest is not looked at.
pub(super) fn size_updates_decode(block: &[u8]) -> bool {
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
