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

/// Go's `time.ParseDuration` (volley-proto's `gofmt`), plus a bare number read as seconds, as
/// k6's command line reads one.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    match t.parse::<f64>() {
        Ok(secs) if secs >= 0.0 && secs.is_finite() => Ok(Duration::from_secs_f64(secs)),
        Ok(_) => Err(format!("invalid duration {s:?}")),
        Err(_) => volley_proto::gofmt::parse_duration(t),
    }
}

/// A duration as k6 prints one in its banner: Go's `Duration.String` (`10m0s`, `30s`, `1m30s`,
/// `500ms`).
pub(crate) fn format_duration(d: Duration) -> String {
    volley_proto::gofmt::duration(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
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
        assert!(
            parse_duration("10x")
                .unwrap_err()
                .contains("invalid duration")
        );
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
