//! ghz's report layouts, read the way a ghz user's tooling reads them: the summary parsed, its
//! shape with the numbers blanked, JSON key paths, InfluxDB line keys, Prometheus series and
//! labels. [`assert_same_layout`] checks a volley report against ghz's report of the same options,
//! whether ghz ran beside it or the report is one of the golden files under
//! `crates/volley-bench/tests/fixtures`; [`assert_valid_report`] checks a JSON report against
//! the schema of `-O json`, `crates/volley-bench/schema/report.schema.json`.

use std::sync::OnceLock;

use serde_json::Value;

/// What a ghz summary holds, as [`parse_summary`] reads it.
#[derive(Debug, PartialEq)]
pub struct Summary {
    /// The labels of the figures block, in order.
    pub labels: Vec<String>,
    /// `Count`.
    pub count: u64,
    /// Rows of the histogram.
    pub histogram_rows: usize,
    /// The percentiles listed.
    pub percentiles: Vec<u32>,
    /// Status rows: code and count.
    pub statuses: Vec<(String, u64)>,
    /// Rows of the error distribution.
    pub errors: usize,
}

/// The parser a ghz user would point at a summary: every labelled figure, the histogram rows,
/// the percentiles, and the status rows. Panics on anything that is not ghz's layout.
pub fn parse_summary(s: &str) -> Summary {
    let mut lines = s.lines();
    assert_eq!(lines.next(), Some(""), "leading blank line");
    assert_eq!(lines.next(), Some("Summary:"));
    let mut labels = Vec::new();
    let mut count = 0;
    for l in lines.by_ref() {
        if l.is_empty() {
            break;
        }
        let (label, value) = l.trim_start().split_once(":\t").expect("label:\\tvalue");
        if label == "Count" {
            count = value.parse().unwrap();
        }
        labels.push(label.to_string());
    }
    assert_eq!(lines.next(), Some("Response time histogram:"));
    let mut histogram_rows = 0;
    for l in lines.by_ref() {
        if l.is_empty() {
            break;
        }
        let (mark, rest) = l.trim_start().split_once(' ').unwrap();
        mark.parse::<f64>().unwrap();
        assert!(rest.trim_start().starts_with('['), "{l}");
        assert!(rest.contains(" |"), "{l}");
        histogram_rows += 1;
    }
    assert_eq!(lines.next(), Some("Latency distribution:"));
    let mut percentiles = Vec::new();
    for l in lines.by_ref() {
        if l.is_empty() {
            break;
        }
        assert!(l.ends_with(' '), "trailing space: {l:?}");
        let (p, _) = l.trim().split_once(" % in ").expect("NN % in X");
        percentiles.push(p.parse().unwrap());
    }
    assert_eq!(lines.next(), Some("Status code distribution:"));
    let mut statuses = Vec::new();
    for l in lines.by_ref() {
        if l.is_empty() {
            break;
        }
        let l = l.trim();
        let (code, rest) = l.trim_start_matches('[').split_once(']').unwrap();
        let n = rest.trim().trim_end_matches(" responses").parse().unwrap();
        statuses.push((code.to_string(), n));
    }
    let mut errors = 0;
    if lines.next() == Some("Error distribution:") {
        for l in lines.by_ref() {
            if l.is_empty() {
                break;
            }
            errors += 1;
        }
    }
    Summary {
        labels,
        count,
        histogram_rows,
        percentiles,
        statuses,
        errors,
    }
}

/// The summary with every number and bar blanked: what must match ghz byte for byte.
pub fn shape(s: &str) -> String {
    let mut out = String::new();
    let mut prev_digit = false;
    for ch in s.chars() {
        match ch {
            '0'..='9' | '.' if prev_digit || ch != '.' => {
                if !prev_digit {
                    out.push('N');
                }
                prev_digit = true;
            }
            '∎' => {}
            _ => {
                prev_digit = false;
                out.push(ch);
            }
        }
    }
    // Column padding depends on the numbers' widths.
    out.split('\n')
        .map(|l| {
            l.split_whitespace().collect::<Vec<_>>().join(" ")
                + if l.ends_with(' ') { "␠" } else { "" }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every key path of a JSON value (`/options/call`; arrays by their first element, `[]`).
pub fn json_keys(v: &Value, path: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{path}/{k}");
                out.push(p.clone());
                json_keys(x, &p, out);
            }
        }
        Value::Array(a) => {
            if let Some(x) = a.first() {
                json_keys(x, &format!("{path}[]"), out);
            }
        }
        _ => {}
    }
}

/// The formats [`assert_same_layout`] compares.
pub const FORMATS: [&str; 7] = [
    "summary",
    "csv",
    "json",
    "pretty",
    "influx-summary",
    "influx-details",
    "prometheus",
];

/// Asserts that `volley`'s report in `format` has ghz's layout, `ghz` being ghz's report of a run
/// with the same options in which every call succeeded: the summary byte for byte with numbers
/// blanked, csv's header and columns, the JSON keys (volley's additions only under `/volley`)
/// and `options` block, InfluxDB tags and fields, Prometheus series and labels.
pub fn assert_same_layout(format: &str, ghz: &str, volley: &str) {
    let (g, v) = (ghz, volley);
    match format {
        "summary" => {
            assert_eq!(
                shape(g),
                shape(v),
                "summary layout\nghz:\n{g}\nvolley:\n{v}"
            );
            assert_eq!(parse_summary(g), parse_summary(v));
        }
        "csv" => {
            let (gl, vl): (Vec<_>, Vec<_>) = (g.lines().collect(), v.lines().collect());
            assert_eq!(gl.len(), vl.len());
            assert_eq!(gl[..2], vl[..2], "blank line and header");
            for row in &vl[2..] {
                let f: Vec<_> = row.split(',').collect();
                assert_eq!(f.len(), 3, "{row}");
                f[0].parse::<f64>().unwrap();
                assert_eq!((f[1], f[2]), ("OK", ""));
            }
            assert_eq!(g.ends_with('\n'), v.ends_with('\n'));
        }
        "json" | "pretty" => {
            let (gj, vj): (Value, Value) = (
                serde_json::from_str(g).unwrap(),
                serde_json::from_str(v).unwrap(),
            );
            let (mut gk, mut vk) = (Vec::new(), Vec::new());
            json_keys(&gj, "", &mut gk);
            json_keys(&vj, "", &mut vk);
            let missing: Vec<_> = gk.iter().filter(|k| !vk.contains(k)).collect();
            assert!(missing.is_empty(), "{format}: volley lacks {missing:?}");
            let extra: Vec<_> = vk
                .iter()
                .filter(|k| !gk.contains(k) && !k.starts_with("/volley"))
                .collect();
            assert!(
                extra.is_empty(),
                "{format}: volley adds {extra:?} outside /volley"
            );
            assert_eq!(gj["options"], vj["options"], "{format}: options block");
            assert_eq!(g.ends_with('\n'), v.ends_with('\n'));
            assert_eq!(
                g.contains("\n  "),
                v.contains("\n  "),
                "{format}: indentation"
            );
        }
        "influx-summary" => {
            assert_eq!(influx_keys(g), influx_keys(v));
            assert_eq!(g.ends_with('\n'), v.ends_with('\n'));
        }
        "influx-details" => {
            assert_eq!(g.lines().count(), v.lines().count());
            assert_eq!(
                influx_keys(g.lines().next().unwrap()),
                influx_keys(v.lines().next().unwrap())
            );
        }
        "prometheus" => {
            assert_eq!(prometheus_series(g), prometheus_series(v));
            assert_eq!(prometheus_labels(g), prometheus_labels(v));
        }
        other => panic!("no layout check for {other}"),
    }
}

/// The tag and field names of an InfluxDB line.
pub fn influx_keys(line: &str) -> (Vec<String>, Vec<String>) {
    let mut parts = line.splitn(3, ' ');
    let tags = parts.next().unwrap();
    let fields = parts.next().unwrap();
    let names = |s: &str| -> Vec<String> {
        s.split(',')
            .filter_map(|kv| kv.split_once('=').map(|(k, _)| k.to_string()))
            .collect()
    };
    (names(tags), names(fields))
}

/// The series name of each line of a Prometheus exposition (a comment line whole, with its
/// metric name and type).
pub fn prometheus_series(s: &str) -> Vec<String> {
    s.lines()
        .map(|l| {
            if l.starts_with('#') {
                return l.to_string();
            }
            l.split('{')
                .next()
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .to_string()
        })
        .collect()
}

/// The label names of the first sample, sorted.
pub fn prometheus_labels(s: &str) -> Vec<String> {
    let first = s.lines().nth(1).unwrap();
    let inner = first.split('{').nth(1).unwrap().split('}').next().unwrap();
    let mut names: Vec<String> = inner
        .split("\",")
        .map(|kv| kv.split('=').next().unwrap().to_string())
        .collect();
    names.sort();
    names
}

/// Asserts that `report` (an `-O json` report) satisfies the report schema, listing every place
/// where it does not.
pub fn assert_valid_report(report: &Value) {
    static SCHEMA: OnceLock<jsonschema::Validator> = OnceLock::new();
    let validator = SCHEMA.get_or_init(|| {
        let path = crate::workspace().join("crates/volley-bench/schema/report.schema.json");
        let text = std::fs::read_to_string(&path).expect("the report schema");
        let schema: Value = serde_json::from_str(&text).expect("the schema is JSON");
        jsonschema::draft202012::new(&schema).expect("a valid JSON Schema")
    });
    let errors: Vec<String> = validator
        .iter_errors(report)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "the report does not fit report.schema.json:\n{}\n{report}",
        errors.join("\n")
    );
}
