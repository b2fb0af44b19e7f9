//! Threshold expressions, k6's idea in ghz's vocabulary: `p99<50ms`, `errors<0.1%`,
//! `rps>=9500`, `status.Unavailable==0`, `service.p99.9<=20ms`, and under a mix one method's
//! figure, `p99{call=api.Users.Get}<20ms`. A bad one is refused with the expression and the
//! column where it stops making sense. Part of the plan (`--threshold`, `--abort-on`); `gate`
//! judges them against a report, the engine's watch loop judges `--abort-on` as the run goes.

use std::fmt;

use volley_wire::{ALL_CODES, Code};

/// What a threshold measures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Metric {
    /// A latency percentile (corrected for late sends under `-r`), e.g. 99.9.
    Latency(f64),
    /// A service-time percentile (from the actual send: what ghz reports under `-r`).
    Service(f64),
    /// Time to the first reply message of a stream, percentile.
    FirstMessage(f64),
    /// Per-message round trip of a bidi stream, percentile.
    Message(f64),
    /// Mean latency.
    Avg,
    /// Fastest call.
    Min,
    /// Slowest call.
    Max,
    /// Calls counted.
    Count,
    /// Calls per second.
    Rps,
    /// Failed calls as a share of all (a ratio; `%` on the value).
    Errors,
    /// Calls that ended with this status: a share with `%`, else a count.
    Status(Code),
}

impl Metric {
    /// Whether its values are durations (nanoseconds).
    pub fn is_duration(self) -> bool {
        matches!(
            self,
            Metric::Latency(_)
                | Metric::Service(_)
                | Metric::FirstMessage(_)
                | Metric::Message(_)
                | Metric::Avg
                | Metric::Min
                | Metric::Max
        )
    }
}

/// A comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl Op {
    /// Whether `observed op limit` holds.
    pub fn holds(self, observed: f64, limit: f64) -> bool {
        match self {
            Op::Lt => observed < limit,
            Op::Le => observed <= limit,
            Op::Gt => observed > limit,
            Op::Ge => observed >= limit,
            Op::Eq => observed == limit,
            Op::Ne => observed != limit,
        }
    }
}

/// One parsed threshold.
#[derive(Clone, Debug, PartialEq)]
pub struct Threshold {
    /// As the user wrote it (trimmed).
    pub text: String,
    /// What is measured.
    pub metric: Metric,
    /// How it is compared.
    pub op: Op,
    /// The limit: nanoseconds for durations, a ratio for shares, else a plain number.
    pub limit: f64,
    /// The limit is a share of the calls (`%`, or `errors`), not a count.
    pub share: bool,
    /// `{call=METHOD}`: judged on that method's calls of a mix, not on all calls.
    pub call: Option<String>,
}

/// A threshold that does not parse.
#[derive(Debug, Clone, PartialEq)]
pub struct ThresholdError {
    text: String,
    column: usize,
    what: String,
}

impl fmt::Display for ThresholdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "threshold {:?}, column {}: {}",
            self.text, self.column, self.what
        )
    }
}

impl std::error::Error for ThresholdError {}

/// Parses `METRIC OP VALUE` or `METRIC{call=METHOD} OP VALUE`.
pub fn parse(text: &str) -> Result<Threshold, ThresholdError> {
    let text = text.trim();
    let Some(open) = text.find('{') else {
        return parse_plain(text);
    };
    let fail = |at: usize, what: &str| ThresholdError {
        text: text.to_owned(),
        column: at + 1,
        what: what.to_owned(),
    };
    let close = open
        + text[open..]
            .find('}')
            .ok_or_else(|| fail(open, "a selector {call=METHOD} needs its closing }"))?;
    let selector = &text[open + 1..close];
    let call = selector
        .split_once('=')
        .filter(|(k, _)| k.trim() == "call")
        .map(|(_, v)| v.trim().trim_matches(['"', '\'']))
        .filter(|v| !v.is_empty())
        .ok_or_else(|| fail(open + 1, "the one selector is {call=METHOD}"))?;
    // The rest parses as a plain threshold; its columns are shifted back past the selector.
    let plain = format!("{}{}", &text[..open], &text[close + 1..]);
    let mut t = parse_plain(&plain).map_err(|mut e| {
        e.text = text.to_owned();
        if e.column > open {
            e.column += close + 1 - open;
        }
        e
    })?;
    t.text = text.to_owned();
    t.call = Some(call.to_owned());
    Ok(t)
}

fn parse_plain(text: &str) -> Result<Threshold, ThresholdError> {
    let fail = |at: usize, what: String| ThresholdError {
        text: text.to_owned(),
        column: at + 1,
        what,
    };
    let op_at = text.find(['<', '>', '=', '!']).ok_or_else(|| {
        fail(
            text.len(),
            "expected a comparison (<, <=, >, >=, ==, !=)".into(),
        )
    })?;
    let (name, rest) = text.split_at(op_at);
    let (op, width) = match rest.as_bytes() {
        [b'<', b'=', ..] => (Op::Le, 2),
        [b'>', b'=', ..] => (Op::Ge, 2),
        [b'=', b'=', ..] => (Op::Eq, 2),
        [b'!', b'=', ..] => (Op::Ne, 2),
        [b'<', ..] => (Op::Lt, 1),
        [b'>', ..] => (Op::Gt, 1),
        _ => {
            return Err(fail(
                op_at,
                "expected a comparison (<, <=, >, >=, ==, !=)".into(),
            ));
        }
    };
    let name = name.trim();
    let metric = metric(name).map_err(|w| fail(0, w))?;
    let value_at = op_at + width;
    let value = text[value_at..].trim();
    let value_col = value_at + (text[value_at..].len() - text[value_at..].trim_start().len());
    let (limit, share) = limit(metric, value).map_err(|w| fail(value_col, w))?;
    Ok(Threshold {
        text: text.to_owned(),
        metric,
        op,
        limit,
        share,
        call: None,
    })
}

/// Parses every threshold; the first bad one is the error.
pub fn parse_all(texts: &[String]) -> Result<Vec<Threshold>, ThresholdError> {
    texts.iter().map(|t| parse(t)).collect()
}

/// Whether two spellings name one method (`api.Users.Get`, `api.Users/Get`).
pub fn same_method(a: &str, b: &str) -> bool {
    let dotted = |s: &str| s.trim().replace('/', ".");
    dotted(a) == dotted(b)
}

fn metric(name: &str) -> Result<Metric, String> {
    let lower = name.to_ascii_lowercase();
    let percentile = |p: &str, make: fn(f64) -> Metric| -> Result<Metric, String> {
        match p.parse::<f64>() {
            Ok(v) if v > 0.0 && v <= 100.0 => Ok(make(v)),
            _ => Err(format!(
                "{name:?} is not a percentile (p50, p99, p99.9: between 0 and 100)"
            )),
        }
    };
    if let Some(p) = lower.strip_prefix("service.p") {
        return percentile(p, Metric::Service);
    }
    if let Some(p) = lower.strip_prefix("ttfm.p") {
        return percentile(p, Metric::FirstMessage);
    }
    if let Some(p) = lower.strip_prefix("msg.p") {
        return percentile(p, Metric::Message);
    }
    if let Some(code) = name.strip_prefix("status.") {
        let squash = |s: &str| s.replace('_', "").to_ascii_lowercase();
        return ALL_CODES
            .iter()
            .find(|c| squash(c.go_name()) == squash(code) || squash(c.name()) == squash(code))
            .map(|c| Metric::Status(*c))
            .ok_or_else(|| {
                format!("unknown status {code:?} (OK, Unavailable, DeadlineExceeded, ...)")
            });
    }
    match lower.as_str() {
        "avg" | "mean" => Ok(Metric::Avg),
        "min" => Ok(Metric::Min),
        "max" => Ok(Metric::Max),
        "count" => Ok(Metric::Count),
        "rps" => Ok(Metric::Rps),
        "errors" => Ok(Metric::Errors),
        p if p.starts_with('p') => percentile(&p[1..], Metric::Latency),
        "" => Err("expected a metric before the comparison".into()),
        _ => Err(format!(
            "unknown metric {name:?} (pN, avg, min, max, count, rps, errors, status.CODE, service.pN, ttfm.pN, msg.pN)"
        )),
    }
}

fn limit(metric: Metric, value: &str) -> Result<(f64, bool), String> {
    if value.is_empty() {
        return Err("expected a value after the comparison".into());
    }
    let number = |s: &str| -> Result<f64, String> {
        s.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| format!("{s:?} is not a number"))
    };
    if metric.is_duration() {
        let split = value
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| format!("{value:?} needs a unit (ns, us, ms, s, m)"))?;
        let (n, unit) = value.split_at(split);
        let scale = match unit.trim() {
            "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            other => return Err(format!("unknown unit {other:?} (use ns, us, ms, s or m)")),
        };
        return Ok((number(n)? * scale, false));
    }
    match (metric, value.strip_suffix('%')) {
        (Metric::Errors | Metric::Status(_), Some(p)) => Ok((number(p)? / 100.0, true)),
        (Metric::Errors, None) => {
            let v = number(value)?;
            if v > 1.0 {
                return Err(format!(
                    "{value:?}: errors is a share of the calls, a ratio (0.001) or a percentage (0.1%)"
                ));
            }
            Ok((v, true))
        }
        (_, Some(_)) => Err(format!("{value:?}: only errors and status.CODE take a %")),
        (_, None) => Ok((number(value)?, false)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_terms_parse_into_their_metric_and_unit() {
        let cases: [(&str, Metric, Op, f64, bool); 10] = [
            ("p99<50ms", Metric::Latency(99.0), Op::Lt, 50e6, false),
            (
                " p99.9 <= 1.5s ",
                Metric::Latency(99.9),
                Op::Le,
                1.5e9,
                false,
            ),
            ("errors<0.1%", Metric::Errors, Op::Lt, 0.001, true),
            ("errors<=0.01", Metric::Errors, Op::Le, 0.01, true),
            ("rps>=9500", Metric::Rps, Op::Ge, 9500.0, false),
            ("count==1000", Metric::Count, Op::Eq, 1000.0, false),
            (
                "status.Unavailable==0",
                Metric::Status(Code::Unavailable),
                Op::Eq,
                0.0,
                false,
            ),
            (
                "status.DEADLINE_EXCEEDED<1%",
                Metric::Status(Code::DeadlineExceeded),
                Op::Lt,
                0.01,
                true,
            ),
            (
                "service.p99<20ms",
                Metric::Service(99.0),
                Op::Lt,
                20e6,
                false,
            ),
            (
                "ttfm.p50!=0us",
                Metric::FirstMessage(50.0),
                Op::Ne,
                0.0,
                false,
            ),
        ];
        for (text, metric, op, limit, share) in cases {
            let t = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!((t.metric, t.op, t.share), (metric, op, share), "{text}");
            assert!((t.limit - limit).abs() < 1e-6, "{text}: {}", t.limit);
        }
    }

    #[test]
    fn a_selector_names_one_method_of_a_mix() {
        let t = parse("p99{call=api.Users.Get}<20ms").unwrap();
        assert_eq!(t.call.as_deref(), Some("api.Users.Get"));
        assert_eq!(
            (t.metric, t.op, t.limit),
            (Metric::Latency(99.0), Op::Lt, 20e6)
        );
        assert_eq!(t.text, "p99{call=api.Users.Get}<20ms");
        let t = parse("errors{call=\"api.Users/List\"} < 1%").unwrap();
        assert_eq!(t.call.as_deref(), Some("api.Users/List"));
        assert!(t.share);
        assert_eq!(parse("p99<1s").unwrap().call, None);
    }

    #[test]
    fn bad_thresholds_name_the_column_and_the_fault() {
        let cases = [
            ("p99 50ms", 9, "expected a comparison"),
            ("p99<50", 5, "needs a unit"),
            ("p99<50xs", 5, "unknown unit \"xs\""),
            ("p101<1s", 1, "not a percentile"),
            ("latency<1s", 1, "unknown metric \"latency\""),
            ("errors<5", 8, "a ratio (0.001) or a percentage"),
            ("rps>5%", 5, "only errors and status.CODE take a %"),
            ("status.Nope>0", 1, "unknown status \"Nope\""),
            ("<1s", 1, "expected a metric"),
            ("p99<", 5, "expected a value"),
            ("p99{call=a.B.C<1s", 4, "needs its closing }"),
            (
                "p99{method=a.B.C}<1s",
                5,
                "the one selector is {call=METHOD}",
            ),
            ("p99{call=}<1s", 5, "the one selector is {call=METHOD}"),
            ("p99{call=a.B.C}<1", 17, "needs a unit"),
        ];
        for (text, column, what) in cases {
            let e = parse(text).unwrap_err();
            assert_eq!(e.column, column, "{text}: {e}");
            assert!(e.to_string().contains(what), "{text}: {e}");
            assert!(e.to_string().contains(&format!("{text:?}")), "{e}");
        }
    }
}
