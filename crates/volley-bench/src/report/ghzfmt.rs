//! ghz's own printing: its `formatNanoUnit`, and Go's `text/tabwriter` as ghz's summary sets it
//! up. Go's numbers and times are `volley_proto::gofmt`'s.

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
