//! The units of ghz's flags: Go-style durations (`200ms`, `1m30s`, `1.5h`; volley-proto's
//! parser), as ghz and the seeds write them, and byte sizes (`4MB`, `4 MiB`, `4194304`: SI
//! units 1000-based, IEC 1024-based).

/// Go's `time.ParseDuration`, in volley-proto's one copy (GripMock's durations read the same).
pub use volley_proto::gofmt::parse_duration;

/// Parses a size; a bare number is bytes.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let bad = || format!("invalid size {s:?} (expected e.g. 4194304, 4MB, 4MiB)");
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let n: f64 = t[..split].parse().map_err(|_| bad())?;
    let mult = match t[split..].trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "ki" | "kib" => 1024.0,
        "m" | "mb" => 1e6,
        "mi" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" => 1e9,
        "gi" | "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(bad()),
    };
    let v = n * mult;
    if !(0.0..=usize::MAX as f64).contains(&v) {
        return Err(bad());
    }
    Ok(v as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse_size("4194304").unwrap(), 4_194_304);
        assert_eq!(parse_size("42 MB").unwrap(), 42_000_000);
        assert_eq!(parse_size("4MiB").unwrap(), 4 << 20);
        assert_eq!(parse_size("1.5kb").unwrap(), 1500);
        assert!(parse_size("lots").is_err());
        assert!(parse_size("4 XB").is_err());
    }
}
