//! The gates section: `--threshold`s judged after the run (those with `{call=...}` must name a
//! method of the mix), `--abort-on` judged as it goes (a share of errors or of one status), and
//! the `--junit` file.

use std::path::PathBuf;

use crate::plan::{
    PlanError,
    args::BenchArgs,
    flags::Flags,
    mix::MixSpec,
    threshold::{self, Metric, Threshold, same_method},
};

/// What the gates section resolves to.
pub(super) struct Gates {
    pub(super) thresholds: Vec<Threshold>,
    pub(super) abort_on: Option<Threshold>,
    pub(super) junit: Option<PathBuf>,
}

/// Resolves the gates section, taking its options from `f`.
pub(super) fn gates(a: &BenchArgs, f: &mut Flags, mix: &[MixSpec]) -> Result<Gates, PlanError> {
    let abort_on = match &a.abort_on {
        None => None,
        Some(text) => {
            let t =
                threshold::parse(text).map_err(|e| PlanError::new(format!("--abort-on: {e}")))?;
            if t.call.is_some() {
                bail!("--abort-on {text:?}: judges all calls; give it without {{call=...}}");
            }
            if !t.share || !matches!(t.metric, Metric::Errors | Metric::Status(_)) {
                bail!(
                    "--abort-on {text:?}: give errors or status.CODE as a share (errors>50%): what can be judged while the run goes on"
                );
            }
            Some(t)
        }
    };
    let thresholds = threshold::parse_all(&f.thresholds.take().unwrap_or_default())
        .map_err(|e| PlanError::new(e.to_string()))?;
    for t in &thresholds {
        let Some(c) = &t.call else { continue };
        if !mix.iter().any(|m| same_method(&m.name, c)) {
            let names: Vec<&str> = mix.iter().map(|m| m.name.as_str()).collect();
            if names.is_empty() {
                bail!(
                    "threshold {:?}: {{call=...}} selects a method of a mix, and this run calls one method",
                    t.text
                );
            }
            bail!(
                "threshold {:?}: the mix has no method {c} (it has {})",
                t.text,
                names.join(", ")
            );
        }
    }
    Ok(Gates {
        thresholds,
        abort_on,
        junit: a.junit.clone(),
    })
}
