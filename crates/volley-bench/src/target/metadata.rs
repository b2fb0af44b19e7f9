//! Request metadata: `-m` (ghz's JSON object of strings, or of lists of strings) and `-H`
//! (grpcurl's `Name: value`, which a gRPC target sends as metadata). Metadata without template
//! actions becomes part of the request head, built once; templated metadata is rendered per
//! call from the call's data, as ghz renders it (`{"request-id":"{{.UUID}}"}` gives each call
//! its own id).

use http::{HeaderName, HeaderValue};
use serde_json::Value;
use volley_proto::template::{CallData, Template};

/// One metadata entry, ready for a request head.
pub type Pair = (HeaderName, HeaderValue);

/// Metadata as given: fixed pairs, and a template rendered per call (when `-m` has actions).
#[derive(Default)]
pub struct Metadata {
    /// Sent the same on every call (part of the request head).
    pub fixed: Vec<Pair>,
    /// Rendered per call, after the fixed pairs.
    pub per_call: Option<MetadataTemplate>,
}

/// `-m` with template actions, rendered per call.
pub struct MetadataTemplate {
    template: Template,
    flag: &'static str,
}

impl MetadataTemplate {
    /// The pairs of one call, from its data.
    pub fn render(&self, data: &CallData) -> Result<Vec<Pair>, String> {
        let mut text = String::new();
        self.template
            .render(data, &mut text)
            .map_err(|e| format!("{}: {e}", self.flag))?;
        pairs(&text, self.flag)
    }
}

/// Reads `text` (`-m`, `--reflect-metadata` or a scenario's `metadata:`) named `flag` in
/// errors: a template when it has actions (rendered once now with `sample`, so that metadata
/// that cannot be made fails before any load), else fixed pairs.
pub fn parse(
    text: Option<&str>,
    sample: &CallData,
    flag: &'static str,
) -> Result<Metadata, String> {
    let Some(text) = text else {
        return Ok(Metadata::default());
    };
    if !volley_proto::template::looks_templated(text) {
        return Ok(Metadata {
            fixed: pairs(text, flag)?,
            per_call: None,
        });
    }
    let template = Template::parse(text).map_err(|e| format!("{flag}: {e}"))?;
    let t = MetadataTemplate { template, flag };
    t.render(sample)?;
    Ok(Metadata {
        fixed: Vec::new(),
        per_call: Some(t),
    })
}

/// `-H` lines (`Name: value`, as grpcurl's `-H`) as metadata pairs.
pub fn headers(lines: &[String]) -> Result<Vec<Pair>, String> {
    lines
        .iter()
        .map(|h| {
            let (k, v) = h
                .split_once(':')
                .ok_or_else(|| format!("-H {h:?}: expected 'Name: value'"))?;
            let name = HeaderName::from_bytes(k.trim().to_ascii_lowercase().as_bytes())
                .map_err(|_| format!("-H {h:?}: invalid header name"))?;
            let value = HeaderValue::from_str(v.trim())
                .map_err(|_| format!("-H {h:?}: invalid header value"))?;
            Ok((name, value))
        })
        .collect()
}

/// A JSON object of metadata (values: strings, or lists of strings for repeated keys; other
/// JSON values are sent as their JSON text) as pairs.
fn pairs(text: &str, flag: &str) -> Result<Vec<Pair>, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("{flag}: invalid JSON: {e}"))?;
    let Value::Object(map) = v else {
        return Err(format!("{flag}: metadata must be a JSON object of strings"));
    };
    let mut out = Vec::with_capacity(map.len());
    for (k, v) in map {
        let key = HeaderName::from_bytes(k.to_ascii_lowercase().as_bytes())
            .map_err(|_| format!("{flag}: invalid metadata key {k:?}"))?;
        let values: Vec<String> = match v {
            Value::String(s) => vec![s],
            Value::Array(a) => a
                .into_iter()
                .map(|x| {
                    x.as_str()
                        .map(String::from)
                        .unwrap_or_else(|| x.to_string())
                })
                .collect(),
            other => vec![other.to_string()],
        };
        for s in values {
            let val = HeaderValue::from_str(&s)
                .map_err(|_| format!("{flag}: invalid value for metadata key {k:?}"))?;
            out.push((key.clone(), val));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(n: i64, uuid: &str) -> CallData {
        CallData {
            request_number: n,
            uuid: uuid.to_owned(),
            ..CallData::default()
        }
    }

    #[test]
    fn fixed_metadata_is_read_once_and_templates_per_call() {
        let m = parse(Some(r#"{"a":"1","b":["x","y"]}"#), &data(0, ""), "-m").unwrap();
        assert!(m.per_call.is_none());
        let got: Vec<(&str, &str)> = m
            .fixed
            .iter()
            .map(|(k, v)| (k.as_str(), v.to_str().unwrap()))
            .collect();
        assert_eq!(got, [("a", "1"), ("b", "x"), ("b", "y")]);

        let m = parse(
            Some(r#"{"request-id":"{{.UUID}}","n":"{{.RequestNumber}}"}"#),
            &data(0, "u0"),
            "-m",
        )
        .unwrap();
        assert!(m.fixed.is_empty());
        let t = m.per_call.unwrap();
        let get = |pairs: &[Pair], k: &str| {
            pairs
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
                .unwrap()
        };
        let one = t.render(&data(7, "u7")).unwrap();
        assert_eq!(get(&one, "request-id"), "u7");
        assert_eq!(get(&one, "n"), "7");
        let two = t.render(&data(8, "u8")).unwrap();
        assert_eq!(get(&two, "request-id"), "u8");
    }

    #[test]
    fn bad_metadata_is_refused_before_any_call() {
        let e = |t: &str| parse(Some(t), &data(0, "u"), "-m").err().unwrap();
        assert_eq!(e("[1]"), "-m: metadata must be a JSON object of strings");
        assert!(e("{").starts_with("-m: invalid JSON"), "{}", e("{"));
        assert!(e(r#"{"a b":"x"}"#).contains("invalid metadata key"));
        assert!(e(r#"{"{{.WorkerID}}":"x"}"#).contains("invalid metadata key"));
        assert!(
            e(r#"{"a":"{{nope}}"}"#).starts_with("-m: template"),
            "{}",
            e(r#"{"a":"{{nope}}"}"#)
        );
    }

    #[test]
    fn header_lines_are_metadata_pairs() {
        let got = headers(&["Authorization: Bearer x".into(), "x-k:v".into()]).unwrap();
        assert_eq!(got[0].0, "authorization");
        assert_eq!(got[0].1, "Bearer x");
        assert_eq!(got[1].0, "x-k");
        assert_eq!(
            headers(&["nocolon".into()]).unwrap_err(),
            r#"-H "nocolon": expected 'Name: value'"#
        );
    }
}
