//! Figures as k6's `summary.js` prints them: durations (`752.63ms`, `18.45µs`, `1m15s`),
//! bytes (`1.2 kB`), rates as truncated percentages, plain numbers to six decimals.

use crate::metrics::Def;

#[derive(Clone, Copy, PartialEq)]
pub(super) enum Contains {
    Time,
    Data,
    Default,
}

pub(super) fn contains(d: &Def) -> Contains {
    if d.time {
        Contains::Time
    } else if d.name == "data_sent" || d.name == "data_received" {
        Contains::Data
    } else {
        Contains::Default
    }
}

/// `parseFloat(v.toFixed(p)).toString()`.
pub(super) fn fixed_trimmed(v: f64, prec: usize) -> String {
    let s = format!("{v:.prec$}");
    if s.contains('.') {
        let t = s.trim_end_matches('0').trim_end_matches('.');
        if t == "-0" { "0".into() } else { t.to_owned() }
    } else {
        s
    }
}

pub(super) fn trunc_trimmed(v: f64, prec: i32) -> String {
    let mult = 10f64.powi(prec);
    fixed_trimmed((v * mult).trunc() / mult, prec as usize)
}

/// k6's `humanizeGenericDuration` (milliseconds in).
pub(super) fn duration(ms: f64) -> String {
    if ms == 0.0 {
        return "0s".into();
    }
    if ms < 0.001 {
        return format!("{}ns", (ms * 1_000_000.0).trunc());
    }
    if ms < 1.0 {
        return format!("{}µs", trunc_trimmed(ms * 1000.0, 2));
    }
    if ms < 1000.0 {
        return format!("{}ms", trunc_trimmed(ms, 2));
    }
    let mut out = format!(
        "{}s",
        trunc_trimmed((ms % 60_000.0) / 1000.0, if ms > 60_000.0 { 0 } else { 2 })
    );
    let rem = (ms / 60_000.0).trunc();
    if rem < 1.0 {
        return out;
    }
    out = format!("{}m{out}", rem % 60.0);
    let rem = (rem / 60.0).trunc();
    if rem < 1.0 {
        return out;
    }
    format!("{rem}h{out}")
}

/// k6's `humanizeBytes`.
pub(super) fn bytes(b: f64) -> String {
    const UNITS: [&str; 6] = ["B", "kB", "MB", "GB", "TB", "PB"];
    if b < 10.0 {
        return format!("{} B", fixed_trimmed(b, 6));
    }
    let e = (b.ln() / 1000f64.ln()).floor().clamp(0.0, 5.0);
    let val = ((b / 1000f64.powf(e)) * 10.0 + 0.5).floor() / 10.0;
    format!(
        "{} {}",
        if val < 10.0 {
            format!("{val:.1}")
        } else {
            format!("{val:.0}")
        },
        UNITS[e as usize]
    )
}

pub(super) fn percent(r: f64) -> String {
    format!("{:.2}%", (r * 10_000.0).trunc() / 100.0)
}

pub(super) fn value(v: f64, c: Contains) -> String {
    match c {
        Contains::Time => duration(v),
        Contains::Data => bytes(v),
        Contains::Default => fixed_trimmed(v, 6),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_print_as_k6_prints_them() {
        assert_eq!(duration(752.634), "752.63ms");
        assert_eq!(duration(0.01845), "18.45µs");
        assert_eq!(duration(868.9), "868.9ms");
        assert_eq!(duration(0.0), "0s");
        assert_eq!(duration(10_070.0), "10.07s");
        assert_eq!(duration(1000.0), "1s");
        assert_eq!(duration(75_000.0), "1m15s");
        assert_eq!(bytes(196.0), "196 B");
        assert_eq!(bytes(1234.0), "1.2 kB");
        assert_eq!(bytes(590.4), "590 B");
        assert_eq!(percent(0.5), "50.00%");
        assert_eq!(percent(0.37549), "37.54%");
        assert_eq!(fixed_trimmed(3.8687794, 6), "3.868779");
        assert_eq!(fixed_trimmed(1.5, 6), "1.5");
    }
}
