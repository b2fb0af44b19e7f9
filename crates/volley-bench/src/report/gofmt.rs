//! Numbers and times as ghz (Go) prints them: `formatNanoUnit`, `%v` and `strconv.FormatFloat`
//! for floats, RFC 3339 with and without nanoseconds.

/// ghz's `formatNanoUnit`: under 10 µs in ns, under 1 s in ms, else in s.
pub fn format_nano_unit(ns: u64) -> String {
    if ns < 10_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000_000 {
        format!("{:4.2} ms", ns as f64 / 1e6)
    } else {
        format!("{:4.2} s", ns as f64 / 1e9)
    }
}

/// Go's `%v` for a float64: shortest digits, exponent form below 1e-4 or from 1e21.
pub fn go_g(f: f64) -> String {
    go_float(f, 21)
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)`, which the Prometheus text encoder uses: shortest
/// digits, exponent form below 1e-4 or from 1e6.
pub fn prom_float(f: f64) -> String {
    go_float(f, 6)
}

fn go_float(f: f64, eprec: i32) -> String {
    if f == 0.0 {
        return "0".into();
    }
    if !f.is_finite() {
        return if f.is_nan() {
            "NaN".into()
        } else if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    let sci = format!("{f:e}");
    let (mant, exp) = sci.split_once('e').expect("e in {:e}");
    let exp: i32 = exp.parse().expect("exponent");
    if exp < -4 || exp >= eprec {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mant}e{sign}{:02}", exp.abs());
    }
    format!("{f}")
}

/// RFC 3339 in UTC, seconds precision (Go's `time.RFC3339`).
pub fn rfc3339(unix_nanos: i64) -> String {
    volley_proto::template::rfc3339(unix_nanos)
}

/// RFC 3339 in UTC with trailing-zero-trimmed nanoseconds (Go's `time.RFC3339Nano`).
pub fn rfc3339_nano(unix_nanos: i64) -> String {
    let secs = unix_nanos.div_euclid(1_000_000_000);
    let nanos = unix_nanos.rem_euclid(1_000_000_000);
    let base = rfc3339(secs * 1_000_000_000);
    if nanos == 0 {
        return base;
    }
    let frac = format!("{nanos:09}");
    let frac = frac.trim_end_matches('0');
    format!("{}.{frac}Z", base.trim_end_matches('Z'))
}

/// Go's `text/tabwriter` with minwidth 0, padding 3, pad char ' ', for rows whose cells all end
/// in a tab: every cell is padded to the column's widest cell plus 3.
pub fn tabwrite(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        for (c, cell) in r.iter().enumerate() {
            out.push_str(cell);
            out.extend(std::iter::repeat_n(
                ' ',
                widths[c] - cell.chars().count() + 3,
            ));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nano_unit() {
        assert_eq!(format_nano_unit(9_999), "9999 ns");
        assert_eq!(format_nano_unit(10_000), "0.01 ms");
        assert_eq!(format_nano_unit(4_413_000), "4.41 ms");
        assert_eq!(format_nano_unit(30_000_000_000), "30.00 s");
    }

    #[test]
    fn prometheus_numbers_match_go() {
        // Values from a real ghz v0.120.0 prometheus report.
        assert_eq!(prom_float(6.0), "6");
        assert_eq!(prom_float(5_294_648.0), "5.294648e+06");
        assert_eq!(prom_float(352_979.0), "352979");
        assert_eq!(prom_float(1_422_441.0), "1.422441e+06");
        assert_eq!(prom_float(1133.2198098910446), "1133.2198098910446");
        assert_eq!(prom_float(0.000352979), "0.000352979");
        assert_eq!(prom_float(0.0009039476000000001), "0.0009039476000000001");
        assert_eq!(prom_float(20_000_000_000.0), "2e+10");
        assert_eq!(prom_float(0.1), "0.1");
    }

    #[test]
    fn times() {
        assert_eq!(rfc3339(1_795_306_597_019_700_821), "2026-11-22T00:16:37Z");
        assert_eq!(
            rfc3339_nano(1_795_306_597_019_700_821),
            "2026-11-22T00:16:37.019700821Z"
        );
        assert_eq!(
            rfc3339_nano(1_795_306_597_010_000_000),
            "2026-11-22T00:16:37.01Z"
        );
        assert_eq!(
            rfc3339_nano(1_795_306_597_000_000_000),
            "2026-11-22T00:16:37Z"
        );
    }

    #[test]
    fn tabwriter_matches_go() {
        let rows = vec![
            vec!["  [Unavailable]".to_string(), "40 responses".to_string()],
            vec!["  [OK]".to_string(), "1866 responses".to_string()],
        ];
        assert_eq!(
            tabwrite(&rows),
            "  [Unavailable]   40 responses     \n  [OK]            1866 responses   \n"
        );
    }
}
