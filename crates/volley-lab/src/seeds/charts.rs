//! The lab report's charts, inline SVG: bars of ours beside the seed's figure, and line charts
//! on ticked axes with units. Each SVG has a viewBox and scales down with the page, so no text
//! is cut at any width; the lab's test measures every text's box in Chromium.

use std::fmt::Write as _;

use super::{
    cells::{esc, fig, ours_cell},
    row::Row,
};

/// A generous estimate of a text's width in pixels at `size` px (sans-serif digits and lower
/// case run about 0.55-0.62 em; the charts leave room for 0.64).
fn text_w(t: &str, size: f64) -> f64 {
    t.chars().count() as f64 * size * 0.64
}

/// An SVG that scales down with the page (its viewBox is `w` x `h`) and never past its size.
fn svg_open(w: f64, h: f64) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w:.0} {h:.0}\" \
         style=\"width:100%;max-width:{w:.0}px\" role=\"img\">"
    )
}

/// Horizontal bars, ours and the seed's for each case; each case's name on the line above its
/// bars, so a long name never runs into them.
pub(super) fn bars(rows: &[&Row]) -> String {
    let max = rows
        .iter()
        .flat_map(|r| [r.ours, r.seed.unwrap_or(0.0)])
        .fold(1.0_f64, f64::max);
    let value = |r: &Row| format!("{} {}", fig(r.ours), r.unit);
    let label_w = rows
        .iter()
        .map(|r| text_w(&r.case, 12.0))
        .fold(0.0, f64::max);
    let value_w = rows
        .iter()
        .map(|r| {
            text_w(&value(r), 11.0).max(text_w(
                &format!("seed {}", fig(r.seed.unwrap_or(0.0))),
                11.0,
            ))
        })
        .fold(0.0, f64::max)
        + 8.0;
    let bar_w = 520.0;
    let w = label_w.max(bar_w + value_w) + 4.0;
    let row_h = 50.0;
    let h = row_h * rows.len() as f64 + 24.0;
    let mut s = svg_open(w, h);
    for (i, r) in rows.iter().enumerate() {
        let y = i as f64 * row_h;
        let _ = write!(
            s,
            "<text x=\"0\" y=\"{}\" font-size=\"12\">{}</text>",
            y + 13.0,
            esc(&r.case)
        );
        if r.not_run.is_some() {
            let _ = write!(
                s,
                "<text x=\"0\" y=\"{}\" font-size=\"11\" fill=\"#777\">{}</text>",
                y + 30.0,
                esc(&ours_cell(r))
            );
        } else {
            let ours = r.ours / max * bar_w;
            let _ = write!(
                s,
                "<rect x=\"0\" y=\"{}\" width=\"{ours:.1}\" height=\"13\" fill=\"#2f6fdb\"/>\
                 <text x=\"{:.1}\" y=\"{}\" font-size=\"11\">{}</text>",
                y + 18.0,
                ours + 4.0,
                y + 29.0,
                esc(&value(r))
            );
        }
        if let Some(seed) = r.seed {
            let sw = seed / max * bar_w;
            let _ = write!(
                s,
                "<rect x=\"0\" y=\"{}\" width=\"{sw:.1}\" height=\"13\" fill=\"#aaaaaa\"/>\
                 <text x=\"{:.1}\" y=\"{}\" font-size=\"11\">seed {}</text>",
                y + 33.0,
                sw + 4.0,
                y + 44.0,
                fig(seed)
            );
        }
    }
    let _ = write!(
        s,
        "<text x=\"0\" y=\"{}\" font-size=\"11\" fill=\"#2f6fdb\">&#9632; ours</text>\
         <text x=\"60\" y=\"{}\" font-size=\"11\" fill=\"#777\">&#9632; seed (published)</text></svg>",
        h - 6.0,
        h - 6.0
    );
    s
}

/// Axis ticks from 0 to at least `max`: steps of 1, 2 or 5 times a power of ten, at most six.
fn ticks(max: f64) -> Vec<f64> {
    let max = if max > 0.0 { max } else { 1.0 };
    let raw = max / 5.0;
    let pow = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * pow)
        .find(|st| max / st <= 5.0)
        .unwrap_or(10.0 * pow);
    let n = (max / step).ceil() as usize;
    (0..=n).map(|i| i as f64 * step).collect()
}

/// A tick's label: no more digits than the step needs.
fn tick_label(v: f64) -> String {
    if v == 0.0 || v.abs() >= 10.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if (v * 10.0).fract().abs() < 1e-9 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A line chart of one or more series of (x, y) points, with ticked axes in the given units.
pub(super) fn line_chart(
    title: &str,
    x_unit: &str,
    y_unit: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> String {
    let all = series.iter().flat_map(|(_, p)| p.iter());
    let (xmax, ymax) = all.fold((0.0_f64, 0.0_f64), |(a, b), (x, y)| (a.max(*x), b.max(*y)));
    let (xt, yt) = (ticks(xmax), ticks(ymax));
    let (xtop, ytop) = (xt[xt.len() - 1], yt[yt.len() - 1]);
    let left = yt
        .iter()
        .map(|v| text_w(&tick_label(*v), 10.0))
        .fold(0.0, f64::max)
        + 8.0;
    let (w, h, top, bottom, right) = (380.0, 210.0, 22.0, 34.0, 14.0);
    let (pw, ph) = (w - left - right, h - top - bottom);
    let px = |x: f64| left + x / xtop * pw;
    let py = |y: f64| top + ph - y / ytop * ph;
    let colors = [
        "#2f6fdb", "#d9822b", "#3a9b5c", "#b04b9e", "#777777", "#c23b3b",
    ];
    let mut s = String::from("<figure>");
    s += &svg_open(w, h);
    let _ = write!(
        s,
        "<text x=\"0\" y=\"12\" font-size=\"10\">{}</text>\
         <rect x=\"{left:.1}\" y=\"{top}\" width=\"{pw:.1}\" height=\"{ph:.1}\" fill=\"none\" stroke=\"#bbb\"/>",
        esc(y_unit)
    );
    for v in &yt {
        let y = py(*v);
        let _ = write!(
            s,
            "<line x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#eee\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\">{}</text>",
            left,
            left + pw,
            left - 4.0,
            y + 3.5,
            tick_label(*v)
        );
    }
    for (i, v) in xt.iter().enumerate() {
        let x = px(*v);
        // The first and last labels are anchored inside the plot's span, so none overhangs.
        let anchor = match i {
            0 => "start",
            _ if i == xt.len() - 1 => "end",
            _ => "middle",
        };
        let _ = write!(
            s,
            "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#bbb\"/>\
             <text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"{anchor}\">{}</text>",
            top + ph,
            top + ph + 4.0,
            top + ph + 15.0,
            tick_label(*v)
        );
    }
    let _ = write!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\">{}</text>",
        left + pw,
        h - 4.0,
        esc(x_unit)
    );
    for (i, (_, pts)) in series.iter().enumerate() {
        let path: Vec<String> = pts
            .iter()
            .map(|(x, y)| format!("{:.1},{:.1}", px(*x), py(*y)))
            .collect();
        let _ = write!(
            s,
            "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>",
            colors[i % colors.len()],
            path.join(" ")
        );
    }
    s += "</svg><figcaption><b>";
    s += &esc(title);
    s += "</b>";
    for (i, (name, _)) in series.iter().enumerate() {
        let _ = write!(
            s,
            "<br><span style=\"color:{}\">&#9632;</span> {}",
            colors[i % colors.len()],
            esc(name)
        );
    }
    s += "</figcaption></figure>";
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_maximum() {
        assert_eq!(ticks(100.0), [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        assert_eq!(ticks(7.3), [0.0, 2.0, 4.0, 6.0, 8.0]);
        assert_eq!(ticks(0.42), [0.0, 0.1, 0.2, 0.30000000000000004, 0.4, 0.5]);
        assert_eq!(ticks(0.0), [0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]);
        assert_eq!(tick_label(0.30000000000000004), "0.3");
        assert_eq!(tick_label(25000.0), "25000");
    }
}
