//! Metadata as grpcurl handles it: `-H 'Name: value'` split at the first colon (name trimmed and
//! lower-cased, `-bin` values base64-decoded in any of Go's four alphabets), `${NAME}` expansion,
//! and the `key: value` listing `-v` prints (keys sorted, `-bin` values re-encoded, `(empty)`).

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};

/// Keys and raw values, in arrival order (a key may repeat).
pub type Metadata = Vec<(String, Vec<u8>)>;

/// grpcurl's `MetadataFromHeaders`.
pub(crate) fn from_headers(headers: &[String]) -> Metadata {
    let mut md = Metadata::new();
    for h in headers.iter().filter(|h| !h.is_empty()) {
        let (name, value) = h.split_once(':').unwrap_or((h, ""));
        let name = name.trim().to_lowercase();
        let value = value.trim();
        let raw = if name.ends_with("-bin") {
            decode_any_base64(value).unwrap_or_else(|| value.as_bytes().to_vec())
        } else {
            value.as_bytes().to_vec()
        };
        md.push((name, raw));
    }
    md
}

fn decode_any_base64(v: &str) -> Option<Vec<u8>> {
    [&STANDARD, &URL_SAFE, &STANDARD_NO_PAD, &URL_SAFE_NO_PAD]
        .iter()
        .find_map(|e| e.decode(v).ok())
}

/// grpcurl's `ExpandHeaders`: every `${NAME}` (word characters) replaced by the environment
/// variable.
pub(crate) fn expand(headers: &[String]) -> Result<Vec<String>, String> {
    expand_with(headers, |name| std::env::var(name).ok())
}

fn expand_with(
    headers: &[String],
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Vec<String>, String> {
    headers
        .iter()
        .map(|h| {
            let mut out = String::new();
            let mut rest = h.as_str();
            while let Some(start) = rest.find("${") {
                let after = &rest[start + 2..];
                let len = after
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(after.len());
                if len == 0 || !after[len..].starts_with('}') {
                    out.push_str(&rest[..start + 2]);
                    rest = after;
                    continue;
                }
                let name = &after[..len];
                let value = lookup(name).ok_or_else(|| {
                    format!(
                        "header {} refers to missing environment variable {}",
                        crate::args::go_quote(h),
                        crate::args::go_quote(name)
                    )
                })?;
                out.push_str(&rest[..start]);
                out.push_str(&value);
                rest = &after[len + 1..];
            }
            out.push_str(rest);
            Ok(out)
        })
        .collect()
}

/// grpcurl's `MetadataToString`: `(empty)`, or sorted `key: value` lines (no final newline).
pub(crate) fn to_string(md: &Metadata) -> String {
    if md.is_empty() {
        return "(empty)".into();
    }
    let mut keys: Vec<&str> = md.iter().map(|(k, _)| k.as_str()).collect();
    keys.sort_unstable();
    keys.dedup();
    let mut lines = Vec::new();
    for k in keys {
        for (_, v) in md.iter().filter(|(name, _)| name == k) {
            let shown = if k.ends_with("-bin") {
                STANDARD.encode(v)
            } else {
                String::from_utf8_lossy(v).into_owned()
            };
            lines.push(format!("{k}: {shown}"));
        }
    }
    lines.join("\n")
}

/// What grpc-go hands its caller from a response's headers or trailers: everything but the
/// pseudo-headers and gRPC's own (`grpc-status`, `grpc-message`, `grpc-encoding`, `te`, ...),
/// `content-type` only when it is gRPC's, and `-bin` values base64-decoded.
pub(crate) fn from_response(headers: &http::HeaderMap) -> Metadata {
    let mut md = Metadata::new();
    for (name, value) in headers {
        let k = name.as_str();
        match k {
            "content-type" if !value.as_bytes().starts_with(b"application/grpc") => continue,
            "grpc-message-type" | "grpc-encoding" | "grpc-message" | "grpc-status"
            | "grpc-timeout" | "te" => continue,
            _ => {}
        }
        let raw = if k.ends_with("-bin") {
            let v = value.as_bytes();
            let engine = if v.len() % 4 == 0 {
                &STANDARD
            } else {
                &STANDARD_NO_PAD
            };
            engine.decode(v).unwrap_or_else(|_| v.to_vec())
        } else {
            value.as_bytes().to_vec()
        };
        md.push((k.to_owned(), raw));
    }
    md
}

/// Request metadata as HTTP/2 headers: `-bin` values base64 (unpadded, as grpc-go sends them).
pub fn to_header_map(md: &Metadata) -> Result<http::HeaderMap, String> {
    let mut map = http::HeaderMap::new();
    for (k, v) in md {
        // grpc-go's rule for metadata keys.
        let legal = !k.is_empty()
            && k.bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'z' | b'-' | b'_' | b'.'));
        let illegal = || {
            format!(
                "header key {} contains illegal characters not in [0-9a-z-_.]",
                crate::args::go_quote(k)
            )
        };
        if !legal {
            return Err(illegal());
        }
        let name = http::HeaderName::from_bytes(k.as_bytes()).map_err(|_| illegal())?;
        let value = if k.ends_with("-bin") {
            http::HeaderValue::from_str(&STANDARD_NO_PAD.encode(v))
        } else {
            http::HeaderValue::from_bytes(v)
        }
        .map_err(|_| {
            format!(
                "header key {} contains value with non-printable ASCII characters",
                crate::args::go_quote(k)
            )
        })?;
        map.append(name, value);
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_as_grpcurl() {
        let md = from_headers(&[
            "X-B-Bin: AAE=".into(),
            "a: 1: 2".into(),
            "novalue".into(),
            "a:  3 ".into(),
        ]);
        assert_eq!(md[0], ("x-b-bin".into(), vec![0, 1]));
        assert_eq!(to_string(&md), "a: 1: 2\na: 3\nnovalue: \nx-b-bin: AAE=");
        assert_eq!(to_string(&Metadata::new()), "(empty)");
    }

    #[test]
    fn expansion() {
        let env = |n: &str| (n == "TOKEN").then(|| "s3cret".to_owned());
        assert_eq!(
            expand_with(&["auth: Bearer ${TOKEN}".into(), "x: $y {z}".into()], env).unwrap(),
            ["auth: Bearer s3cret", "x: $y {z}"]
        );
        assert_eq!(
            expand_with(&["x: ${NOPE}".into()], env).unwrap_err(),
            "header \"x: ${NOPE}\" refers to missing environment variable \"NOPE\""
        );
    }
}
