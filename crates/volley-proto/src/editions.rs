//! Protobuf editions (`edition = "2023"`, `"2024"`) read by tools that predate them: protox 0.10
//! parses only `proto2`/`proto3` and prost-reflect 0.16 builds no pool from `syntax =
//! "editions"` descriptors. An edition file is served as the proto2 file it means: its
//! singular fields keep explicit presence (`optional`, or `required` for
//! `features.field_presence = LEGACY_REQUIRED`), `reserved` names are quoted, 2024's
//! `export`/`local` and `import option` are dropped to their proto2 forms, and the other
//! `features.*` options are dropped: the one that changes the wire, `message_encoding =
//! DELIMITED`, is then length-prefixed. The rewrite keeps every line where it was, so errors
//! still name the file's own lines.

use prost_types::FileDescriptorProto;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Ident,
    Str,
    Num,
    Punct,
}

#[derive(Debug, Clone, Copy)]
struct Tok {
    kind: Kind,
    start: usize,
    end: usize,
}

/// The tokens of `src`, comments and whitespace left out.
fn tokens(src: &str) -> Vec<Tok> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if src[i..].starts_with("//") {
            i = src[i..].find('\n').map_or(b.len(), |n| i + n);
        } else if src[i..].starts_with("/*") {
            i = src[i + 2..].find("*/").map_or(b.len(), |n| i + n + 4);
        } else if c == b'"' || c == b'\'' {
            let start = i;
            i += 1;
            while i < b.len() && b[i] != c {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(b.len());
            out.push(Tok {
                kind: Kind::Str,
                start,
                end: i,
            });
        } else if c.is_ascii_alphabetic()
            || c == b'_'
            || c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_alphabetic)
        {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.') {
                i += 1;
            }
            out.push(Tok {
                kind: Kind::Ident,
                start,
                end: i,
            });
        } else if c.is_ascii_digit() || (c == b'-' && b.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            let start = i;
            i += 1;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                i += 1;
            }
            out.push(Tok {
                kind: Kind::Num,
                start,
                end: i,
            });
        } else {
            // A whole character: `i` must stay on a character boundary, or the slices above
            // panic on the next non-ASCII byte (found by the proto_schema fuzz campaign).
            let width = src[i..].chars().next().map_or(1, char::len_utf8);
            out.push(Tok {
                kind: Kind::Punct,
                start: i,
                end: i + width,
            });
            i += width;
        }
    }
    out
}

/// The edition `src` declares, when it declares one.
pub fn edition_of(src: &str) -> Option<String> {
    let toks = tokens(src);
    let text = |t: &Tok| &src[t.start..t.end];
    match toks.as_slice() {
        [a, b, c, ..] if text(a) == "edition" && text(b) == "=" && c.kind == Kind::Str => {
            Some(text(c).trim_matches(['"', '\'']).to_owned())
        }
        _ => None,
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Block {
    File,
    Message,
    Enum,
    Oneof,
    Extend,
    Other,
}

const NOT_TYPES: [&str; 15] = [
    "message",
    "enum",
    "oneof",
    "option",
    "reserved",
    "extensions",
    "extend",
    "map",
    "optional",
    "repeated",
    "required",
    "group",
    "service",
    "export",
    "local",
];

/// `src` as proto2 when it is an edition file (else `None`), and the edition.
pub fn lower(src: &str) -> Option<(String, String)> {
    let edition = edition_of(src)?;
    let toks = tokens(src);
    let text = |i: usize| toks.get(i).map_or("", |t| &src[t.start..t.end]);
    // (start, end, replacement), applied from the end.
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let blank = |t: &Tok| (t.start, t.end, String::new());
    let mut stack = vec![Block::File];
    let mut i = 0;
    while i < toks.len() {
        let block = *stack.last().unwrap_or(&Block::File);
        let t0 = text(i);
        // A statement's end: `;`, `{` or `}` at bracket depth 0.
        let mut end = i;
        let mut depth = 0i32;
        while end < toks.len() {
            match text(end) {
                "[" | "(" => depth += 1,
                "]" | ")" => depth -= 1,
                ";" | "{" | "}" if depth <= 0 => break,
                _ => {}
            }
            end += 1;
        }
        if t0 == "}" {
            stack.pop();
            i += 1;
            continue;
        }
        // `[features.x = y, json_name = "z"]`: the features entries dropped.
        let mut j = i;
        let mut required = false;
        while j < end {
            if text(j) == "[" {
                let close = (j..end).find(|k| text(*k) == "]").unwrap_or(end);
                let mut entries: Vec<(usize, usize)> = Vec::new();
                let mut s = j + 1;
                let mut d = 0;
                for k in j + 1..=close {
                    match text(k) {
                        "(" | "[" | "{" => d += 1,
                        ")" | "{}" => d -= 1,
                        "]" if k < close => d -= 1,
                        "}" => d -= 1,
                        _ => {}
                    }
                    if (text(k) == "," && d == 0) || k == close {
                        entries.push((s, k));
                        s = k + 1;
                    }
                }
                let is_feature = |(a, _): &(usize, usize)| text(*a).starts_with("features.");
                if entries.iter().any(is_feature) {
                    required |= entries.iter().any(|(a, b)| {
                        text(*a) == "features.field_presence"
                            && (*a..*b).any(|k| text(k) == "LEGACY_REQUIRED")
                    });
                    let kept: Vec<String> = entries
                        .iter()
                        .filter(|e| !is_feature(e))
                        .map(|(a, b)| src[toks[*a].start..toks[b - 1].end].to_owned())
                        .collect();
                    let replacement = if kept.is_empty() {
                        String::new()
                    } else {
                        format!("[{}]", kept.join(", "))
                    };
                    edits.push((toks[j].start, toks[close].end, replacement));
                }
                j = close;
            }
            j += 1;
        }
        match t0 {
            "edition" if block == Block::File => {
                edits.push((toks[i].start, toks[i].end, "syntax".into()));
                if let Some(t) = toks.get(i + 2) {
                    edits.push((t.start, t.end, "\"proto2\"".into()));
                }
            }
            "option" if text(i + 1).starts_with("features.") || text(i + 1) == "features" => {
                let last = toks.get(end).map_or(src.len(), |t| t.end);
                edits.push((toks[i].start, last, String::new()));
            }
            "import" if text(i + 1) == "option" => edits.push(blank(&toks[i + 1])),
            "export" | "local" if matches!(text(i + 1), "message" | "enum" | "service") => {
                edits.push(blank(&toks[i]));
            }
            "reserved" if matches!(block, Block::Message | Block::Enum) => {
                for (k, t) in toks.iter().enumerate().take(end).skip(i + 1) {
                    if t.kind == Kind::Ident && text(k) != "to" && text(k) != "max" {
                        edits.push((t.start, t.end, format!("\"{}\"", text(k))));
                    }
                }
            }
            _ if matches!(block, Block::Message | Block::Extend)
                && toks[i].kind == Kind::Ident
                && !NOT_TYPES.contains(&t0)
                && toks.get(i + 1).is_some_and(|t| t.kind == Kind::Ident)
                && text(i + 2) == "=" =>
            {
                let label = if required { "required " } else { "optional " };
                edits.push((toks[i].start, toks[i].start, label.into()));
            }
            _ => {}
        }
        if text(end) == "{" {
            let opened = match toks[i..end].iter().map(|t| &src[t.start..t.end]).find(|w| {
                matches!(
                    *w,
                    "message" | "enum" | "oneof" | "extend" | "service" | "rpc"
                )
            }) {
                Some("message") => Block::Message,
                Some("enum") => Block::Enum,
                Some("oneof") => Block::Oneof,
                Some("extend") => Block::Extend,
                _ => Block::Other,
            };
            stack.push(opened);
        } else if text(end) == "}" {
            stack.pop();
        }
        i = end + 1;
    }
    edits.sort_by_key(|e| std::cmp::Reverse((e.0, e.1)));
    let mut out = src.to_owned();
    let mut last = usize::MAX;
    for (a, b, r) in edits {
        if b > last {
            continue;
        }
        out.replace_range(a..b, &r);
        last = a;
    }
    Some((out, edition))
}

/// A descriptor of an edition file (from a descriptor set) as the proto2 file it means.
pub fn lower_descriptor(file: &mut FileDescriptorProto) -> bool {
    if file.syntax.as_deref() != Some("editions") {
        return false;
    }
    file.syntax = Some("proto2".into());
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edition_file_becomes_its_proto2_form_line_for_line() {
        let src = "edition = \"2024\";\n\
                   package p;\n\
                   import option \"opts.proto\";\n\
                   option features.field_presence = EXPLICIT;\n\
                   export message M {\n\
                   \x20 string name = 1 [features.field_presence = IMPLICIT, json_name = \"n\"];\n\
                   \x20 int32 id = 2 [features.field_presence = LEGACY_REQUIRED];\n\
                   \x20 repeated int32 ids = 3;\n\
                   \x20 map<string, int32> counts = 4;\n\
                   \x20 oneof pick { string a = 5; int64 b = 6; }\n\
                   \x20 reserved 9, 10 to 12, gone, old;\n\
                   \x20 message N { .p.M m = 1; } // a comment: string x = 1;\n\
                   }\n\
                   local enum E { E_UNKNOWN = 0; E_A = 1 [features.x = 1]; }\n";
        let (out, edition) = lower(src).unwrap();
        assert_eq!(edition, "2024");
        assert_eq!(out.lines().count(), src.lines().count());
        for want in [
            "syntax = \"proto2\";",
            "import  \"opts.proto\";",
            "optional string name = 1 [json_name = \"n\"];",
            "required int32 id = 2 ;",
            "  repeated int32 ids = 3;",
            "  map<string, int32> counts = 4;",
            "oneof pick { string a = 5; int64 b = 6; }",
            "reserved 9, 10 to 12, \"gone\", \"old\";",
            "message N { optional .p.M m = 1; } // a comment: string x = 1;",
            " enum E { E_UNKNOWN = 0; E_A = 1 ; }",
        ] {
            assert!(out.contains(want), "{want}\n---\n{out}");
        }
        assert!(
            !out.contains("features") && !out.contains("export"),
            "{out}"
        );
        assert_eq!(lower("syntax = \"proto3\";\nmessage M {}\n"), None);
    }

    #[test]
    fn non_ascii_punctuation_is_one_token_and_never_split() {
        let src = "syntax = \"proto3\"; \u{7c4} /* \u{7c4} */ message M {} \u{e9}";
        let toks = tokens(src);
        assert!(
            toks.iter()
                .all(|t| src.is_char_boundary(t.start) && src.is_char_boundary(t.end))
        );
        assert_eq!(
            edition_of("edition = \"2023\"; \u{7c4}//x"),
            Some("2023".into())
        );
    }
}
