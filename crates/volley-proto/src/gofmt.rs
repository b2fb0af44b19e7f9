//! Go's text forms that ghz and GripMock read and write, in one place for bench and mock:
//! durations as Go's `time.ParseDuration` reads them (`200ms`, `1m30s`, `1.5h`).

use std::time::Duration;

/// Parses a Go `time.ParseDuration` string (`+` allowed, as Go allows it); negative durations
/// are refused.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("invalid duration {s:?} (expected e.g. 200ms, 10s, 1m30s)");
    let t = s.trim();
    let t = t.strip_prefix('+').unwrap_or(t);
    if t == "0" {
        return Ok(Duration::ZERO);
    }
    if t.is_empty() || t.starts_with('-') {
        return Err(bad());
    }
    let mut rest = t;
    let mut total = 0f64;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        if num_len == 0 {
            return Err(bad());
        }
        let n: f64 = rest[..num_len].parse().map_err(|_| bad())?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let nanos_per = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return Err(bad()),
        };
        rest = &rest[unit_len..];
        total += n * nanos_per;
    }
    if total > u64::MAX as f64 {
        return Err(bad());
    }
    Ok(Duration::from_nanos(total.round() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_forms() {
        let ms = Duration::from_millis;
        assert_eq!(parse_duration("200ms").unwrap(), ms(200));
        assert_eq!(parse_duration("10s").unwrap(), ms(10_000));
        assert_eq!(parse_duration("1m30s").unwrap(), ms(90_000));
        assert_eq!(parse_duration("1.5h").unwrap(), ms(5_400_000));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("7µs").unwrap(), Duration::from_micros(7));
        assert_eq!(parse_duration("3ns").unwrap(), Duration::from_nanos(3));
    }

    #[test]
    fn refusals() {
        for bad in ["", "10", "s", "-1s", "1x", "1..2s", "ms10"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
