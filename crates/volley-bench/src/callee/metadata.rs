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

/// `-m` with template actions, rendered per call. A JSON object whose keys are plain and whose
/// values are strings (ghz's form: `{"request-id":"{{.UUID}}"}`) is compiled once: each value
/// is its own template, rendered straight into the header value, and the fixed pairs are kept
/// as they are. Anything else (a templated key, a value that is not a string) is rendered whole
/// and read as JSON per call.
pub struct MetadataTemplate {
    form: Form,
    flag: &'static str,
}

enum Form {
    /// The object's pairs in order, each fixed or a template of its value.
    Compiled(Vec<(HeaderName, Entry)>),
    /// The whole text, rendered then read as JSON.
    Whole(Template),
}

enum Entry {
    Fixed(HeaderValue),
    Templated(Template),
}

impl MetadataTemplate {
    /// Whether any of its templates reads variable `name`.
    pub fn reads(&self, name: &str) -> bool {
        match &self.form {
            Form::Whole(t) => t.reads(name),
            Form::Compiled(entries) => entries
                .iter()
                .any(|(_, e)| matches!(e, Entry::Templated(t) if t.reads(name))),
        }
    }

    /// The pairs of one call, from its data.
    pub fn render(&self, data: &CallData) -> Result<Vec<Pair>, String> {
        match &self.form {
            Form::Compiled(entries) => {
                let mut out = Vec::with_capacity(entries.len());
                for (name, entry) in entries {
                    let value = match entry {
                        Entry::Fixed(v) => v.clone(),
                        Entry::Templated(t) => {
                            let mut text = String::new();
                            t.render(data, &mut text)
                                .map_err(|e| format!("{}: {e}", self.flag))?;
                            HeaderValue::from_maybe_shared(bytes::Bytes::from(text)).map_err(
                                |_| {
                                    format!(
                                        "{}: invalid value for metadata key {:?}",
                                        self.flag,
                                        name.as_str()
                                    )
                                },
                            )?
                        }
                    };
                    out.push((name.clone(), value));
                }
                Ok(out)
            }
            Form::Whole(t) => {
                let mut text = String::new();
                t.render(data, &mut text)
                    .map_err(|e| format!("{}: {e}", self.flag))?;
                pairs(&text, self.flag)
            }
        }
    }
}

/// ghz's form compiled: a JSON object with plain keys and string values (or lists of strings);
/// `None` for any other form.
fn compile(text: &str, flag: &'static str) -> Result<Option<Form>, String> {
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(text) else {
        return Ok(None);
    };
    let mut entries = Vec::new();
    for (k, v) in map {
        if volley_proto::template::looks_templated(&k) {
            return Ok(None);
        }
        let name = HeaderName::from_bytes(k.to_ascii_lowercase().as_bytes())
            .map_err(|_| format!("{flag}: invalid metadata key {k:?}"))?;
        let values: Vec<String> = match v {
            Value::String(s) => vec![s],
            Value::Array(a) if a.iter().all(Value::is_string) => a
                .into_iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect(),
            _ => return Ok(None),
        };
        for s in values {
            let entry = if volley_proto::template::looks_templated(&s) {
                Entry::Templated(Template::parse(&s).map_err(|e| format!("{flag}: {e}"))?)
            } else {
                Entry::Fixed(
                    HeaderValue::from_str(&s)
                        .map_err(|_| format!("{flag}: invalid value for metadata key {k:?}"))?,
                )
            };
            entries.push((name.clone(), entry));
        }
    }
    Ok(Some(Form::Compiled(entries)))
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
    let form = match compile(text, flag)? {
        Some(f) => f,
        None => Form::Whole(Template::parse(text).map_err(|e| format!("{flag}: {e}"))?),
    };
    let t = MetadataTemplate { form, flag };
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
    fn ghz_form_compiles_and_other_forms_render_whole() {
        let m = parse(
            Some(r#"{"a":"{{.RequestNumber}}","b":"fixed","c":["{{.UUID}}","x"]}"#),
            &data(0, "u"),
            "-m",
        )
        .unwrap();
        let t = m.per_call.unwrap();
        assert!(matches!(t.form, Form::Compiled(_)));
        let got: Vec<(String, String)> = t
            .render(&data(3, "u3"))
            .unwrap()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap().to_owned()))
            .collect();
        let want = [("a", "3"), ("b", "fixed"), ("c", "u3"), ("c", "x")];
        assert_eq!(
            got,
            want.map(|(k, v)| (k.to_owned(), v.to_owned())).to_vec()
        );
        // A templated key: rendered whole, then read as JSON.
        let m = parse(Some(r#"{"k{{.RequestNumber}}":"v"}"#), &data(0, ""), "-m").unwrap();
        let t = m.per_call.unwrap();
        assert!(matches!(t.form, Form::Whole(_)));
        assert_eq!(t.render(&data(5, "")).unwrap()[0].0, "k5");
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
