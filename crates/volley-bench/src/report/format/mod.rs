//! Report printers, one file per format, each `fn write(w, report)`; the number and time
//! formatting they share with ghz is in `report::ghzfmt` and `volley_proto::gofmt`.

mod csv;
mod html;
mod influx;
mod json;
mod prometheus;
mod summary;
mod wrk;

use std::io::{self, Write};

use crate::{plan::Format, report::Report};

/// Writes `report` in `format`.
pub fn write(w: &mut impl Write, format: Format, report: &Report) -> io::Result<()> {
    match format {
        Format::Summary => summary::write(w, report),
        Format::Csv => csv::write(w, report),
        Format::Json => json::write(w, report, false),
        Format::Pretty => json::write(w, report, true),
        Format::Html => html::write(w, report),
        Format::InfluxSummary => influx::write_summary(w, report),
        Format::InfluxDetails => influx::write_details(w, report),
        Format::Prometheus => prometheus::write(w, report),
        Format::Wrk => wrk::write(w, report),
    }
}
