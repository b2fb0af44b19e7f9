//! Durations as k6 reads and prints them: Go's `time.ParseDuration` strings (`1m30s`, `500ms`)
//! or numbers of milliseconds in options, bare seconds on the command line, and Go's
//! `Duration.String` in the banner (`10m0s`).

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

/// A k6 duration: a Go duration string (`1m30s`, `500ms`, `2h`) or a number of milliseconds.
pub(crate) fn value_duration(v: &Value) -> Result<Duration, String> {
    match v {
        Value::Number(n) => n
            .as_f64()
            .filter(|f| *f >= 0.0)
            .map(|ms| Duration::from_secs_f64(ms / 1000.0))
            .ok_or_else(|| format!("{n} is not a duration")),
        Value::String(s) => parse_duration(s),
        other => Err(format!("{other} is not a duration")),
    }
}

/// Go's `time.ParseDuration` (units ns, us, µs, ms, s, m, h; fractions; no sign), plus a bare
/// number read as seconds, as k6's command line reads one.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("time: invalid duration {s:?}");
    let t = s.trim();
    if t == "0" {
        return Ok(Duration::ZERO);
    }
    if let Ok(secs) = t.parse::<f64>() {
        return if secs >= 0.0 && secs.is_finite() {
            Ok(Duration::from_secs_f64(secs))
        } else {
            Err(bad())
        };
    }
    let mut rest = t;
    let mut total = 0.0f64;
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| format!("time: missing unit in duration {s:?}"))?;
        if num_len == 0 {
            return Err(bad());
        }
        let n: f64 = rest[..num_len].parse().map_err(|_| bad())?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            u => return Err(format!("time: unknown unit {u:?} in duration {s:?}")),
        };
        total += n * scale;
        rest = &rest[unit_len..];
    }
    Ok(Duration::from_secs_f64(total))
}

/// A duration as k6 prints one in its banner (Go's `Duration.String`, trimmed: `10m0s`, `30s`,
/// `1m30s`, `500ms`).
pub(crate) fn format_duration(d: Duration) -> String {
    let total = d.as_secs_f64();
    if total == 0.0 {
        return "0s".into();
    }
    if total < 1.0 {
        let ms = total * 1000.0;
        return if ms.fract() == 0.0 {
            format!("{ms:.0}ms")
        } else {
            format!("{ms}ms")
        };
    }
    let h = (total / 3600.0).floor();
    let m = ((total - h * 3600.0) / 60.0).floor();
    let s = total - h * 3600.0 - m * 60.0;
    let secs = if s.fract() == 0.0 {
        format!("{s:.0}s")
    } else {
        format!("{}s", (s * 1000.0).round() / 1000.0)
    };
    match (h as u64, m as u64) {
        (0, 0) => secs,
        (0, m) => format!("{m}m{secs}"),
        (h, m) => format!("{h}h{m}m{secs}"),
    }
}

pub(crate) fn duration<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let v = Value::deserialize(d)?;
    value_duration(&v).map_err(serde::de::Error::custom)
}

pub(crate) fn opt_duration<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Duration>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(v) => value_duration(&v)
            .map(Some)
            .map_err(serde::de::Error::custom),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_go_and_k6_read_them() {
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("1.5h").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("10").unwrap(), Duration::from_secs(10));
        assert!(parse_duration("10x").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("").is_err());
        assert_eq!(
            value_duration(&serde_json::json!(1500)).unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(format_duration(Duration::from_secs(600)), "10m0s");
        assert_eq!(format_duration(Duration::from_secs(30)), "30s");
        assert_eq!(format_duration(Duration::from_millis(500)), "500ms");
        assert_eq!(format_duration(Duration::from_secs(3630)), "1h0m30s");
    }
}
