//! HPACK (RFC 7541) decoding of the header blocks a server sends the fast client.
//!
//! Written here, not taken from a crate, for a measured reason: fluke-hpack's decoder (whose
//! encoder the client still uses) builds its Huffman table, two SipHash maps over 257 codes,
//! anew for every Huffman-coded string, 0.6-0.8 M instructions per fresh connection, whose
//! first reply is all such strings (docs/benchmarks-history.md, "Server streams, keepalive and a
//! receive limit on the fast path": "Per-request calls stay on the h2 crate");
//! and it panics on a table size update cut short (found by the `fast_frames` fuzz target).
//! h2's decoder is private to its crate. Huffman codes are decoded bit by bit from the code
//! lengths alone (HPACK's code is canonical), a few hundred instructions per short string.

use std::collections::VecDeque;

/// RFC 7541 Appendix A.
const STATIC: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// The Huffman code's length in bits for each symbol, 0-255 and EOS (RFC 7541 Appendix B);
/// the codes themselves follow from the lengths (a canonical code).
const CODE_LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28,
    28, 28, 28, 28, 28, 28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5,
    5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, 15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6,
    6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22, 23, 22,
    23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22,
    21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20,
    22, 22, 22, 23, 22, 22, 23, 26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19,
    21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22,
    22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, 30,
];

/// The longest code.
const MAX_BITS: usize = 30;

/// The canonical code's tables: for each length, how many codes have it, the first code of that
/// length, and where its symbols start in `symbols` (sorted by length, then by symbol).
struct Canonical {
    count: [u32; MAX_BITS + 1],
    first: [u32; MAX_BITS + 1],
    offset: [u16; MAX_BITS + 1],
    symbols: [u16; 257],
}

const CANONICAL: Canonical = canonical();

const fn canonical() -> Canonical {
    let mut t = Canonical {
        count: [0; MAX_BITS + 1],
        first: [0; MAX_BITS + 1],
        offset: [0; MAX_BITS + 1],
        symbols: [0; 257],
    };
    let mut s = 0;
    while s < 257 {
        t.count[CODE_LENGTHS[s] as usize] += 1;
        s += 1;
    }
    let (mut code, mut index, mut len) = (0u32, 0u16, 1);
    while len <= MAX_BITS {
        code <<= 1;
        t.first[len] = code;
        t.offset[len] = index;
        code += t.count[len];
        index += t.count[len] as u16;
        len += 1;
    }
    let mut next = t.offset;
    let mut s = 0;
    while s < 257 {
        let len = CODE_LENGTHS[s] as usize;
        t.symbols[next[len] as usize] = s as u16;
        next[len] += 1;
        s += 1;
    }
    t
}

/// Appends the Huffman-coded `input` decoded to `out`.
fn huffman(input: &[u8], out: &mut Vec<u8>) -> Result<(), &'static str> {
    let t = &CANONICAL;
    let (mut code, mut len) = (0u32, 0usize);
    for &byte in input {
        for shift in (0..8).rev() {
            code = code << 1 | u32::from(byte >> shift & 1);
            len += 1;
            let k = code.wrapping_sub(t.first[len]);
            if k < t.count[len] {
                match t.symbols[t.offset[len] as usize + k as usize] {
                    256 => return Err("a Huffman-coded string holds the end-of-string code"),
                    symbol => out.push(symbol as u8),
                }
                (code, len) = (0, 0);
            } else if len == MAX_BITS {
                return Err("a Huffman code is longer than any");
            }
        }
    }
    // Padding: at most 7 bits, the end-of-string code's first bits (all ones).
    if len > 7 || code != (1 << len) - 1 {
        return Err("a Huffman-coded string's padding is not the end-of-string code's");
    }
    Ok(())
}

/// An integer with a `prefix`-bit prefix (RFC 7541 section 5.1): its value and the octets it
/// takes. Values past `u32::MAX` are refused (no header block needs one).
fn integer(buf: &[u8], prefix: u8) -> Result<(usize, usize), &'static str> {
    let cut = "a header block ends inside an integer";
    let mask = (1usize << prefix) - 1;
    let mut value = *buf.first().ok_or(cut)? as usize & mask;
    if value < mask {
        return Ok((value, 1));
    }
    for (i, &b) in buf.iter().enumerate().skip(1).take(5) {
        value += ((b & 127) as usize) << (7 * (i - 1));
        if b & 128 == 0 {
            return if value > u32::MAX as usize {
                Err("a header block's integer is too large")
            } else {
                Ok((value, i + 1))
            };
        }
    }
    Err(if buf.len() > 6 {
        "a header block's integer is too large"
    } else {
        cut
    })
}

/// A string literal (section 5.2) at the start of `buf`, appended to `out` decoded: the octets
/// it takes.
fn string(buf: &[u8], out: &mut Vec<u8>) -> Result<usize, &'static str> {
    let (len, n) = integer(buf, 7)?;
    let raw = buf
        .get(n..n + len)
        .ok_or("a header block ends inside a string")?;
    if buf[0] & 0x80 != 0 {
        huffman(raw, out)?;
    } else {
        out.extend_from_slice(raw);
    }
    Ok(n + len)
}

/// The field at `index` (1-61 static, then the dynamic `table`, newest first).
fn get(table: &VecDeque<Entry>, index: usize) -> Result<(&[u8], &[u8]), &'static str> {
    match index {
        0 => Err("a header block refers to index 0"),
        1..=61 => Ok(STATIC[index - 1]),
        _ => table
            .get(index - 62)
            .map(|e| (e.name(), e.value()))
            .ok_or("a header block refers past the end of the table"),
    }
}

/// What the table counts for an entry beside its name and value (section 4.1).
const ENTRY_OVERHEAD: usize = 32;

/// A dynamic table entry: name and value in one allocation.
struct Entry {
    bytes: Box<[u8]>,
    name_len: usize,
}

impl Entry {
    fn name(&self) -> &[u8] {
        &self.bytes[..self.name_len]
    }

    fn value(&self) -> &[u8] {
        &self.bytes[self.name_len..]
    }

    /// Its size as the table counts it (section 4.1).
    fn size(&self) -> usize {
        self.bytes.len() + ENTRY_OVERHEAD
    }
}

/// The largest table the server may set (SETTINGS_HEADER_TABLE_SIZE: the client sends none, so
/// HTTP/2's default), and the table's size until it sets one.
const TABLE_LIMIT: usize = 4096;

/// One connection's decoding state: its dynamic table.
pub(super) struct Decoder {
    /// Newest first.
    table: VecDeque<Entry>,
    size: usize,
    /// The table's size now, as the server last set it.
    max: usize,
    name: Vec<u8>,
    value: Vec<u8>,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder {
            table: VecDeque::new(),
            size: 0,
            max: TABLE_LIMIT,
            name: Vec::new(),
            value: Vec::new(),
        }
    }
}

impl Decoder {
    /// Decodes `block`, calling `field` with each field's name and value in order; an error
    /// says what was wrong (the connection's table is then not to be trusted).
    pub(super) fn decode(
        &mut self,
        block: &[u8],
        mut field: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), &'static str> {
        let mut at = 0;
        while at < block.len() {
            let rest = &block[at..];
            let first = rest[0];
            if first & 0x80 != 0 {
                let (index, n) = integer(rest, 7)?;
                let (name, value) = get(&self.table, index)?;
                field(name, value);
                at += n;
            } else if first & 0xE0 == 0x20 {
                let (max, n) = integer(rest, 5)?;
                if max > TABLE_LIMIT {
                    return Err("a table size update is larger than the client allows");
                }
                self.max = max;
                self.evict(0);
                at += n;
            } else {
                // A literal: with incremental indexing (01), without (0000) or never (0001).
                let indexed = first & 0xC0 == 0x40;
                let (index, mut n) = integer(rest, if indexed { 6 } else { 4 })?;
                self.name.clear();
                self.value.clear();
                if index == 0 {
                    n += string(&rest[n..], &mut self.name)?;
                } else {
                    let name = get(&self.table, index)?.0;
                    self.name.extend_from_slice(name);
                }
                n += string(&rest[n..], &mut self.value)?;
                field(&self.name, &self.value);
                if indexed {
                    self.insert();
                }
                at += n;
            }
        }
        Ok(())
    }

    /// Adds the field in `name` and `value` as the newest entry, evicting the oldest to make
    /// room (an entry larger than the table empties it and is not added, section 4.4).
    fn insert(&mut self) {
        let size = self.name.len() + self.value.len() + ENTRY_OVERHEAD;
        self.evict(size);
        if size > self.max {
            return;
        }
        let mut bytes = Vec::with_capacity(size - ENTRY_OVERHEAD);
        bytes.extend_from_slice(&self.name);
        bytes.extend_from_slice(&self.value);
        self.table.push_front(Entry {
            bytes: bytes.into_boxed_slice(),
            name_len: self.name.len(),
        });
        self.size += size;
    }

    /// Evicts the oldest entries until `room` more fits under the table's size.
    fn evict(&mut self, room: usize) {
        while self.size + room > self.max {
            match self.table.pop_back() {
                Some(e) => self.size -= e.size(),
                None => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// A field as text.
    fn text(name: &[u8], value: &[u8]) -> (String, String) {
        let utf8 = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
        (utf8(name), utf8(value))
    }

    fn fields(dec: &mut Decoder, block: &[u8]) -> Result<Vec<(String, String)>, &'static str> {
        let mut out = Vec::new();
        dec.decode(block, |n, v| out.push(text(n, v)))?;
        Ok(out)
    }

    fn table(dec: &Decoder) -> Vec<(String, String)> {
        dec.table
            .iter()
            .map(|e| text(e.name(), e.value()))
            .collect()
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    /// RFC 7541 C.4: three requests, Huffman-coded, sharing one table.
    #[test]
    fn the_rfcs_huffman_coded_requests_decode() {
        let mut dec = Decoder::default();
        let first = hex("8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff");
        assert_eq!(
            fields(&mut dec, &first).unwrap(),
            pairs(&[
                (":method", "GET"),
                (":scheme", "http"),
                (":path", "/"),
                (":authority", "www.example.com")
            ])
        );
        let second = hex("8286 84be 5886 a8eb 1064 9cbf");
        assert_eq!(
            fields(&mut dec, &second).unwrap(),
            pairs(&[
                (":method", "GET"),
                (":scheme", "http"),
                (":path", "/"),
                (":authority", "www.example.com"),
                ("cache-control", "no-cache")
            ])
        );
        let third = hex("8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf");
        assert_eq!(
            fields(&mut dec, &third).unwrap(),
            pairs(&[
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/index.html"),
                (":authority", "www.example.com"),
                ("custom-key", "custom-value")
            ])
        );
        assert_eq!(
            table(&dec),
            pairs(&[
                ("custom-key", "custom-value"),
                ("cache-control", "no-cache"),
                (":authority", "www.example.com")
            ])
        );
        assert_eq!(dec.size, 164);
    }

    /// RFC 7541 C.6: three responses, Huffman-coded, in a 256-octet table (entries evicted).
    #[test]
    fn the_rfcs_huffman_coded_responses_decode_with_evictions() {
        let mut dec = Decoder::default();
        // The server sets the table to 256 octets first (the RFC's example starts there).
        let mut first = vec![0x3f, 0xe1, 0x01];
        first.extend(hex(
            "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
             2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
        ));
        assert_eq!(
            fields(&mut dec, &first).unwrap(),
            pairs(&[
                (":status", "302"),
                ("cache-control", "private"),
                ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
                ("location", "https://www.example.com")
            ])
        );
        assert_eq!(dec.size, 222);
        let second = hex("4883 640e ffc1 c0bf");
        assert_eq!(
            fields(&mut dec, &second).unwrap(),
            pairs(&[
                (":status", "307"),
                ("cache-control", "private"),
                ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
                ("location", "https://www.example.com")
            ])
        );
        assert_eq!(dec.size, 222);
        let third = hex(
            "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad
             94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160
             65c0 03ed 4ee5 b106 3d50 07",
        );
        assert_eq!(
            fields(&mut dec, &third).unwrap(),
            pairs(&[
                (":status", "200"),
                ("cache-control", "private"),
                ("date", "Mon, 21 Oct 2013 20:13:22 GMT"),
                ("location", "https://www.example.com"),
                ("content-encoding", "gzip"),
                (
                    "set-cookie",
                    "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"
                )
            ])
        );
        assert_eq!(
            table(&dec),
            pairs(&[
                (
                    "set-cookie",
                    "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"
                ),
                ("content-encoding", "gzip"),
                ("date", "Mon, 21 Oct 2013 20:13:22 GMT")
            ])
        );
        assert_eq!(dec.size, 215);
    }

    /// RFC 7541 C.2.2 and C.2.3: literals without indexing and never indexed leave the table.
    #[test]
    fn literals_not_indexed_leave_the_table_alone() {
        let mut dec = Decoder::default();
        let block =
            hex("040c 2f73 616d 706c 652f 7061 7468 1008 7061 7373 776f 7264 0673 6563 7265 74");
        assert_eq!(
            fields(&mut dec, &block).unwrap(),
            pairs(&[(":path", "/sample/path"), ("password", "secret")])
        );
        assert!(dec.table.is_empty());
    }

    #[test]
    fn every_byte_value_goes_through_huffman_coding() {
        // Encoded here from the code lengths, the way an encoder builds the canonical code.
        let t = &CANONICAL;
        let mut code_of = [(0u32, 0u8); 257];
        for (len, &count) in t.count.iter().enumerate() {
            for k in 0..count {
                let symbol = t.symbols[t.offset[len] as usize + k as usize];
                code_of[symbol as usize] = (t.first[len] + k, len as u8);
            }
        }
        // The RFC's codes for '0' (00000, 5 bits), 'a' (00011, 5 bits), EOS (30 ones).
        assert_eq!(code_of[b'0' as usize], (0x0, 5));
        assert_eq!(code_of[b'a' as usize], (0x3, 5));
        assert_eq!(code_of[256], (0x3fff_ffff, 30));
        let input: Vec<u8> = (0..=255).collect();
        let (mut bits, mut n, mut coded) = (0u64, 0u32, Vec::new());
        for &b in &input {
            let (code, len) = code_of[b as usize];
            bits = bits << len | u64::from(code);
            n += u32::from(len);
            while n >= 8 {
                coded.push((bits >> (n - 8)) as u8);
                n -= 8;
            }
        }
        if n > 0 {
            coded.push((bits << (8 - n)) as u8 | ((1 << (8 - n)) - 1));
        }
        let mut out = Vec::new();
        huffman(&coded, &mut out).unwrap();
        assert_eq!(out, input);
    }

    /// Another encoder's blocks, in sequence on one table: fluke-hpack's encoder indexes each
    /// new name with its value and refers back to what it indexed; values up to 700 octets and
    /// hundreds of names make the table evict.
    #[test]
    fn a_peer_encoders_blocks_decode_to_what_it_encoded() {
        // Names in the static table (a literal value, not indexed), and up to 300 new names
        // (indexed with their value when first seen, then referred to by index).
        let statics: [&[u8]; 4] = [b":status", b"content-type", b"date", b"set-cookie"];
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut enc = fluke_hpack::Encoder::new();
        let mut dec = Decoder::default();
        let mut evicted = false;
        for _ in 0..3000 {
            let fields: Vec<(Vec<u8>, Vec<u8>)> = (0..1 + next(6))
                .map(|_| {
                    let name = match next(8) {
                        k @ 0..4 => statics[k as usize].to_vec(),
                        _ => format!("x-{}", next(300)).into_bytes(),
                    };
                    // Few distinct values, so that whole fields repeat and are indexed.
                    let len = [0, 1, 3, 20, 700][next(5) as usize];
                    let value = vec![b'a' + next(3) as u8; len];
                    (name, value)
                })
                .collect();
            let block = enc.encode(fields.iter().map(|(n, v)| (&n[..], &v[..])));
            let mut got = Vec::new();
            dec.decode(&block, |n, v| got.push((n.to_vec(), v.to_vec())))
                .unwrap();
            assert_eq!(got, fields);
            assert!(dec.size <= dec.max);
            evicted |= dec.size + 732 > dec.max;
        }
        assert!(evicted, "the table never came near full");
    }

    #[test]
    fn bad_blocks_are_errors_not_panics() {
        let cases: &[(&[u8], &str)] = &[
            (&[0x80], "index 0"),
            (&[0xbe], "past the end of the table"),
            (&[0x3f], "ends inside an integer"),
            (&[0x88, 0x3f, 0xff], "ends inside an integer"),
            (
                &[0x3f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
                "too large",
            ),
            (&[0x3f, 0xe2, 0x1f], "larger than the client allows"),
            (&[0x40, 0x05, b'a'], "ends inside a string"),
            (&[0x04, 0x81], "ends inside a string"),
            // Huffman: EOS whole in a string; padding of zeros; padding of 8 bits.
            (&[0x04, 0x84, 0xff, 0xff, 0xff, 0xff], "end-of-string code"),
            (&[0x04, 0x81, 0x00], "padding"),
            (&[0x04, 0x82, 0x1f, 0xff], "padding"),
        ];
        for (block, want) in cases {
            let err = Decoder::default().decode(block, |_, _| {}).unwrap_err();
            assert!(err.contains(want), "{block:02x?}: {err}");
        }
    }

    #[test]
    fn a_size_update_empties_the_table_and_an_entry_too_large_is_not_kept() {
        let mut dec = Decoder::default();
        // grpc-status: 0 indexed (new name), then a size update to 0 and back to 4,096.
        let mut block = vec![0x40, 11];
        block.extend_from_slice(b"grpc-status");
        block.extend_from_slice(&[1, b'0']);
        fields(&mut dec, &block).unwrap();
        assert_eq!(
            fields(&mut dec, &[0xbe]).unwrap(),
            pairs(&[("grpc-status", "0")])
        );
        fields(&mut dec, &[0x20, 0x3f, 0xe1, 0x1f]).unwrap();
        assert!(dec.table.is_empty());
        assert_eq!(dec.size, 0);
        // An entry of 5,000 octets does not fit a 4,096 table: it is decoded, not kept.
        // A new name "x", a raw value of 5,000 octets (its length: 127 in the prefix, then
        // 4,873 in 7-bit groups).
        let mut big = vec![0x40, 0x01, b'x', 0x7f];
        let value = 5000usize;
        let mut rest = value - 127;
        loop {
            if rest >= 128 {
                big.push((rest & 127) as u8 | 128);
                rest >>= 7;
            } else {
                big.push(rest as u8);
                break;
            }
        }
        big.extend(std::iter::repeat_n(b'y', value));
        let got = fields(&mut dec, &big).unwrap();
        assert_eq!(got[0].1.len(), 5000);
        assert!(dec.table.is_empty());
    }
}
