//! A mix of calls in one run: `--call NAME:WEIGHT` given more than once, or a scenario file's
//! `mix:` list, each entry a gRPC method or an HTTP request with a weight and, in a scenario,
//! its own data, data file, metadata and stream length. Read here into [`MixSpec`]s; the target
//! is built from them in `callee::build`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{
    error::PlanError,
    source::{DataSource, LineOrder},
};

/// One entry of a mix, as given.
#[derive(Debug, Clone, PartialEq)]
pub struct MixSpec {
    /// The name reports and thresholds use: the method as given, or `GET http://...`.
    pub name: String,
    /// Relative weight.
    pub weight: u64,
    /// What it calls.
    pub call: MixCall,
    /// Its own request data (else the run's).
    pub data: Option<DataSource>,
    /// Its own metadata JSON (else the run's).
    pub metadata: Option<String>,
    /// Its own `stream-call-count` (else the run's).
    pub stream_call_count: Option<u64>,
}

/// What an entry calls.
#[derive(Debug, Clone, PartialEq)]
pub enum MixCall {
    /// A gRPC method (`package.Service/Method` or `package.Service.Method`).
    Grpc(String),
    /// An HTTP request to the run's server, over HTTP/2.
    Http {
        /// GET, POST, ...
        method: String,
        /// The full URL.
        url: String,
    },
}

fn fail<T>(message: String) -> Result<T, PlanError> {
    Err(PlanError::new(message))
}

/// The mix of `--call` flags: `None` for a single `--call` without a weight (a plain run).
pub(crate) fn from_calls(calls: &[String]) -> Result<Option<Vec<MixSpec>>, PlanError> {
    if calls.len() == 1 && !calls[0].contains(':') {
        return Ok(None);
    }
    let mut out = Vec::new();
    for text in calls {
        let (name, weight) = match text.rsplit_once(':') {
            Some((name, w)) => (name.trim(), weight(w.trim(), &format!("--call {text}"))?),
            None => (text.trim(), 1),
        };
        if name.is_empty() {
            return fail(format!(
                "--call {text}: expected package.Service/Method:WEIGHT"
            ));
        }
        out.push(MixSpec {
            name: name.to_owned(),
            weight,
            call: MixCall::Grpc(name.to_owned()),
            data: None,
            metadata: None,
            stream_call_count: None,
        });
    }
    check_weights(&out)?;
    Ok(Some(out))
}

fn weight(text: &str, what: &str) -> Result<u64, PlanError> {
    text.parse::<u64>().map_err(|_| {
        PlanError::new(format!(
            "{what}: the weight {text:?} is not a whole number (api.Users.Get:80)"
        ))
    })
}

/// The keys a `mix:` entry may have.
const KEYS: [&str; 9] = [
    "call",
    "http",
    "weight",
    "data",
    "data-file",
    "data-order",
    "metadata",
    "stream-call-count",
    "name",
];

/// A scenario's `mix:` list. Relative `data-file` paths are taken from `base` (the scenario
/// file's folder).
pub(crate) fn from_config(v: &Value, base: &Path) -> Result<Vec<MixSpec>, PlanError> {
    let Value::Array(entries) = v else {
        return fail(format!(
            "mix: expected a list of entries ({{call: api.Users.Get, weight: 80}}), not {v}"
        ));
    };
    if entries.is_empty() {
        return fail("mix: the list is empty".into());
    }
    let mut out = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let at = format!("mix entry {}", i + 1);
        let Value::Object(m) = e else {
            return fail(format!(
                "{at}: expected an object ({{call: api.Users.Get, weight: 80}}), not {e}"
            ));
        };
        if let Some(k) = m.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return fail(format!(
                "{at}: unknown key {k:?} (one of {})",
                KEYS.join(", ")
            ));
        }
        let text = |key: &str| -> Result<Option<String>, PlanError> {
            match m.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(v) => fail(format!("{at}: {key} must be a string, not {v}")),
            }
        };
        let whole = |key: &str| -> Result<Option<u64>, PlanError> {
            match m.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => v.as_u64().map(Some).ok_or_else(|| {
                    PlanError::new(format!("{at}: {key} must be a whole number, not {v}"))
                }),
            }
        };
        let (name, call) = match (text("call")?, text("http")?) {
            (Some(c), None) => (c.clone(), MixCall::Grpc(c)),
            (None, Some(h)) => {
                let (method, url) = match h.trim().split_once(' ') {
                    Some((m, u)) => (m.trim().to_ascii_uppercase(), u.trim().to_owned()),
                    None => ("GET".to_owned(), h.trim().to_owned()),
                };
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return fail(format!(
                        "{at}: http {h:?}: expected \"METHOD http://host:port/path\""
                    ));
                }
                (format!("{method} {url}"), MixCall::Http { method, url })
            }
            (Some(_), Some(_)) => return fail(format!("{at}: give call or http, not both")),
            (None, None) => {
                return fail(format!(
                    "{at}: give call (a gRPC method) or http (\"GET http://...\")"
                ));
            }
        };
        let order = match text("data-order")? {
            None => None,
            Some(o) => Some(
                LineOrder::parse(&o)
                    .map_err(|e| PlanError::new(format!("{at}: data-order {e}")))?,
            ),
        };
        let data = match (m.get("data"), text("data-file")?) {
            (Some(_), Some(_)) => return fail(format!("{at}: give data or data-file, not both")),
            (Some(Value::String(s)), None) => Some(DataSource::Json(s.clone())),
            (Some(v), None) => Some(DataSource::Json(v.to_string())),
            (None, Some(f)) => Some(data_file(&base.join(f), &at, order.unwrap_or_default())?),
            (None, None) => None,
        };
        if order.is_some() && !matches!(data, Some(DataSource::Lines(..))) {
            return fail(format!(
                "{at}: data-order applies to an NDJSON data-file (.ndjson, .jsonl)"
            ));
        }
        let metadata = match m.get("metadata") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(v) => Some(v.to_string()),
        };
        out.push(MixSpec {
            name: text("name")?.unwrap_or(name),
            weight: whole("weight")?.unwrap_or(1),
            call,
            data,
            metadata,
            stream_call_count: whole("stream-call-count")?,
        });
    }
    check_weights(&out)?;
    Ok(out)
}

/// Whether a data file is NDJSON (`.ndjson`, `.jsonl`): one message per line, streamed.
pub(crate) fn is_lines(path: &Path) -> bool {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    ext == "ndjson" || ext == "jsonl"
}

/// A data file: NDJSON (`.ndjson`, `.jsonl`) is streamed from disk one line per message; any
/// other file is read whole as JSON, as `-D` reads it.
pub(crate) fn data_file(
    path: &Path,
    what: &str,
    order: LineOrder,
) -> Result<DataSource, PlanError> {
    if is_lines(path) {
        std::fs::metadata(path)
            .map_err(|e| PlanError::new(format!("{what}: cannot read {}: {e}", path.display())))?;
        return Ok(DataSource::Lines(PathBuf::from(path), order));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| PlanError::new(format!("{what}: cannot read {}: {e}", path.display())))?;
    Ok(DataSource::Json(text))
}

fn check_weights(mix: &[MixSpec]) -> Result<(), PlanError> {
    // Found by the bench_parsers fuzz target: weights summing past u64 overflowed here.
    let Some(total) = mix.iter().try_fold(0u64, |t, m| t.checked_add(m.weight)) else {
        return fail(format!(
            "the mix's weights add up to more than {}: weights are relative, use smaller ones \
             (api.Users.Get:80, api.Users.List:20)",
            u64::MAX
        ));
    };
    if total == 0 {
        return fail(format!(
            "the mix's weights sum to 0 ({}): give at least one entry a positive weight",
            mix.iter()
                .map(|m| format!("{}:{}", m.name, m.weight))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if let Some(m) = mix
        .iter()
        .enumerate()
        .find(|(i, m)| mix[..*i].iter().any(|o| o.name == m.name))
    {
        return fail(format!(
            "the mix names {} twice: give each entry its own name (name: ...)",
            m.1.name
        ));
    }
    Ok(())
}

/// The report's `call` for a mix: each entry with its weight, comma-separated.
pub(crate) fn describe(mix: &[MixSpec]) -> String {
    mix.iter()
        .map(|m| format!("{}:{}", m.name, m.weight))
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(v: &[&str]) -> Result<Option<Vec<MixSpec>>, PlanError> {
        from_calls(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn weighted_calls_make_a_mix_and_one_plain_call_does_not() {
        assert_eq!(calls(&["api.Users.Get"]).unwrap(), None);
        let m = calls(&["api.Users.Get:80", "api.Users/List:20"])
            .unwrap()
            .unwrap();
        assert_eq!(
            m.iter()
                .map(|e| (e.name.as_str(), e.weight))
                .collect::<Vec<_>>(),
            [("api.Users.Get", 80), ("api.Users/List", 20)]
        );
        assert_eq!(describe(&m), "api.Users.Get:80,api.Users/List:20");
    }

    #[test]
    fn bad_mixes_say_what_is_wrong_in_one_line() {
        let cases: [(&[&str], &str); 4] = [
            (
                &["a.B.C:x"],
                "--call a.B.C:x: the weight \"x\" is not a whole number",
            ),
            (&["a.B.C:0", "a.B.D:0"], "the mix's weights sum to 0"),
            (
                &["a.B.C:18446744073709551615", "a.B.D:1"],
                "the mix's weights add up to more than 18446744073709551615",
            ),
            (&["a.B.C:1", "a.B.C:2"], "the mix names a.B.C twice"),
        ];
        for (args, want) in cases {
            let e = calls(args).unwrap_err().to_string();
            assert!(e.starts_with(want), "{args:?}: {e}");
            assert!(!e.contains('\n'));
        }
        let base = Path::new(".");
        let configs = [
            (r#"{"call": "a.B.C"}"#, "mix: expected a list"),
            (r#"[]"#, "mix: the list is empty"),
            (
                r#"[{"call": "a.B.C", "wieght": 2}]"#,
                "mix entry 1: unknown key \"wieght\"",
            ),
            (r#"[{"weight": 2}]"#, "mix entry 1: give call"),
            (
                r#"[{"call": "a.B.C", "weight": -1}]"#,
                "mix entry 1: weight must be a whole number",
            ),
            (
                r#"[{"http": "GET localhost/"}]"#,
                "mix entry 1: http \"GET localhost/\"",
            ),
            (
                r#"[{"call": "a.B.C", "data-file": "/nonexistent.ndjson"}]"#,
                "mix entry 1: cannot read /nonexistent.ndjson",
            ),
        ];
        for (text, want) in configs {
            let v: Value = serde_json::from_str(text).unwrap();
            let e = from_config(&v, base).unwrap_err().to_string();
            assert!(e.starts_with(want), "{text}: {e}");
        }
    }

    #[test]
    fn scenario_entries_carry_their_own_data() {
        let v: Value = serde_json::from_str(
            r#"[{"call": "api.Users.Get", "weight": 80, "data": {"id": "{{randomInt 1 10000}}"}},
                {"http": "GET http://127.0.0.1:1/", "weight": 1, "metadata": {"k": "v"}},
                {"call": "orders.OrderService/AddOrder", "stream-call-count": 10}]"#,
        )
        .unwrap();
        let m = from_config(&v, Path::new(".")).unwrap();
        assert_eq!(
            m[0].data,
            Some(DataSource::Json(r#"{"id":"{{randomInt 1 10000}}"}"#.into()))
        );
        assert_eq!(m[1].name, "GET http://127.0.0.1:1/");
        assert_eq!(m[1].metadata.as_deref(), Some(r#"{"k":"v"}"#));
        assert_eq!((m[2].weight, m[2].stream_call_count), (1, Some(10)));
    }
}
