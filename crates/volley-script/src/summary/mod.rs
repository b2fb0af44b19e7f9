//! The end-of-test summary in k6's compact layout (k6 v2's `summary.js`: THRESHOLDS, then TOTAL
//! RESULTS with the checks and the metrics by group, names dotted to one column, values padded
//! to their columns); the data `handleSummary(data)` receives and `--summary-export`'s JSON
//! (`data`); figures in k6's forms (`format`).

mod data;
mod format;
mod report;

use std::fmt::Write as _;

pub(crate) use data::{data, export};
use format::{contains, fixed_trimmed, percent, value};
pub(crate) use report::Report;

use crate::{
    metrics::{Agg, CheckCount, Def, Kind},
    thresholds::{MetricThresholds, Threshold},
};

const DEFAULT_TREND_STATS: [&str; 6] = ["avg", "min", "med", "max", "p(90)", "p(95)"];

/// k6's default `summaryTrendStats`.
pub(crate) fn default_trend_stats() -> Vec<String> {
    DEFAULT_TREND_STATS
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
}

/// A metric's figures for its line: the main value and extras, or trend columns.
enum Line {
    Plain(String, Vec<String>),
    Trend(Vec<String>),
}

fn line_of(d: &Def, a: &Agg, r: &Report<'_>) -> Line {
    let c = contains(d);
    match d.kind {
        Kind::Counter => {
            let count = a.stat("count", r.elapsed).unwrap_or(0.0);
            let rate = a.stat("rate", r.elapsed).unwrap_or(0.0);
            Line::Plain(value(count, c), vec![format!("{}/s", value(rate, c))])
        }
        Kind::Gauge => Line::Plain(
            value(a.stat("value", 0.0).unwrap_or(0.0), c),
            vec![
                format!("min={}", value(a.stat("min", 0.0).unwrap_or(0.0), c)),
                format!("max={}", value(a.stat("max", 0.0).unwrap_or(0.0), c)),
            ],
        ),
        Kind::Rate => {
            let passes = a.stat("passes", 0.0).unwrap_or(0.0);
            let fails = a.stat("fails", 0.0).unwrap_or(0.0);
            Line::Plain(
                percent(a.stat("rate", 0.0).unwrap_or(0.0)),
                vec![format!("{passes} out of {}", passes + fails)],
            )
        }
        Kind::Trend => Line::Trend(
            r.trend_stats
                .iter()
                .map(|s| {
                    let v = a.stat(s, r.elapsed).unwrap_or(0.0);
                    let shown = if s == "count" {
                        fixed_trimmed(v, 6)
                    } else {
                        value(v, c)
                    };
                    format!("{s}={shown}")
                })
                .collect(),
        ),
    }
}

fn group_of(name: &str) -> usize {
    match name {
        n if n.starts_with("http_") => 1,
        "vus" | "vus_max" | "iterations" | "iteration_duration" | "dropped_iterations" => 2,
        "data_sent" | "data_received" => 3,
        n if n.starts_with("grpc_") => 4,
        _ => 0,
    }
}

/// k6's groups in its order (`custom` first).
const GROUPS: [&str; 5] = ["CUSTOM", "HTTP", "EXECUTION", "NETWORK", "GRPC"];

/// Renders rows `(indent+name, line)` as one block: dots to one column, values padded.
fn render_rows(out: &mut String, rows: &[(String, Line)], width: usize) {
    let main_w = rows
        .iter()
        .filter_map(|(_, l)| match l {
            Line::Plain(m, _) => Some(m.chars().count()),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let mut extra_w: Vec<usize> = Vec::new();
    let mut trend_w: Vec<usize> = Vec::new();
    for (_, l) in rows {
        match l {
            Line::Plain(_, ex) => {
                for (i, e) in ex.iter().enumerate() {
                    if extra_w.len() <= i {
                        extra_w.push(0)
                    }
                    extra_w[i] = extra_w[i].max(e.chars().count());
                }
            }
            Line::Trend(cols) => {
                for (i, e) in cols.iter().enumerate() {
                    if trend_w.len() <= i {
                        trend_w.push(0)
                    }
                    trend_w[i] = trend_w[i].max(e.chars().count());
                }
            }
        }
    }
    let pad = |s: &str, w: usize| format!("{s}{}", " ".repeat(w.saturating_sub(s.chars().count())));
    for (name, l) in rows {
        let dots = (width - name.chars().count()).max(3);
        let data = match l {
            Line::Plain(m, ex) if ex.len() == 1 => format!("{} {}", pad(m, main_w), ex[0]),
            Line::Plain(m, ex) => format!(
                "{} {}",
                pad(m, main_w),
                ex.iter()
                    .enumerate()
                    .map(|(i, e)| pad(e, extra_w[i]))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            Line::Trend(cols) => cols
                .iter()
                .enumerate()
                .map(|(i, e)| pad(e, trend_w[i]))
                .collect::<Vec<_>>()
                .join(" "),
        };
        let _ = writeln!(out, "{name}{}: {data}", ".".repeat(dots));
    }
}

/// What a threshold looked at: its value (milliseconds for times), and as the summary shows it
/// (`p(95)=752.63ms`).
pub(crate) fn observed(
    r: &Report<'_>,
    t: &MetricThresholds,
    th: &Threshold,
) -> (Option<f64>, String) {
    let Some(d) = r.defs.iter().find(|d| d.name == t.metric) else {
        return (None, String::new());
    };
    let agg = agg_of(r, t);
    let shown = th.source.split(['=', '>', '<']).next().unwrap_or("").trim();
    (
        agg.and_then(|a| a.stat(&th.stat, r.elapsed)),
        format!("{shown}={}", threshold_value(d, &th.stat, agg, r.elapsed)),
    )
}

/// The aggregate a threshold key names: the metric's, or its sub-metric's.
fn agg_of<'a>(r: &'a Report<'_>, t: &MetricThresholds) -> Option<&'a Agg> {
    if t.tags.is_empty() {
        r.totals.agg(
            r.defs
                .iter()
                .position(|x| x.name == t.metric)
                .unwrap_or(usize::MAX),
        )
    } else {
        r.subs
            .iter()
            .find(|(k, _)| *k == t.key)
            .and_then(|(_, a)| a.as_ref())
    }
}

fn threshold_value(d: &Def, stat: &str, a: Option<&Agg>, elapsed: f64) -> String {
    let v = a.and_then(|a| a.stat(stat, elapsed)).unwrap_or(0.0);
    match (d.kind, stat) {
        (Kind::Rate, _) => percent(v),
        (Kind::Counter, "rate") => format!("{}/s", value(v, contains(d))),
        (Kind::Trend, "count") => fixed_trimmed(v, 6),
        _ => value(v, contains(d)),
    }
}

/// The compact summary text (what k6 prints on stdout at the end).
pub(crate) fn text(r: &Report<'_>) -> String {
    let mut out = String::from("\n");
    // THRESHOLDS
    if !r.thresholds.is_empty() {
        out.push_str("  █ THRESHOLDS \n\n");
        let mut order: Vec<usize> = (0..r.thresholds.len()).collect();
        order.sort_by(|a, b| {
            let (x, y) = (&r.thresholds[*a], &r.thresholds[*b]);
            x.metric
                .cmp(&y.metric)
                .then(x.tags.is_empty().cmp(&y.tags.is_empty()).reverse())
                .then(x.key.cmp(&y.key))
        });
        for i in order {
            let t = &r.thresholds[i];
            let Some(d) = r.defs.iter().find(|d| d.name == t.metric) else {
                continue;
            };
            let parent_listed = !t.tags.is_empty()
                && r.thresholds
                    .iter()
                    .any(|p| p.metric == t.metric && p.tags.is_empty());
            let (indent, name) = if parent_listed {
                ("      ", t.key[t.metric.len()..].to_owned())
            } else {
                ("    ", t.key.clone())
            };
            let agg = agg_of(r, t);
            let _ = writeln!(out, "{indent}{name}");
            for (j, th) in t.list.iter().enumerate() {
                let ok = r
                    .outcomes
                    .get(i)
                    .and_then(|o| o.get(j))
                    .copied()
                    .unwrap_or(true);
                let mark = if ok { "✓" } else { "✗" };
                let shown = th.source.split(['=', '>', '<']).next().unwrap_or("").trim();
                let _ = writeln!(
                    out,
                    "{indent}{mark} '{}' {shown}={}",
                    th.source.trim(),
                    threshold_value(d, &th.stat, agg, r.elapsed)
                );
            }
            out.push('\n');
        }
        out.push('\n');
    }
    out.push_str("  █ TOTAL RESULTS \n\n");
    // Checks.
    if let Some(checks) = r
        .totals
        .agg(crate::metrics::id::CHECKS)
        .filter(|a| !a.is_empty())
    {
        let total =
            checks.stat("passes", 0.0).unwrap_or(0.0) + checks.stat("fails", 0.0).unwrap_or(0.0);
        let passes = checks.stat("passes", 0.0).unwrap_or(0.0);
        let fails = total - passes;
        let rows = vec![
            (
                "    checks_total".to_owned(),
                Line::Plain(
                    fixed_trimmed(total, 6),
                    vec![format!(
                        "{}/s",
                        fixed_trimmed(
                            if r.elapsed > 0.0 {
                                total / r.elapsed
                            } else {
                                0.0
                            },
                            6
                        )
                    )],
                ),
            ),
            (
                "    checks_succeeded".to_owned(),
                Line::Plain(
                    percent(if total > 0.0 { passes / total } else { 0.0 }),
                    vec![format!("{passes} out of {total}")],
                ),
            ),
            (
                "    checks_failed".to_owned(),
                Line::Plain(
                    percent(if total > 0.0 { fails / total } else { 0.0 }),
                    vec![format!("{fails} out of {total}")],
                ),
            ),
        ];
        let width = rows
            .iter()
            .map(|(n, _)| n.chars().count())
            .max()
            .unwrap_or(0)
            + 3;
        render_rows(&mut out, &rows, width);
        out.push('\n');
        for c in &r.totals.checks {
            check_line(&mut out, c);
        }
        out.push('\n');
    }
    // Metrics by group.
    let mut groups: Vec<Vec<(String, Line)>> = (0..GROUPS.len()).map(|_| Vec::new()).collect();
    let mut shown: Vec<(usize, &Def)> = r
        .defs
        .iter()
        .enumerate()
        .filter(|(_, d)| d.name != "checks" && d.name != "group_duration")
        .filter(|(i, _)| r.totals.agg(*i).is_some_and(|a| !a.is_empty()))
        .collect();
    shown.sort_by(|a, b| a.1.name.cmp(&b.1.name));
    for (i, d) in shown {
        let Some(a) = r.totals.agg(i) else { continue };
        let g = group_of(&d.name);
        groups[g].push((format!("    {}", d.name), line_of(d, a, r)));
        for t in r
            .thresholds
            .iter()
            .filter(|t| t.metric == d.name && !t.tags.is_empty())
        {
            if let Some((_, Some(sa))) = r.subs.iter().find(|(k, _)| *k == t.key) {
                let tags = t
                    .tags
                    .iter()
                    .map(|(k, v)| format!("{k}:{v}"))
                    .collect::<Vec<_>>()
                    .join(",");
                groups[g].push((format!("      {{ {tags} }}"), line_of(d, sa, r)));
            }
        }
    }
    let width = groups
        .iter()
        .flatten()
        .map(|(n, _)| n.chars().count())
        .max()
        .unwrap_or(0)
        + 3;
    let mut all: Vec<(String, Line)> = Vec::new();
    let mut headers: Vec<(usize, &str)> = Vec::new();
    for (g, rows) in groups.into_iter().enumerate() {
        if rows.is_empty() {
            continue;
        }
        headers.push((all.len(), GROUPS[g]));
        all.extend(rows);
    }
    // Columns are padded across the whole block, so render it once and split by group.
    let mut block = String::new();
    render_rows(&mut block, &all, width);
    let lines: Vec<&str> = block.lines().collect();
    for (n, (start, title)) in headers.iter().enumerate() {
        let end = headers.get(n + 1).map_or(lines.len(), |(s, _)| *s);
        let _ = writeln!(out, "    {title}");
        for l in &lines[*start..end] {
            let _ = writeln!(out, "{l}");
        }
        out.push('\n');
    }
    out.push_str("\n\n");
    out
}

fn check_line(out: &mut String, c: &CheckCount) {
    if c.fails == 0 {
        let _ = writeln!(out, "    ✓ {}", c.name);
    } else {
        let _ = writeln!(out, "    ✗ {}", c.name);
        let pct = (100 * c.passes) / (c.passes + c.fails);
        let _ = writeln!(out, "      ↳  {pct}% — ✓ {} / ✗ {}", c.passes, c.fails);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_dot_to_one_column_and_pad_their_values() {
        let rows = vec![
            (
                "    my_counter".to_owned(),
                Line::Plain("24".into(), vec!["11.606336/s".into()]),
            ),
            (
                "    my_gauge".to_owned(),
                Line::Plain("1.5".into(), vec!["min=1.5".into(), "max=3".into()]),
            ),
            (
                "    my_rate".to_owned(),
                Line::Plain("37.50%".into(), vec!["3 out of 8".into()]),
            ),
        ];
        let mut out = String::new();
        render_rows(&mut out, &rows, "    my_counter".len() + 3);
        assert_eq!(
            out,
            "    my_counter...: 24     11.606336/s\n    my_gauge.....: 1.5    min=1.5     max=3\n    my_rate......: 37.50% 3 out of 8\n"
        );
    }
}
