//! Numbers, strings and times spelled as Go spells them, byte for byte: grpcurl's output is Go's
//! `strconv`, `encoding/json` and `time` formatting, and no crate writes those forms.

use std::fmt::Write as _;

/// `strconv.FormatFloat(f, 'g', -1, 64)`: shortest digits, exponent form (`1e+06`) from 1e6 and
/// below 1e-4. NaN and infinities are the caller's (JSON and text spell them differently).
pub fn g64(f: f64) -> String {
    g_from_sci(&format!("{f:e}"), f == 0.0, f.is_sign_negative())
}

/// `strconv.FormatFloat(f, 'g', -1, 32)`: the shortest digits that read back as the same `f32`.
pub fn g32(f: f32) -> String {
    g_from_sci(&format!("{f:e}"), f == 0.0, f.is_sign_negative())
}

/// Go's `%e`-or-`%f` choice for `'g'` with shortest digits, from Rust's shortest `{:e}` form.
fn g_from_sci(sci: &str, zero: bool, negative: bool) -> String {
    if zero {
        return if negative { "-0".into() } else { "0".into() };
    }
    let (mant, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("{:e}'s exponent is a number");
    if !(-4..6).contains(&exp) {
        return format!("{mant}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    }
    plain(mant, exp)
}

/// Digits `d.ddd` times 10^`exp` written without an exponent (Go's `%f` with shortest digits).
fn plain(mant: &str, exp: i32) -> String {
    let (sign, mant) = match mant.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mant),
    };
    let digits: String = mant.chars().filter(|c| *c != '.').collect();
    let point = exp + 1; // digits before the decimal point
    let mut out = String::from(sign);
    if point <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-point) as usize));
        out.push_str(&digits);
    } else if point as usize >= digits.len() {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', point as usize - digits.len()));
    } else {
        out.push_str(&digits[..point as usize]);
        out.push('.');
        out.push_str(&digits[point as usize..]);
    }
    out
}

/// `encoding/json`'s float: `%f` form between 1e-6 and 1e21, else `%e` with a one-digit negative
/// exponent (`1e-7`, `1e+21`). Used for well-known types (wrappers, `Value`), which grpcurl
/// prints through `json.Marshal`.
pub fn json_float(f: f64, bits32: bool) -> String {
    let sci = if bits32 {
        format!("{:e}", f as f32)
    } else {
        format!("{f:e}")
    };
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let abs = f.abs();
    let (lo, hi) = if bits32 {
        (1e-6f32 as f64, 1e21f32 as f64)
    } else {
        (1e-6, 1e21)
    };
    let (mant, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("{:e}'s exponent is a number");
    if abs < lo || abs >= hi {
        let sign = if exp < 0 { '-' } else { '+' };
        // Go writes at least two exponent digits, then json trims `e-07` to `e-7`.
        return if exp < 0 && exp > -10 {
            format!("{mant}e-{}", -exp)
        } else {
            format!("{mant}e{sign}{:02}", exp.abs())
        };
    }
    plain(mant, exp)
}

/// A JSON string as `encoding/json` writes it: HTML-safe (`<`, `>`, `&` as `\u003c`...),
/// `\b \f \n \r \t`, other control characters as `\u00XX`, U+2028 and U+2029 escaped.
pub fn json_string(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{0}'..='\u{1f}' => {
                let b = c as u8;
                out.push_str("\\u00");
                out.push(HEX[(b >> 4) as usize] as char);
                out.push(HEX[(b & 0xf) as usize] as char);
            }
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Bytes as a Go string would reach `encoding/json`: invalid UTF-8 becomes U+FFFD.
pub fn json_bytes_string(out: &mut String, b: &[u8]) {
    json_string(out, &String::from_utf8_lossy(b));
}

/// `time.Duration.String()`: `1.5s`, `3.933283ms`, `394.316µs`, `2m3.4s`, `0s`.
pub fn duration(d: std::time::Duration) -> String {
    let ns = d.as_nanos();
    if ns == 0 {
        return "0s".into();
    }
    if ns < 1_000_000_000 {
        let (unit, scale) = if ns < 1_000 {
            ("ns", 1)
        } else if ns < 1_000_000 {
            ("µs", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        return format!("{}{unit}", fraction(ns / scale, ns % scale, scale));
    }
    let total_secs = ns / 1_000_000_000;
    let (h, m, s) = (total_secs / 3600, total_secs / 60 % 60, total_secs % 60);
    let secs = fraction(s, ns % 1_000_000_000, 1_000_000_000);
    let mut out = String::new();
    if h > 0 {
        let _ = write!(out, "{h}h{m}m");
    } else if m > 0 {
        let _ = write!(out, "{m}m");
    }
    out.push_str(&secs);
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

/// A `google.protobuf.Timestamp` as golang/protobuf's jsonpb writes it: RFC 3339 in UTC with 0,
/// 3, 6 or 9 fractional digits.
pub fn timestamp(seconds: i64, nanos: i32) -> String {
    let days = seconds.div_euclid(86_400);
    let secs = seconds.rem_euclid(86_400);
    let (y, mo, d) = civil_from_days(days);
    let mut out = format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    );
    out.push_str(&nanos_3_6_9(nanos.unsigned_abs()));
    out.push('Z');
    out
}

/// A `google.protobuf.Duration` as jsonpb writes it: `1.500s`, `-0.001s`, `3s`.
pub fn proto_duration(seconds: i64, nanos: i32) -> String {
    let sign = if seconds < 0 || nanos < 0 { "-" } else { "" };
    format!(
        "{sign}{}{}s",
        seconds.unsigned_abs(),
        nanos_3_6_9(nanos.unsigned_abs())
    )
}

/// `.ddd`, `.dddddd` or `.ddddddddd` (the shortest that holds the nanoseconds), or nothing.
fn nanos_3_6_9(nanos: u32) -> String {
    if nanos == 0 {
        return String::new();
    }
    let mut s = format!(".{nanos:09}");
    for _ in 0..2 {
        if s.ends_with("000") {
            s.truncate(s.len() - 3);
        }
    }
    s
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn floats_as_strconv_g() {
        // Outputs of Go's strconv.FormatFloat(f, 'g', -1, 64), as grpcurl prints them.
        for (f, go) in [
            (1e21, "1e+21"),
            (1e8, "1e+08"),
            (123456.0, "123456"),
            (1234567.0, "1.234567e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5, "1.5"),
            (-2.25, "-2.25"),
            (0.1, "0.1"),
            (100.0, "100"),
            (999999.0, "999999"),
            (1e100, "1e+100"),
            (5e-324, "5e-324"),
            (0.0, "0"),
        ] {
            assert_eq!(g64(f), go, "{f}");
        }
        assert_eq!(g32(0.1), "0.1");
        assert_eq!(g32(3.4028235e38), "3.4028235e+38");
        assert_eq!(g32(1.0 / 3.0), "0.33333334");
    }

    #[test]
    fn floats_as_encoding_json() {
        for (f, go) in [
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (1e8, "100000000"),
            (0.000001, "0.000001"),
            (0.0000001, "1e-7"),
            (1.5e-10, "1.5e-10"),
            (3.0, "3"),
        ] {
            assert_eq!(json_float(f, false), go, "{f}");
        }
        assert_eq!(json_float(0.1f32 as f64, true), "0.1");
    }

    #[test]
    fn strings_as_encoding_json() {
        let mut s = String::new();
        json_string(&mut s, "a<b>&\"\\\n\t\u{1}\u{8}\u{7f}é\u{2028}");
        assert_eq!(
            s,
            r#""a\u003cb\u003e\u0026\"\\\n\t\u0001\b"#.to_owned() + "\u{7f}é\\u2028\""
        );
    }

    #[test]
    fn durations_as_go() {
        for (d, go) in [
            (Duration::from_nanos(3_933_283), "3.933283ms"),
            (Duration::from_nanos(394_316), "394.316µs"),
            (Duration::from_millis(1200), "1.2s"),
            (Duration::from_nanos(500), "500ns"),
            (Duration::from_secs(0), "0s"),
            (Duration::from_millis(123_400), "2m3.4s"),
            (Duration::from_secs(3600), "1h0m0s"),
            (Duration::from_millis(1), "1ms"),
        ] {
            assert_eq!(duration(d), go);
        }
    }

    #[test]
    fn well_known_times() {
        assert_eq!(timestamp(0, 0), "1970-01-01T00:00:00Z");
        assert_eq!(
            timestamp(1_704_164_645, 500_000_000),
            "2024-01-02T03:04:05.500Z"
        );
        assert_eq!(timestamp(1, 1), "1970-01-01T00:00:01.000000001Z");
        assert_eq!(timestamp(-1, 0), "1969-12-31T23:59:59Z");
        assert_eq!(proto_duration(1, 500_000_000), "1.500s");
        assert_eq!(proto_duration(0, -1_000_000), "-0.001s");
        assert_eq!(proto_duration(3, 0), "3s");
        assert_eq!(proto_duration(0, 1_000), "0.000001s");
    }
}
