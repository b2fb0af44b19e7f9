//! Go's durations (`50ms`, `1.5s`, `1h30m`), as GripMock's `delay` and its template
//! functions write them.

use std::time::Duration;

/// A Go duration (`50ms`, `1.5s`, `1h30m`; `0`), as GripMock's `delay` takes it.
pub(crate) fn parse(s: &str) -> Option<Duration> {
    let t = s.trim();
    if t == "0" {
        return Some(Duration::ZERO);
    }
    if t.is_empty() || t.starts_with('-') {
        return None;
    }
    let (mut rest, mut nanos) = (t, 0f64);
    while !rest.is_empty() {
        let num = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        if num == 0 {
            return None;
        }
        let n: f64 = rest[..num].parse().ok()?;
        rest = &rest[num..];
        let unit = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let per = match &rest[..unit] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        nanos += n * per;
        rest = &rest[unit..];
    }
    Some(Duration::from_nanos(nanos as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        let ms = Duration::from_millis;
        assert_eq!(parse("50ms"), Some(ms(50)));
        assert_eq!(parse("1.5s"), Some(ms(1500)));
        assert_eq!(parse("1h30m"), Some(ms(5_400_000)));
        assert_eq!(parse("0"), Some(Duration::ZERO));
        for bad in ["", "10", "s", "-1s", "1x"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
