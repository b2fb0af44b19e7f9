//! JSON values read one after another from a stream, as Go's `json.Decoder` reads them for
//! grpcurl's `-d` (`{"a":1}{"a":2}` or one per line), with Go's syntax errors byte for byte
//! (`invalid character 'x' looking for beginning of value`, `unexpected EOF`): serde_json's
//! messages differ, so the scanner is written here.

use std::io::BufRead;

/// A parsed JSON value, numbers kept as their text (Go's `json.Number`).
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// An object, keys in order (repeats kept).
    Object(Vec<(String, Node)>),
    /// An array.
    Array(Vec<Node>),
    /// A string.
    Str(String),
    /// A number as written.
    Num(String),
    /// `true` or `false`.
    Bool(bool),
    /// `null`.
    Null,
}

impl Node {
    /// The value as Go's `%v` prints a `json.Token` standing for it (for jhump's messages).
    pub fn token(&self) -> String {
        match self {
            Node::Object(_) => "{".into(),
            Node::Array(_) => "[".into(),
            Node::Str(s) => s.clone(),
            Node::Num(n) => n.clone(),
            Node::Bool(b) => b.to_string(),
            Node::Null => "<nil>".into(),
        }
    }

    /// As a serde_json value (for the well-known types, read by prost-reflect).
    pub fn to_serde(&self) -> serde_json::Value {
        use serde_json::Value as V;
        match self {
            Node::Object(kv) => {
                V::Object(kv.iter().map(|(k, v)| (k.clone(), v.to_serde())).collect())
            }
            Node::Array(items) => V::Array(items.iter().map(Node::to_serde).collect()),
            Node::Str(s) => V::String(s.clone()),
            Node::Num(n) => serde_json::from_str(n).unwrap_or(V::Null),
            Node::Bool(b) => V::Bool(*b),
            Node::Null => V::Null,
        }
    }
}

/// Successive JSON values from a byte stream.
pub struct Values<R> {
    src: R,
    buf: Vec<u8>,
    pos: usize,
    /// Newlines in the input before `buf`.
    lines_before: usize,
    /// Bytes since the last newline before `buf`.
    column_before: usize,
    /// Objects and arrays open around the value being read.
    depth: usize,
}

/// Go's `maxNestingDepth`: deeper input is refused (`invalid character '[' exceeded max
/// depth`, Go's words) rather than read into a stack that would overflow.
pub(crate) const MAX_DEPTH: usize = 10_000;

/// The stack `volley call` runs on. `-d` JSON may nest [`MAX_DEPTH`] levels (Go's limit, which
/// grpcurl has), and reading, converting and dropping such a value recurses once a level: deeper
/// than a main thread's 8 MiB in a debug build. Only the pages used are mapped.
pub(crate) const STACK: usize = 512 << 20;

impl<R: BufRead> Values<R> {
    /// Reads from `src`.
    pub fn new(src: R) -> Values<R> {
        Values {
            src,
            buf: Vec::new(),
            pos: 0,
            lines_before: 0,
            column_before: 0,
            depth: 0,
        }
    }

    /// Where reading stands: line and column (1-based, columns in bytes), for error hints.
    pub fn position(&self) -> (usize, usize) {
        let seen = &self.buf[..self.pos.min(self.buf.len())];
        let newlines = seen.iter().filter(|&&b| b == b'\n').count();
        match seen.iter().rposition(|&b| b == b'\n') {
            Some(last) => (self.lines_before + newlines + 1, seen.len() - last),
            None => (self.lines_before + 1, self.column_before + seen.len() + 1),
        }
    }

    fn peek(&mut self) -> Option<u8> {
        if self.pos == self.buf.len() {
            match self.buf.iter().rposition(|&b| b == b'\n') {
                Some(last) => {
                    self.lines_before += self.buf.iter().filter(|&&b| b == b'\n').count();
                    self.column_before = self.buf.len() - last - 1;
                }
                None => self.column_before += self.buf.len(),
            }
            self.buf.clear();
            self.pos = 0;
            let chunk = self.src.fill_buf().ok()?;
            if chunk.is_empty() {
                return None;
            }
            self.buf.extend_from_slice(chunk);
            let n = chunk.len();
            self.src.consume(n);
        }
        self.buf.get(self.pos).copied()
    }

    fn bump(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.pos += 1;
        Some(c)
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.pos += 1;
        }
    }

    /// The next value; `Ok(None)` at the end of the input.
    pub fn next_value(&mut self) -> Result<Option<Node>, String> {
        self.skip_space();
        if self.peek().is_none() {
            return Ok(None);
        }
        self.value().map(Some)
    }

    fn need(&mut self) -> Result<u8, String> {
        self.peek().ok_or_else(|| "unexpected EOF".to_owned())
    }

    fn value(&mut self) -> Result<Node, String> {
        self.skip_space();
        match self.need()? {
            c @ (b'{' | b'[') => {
                if self.depth == MAX_DEPTH {
                    return Err(invalid(c, "exceeded max depth"));
                }
                self.depth += 1;
                let v = if c == b'{' {
                    self.object()
                } else {
                    self.array()
                };
                self.depth -= 1;
                v
            }
            b'"' => self.string().map(Node::Str),
            b'-' | b'0'..=b'9' => self.number(),
            b't' => self.literal("true", Node::Bool(true)),
            b'f' => self.literal("false", Node::Bool(false)),
            b'n' => self.literal("null", Node::Null),
            c => Err(invalid(c, "looking for beginning of value")),
        }
    }

    fn object(&mut self) -> Result<Node, String> {
        self.pos += 1;
        let mut kv = Vec::new();
        self.skip_space();
        if self.need()? == b'}' {
            self.pos += 1;
            return Ok(Node::Object(kv));
        }
        loop {
            self.skip_space();
            let c = self.need()?;
            if c != b'"' {
                return Err(invalid(c, "looking for beginning of object key string"));
            }
            let key = self.string()?;
            self.skip_space();
            let c = self.need()?;
            if c != b':' {
                return Err(invalid(c, "after object key"));
            }
            self.pos += 1;
            kv.push((key, self.value()?));
            self.skip_space();
            match self.need()? {
                b',' => self.pos += 1,
                b'}' => {
                    self.pos += 1;
                    return Ok(Node::Object(kv));
                }
                c => return Err(invalid(c, "after object key:value pair")),
            }
        }
    }

    fn array(&mut self) -> Result<Node, String> {
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_space();
        if self.need()? == b']' {
            self.pos += 1;
            return Ok(Node::Array(items));
        }
        loop {
            items.push(self.value()?);
            self.skip_space();
            match self.need()? {
                b',' => self.pos += 1,
                b']' => {
                    self.pos += 1;
                    return Ok(Node::Array(items));
                }
                c => return Err(invalid(c, "after array element")),
            }
        }
    }

    fn string(&mut self) -> Result<String, String> {
        self.pos += 1;
        let mut raw: Vec<u8> = Vec::new();
        loop {
            let c = self.bump().ok_or_else(|| "unexpected EOF".to_owned())?;
            match c {
                b'"' => break,
                b'\\' => {
                    let e = self.bump().ok_or_else(|| "unexpected EOF".to_owned())?;
                    match e {
                        b'"' | b'\\' | b'/' => raw.push(e),
                        b'b' => raw.push(8),
                        b'f' => raw.push(12),
                        b'n' => raw.push(b'\n'),
                        b'r' => raw.push(b'\r'),
                        b't' => raw.push(b'\t'),
                        b'u' => {
                            let mut u = self.hex4()?;
                            if (0xd800..0xdc00).contains(&u) && self.peek() == Some(b'\\') {
                                let save = self.pos;
                                self.pos += 1;
                                if self.peek() == Some(b'u') {
                                    self.pos += 1;
                                    let low = self.hex4()?;
                                    if (0xdc00..0xe000).contains(&low) {
                                        u = 0x10000 + ((u - 0xd800) << 10) + (low - 0xdc00);
                                    } else {
                                        self.pos = save;
                                    }
                                } else {
                                    self.pos = save;
                                }
                            }
                            let ch = char::from_u32(u).unwrap_or('\u{fffd}');
                            raw.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
                        }
                        other => return Err(invalid(other, "in string escape code")),
                    }
                }
                c if c < 0x20 => return Err(invalid(c, "in string literal")),
                c => raw.push(c),
            }
        }
        Ok(String::from_utf8_lossy(&raw).into_owned())
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let mut v = 0u32;
        for _ in 0..4 {
            let c = self.bump().ok_or_else(|| "unexpected EOF".to_owned())?;
            let d = (c as char)
                .to_digit(16)
                .ok_or_else(|| invalid(c, "in \\u hexadecimal character escape"))?;
            v = v * 16 + d;
        }
        Ok(v)
    }

    fn number(&mut self) -> Result<Node, String> {
        let mut text = String::new();
        let push = |this: &mut Self, text: &mut String| {
            text.push(this.bump().expect("peeked") as char);
        };
        if self.peek() == Some(b'-') {
            push(self, &mut text);
            let c = self.need()?;
            if !c.is_ascii_digit() {
                return Err(invalid(c, "in numeric literal"));
            }
        }
        if self.peek() == Some(b'0') {
            push(self, &mut text);
        } else {
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                push(self, &mut text);
            }
        }
        if self.peek() == Some(b'.') {
            push(self, &mut text);
            let c = self.need()?;
            if !c.is_ascii_digit() {
                return Err(invalid(c, "after decimal point in numeric literal"));
            }
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                push(self, &mut text);
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            push(self, &mut text);
            if matches!(self.peek(), Some(b'+' | b'-')) {
                push(self, &mut text);
            }
            let c = self.need()?;
            if !c.is_ascii_digit() {
                return Err(invalid(c, "in exponent of numeric literal"));
            }
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                push(self, &mut text);
            }
        }
        Ok(Node::Num(text))
    }

    fn literal(&mut self, word: &str, node: Node) -> Result<Node, String> {
        self.pos += 1;
        for expected in word.bytes().skip(1) {
            let c = self.need()?;
            if c != expected {
                return Err(invalid(
                    c,
                    &format!("in literal {word} (expecting {})", quote_char(expected)),
                ));
            }
            self.pos += 1;
        }
        Ok(node)
    }
}

fn invalid(c: u8, context: &str) -> String {
    format!("invalid character {} {context}", quote_char(c))
}

/// Go's `quoteChar`: the byte as a rune, quoted with single quotes.
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => "'\\''".into(),
        b'"' => "'\"'".into(),
        b'\n' => "'\\n'".into(),
        b'\r' => "'\\r'".into(),
        b'\t' => "'\\t'".into(),
        0x07 => "'\\a'".into(),
        0x08 => "'\\b'".into(),
        0x0c => "'\\f'".into(),
        0x0b => "'\\v'".into(),
        c if c < 0x20 || c == 0x7f => format!("'\\x{c:02x}'"),
        c if (0x80..0xa0).contains(&c) => format!("'\\u00{c:02x}'"),
        c => format!("'{}'", char::from(c)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(s: &str) -> Result<Vec<Node>, String> {
        let mut v = Values::new(s.as_bytes());
        let mut out = Vec::new();
        while let Some(n) = v.next_value()? {
            out.push(n);
        }
        Ok(out)
    }

    #[test]
    fn streams_of_values() {
        assert_eq!(all("").unwrap(), vec![]);
        assert_eq!(all(" {\"a\":1}{\"a\":2}\n{} ").unwrap().len(), 3);
        assert_eq!(
            all(r#"{"s":"\u00e9\ud83d\ude00\n","n":-1.5e3}"#).unwrap(),
            vec![Node::Object(vec![
                ("s".into(), Node::Str("é😀\n".into())),
                ("n".into(), Node::Num("-1.5e3".into())),
            ])]
        );
    }

    #[test]
    fn nesting_stops_at_go_s_depth() {
        // On a stack of its own: reading 10,000 levels recurses 10,000 times.
        std::thread::Builder::new()
            .stack_size(STACK)
            .spawn(|| {
                let deep = |n: usize| "[".repeat(n) + &"]".repeat(n);
                assert_eq!(all(&deep(MAX_DEPTH)).unwrap().len(), 1);
                assert_eq!(
                    all(&deep(MAX_DEPTH + 1)).unwrap_err(),
                    "invalid character '[' exceeded max depth"
                );
                let objects = "{\"a\":".repeat(200_000);
                assert_eq!(
                    all(&objects).unwrap_err(),
                    "invalid character '{' exceeded max depth"
                );
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn go_syntax_errors() {
        // Messages of Go's encoding/json for the same input.
        for (input, go) in [
            ("{", "unexpected EOF"),
            ("{\"a\":1", "unexpected EOF"),
            ("x", "invalid character 'x' looking for beginning of value"),
            (
                "{a:1}",
                "invalid character 'a' looking for beginning of object key string",
            ),
            ("{\"a\" 1}", "invalid character '1' after object key"),
            (
                "{\"a\":1 \"b\"}",
                "invalid character '\"' after object key:value pair",
            ),
            ("[1 2]", "invalid character '2' after array element"),
            (
                "{\"a\":tru}",
                "invalid character '}' in literal true (expecting 'e')",
            ),
            ("{\"a\":-x}", "invalid character 'x' in numeric literal"),
            (
                "{\"a\":\"\n\"}",
                "invalid character '\\n' in string literal",
            ),
            (
                "{\"a\":,}",
                "invalid character ',' looking for beginning of value",
            ),
        ] {
            assert_eq!(all(input).unwrap_err(), go, "{input:?}");
        }
    }
}
