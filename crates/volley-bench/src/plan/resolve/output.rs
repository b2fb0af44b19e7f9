//! The output section: the report's format and file, what it carries beside the figures (name,
//! tags, per-call details, errors counted in the percentiles), the `--debug` log and the
//! server's figures (`--server-metrics`).

use std::path::PathBuf;

use serde_json::Value;

use crate::plan::{
    PlanError,
    args::BenchArgs,
    flags::Flags,
    options::{Format, MAX_DETAILS},
};

/// What the output section resolves to.
pub(super) struct OutputPart {
    pub(super) format: Format,
    pub(super) output: Option<PathBuf>,
    pub(super) tags: Option<Value>,
    pub(super) name: String,
    pub(super) debug: Option<PathBuf>,
    pub(super) details_cap: usize,
    pub(super) count_errors: bool,
    pub(super) server_metrics: Option<String>,
}

/// Resolves the output section, taking its options from `f`.
pub(super) fn output(
    a: &BenchArgs,
    f: &mut Flags,
    http_mode: bool,
) -> Result<OutputPart, PlanError> {
    let format = f.format.take().unwrap_or(Format::Summary);
    if format == Format::Wrk && !http_mode {
        bail!("-O wrk is for HTTP targets (http://...)");
    }
    let tags = match f.tags.take() {
        None => None,
        Some(t) => {
            let v: Value = serde_json::from_str(&t)
                .map_err(|e| PlanError::new(format!("--tags: invalid JSON: {e}")))?;
            if !v.is_object() {
                bail!("--tags must be a JSON object");
            }
            Some(v)
        }
    };
    Ok(OutputPart {
        format,
        output: f.output.take(),
        tags,
        name: f.name.take().unwrap_or_default(),
        debug: f.debug.take(),
        details_cap: if format.needs_details() {
            MAX_DETAILS
        } else {
            0
        },
        count_errors: f.count_errors.take().unwrap_or(false),
        server_metrics: a.server_metrics.clone(),
    })
}
