//! `--report FORMAT=FILE`: `volley bench`'s reports of a script's gRPC calls (every call
//! `grpc_req_duration` times), so a script's run gives what a bench run gives: the HTML page,
//! `json` results that `volley report merge` and `compare` take, Prometheus text, ghz's
//! summary. Each worker thread records into a recorder of its own (volley bench's, HDR
//! histograms in nanoseconds); the recorders are merged once, at the end.

use std::{
    cell::RefCell,
    io::Write,
    sync::{Arc, Mutex},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use volley_bench::{
    Format, Outcome, Report, ReportOptions, plan::shard::Shard, recorder::Recorder, report::format,
};
use volley_wire::{Code, Status};

/// The formats a script's report can take: volley bench's, less those that list calls one by
/// one (`csv`, `influx-details`; a script's calls are counted, not kept) and `wrk` (HTTP).
const FORMATS: &str = "summary, json, pretty, html, influx-summary, prometheus";

/// The reports asked for and the recorders that feed them.
#[derive(Debug)]
pub(crate) struct Reports {
    wanted: Vec<(Format, String)>,
    recorders: Mutex<Vec<Arc<Mutex<Recorder>>>>,
    started_unix_nano: i64,
    /// `--shard`, carried in the results for `volley report merge`.
    shard: Option<Shard>,
}

thread_local! {
    /// This thread's recorder, once it has recorded a call.
    static OWN: RefCell<Option<Arc<Mutex<Recorder>>>> = const { RefCell::new(None) };
}

/// `FORMAT=FILE`.
pub(crate) fn parse(value: &str) -> Result<(Format, String), String> {
    let (f, path) = value
        .split_once('=')
        .filter(|(_, p)| !p.is_empty())
        .ok_or_else(|| format!("--report {value}: give FORMAT=FILE, as html=report.html"))?;
    let format = match f {
        "csv" | "influx-details" | "wrk" => None,
        f => Format::parse(f).ok(),
    }
    .ok_or_else(|| format!("--report {value}: the format is one of {FORMATS}, not {f:?}"))?;
    Ok((format, path.to_owned()))
}

fn unix_nanos() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

impl Reports {
    pub(crate) fn new(wanted: Vec<(Format, String)>, shard: Option<Shard>) -> Reports {
        Reports {
            wanted,
            shard,
            recorders: Mutex::new(Vec::new()),
            started_unix_nano: unix_nanos(),
        }
    }

    /// Records a finished call (its time, status code and message, bytes received), `second`
    /// seconds into the run.
    pub(crate) fn record(
        &self,
        (took, code, message, received): (Duration, i32, &str, usize),
        second: u64,
    ) {
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        let status;
        let result = if code == 0 {
            Ok(())
        } else {
            status = Status::new(Code::from_i32(code), message.to_owned());
            Err(&status)
        };
        OWN.with(|own| {
            let mut own = own.borrow_mut();
            let rec = own.get_or_insert_with(|| {
                let r = Arc::new(Mutex::new(Recorder::new(false, 0, 0)));
                self.recorders
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(r.clone());
                r
            });
            let mut r = rec.lock().unwrap_or_else(|e| e.into_inner());
            r.record(0, 0, ns, ns, result);
            r.note_done(second, received);
        });
    }

    /// Writes each report asked for: `name` is the script's, `elapsed` the run's length.
    pub(crate) fn write(&self, name: &str, elapsed: Duration) -> Result<(), String> {
        let mut recorder = Recorder::new(false, 0, 0);
        for r in self
            .recorders
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            let r = std::mem::replace(
                &mut *r.lock().unwrap_or_else(|e| e.into_inner()),
                Recorder::new(false, 0, 0),
            );
            recorder.merge(r);
        }
        let outcome = Outcome::recorded(recorder, elapsed, self.started_unix_nano);
        let options = ReportOptions {
            call: name.to_owned(),
            ..ReportOptions::default()
        };
        let mut report = Report::new(outcome, options, None);
        report.name = name.to_owned();
        if let Some(r) = &mut report.volley.results {
            r.shard = self.shard;
        }
        for (f, path) in &self.wanted {
            let mut out = Vec::new();
            format::write(&mut out, *f, &report)
                .and_then(|()| std::fs::File::create(path)?.write_all(&out))
                .map_err(|e| format!("--report {path}: {e}"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_is_a_format_and_a_file() {
        assert_eq!(
            parse("html=r.html").unwrap(),
            (Format::Html, "r.html".into())
        );
        assert_eq!(parse("json=r.json").unwrap().0, Format::Json);
        assert!(parse("html").unwrap_err().contains("FORMAT=FILE"));
        let e = parse("csv=r.csv").unwrap_err();
        assert!(e.contains("not \"csv\"") && e.contains("html"), "{e}");
        assert!(parse("pdf=r.pdf").unwrap_err().contains("not \"pdf\""));
    }
}
