//! ghz's JSON report (compact or indented by two spaces), with volley's additions under `volley`.

use std::io::{self, Write};

use crate::report::Report;

/// Writes the JSON (no trailing newline, as ghz).
pub(super) fn write(w: &mut impl Write, r: &Report, pretty: bool) -> io::Result<()> {
    let res = if pretty {
        serde_json::to_writer_pretty(&mut *w, r)
    } else {
        serde_json::to_writer(&mut *w, r)
    };
    res.map_err(io::Error::other)
}
