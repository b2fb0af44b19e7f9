//! The clock templates read: now, in nanoseconds since the epoch. Go's time and duration forms
//! are `crate::gofmt`'s.

pub(crate) fn now_nanos() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}
