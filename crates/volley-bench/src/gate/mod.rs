//! CI gates: thresholds (`--threshold 'p99<50ms'`) judged against a finished run, the verdicts
//! carried in the report, and the exit code a CI script reads: 0 when every threshold held,
//! [`EXIT_FAILED`] (99, k6's) when one failed, [`EXIT_INVALID`] (98) when the run cannot be
//! judged (the generator was the limit, or it never reached the rate asked). A stall the
//! generator recovered from (a paused server) is not that: corrected latency charges it to the
//! server, and the thresholds judge it.

mod junit;

pub use junit::write_junit;
// The thresholds are the plan's (`plan::threshold`); they are named here too for callers that
// judge a report they did not plan (`volley report merge`).
pub use crate::plan::threshold::{Metric, Op, Threshold, ThresholdError, parse, parse_all};
pub use crate::report::verdicts::{Verdict, Verdicts};

use crate::{
    plan::threshold::same_method,
    report::{Report, ghzfmt::format_nano_unit},
};

/// The exit code when a threshold failed (k6's, so CI scripts carry over).
pub const EXIT_FAILED: u8 = 99;

/// The exit code when the run is not valid for judging: its figures show the generator's limit
/// or late sends, not the server.
pub const EXIT_INVALID: u8 = 98;

impl Verdicts {
    /// Judges `report` by `thresholds`.
    pub fn judge(thresholds: &[Threshold], report: &Report) -> Verdicts {
        let invalid = if report.volley.generator_saturated {
            Some("the generator's threads were busy for most of the run: the figures may be its limit, not the server's".to_owned())
        } else if report.volley.rate_unreachable {
            Some(
                "the rate asked was not reached: sends were still late at the end of the run"
                    .to_owned(),
            )
        } else {
            None
        };
        Verdicts {
            thresholds: thresholds.iter().map(|t| verdict(t, report)).collect(),
            invalid,
        }
    }

    /// The exit code: 0, [`EXIT_FAILED`] or [`EXIT_INVALID`] (an invalid run is not judged
    /// passed, whatever its thresholds say).
    pub fn exit_code(&self) -> u8 {
        if self.invalid.is_some() {
            EXIT_INVALID
        } else if self.thresholds.iter().any(|v| !v.held) {
            EXIT_FAILED
        } else {
            0
        }
    }
}

/// What `t` measures in `r`, or `None` when there is nothing to measure.
fn observe(t: &Threshold, r: &Report) -> Option<f64> {
    let calls = r.count;
    let quantile = |h: Option<&hdrhistogram::Histogram<u64>>, p: f64, clamp: bool| {
        let h = h.filter(|h| !h.is_empty())?;
        let v = h.value_at_quantile(p / 100.0);
        Some(if clamp {
            v.clamp(r.fastest, r.slowest)
        } else {
            v
        } as f64)
    };
    match t.metric {
        Metric::Latency(p) => quantile(r.latency_histogram.as_ref(), p, true),
        Metric::Service(p) => quantile(r.histograms.service.as_ref(), p, false),
        Metric::FirstMessage(p) => quantile(r.histograms.first_message.as_ref(), p, false),
        Metric::Message(p) => quantile(r.histograms.message.as_ref(), p, false),
        Metric::Avg => (calls > 0).then_some(r.average as f64),
        Metric::Min => (calls > 0).then_some(r.fastest as f64),
        Metric::Max => (calls > 0).then_some(r.slowest as f64),
        Metric::Count => Some(calls as f64),
        Metric::Rps => Some(r.rps),
        Metric::Errors => (calls > 0).then(|| r.error_count() as f64 / calls as f64),
        Metric::Status(code) => {
            let n = r
                .status_code_distribution
                .0
                .iter()
                .find(|(name, _)| name == code.go_name())
                .map_or(0, |(_, n)| *n) as f64;
            if t.share {
                (calls > 0).then(|| n / calls as f64)
            } else {
                Some(n)
            }
        }
    }
}

fn verdict(t: &Threshold, r: &Report) -> Verdict {
    let observed = match &t.call {
        None => observe(t, r),
        Some(c) => r
            .methods
            .iter()
            .find(|m| same_method(&m.call, c))
            .and_then(|m| observe(t, &m.report)),
    };
    let name = match t.text.find('{') {
        Some(open) => &t.text[..t.text[open..].find('}').map_or(open, |c| open + c + 1)],
        None => t
            .text
            .split(['<', '>', '=', '!'])
            .next()
            .unwrap_or("")
            .trim(),
    };
    let shown = match observed {
        None => format!("{name}: nothing to measure"),
        Some(v) if t.share => format!("{name} = {:.3} %", v * 100.0),
        Some(v) if t.metric.is_duration() => format!("{name} = {}", format_nano_unit(v as u64)),
        Some(v) if v.fract() == 0.0 => format!("{name} = {v}"),
        Some(v) => format!("{name} = {v:.2}"),
    };
    Verdict {
        threshold: t.text.clone(),
        observed,
        shown,
        held: observed.is_some_and(|v| t.op.holds(v, t.limit)),
    }
}
