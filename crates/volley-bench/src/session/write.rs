//! What a finished run writes: the report in its format (to `-o`, or the caller's writer), the
//! `--debug` log (JSON lines: the options, the outcome, each error) and the `--junit` verdicts.

use std::{
    fs::File,
    io::{BufWriter, Write},
    path::Path,
};

use super::error::RunError;
use crate::{
    gate::write_junit,
    plan::Plan,
    report::{Report, format, verdicts::Verdicts},
};

fn create(path: &Path, flag: &str) -> Result<File, RunError> {
    File::create(path).map_err(|source| RunError::Write {
        what: format!("{flag} {}", path.display()),
        source,
    })
}

fn failed(what: &str) -> impl FnOnce(std::io::Error) -> RunError + '_ {
    move |source| RunError::Write {
        what: what.to_owned(),
        source,
    }
}

/// Writes `report` in the plan's format to `-o`, or to `out` when there is none.
pub(super) fn report(plan: &Plan, report: &Report, out: &mut dyn Write) -> Result<(), RunError> {
    let mut file;
    let mut w: &mut dyn Write = match &plan.output {
        Some(p) => {
            file = BufWriter::new(create(p, "-o")?);
            &mut file
        }
        None => out,
    };
    format::write(&mut w, plan.format, report)
        .and_then(|()| w.flush())
        .map_err(failed("the report"))
}

/// `--debug`: JSON lines describing the run (its options, then its outcome and errors).
pub(super) fn debug_log(path: &Path, r: &Report) -> Result<(), RunError> {
    let mut f = create(path, "--debug")?;
    let lines = [
        serde_json::json!({"level": "info", "msg": "run options", "options": &r.options}),
        serde_json::json!({
            "level": "info", "msg": "run done", "endReason": &r.end_reason, "count": r.count,
            "total": r.total, "rps": r.rps, "statusCodeDistribution": &r.status_code_distribution,
        }),
    ];
    let what = format!("--debug {}", path.display());
    for l in lines {
        writeln!(f, "{l}").map_err(failed(&what))?;
    }
    for (e, n) in &r.error_distribution.0 {
        writeln!(
            f,
            "{}",
            serde_json::json!({"level": "error", "msg": e, "count": n})
        )
        .map_err(failed(&what))?;
    }
    Ok(())
}

/// `--junit`: the verdicts as a JUnit test suite named after the run's call.
pub(super) fn junit(path: &Path, plan: &Plan, verdicts: &Verdicts) -> Result<(), RunError> {
    let mut f = create(path, "--junit")?;
    let suite = format!("volley bench {}", plan.call);
    write_junit(&mut f, &suite, verdicts).map_err(failed(&format!("--junit {}", path.display())))
}
