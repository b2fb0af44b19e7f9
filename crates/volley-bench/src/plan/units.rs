//! The units of ghz's flags: Go-style durations (`200ms`, `1m30s`, `1.5h`), as ghz and the seeds
//! write them, and byte sizes (`4MB`, `4 MiB`, `4194304`: SI units 1000-based, IEC 1024-based).

use std::time::Duration;

/// Parses a Go `time.ParseDuration` string; negative durations are refused.
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

/// Parses a size; a bare number is bytes.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let bad = || format!("invalid size {s:?} (expected e.g. 4194304, 4MB, 4MiB)");
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let n: f64 = t[..split].parse().map_err(|_| bad())?;
    let mult = match t[split..].trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "ki" | "kib" => 1024.0,
        "m" | "mb" => 1e6,
        "mi" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" => 1e9,
        "gi" | "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(bad()),
    };
    let v = n * mult;
    if !(0.0..=usize::MAX as f64).contains(&v) {
        return Err(bad());
    }
    Ok(v as usize)
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

    #[test]
    fn units() {
        assert_eq!(parse_size("4194304").unwrap(), 4_194_304);
        assert_eq!(parse_size("42 MB").unwrap(), 42_000_000);
        assert_eq!(parse_size("4MiB").unwrap(), 4 << 20);
        assert_eq!(parse_size("1.5kb").unwrap(), 1500);
        assert!(parse_size("lots").is_err());
        assert!(parse_size("4 XB").is_err());
    }
}
