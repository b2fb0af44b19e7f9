//! `volley bench`: the command line resolved into a plan and run by the library
//! (`volley_bench::Session`: target, engine, report, thresholds, exit code); here only what the
//! terminal program adds: the built-in services served in-process when no host is given, the
//! progress bar or the live sinks (`screen`, `live`, `tui`), Ctrl-C, and the notes printed.

mod live;
mod screen;
mod tui;

use std::{io::IsTerminal, path::PathBuf, process::ExitCode, sync::Arc};

use anyhow::Result;
use volley_bench::{
    Control, Plan, Session,
    plan::{BenchArgs, SchemaSource, from_args},
};

use screen::Screen;

/// Runs `volley bench`; the exit code is its thresholds' verdict (0 without thresholds).
pub fn run(args: BenchArgs) -> Result<ExitCode> {
    let mut plan = from_args(&args)?;
    if plan.emit.is_some() {
        return emit(&plan);
    }
    if plan.watch.tui && !std::io::stdout().is_terminal() {
        anyhow::bail!(
            "--tui needs a terminal (stdout is not one): use --live FILE to watch a run from a script"
        );
    }
    let _embedded = match plan.host {
        None => Some(embedded(&mut plan, &args.stubs)?),
        Some(_) => None,
    };
    let session = Session::prepare(&plan)?;
    let control = Arc::new(Control::default());
    // Ctrl-C or SIGTERM ends the run; the report is still written.
    let on_signal = control.clone();
    crate::signal::on_first(move |_| on_signal.cancel());
    let (mut screen, observers) = Screen::start(&plan, &control)?;
    let ran = session.run(control, observers);
    screen.stop()?;
    let done = ran.finish(&mut std::io::stdout().lock())?;
    for note in &done.notes {
        eprintln!("volley: {note}");
    }
    if done.report.is_some() {
        screen.linger();
    }
    Ok(ExitCode::from(done.exit_code))
}

/// `--emit k8s-job`: prints the plan as an Indexed Job, one pod per shard.
fn emit(plan: &Plan) -> Result<ExitCode> {
    let argv: Vec<String> = std::env::args().collect();
    let manifest = volley_bench::k8s::manifest(plan, &argv)
        .ok_or_else(|| anyhow::anyhow!("--emit: the plan has nothing to emit"))?;
    print!("{}", manifest.yaml);
    if let Some(note) = &manifest.note {
        eprintln!("volley: {note}");
    }
    Ok(ExitCode::SUCCESS)
}

/// No host: the built-in services are served in-process, and the plan calls them.
fn embedded(plan: &mut Plan, stubs: &[PathBuf]) -> Result<crate::serve::Embedded> {
    // A --proto or --protoset with no host: its services are served in-process too (from
    // --stubs, or default answers), so a plan can be tried before its server exists.
    let defaults = volley_mock::Defaults {
        stream_messages: 3,
        delay: std::time::Duration::ZERO,
    };
    let (protos, imports, protosets) = match &plan.schema {
        SchemaSource::Proto(file, imports) => (vec![file.clone()], imports.clone(), vec![]),
        SchemaSource::Protoset(file) => (vec![], vec![], vec![file.clone()]),
        SchemaSource::Reflection => (vec![], vec![], vec![]),
    };
    let pools = volley_mock::pools(&protos, &imports, &protosets)?;
    if pools.is_empty() && !stubs.is_empty() {
        anyhow::bail!("--stubs answer the services of a .proto: give --proto or --protoset");
    }
    let stubs = volley_mock::Stubs::load(stubs, &pools, defaults)?;
    let extra = volley_mock::services(&pools, &protos, &protosets, &stubs)?;
    // The seed protos name built-in services: those keep their real answers.
    let builtin: Vec<String> = volley_services::all(volley_services::Options::default())
        .iter()
        .map(|s| s.name().to_owned())
        .collect();
    let extra: Vec<_> = extra
        .into_iter()
        .filter(|s| !builtin.iter().any(|b| b == s.name()))
        .collect();
    let what = if extra.is_empty() {
        "the built-in services".to_owned()
    } else {
        let names: Vec<&str> = extra.iter().map(|s| s.name()).collect();
        format!("the built-in services and {}", names.join(", "))
    };
    let (addr, guard) = crate::serve::start_embedded(extra)?;
    eprintln!("volley: no host given; benching {what} on {addr}");
    plan.host = Some(addr.to_string());
    plan.insecure = true;
    Ok(guard)
}
