//! Go's durations: read as `time.ParseDuration` reads them (`200ms`, `1m30s`, `1.5h`), written
//! as `time.Duration.String` writes them (`1.5s`, `3.933283ms`, `394.316µs`, `2m3.4s`).

use std::{fmt::Write as _, time::Duration};

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

/// `time.Duration.String()` of `nanos` (a Go `Duration` is an `i64` of nanoseconds): `0s`,
/// `500ns`, `394.316µs`, `3.933283ms`, `1.2s`, `2m3.4s`, `1h0m0s`, `-1.5s`. Exact: the fraction
/// is the integer remainder, not a float's digits.
pub fn duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let ns = u128::from(nanos.unsigned_abs());
    if ns < 1_000_000_000 {
        let (unit, scale) = if ns < 1_000 {
            ("ns", 1)
        } else if ns < 1_000_000 {
            ("µs", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        return format!("{sign}{}{unit}", fraction(ns / scale, ns % scale, scale));
    }
    let total_secs = ns / 1_000_000_000;
    let (h, m, s) = (total_secs / 3600, total_secs / 60 % 60, total_secs % 60);
    let mut out = String::from(sign);
    if h > 0 {
        let _ = write!(out, "{h}h{m}m");
    } else if m > 0 {
        let _ = write!(out, "{m}m");
    }
    out.push_str(&fraction(s, ns % 1_000_000_000, 1_000_000_000));
    out.push('s');
    out
}

/// `whole.frac` with the fraction's trailing zeros dropped (and the point, when nothing is left).
fn fraction(whole: u128, frac: u128, scale: u128) -> String {
    if frac == 0 {
        return whole.to_string();
    }
    let width = scale.ilog10() as usize;
    let digits = format!("{frac:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printed_as_go_prints_them() {
        for (ns, go) in [
            (3_933_283, "3.933283ms"),
            (394_316, "394.316µs"),
            (1_200_000_000, "1.2s"),
            (500, "500ns"),
            (0, "0s"),
            (123_400_000_000, "2m3.4s"),
            (3_600_000_000_000, "1h0m0s"),
            (3_723_000_000_000, "1h2m3s"),
            (1_000_000, "1ms"),
            (1_500, "1.5µs"),
            (10_000_000_000, "10s"),
            (90_000_000_000, "1m30s"),
            (-1_500_000_000, "-1.5s"),
            (i64::MIN, "-2562047h47m16.854775808s"),
        ] {
            assert_eq!(duration(ns), go, "{ns}");
        }
    }

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
