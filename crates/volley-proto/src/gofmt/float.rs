//! Go's floats: `strconv.FormatFloat(f, 'g', -1, 64|32)`, which is also `fmt`'s `%v` and `%g`
//! (grpcurl's text and JSON output, the Prometheus text format, ghz's reports, GripMock's
//! templates), and `encoding/json`'s (protobuf's well-known types in grpcurl's JSON). Both write
//! the shortest digits that read back as the same float; they differ in where the exponent form
//! starts. Built on Rust's shortest `{:e}`, which has the same digits.

/// `strconv.FormatFloat(f, 'g', -1, 64)`, and `fmt.Sprint(f)`: exponent form (`1e+06`) from 1e6
/// and below 1e-4; `NaN`, `+Inf`, `-Inf`; `-0` for negative zero.
pub fn format_g(f: f64) -> String {
    g(f, &format!("{f:e}"))
}

/// `strconv.FormatFloat(f, 'g', -1, 32)`: the shortest digits that read back as the same `f32`.
pub fn format_g32(f: f32) -> String {
    g(f64::from(f), &format!("{f:e}"))
}

/// `%e` below 1e-4 or from 1e6, else the digits without an exponent (Go's `'g'` with shortest
/// digits), from `sci`, Rust's shortest `{:e}` of `f`.
fn g(f: f64, sci: &str) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let (mant, exp) = split(sci);
    if !(-4..6).contains(&exp) {
        return format!("{mant}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    }
    plain(mant, exp)
}

/// `{:e}`'s mantissa and exponent.
fn split(sci: &str) -> (&str, i32) {
    let (mant, exp) = sci.split_once('e').expect("{:e} has an exponent");
    (mant, exp.parse().expect("{:e}'s exponent is a number"))
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
/// exponent (`1e-7`, `1e+21`). `bits32` for a float32 (its shortest digits). NaN and infinities
/// are the caller's: `encoding/json` refuses them, and protobuf JSON spells them as strings.
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
    let (mant, exp) = split(&sci);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_strconv_g() {
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
            (-0.0, "-0"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
        ] {
            assert_eq!(format_g(f), go, "{f}");
        }
        assert_eq!(format_g32(0.1), "0.1");
        assert_eq!(format_g32(3.4028235e38), "3.4028235e+38");
        assert_eq!(format_g32(1.0 / 3.0), "0.33333334");
    }

    #[test]
    fn as_the_prometheus_text_format() {
        // Values from a real ghz v0.120.0 prometheus report (Go's client writes FormatFloat 'g').
        for (f, go) in [
            (6.0, "6"),
            (5_294_648.0, "5.294648e+06"),
            (352_979.0, "352979"),
            (1_422_441.0, "1.422441e+06"),
            (1133.2198098910446, "1133.2198098910446"),
            (0.000352979, "0.000352979"),
            (0.0009039476000000001, "0.0009039476000000001"),
            (20_000_000_000.0, "2e+10"),
            (0.1, "0.1"),
        ] {
            assert_eq!(format_g(f), go, "{f}");
        }
    }

    #[test]
    fn as_fmt_v() {
        // go1.26.8: fmt.Println(1000000.0, 5294648.0, 1e20, 1e21, 1.5e-7, 0.453592).
        for (f, go) in [
            (1e6, "1e+06"),
            (5_294_648.0, "5.294648e+06"),
            (1e20, "1e+20"),
            (1e21, "1e+21"),
            (1.5e-7, "1.5e-07"),
            (0.453592, "0.453592"),
            (60.0, "60"),
        ] {
            assert_eq!(format_g(f), go, "{f}");
        }
    }

    #[test]
    fn as_encoding_json() {
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
}
