//! `--out json=FILE`: every metric sample, one JSON line each, as k6's JSON output writes them:
//! a `Metric` line the first time a metric is seen (its name, type, what its values are and
//! the thresholds on it), then a `Point` line per sample with its time, value and tags. A
//! worker's VUs append to a buffer of the worker's own; the buffer goes to the file when the
//! worker merges its metrics (every half second, and when its VUs end), so the file's lock is
//! taken twice a second per worker, not per sample.

use std::{
    cell::RefCell,
    collections::{BTreeMap, HashMap},
    fs::File,
    io::{BufWriter, Write},
    sync::Mutex,
    time::{SystemTime, UNIX_EPOCH},
};

use serde_json::{Value, json};

use crate::metrics::{Def, Registry};

/// `--out` values volley writes.
pub(crate) const TYPES: &str = "json";

/// Where the samples go.
#[derive(Debug)]
pub(crate) struct JsonOut {
    /// The path as given, for the banner.
    pub path: String,
    file: Mutex<BufWriter<File>>,
    /// Metric ids whose `Metric` line is written.
    seen: Mutex<Vec<bool>>,
    /// The thresholds' sources by metric name, for the `Metric` lines.
    thresholds: HashMap<String, Vec<String>>,
}

thread_local! {
    /// This thread's `Point` lines not yet written.
    static BUF: RefCell<String> = const { RefCell::new(String::new()) };
}

/// What `--out VALUE` asks for: `json=FILE` gives the file, anything else an error for the
/// user.
pub(crate) fn parse(value: &str) -> Result<String, String> {
    match value.split_once('=') {
        Some(("json", path)) if path.ends_with(".gz") => Err(format!(
            "--out {value}: volley writes the JSON lines uncompressed; name a file without .gz and compress it after the run"
        )),
        Some(("json", path)) if !path.is_empty() => Ok(path.to_owned()),
        Some(("json", _)) | None if value == "json" || value == "json=" => Err(format!(
            "--out {value}: give the file to write, as json=results.json"
        )),
        _ => {
            let kind = value.split_once('=').map_or(value, |(k, _)| k);
            Err(format!(
                "--out {value}: volley writes the output type {TYPES} (json=FILE), not {kind:?}"
            ))
        }
    }
}

impl JsonOut {
    /// Creates (or truncates) `path`.
    pub(crate) fn create(
        path: &str,
        thresholds: HashMap<String, Vec<String>>,
    ) -> Result<JsonOut, String> {
        let file = File::create(path).map_err(|e| format!("--out json={path}: {e}"))?;
        Ok(JsonOut {
            path: path.to_owned(),
            file: Mutex::new(BufWriter::new(file)),
            seen: Mutex::new(Vec::new()),
            thresholds,
        })
    }

    /// Appends one sample of metric `metric`, with `tags` (later pairs win over earlier ones
    /// of the same key), to this thread's buffer; the metric's `Metric` line goes to the file
    /// first, the first time.
    pub(crate) fn point<'a>(
        &self,
        registry: &Registry,
        metric: usize,
        value: f64,
        tags: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) {
        let name = self.describe(registry, metric);
        let tags: BTreeMap<&str, &str> = tags.into_iter().collect();
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
        let line = json!({
            "metric": name,
            "type": "Point",
            "data": {
                "time": volley_proto::gofmt::rfc3339_nano(nanos),
                "value": number(value),
                "tags": tags,
            },
        });
        BUF.with(|b| {
            let mut b = b.borrow_mut();
            b.push_str(&line.to_string());
            b.push('\n');
        });
    }

    /// The metric's name, its `Metric` line written to the file if this is its first sample.
    fn describe(&self, registry: &Registry, metric: usize) -> String {
        let Some(def) = registry.def(metric) else {
            return String::new();
        };
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if seen.len() <= metric {
            seen.resize(metric + 1, false);
        }
        if !seen[metric] {
            seen[metric] = true;
            let thresholds: Vec<&String> = self
                .thresholds
                .get(&def.name)
                .map(|t| t.iter().collect())
                .unwrap_or_default();
            let line = json!({
                "type": "Metric",
                "data": {
                    "name": def.name,
                    "type": def.kind.name(),
                    "contains": contains(&def),
                    "thresholds": thresholds,
                    "submetrics": Value::Null,
                },
                "metric": def.name,
            });
            let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
            let _ = writeln!(f, "{line}");
        }
        def.name.clone()
    }

    /// Writes this thread's buffered points.
    pub(crate) fn flush_thread(&self) {
        let text = BUF.with(|b| std::mem::take(&mut *b.borrow_mut()));
        if !text.is_empty() {
            let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
            let _ = f.write_all(text.as_bytes());
        }
    }

    /// Writes what is buffered on this thread and in the file's buffer.
    pub(crate) fn finish(&self) -> std::io::Result<()> {
        self.flush_thread();
        self.file.lock().unwrap_or_else(|e| e.into_inner()).flush()
    }
}

/// A whole value as an integer (`1`, not `1.0`, as Go writes a float64 that is whole).
fn number(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9_007_199_254_740_992.0 {
        Value::from(v as i64)
    } else {
        Value::from(v)
    }
}

/// What a metric's values are, in k6's words.
fn contains(def: &Def) -> &'static str {
    if def.time {
        "time"
    } else if def.name == "data_sent" || def.name == "data_received" {
        "data"
    } else {
        "default"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_takes_json_with_a_file_and_names_what_it_does_not_take() {
        assert_eq!(parse("json=results.json").unwrap(), "results.json");
        assert!(parse("json").unwrap_err().contains("json=results.json"));
        assert!(
            parse("json=r.json.gz")
                .unwrap_err()
                .contains("uncompressed")
        );
        let e = parse("csv=results.csv").unwrap_err();
        assert!(e.contains("\"csv\"") && e.contains("json=FILE"), "{e}");
        assert!(
            parse("influxdb=http://x")
                .unwrap_err()
                .contains("\"influxdb\"")
        );
    }
}
