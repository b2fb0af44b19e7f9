//! The `grpc-timeout` header: at most eight digits and a unit (H, M, S, m, u, n).

use std::time::Duration;

/// Parses a `grpc-timeout` value; `None` when malformed.
pub fn parse_grpc_timeout(v: &[u8]) -> Option<Duration> {
    let (&unit, digits) = v.split_last()?;
    if digits.is_empty() || digits.len() > 8 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = digits
        .iter()
        .fold(0u64, |acc, d| acc * 10 + u64::from(d - b'0'));
    Some(match unit {
        b'H' => Duration::from_secs(n * 3600),
        b'M' => Duration::from_secs(n * 60),
        b'S' => Duration::from_secs(n),
        b'm' => Duration::from_millis(n),
        b'u' => Duration::from_micros(n),
        b'n' => Duration::from_nanos(n),
        _ => return None,
    })
}

/// Formats a duration as the most precise `grpc-timeout` value that fits in eight digits.
pub fn format_grpc_timeout(d: Duration) -> String {
    const MAX: u128 = 99_999_999;
    let nanos = d.as_nanos();
    let units: [(u128, char); 6] = [
        (1, 'n'),
        (1_000, 'u'),
        (1_000_000, 'm'),
        (1_000_000_000, 'S'),
        (60_000_000_000, 'M'),
        (3_600_000_000_000, 'H'),
    ];
    for (div, unit) in units {
        // Round up so that the peer never sees a shorter deadline than ours.
        let v = nanos.div_ceil(div);
        if v <= MAX {
            return format!("{v}{unit}");
        }
    }
    format!("{MAX}H")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_unit() {
        assert_eq!(parse_grpc_timeout(b"2H"), Some(Duration::from_secs(7200)));
        assert_eq!(parse_grpc_timeout(b"3M"), Some(Duration::from_secs(180)));
        assert_eq!(parse_grpc_timeout(b"10S"), Some(Duration::from_secs(10)));
        assert_eq!(
            parse_grpc_timeout(b"250m"),
            Some(Duration::from_millis(250))
        );
        assert_eq!(parse_grpc_timeout(b"7u"), Some(Duration::from_micros(7)));
        assert_eq!(
            parse_grpc_timeout(b"99999999n"),
            Some(Duration::from_nanos(99_999_999))
        );
    }

    #[test]
    fn rejects_malformed() {
        for bad in [&b""[..], b"S", b"123456789S", b"1x", b"-1S", b"1.5S", b"12"] {
            assert_eq!(parse_grpc_timeout(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn formats_round_trip() {
        for d in [
            Duration::from_nanos(5),
            Duration::from_millis(20_000),
            Duration::from_secs(3600 * 24 * 365),
        ] {
            let s = format_grpc_timeout(d);
            let back = parse_grpc_timeout(s.as_bytes()).unwrap();
            assert!(back >= d, "{s}");
        }
        assert_eq!(format_grpc_timeout(Duration::from_secs(20)), "20000000u");
    }
}
