//! Metrics expositions read by the Prometheus project's own parser (the Python
//! prometheus_client, installed by `scripts/install-test-tools`), so that a test checks what a
//! real scraper reads, not what our own parser accepts.

use std::process::Command;

use serde_json::Value;

use crate::{output_with_stdin, tool, workspace};

/// Which exposition format the text is in.
#[derive(Clone, Copy, Debug)]
pub enum Exposition {
    /// OpenMetrics (`volley serve --metrics`).
    OpenMetrics,
    /// Prometheus' classic text format 0.0.4 (`volley bench --prometheus-listen`).
    Text,
}

/// The samples of an exposition as the Prometheus project's parser reads them, one JSON object
/// each (`family`, `type`, `name`, `labels`, `value`); fails the test if the text does not parse.
pub fn prometheus_samples(text: &str, format: Exposition) -> Vec<Value> {
    let script = workspace().join("scripts/peers/prometheus/parse.py");
    let arg = match format {
        Exposition::OpenMetrics => "openmetrics",
        Exposition::Text => "text",
    };
    let out = output_with_stdin(
        Command::new(tool("peer-python")).arg(script).arg(arg),
        text.as_bytes(),
    );
    assert!(
        out.status.success(),
        "prometheus_client rejects the exposition: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The value of the sample `name` with exactly these labels.
pub fn sample(samples: &[Value], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .find(|s| {
            s["name"] == name
                && s["labels"].as_object().unwrap().len() == labels.len()
                && labels.iter().all(|(k, v)| s["labels"][*k] == *v)
        })
        .map(|s| s["value"].as_f64().unwrap())
}
