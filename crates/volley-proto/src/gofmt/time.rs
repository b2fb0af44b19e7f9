//! Go's times, in UTC: `time.RFC3339` and `time.RFC3339Nano` (ghz's reports and `.Timestamp`),
//! any Go layout (`2006-01-02T15:04:05Z07:00`, GripMock's `format`), and protobuf JSON's
//! `Timestamp` and `Duration` (grpcurl's output).
//!
//! The calendar is Howard Hinnant's `civil_from_days`, written here rather than taken from
//! chrono: it is total over every `i64` (a `Timestamp`'s seconds on the wire are any `i64`;
//! chrono's dates end at ±262,143 years), and it is all the calendar these forms need.

/// RFC 3339 with seconds precision (Go's `time.RFC3339` of a UTC time): `2026-11-22T00:16:37Z`.
pub fn rfc3339(unix_nanos: i64) -> String {
    let t = Civil::at(unix_nanos);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    )
}

/// RFC 3339 with the nanoseconds' trailing zeros trimmed (Go's `time.RFC3339Nano`):
/// `2026-11-22T00:16:37.01Z`, and no fraction when it is zero.
pub fn rfc3339_nano(unix_nanos: i64) -> String {
    let mut out = rfc3339(unix_nanos);
    out.pop();
    out.push_str(&trimmed(&format!("{:09}", Civil::at(unix_nanos).nanos)));
    out.push('Z');
    out
}

/// `t.Format(layout)` for the UTC time `unix_nanos`, with Go's reference-time tokens
/// (`2006 01 02 15 04 05`, `1 2 3 4 5`, `Jan`, `Monday`, `.000`, `.999999999`, `Z07:00`, `PM`,
/// ...); the zone is always UTC.
pub fn layout(unix_nanos: i64, layout: &str) -> String {
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
    let t = Civil::at(unix_nanos);
    let month = MONTHS[t.month as usize - 1];
    let day = DAYS[t.weekday as usize];
    let frac = format!("{:09}", t.nanos);
    let hour12 = if t.hour % 12 == 0 { 12 } else { t.hour % 12 };
    let pm = t.hour >= 12;
    // Longest first where one token begins another (`January` before `Jan`, `2006` and `01`
    // before `2` and `1`), as Go's `nextStdChunk` reads them.
    let tokens: [(&str, String); 33] = [
        ("2006", format!("{:04}", t.year)),
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
        ("01", format!("{:02}", t.month)),
        ("02", format!("{:02}", t.day)),
        ("_2", format!("{:>2}", t.day)),
        ("15", format!("{:02}", t.hour)),
        ("03", format!("{hour12:02}")),
        ("04", format!("{:02}", t.minute)),
        ("05", format!("{:02}", t.second)),
        ("06", format!("{:02}", t.year.rem_euclid(100))),
        ("PM", if pm { "PM" } else { "AM" }.into()),
        ("pm", if pm { "pm" } else { "am" }.into()),
        ("-07", "+00".into()),
        ("Z07", "Z".into()),
        ("1", t.month.to_string()),
        ("2", t.day.to_string()),
        ("3", hour12.to_string()),
        ("4", t.minute.to_string()),
        ("5", t.second.to_string()),
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

/// A `google.protobuf.Timestamp` as protobuf JSON writes it (golang/protobuf's jsonpb, grpcurl):
/// RFC 3339 in UTC with 0, 3, 6 or 9 fractional digits.
pub fn proto_timestamp(seconds: i64, nanos: i32) -> String {
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

/// A `google.protobuf.Duration` as protobuf JSON writes it: `1.500s`, `-0.001s`, `3s`.
pub fn proto_duration(seconds: i64, nanos: i32) -> String {
    let sign = if seconds < 0 || nanos < 0 { "-" } else { "" };
    format!(
        "{sign}{}{}s",
        seconds.unsigned_abs(),
        nanos_3_6_9(nanos.unsigned_abs())
    )
}

/// A UTC moment's fields.
struct Civil {
    year: i64,
    month: u32,
    day: u32,
    /// 0 for Monday.
    weekday: i64,
    hour: i64,
    minute: i64,
    second: i64,
    nanos: i64,
}

impl Civil {
    fn at(unix_nanos: i64) -> Civil {
        let secs = unix_nanos.div_euclid(1_000_000_000);
        let days = secs.div_euclid(86_400);
        let of_day = secs.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        Civil {
            year,
            month,
            day,
            // 1970-01-01 was a Thursday.
            weekday: (days + 3).rem_euclid(7),
            hour: of_day / 3600,
            minute: of_day / 60 % 60,
            second: of_day % 60,
            nanos: unix_nanos.rem_euclid(1_000_000_000),
        }
    }
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

/// `.` and the digits without their trailing zeros, or nothing when all are zeros.
fn trimmed(frac: &str) -> String {
    let t = frac.trim_end_matches('0');
    if t.is_empty() {
        String::new()
    } else {
        format!(".{t}")
    }
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

    #[test]
    fn rfc3339_as_go() {
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
        assert_eq!(rfc3339(-1_000_000_000), "1969-12-31T23:59:59Z");
        assert_eq!(rfc3339(951_782_400_000_000_000), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn go_layouts() {
        let t = 1_717_046_400_000_000_000; // 2024-05-30T05:20:00Z, a Thursday
        assert_eq!(
            layout(t, "2006-01-02T15:04:05Z07:00"),
            "2024-05-30T05:20:00Z"
        );
        assert_eq!(
            layout(t + 123_000_000, "Mon Jan _2 03:04:05.000 PM MST 2006"),
            "Thu May 30 05:20:00.123 AM UTC 2024"
        );
        assert_eq!(
            layout(t + 12 * 3_600_000_000_000, "Monday, January 2 3pm .999"),
            "Thursday, May 30 5pm "
        );
        // go1.26.8: time.Unix(0, 0).UTC().Format(...).
        assert_eq!(
            layout(0, "Monday 06 1 4 5 -07 Z07"),
            "Thursday 70 1 0 0 +00 Z"
        );
    }

    #[test]
    fn well_known_types_as_protobuf_json() {
        assert_eq!(proto_timestamp(0, 0), "1970-01-01T00:00:00Z");
        assert_eq!(
            proto_timestamp(1_704_164_645, 500_000_000),
            "2024-01-02T03:04:05.500Z"
        );
        assert_eq!(proto_timestamp(1, 1), "1970-01-01T00:00:01.000000001Z");
        assert_eq!(proto_timestamp(-1, 0), "1969-12-31T23:59:59Z");
        assert_eq!(proto_duration(1, 500_000_000), "1.500s");
        assert_eq!(proto_duration(0, -1_000_000), "-0.001s");
        assert_eq!(proto_duration(3, 0), "3s");
        assert_eq!(proto_duration(0, 1_000), "0.000001s");
    }
}
