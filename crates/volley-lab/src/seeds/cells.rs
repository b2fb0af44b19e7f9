//! How the lab's tables and charts print one figure: numbers to two places (none past 100),
//! text escaped for HTML, and a row's own cell (the median and spread of repeated runs, or why
//! the case was not run).

use super::row::Row;

/// A figure as the tables print it.
pub(super) fn fig(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// `t` with `&`, `<` and `>` escaped for HTML.
pub(super) fn esc(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A row's figure as the tables show it: the median and spread of repeated runs, or why the
/// case was not run.
pub(super) fn ours_cell(r: &Row) -> String {
    if let Some(why) = &r.not_run {
        return format!("not run: {why}");
    }
    match r.spread {
        Some((lo, hi)) => format!("{} ({}-{}, {} runs)", fig(r.ours), fig(lo), fig(hi), r.runs),
        None => fig(r.ours),
    }
}
