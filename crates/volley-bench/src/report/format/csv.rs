//! ghz's CSV: a leading blank line, a header, one row per call (latency in ms, `%4.2f`), errors not
//! escaped (as ghz writes them).

use std::io::{self, Write};

use crate::report::Report;

/// Writes the CSV.
pub(super) fn write(w: &mut impl Write, r: &Report) -> io::Result<()> {
    let mut out = io::BufWriter::new(w);
    out.write_all(b"\nduration (ms),status,error")?;
    for d in r.details.iter().flatten() {
        write!(
            out,
            "\n{:4.2},{},{}",
            d.latency as f64 / 1e6,
            d.status,
            d.error
        )?;
    }
    out.write_all(b"\n")?;
    out.flush()
}
