//! wrk's report layout (wrk 4, `src/wrk.c` and `src/units.c`): thread stats for latency and
//! requests per second (mean, stdev, max, share within one stdev), totals, rates. Req/Sec samples
//! are each thread's calls per whole second of the run (wrk samples every 100 ms).

use std::io::{self, Write};

use crate::report::Report;

struct Units {
    scale: f64,
    base: &'static str,
    units: &'static [&'static str],
}

const TIME_US: Units = Units {
    scale: 1000.0,
    base: "us",
    units: &["ms", "s"],
};
const TIME_S: Units = Units {
    scale: 60.0,
    base: "s",
    units: &["m", "h"],
};
const BINARY: Units = Units {
    scale: 1024.0,
    base: "",
    units: &["K", "M", "G", "T", "P"],
};
const METRIC: Units = Units {
    scale: 1000.0,
    base: "",
    units: &["k", "M", "G", "T", "P"],
};

/// wrk's `format_units`: step up while the value is at least 85% of the next unit; like wrk,
/// the last unit of a table is never reached (wrk tests `units[i+1]`).
fn format_units(mut n: f64, u: &Units, precision: usize) -> String {
    let mut unit = u.base;
    let mut i = 0;
    while i + 1 < u.units.len() && n >= u.scale * 0.85 {
        n /= u.scale;
        unit = u.units[i];
        i += 1;
    }
    format!("{n:.precision$}{unit}")
}

fn time_us(n: f64) -> String {
    if n >= 1_000_000.0 {
        format_units(n / 1_000_000.0, &TIME_S, 2)
    } else {
        format_units(n, &TIME_US, 2)
    }
}

/// wrk's `print_units`: right-aligned in `width`, with two spaces of padding less one per
/// trailing letter of the unit.
fn units_cell(msg: &str, width: usize) -> String {
    let b = msg.as_bytes();
    let mut pad = 2usize;
    if b.last().is_some_and(u8::is_ascii_alphabetic) {
        pad -= 1;
    }
    if b.len() >= 2 && b[b.len() - 2].is_ascii_alphabetic() {
        pad -= 1;
    }
    format!("{msg:>w$}{}", &"  "[..pad], w = width - pad)
}

struct Stats {
    mean: f64,
    stdev: f64,
    max: f64,
    within: f64,
}

fn stats(samples: &[(f64, u64)]) -> Stats {
    let n: u64 = samples.iter().map(|s| s.1).sum();
    if n == 0 {
        return Stats {
            mean: 0.0,
            stdev: 0.0,
            max: 0.0,
            within: 0.0,
        };
    }
    let mean = samples.iter().map(|(v, c)| v * *c as f64).sum::<f64>() / n as f64;
    let var = samples
        .iter()
        .map(|(v, c)| (v - mean).powi(2) * *c as f64)
        .sum::<f64>()
        / (n.saturating_sub(1).max(1)) as f64;
    let stdev = var.sqrt();
    let within: u64 = samples
        .iter()
        .filter(|(v, _)| (*v - mean).abs() <= stdev)
        .map(|s| s.1)
        .sum();
    Stats {
        mean,
        stdev,
        max: samples.iter().map(|s| s.0).fold(0.0, f64::max),
        within: 100.0 * within as f64 / n as f64,
    }
}

/// Writes the report as wrk prints it.
pub(super) fn write(w: &mut impl Write, r: &Report) -> io::Result<()> {
    let o = &r.options;
    let threads = r.volley.thread_timelines.len().max(1);
    let duration_ns = if o.duration > 0 { o.duration } else { r.total };
    let mut s = format!(
        "Running {} test @ {}\n  {} threads and {} connections\n",
        format_units(duration_ns as f64 / 1e9, &TIME_S, 0),
        o.host,
        threads,
        o.connections
    );
    s += &format!(
        "  Thread Stats{:>6}{:>11}{:>8}{:>12}\n",
        "Avg", "Stdev", "Max", "+/- Stdev"
    );
    let lat: Vec<(f64, u64)> = r
        .latency_histogram
        .iter()
        .flat_map(|h| {
            h.iter_recorded()
                .map(|v| {
                    (
                        h.median_equivalent(v.value_iterated_to()) as f64 / 1000.0,
                        v.count_at_value(),
                    )
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let mut l = stats(&lat);
    l.max = r.slowest as f64 / 1000.0;
    s += &format!(
        "    {:<10}{}{}{}{:>8.2}%\n",
        "Latency",
        units_cell(&time_us(l.mean), 8),
        units_cell(&time_us(l.stdev), 10),
        units_cell(&time_us(l.max), 9),
        l.within
    );
    // Whole seconds only: a thread's last, partial second would drag the rate down.
    let rps: Vec<(f64, u64)> = r
        .volley
        .thread_timelines
        .iter()
        .flat_map(|t| {
            let whole = if t.len() > 1 {
                &t[..t.len() - 1]
            } else {
                &t[..]
            };
            whole.iter().map(|c| (*c as f64, 1u64)).collect::<Vec<_>>()
        })
        .collect();
    let q = stats(&rps);
    s += &format!(
        "    {:<10}{}{}{}{:>8.2}%\n",
        "Req/Sec",
        units_cell(&format_units(q.mean, &METRIC, 2), 8),
        units_cell(&format_units(q.stdev, &METRIC, 2), 10),
        units_cell(&format_units(q.max, &METRIC, 2), 9),
        q.within
    );
    let secs = r.total as f64 / 1e9;
    s += &format!(
        "  {} requests in {}, {}B read\n",
        r.count,
        time_us(r.total as f64 / 1000.0),
        format_units(r.volley.bytes_received as f64, &BINARY, 2)
    );
    let errors = r.error_count();
    if errors > 0 {
        s += &format!("  Non-2xx or 3xx responses: {errors}\n");
    }
    s += &format!("Requests/sec: {:>9.2}\n", r.count as f64 / secs.max(1e-9));
    s += &format!(
        "Transfer/sec: {:>10}B\n",
        format_units(r.volley.bytes_received as f64 / secs.max(1e-9), &BINARY, 2)
    );
    w.write_all(s.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_like_wrk() {
        assert_eq!(time_us(1110.0), "1.11ms");
        assert_eq!(time_us(316.4), "316.40us");
        assert_eq!(time_us(21_580.0), "21.58ms");
        assert_eq!(time_us(10_000_000.0), "10.00s");
        assert_eq!(format_units(14_460.0, &METRIC, 2), "14.46k");
        assert_eq!(format_units(860.0, &METRIC, 2), "0.86k");
        assert_eq!(format_units(840.0, &METRIC, 2), "840.00");
        assert_eq!(format_units(164_030_000.0, &BINARY, 2), "156.43M");
        assert_eq!(format_units(10.0, &TIME_S, 0), "10s");
        // "    Latency     1.11ms  316.40us  21.58ms   95.79%" from the seed.
        let line = format!(
            "    {:<10}{}{}{}{:>8.2}%",
            "Latency",
            units_cell("1.11ms", 8),
            units_cell("316.40us", 10),
            units_cell("21.58ms", 9),
            95.79
        );
        assert_eq!(line, "    Latency     1.11ms  316.40us  21.58ms   95.79%");
        let line = format!(
            "    {:<10}{}{}{}{:>8.2}%",
            "Req/Sec",
            units_cell("14.46k", 8),
            units_cell("0.86k", 10),
            units_cell("15.26k", 9),
            86.67
        );
        assert_eq!(line, "    Req/Sec    14.46k     0.86k   15.26k    86.67%");
        assert_eq!(
            format!(
                "  Thread Stats{:>6}{:>11}{:>8}{:>12}",
                "Avg", "Stdev", "Max", "+/- Stdev"
            ),
            "  Thread Stats   Avg      Stdev     Max   +/- Stdev"
        );
    }
}
