//! Time for templates: now, RFC 3339, Go's layouts (`2006-01-02T15:04:05Z07:00`) and Go's way of
//! printing durations (`1.5s`, `1h2m3s`).

pub(crate) fn now_nanos() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// A moment as RFC 3339 with nanoseconds, UTC.
pub(crate) fn rfc3339(nanos: i64) -> String {
    go_layout(nanos, "2006-01-02T15:04:05.999999999Z07:00")
}

/// A duration as Go prints it (`1.5s`, `100ms`, `1h2m3s`).
pub(crate) fn go_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let (neg, n) = (nanos < 0, nanos.unsigned_abs());
    let sign = if neg { "-" } else { "" };
    let trim = |x: f64| format!("{x}");
    if n < 1_000 {
        return format!("{sign}{n}ns");
    }
    if n < 1_000_000 {
        return format!("{sign}{}µs", trim(n as f64 / 1e3));
    }
    if n < 1_000_000_000 {
        return format!("{sign}{}ms", trim(n as f64 / 1e6));
    }
    let (h, rest) = (n / 3_600_000_000_000, n % 3_600_000_000_000);
    let (m, rest) = (rest / 60_000_000_000, rest % 60_000_000_000);
    let secs = trim(rest as f64 / 1e9);
    match (h, m) {
        (0, 0) => format!("{sign}{secs}s"),
        (0, m) => format!("{sign}{m}m{secs}s"),
        (h, m) => format!("{sign}{h}h{m}m{secs}s"),
    }
}

/// Formats a moment with a Go layout (`2006-01-02T15:04:05Z07:00`), in UTC.
pub(crate) fn go_layout(nanos: i64, layout: &str) -> String {
    use chrono::{DateTime, Datelike, Timelike};
    let t = DateTime::from_timestamp(
        nanos.div_euclid(1_000_000_000),
        nanos.rem_euclid(1_000_000_000) as u32,
    )
    .unwrap_or_default();
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    const DAYS: [&str; 7] = [
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
    ];
    let month = MONTHS[t.month0() as usize];
    let day = DAYS[t.weekday().num_days_from_monday() as usize];
    let frac = format!("{:09}", t.nanosecond());
    let tokens: [(&str, String); 26] = [
        ("2006", format!("{:04}", t.year())),
        ("January", month.to_owned()),
        ("Monday", day.to_owned()),
        ("Jan", month[..3].to_owned()),
        ("Mon", day[..3].to_owned()),
        ("MST", "UTC".into()),
        ("Z07:00", "Z".into()),
        ("-07:00", "+00:00".into()),
        ("-0700", "+0000".into()),
        ("Z0700", "Z".into()),
        (".000000000", format!(".{frac}")),
        (".999999999", trimmed(&frac)),
        (".000000", format!(".{}", &frac[..6])),
        (".999999", trimmed(&frac[..6])),
        (".000", format!(".{}", &frac[..3])),
        (".999", trimmed(&frac[..3])),
        ("01", format!("{:02}", t.month())),
        ("02", format!("{:02}", t.day())),
        ("_2", format!("{:>2}", t.day())),
        ("15", format!("{:02}", t.hour())),
        ("03", format!("{:02}", t.hour12().1)),
        ("04", format!("{:02}", t.minute())),
        ("05", format!("{:02}", t.second())),
        ("06", format!("{:02}", t.year() % 100)),
        ("PM", if t.hour() >= 12 { "PM" } else { "AM" }.into()),
        ("pm", if t.hour() >= 12 { "pm" } else { "am" }.into()),
    ];
    let mut out = String::new();
    let mut rest = layout;
    'outer: while !rest.is_empty() {
        for (tok, val) in &tokens {
            if let Some(r) = rest.strip_prefix(tok) {
                out.push_str(val);
                rest = r;
                continue 'outer;
            }
        }
        let c = rest.chars().next().unwrap_or_default();
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

fn trimmed(frac: &str) -> String {
    let t = frac.trim_end_matches('0');
    if t.is_empty() {
        String::new()
    } else {
        format!(".{t}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_and_durations() {
        assert_eq!(
            go_layout(1_717_046_400_000_000_000, "2006-01-02T15:04:05Z07:00"),
            "2024-05-30T05:20:00Z"
        );
        assert_eq!(go_duration(1_500_000_000), "1.5s");
        assert_eq!(go_duration(3_723_000_000_000), "1h2m3s");
        assert_eq!(go_duration(250_000_000), "250ms");
    }
}
