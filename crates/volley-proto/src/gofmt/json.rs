//! `encoding/json`'s strings, as grpcurl's JSON output and error bodies carry them.

/// A JSON string as `encoding/json` writes it: HTML-safe (`<`, `>`, `&` as `\u003c`...),
/// `\b \f \n \r \t`, other control characters as `\u00XX`, U+2028 and U+2029 escaped.
pub fn json_string(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{0}'..='\u{1f}' => {
                let b = c as u8;
                out.push_str("\\u00");
                out.push(HEX[(b >> 4) as usize] as char);
                out.push(HEX[(b & 0xf) as usize] as char);
            }
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Bytes as a Go string would reach `encoding/json`: invalid UTF-8 becomes U+FFFD.
pub fn json_bytes_string(out: &mut String, b: &[u8]) {
    json_string(out, &String::from_utf8_lossy(b));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_encoding_json() {
        let mut s = String::new();
        json_string(&mut s, "a<b>&\"\\\n\t\u{1}\u{8}\u{7f}é\u{2028}");
        assert_eq!(
            s,
            r#""a\u003cb\u003e\u0026\"\\\n\t\u0001\b"#.to_owned() + "\u{7f}é\\u2028\""
        );
        let mut b = String::new();
        json_bytes_string(&mut b, b"ok\xff");
        assert_eq!(b, "\"ok\u{fffd}\"");
    }
}
