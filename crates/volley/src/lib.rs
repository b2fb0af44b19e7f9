//! volley, the tool: the command line of its product commands, `serve`, `bench`, `call`,
//! `run`, `mock`, `gateway`, `openapi`, `ui`, `report` and `lab`. This crate only parses the command line, wires signals
//! (in one place, [`signal`]) and prints (progress, live views, reports, errors); the libraries
//! do the work: `volley-server` and `volley-services` for `serve`, `volley-bench` for `bench`
//! and `report`, `volley-call` for `call`, `volley-script` for `run`, `volley-mock` for `mock`, `volley-gateway` for `gateway`, `volley-ui` for `ui`,
//! `volley-lab` for `lab`. `main.rs` parses, sets up logging, runs and maps the outcome to an
//! exit code, so tests drive everything in-process.

pub mod bench;
pub mod cli;
pub mod gateway;
pub mod mock;
pub mod openapi;
pub mod progress;
pub mod report;
pub mod serve;
pub mod server;
pub mod signal;

use std::process::ExitCode;

use anyhow::Result;

use cli::{Cli, Command, LabTool, ServeWhat};

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<ExitCode> {
    let done = match cli.command {
        Command::Serve(mut args) => match args.what.take() {
            Some(ServeWhat::Gateway(g)) => volley_lab::gateway::run(g, signal::next),
            None => serve::run(*args),
        },
        // `mock verify` exits 1 when a stub disagrees with the service.
        Command::Mock(args) => return mock::run(*args),
        Command::Gateway(args) => gateway::run(*args),
        Command::Openapi(args) => openapi::run(args),
        Command::Ui(args) => volley_ui::run(*args, async {
            let which = signal::next().await;
            tracing::info!("received {which}, stopping");
        })
        .map_err(anyhow::Error::msg),
        // Its thresholds choose the exit code (`volley_bench::gate`).
        Command::Bench(args) => return bench::run(*args),
        // grpcurl's exit codes (64 + a status code for a failed call).
        Command::Call { args } => return Ok(ExitCode::from(volley_call::main(&args) as u8)),
        // k6's exit codes (99 thresholds crossed, 107 a script error, ...).
        Command::Run { args } => return Ok(ExitCode::from(volley_script::main(&args) as u8)),
        Command::Report(cli::ReportCommand::Merge(args)) => return report::merge(args),
        Command::Report(cli::ReportCommand::Compare(args)) => return report::compare(args),
        Command::Lab(lab) => match lab.tool {
            None => volley_lab::seeds::run(lab.all),
            Some(LabTool::Orders(args)) => volley_lab::orders::run(args, signal::next),
            Some(LabTool::Gateway(args)) => volley_lab::gateway::run(args, signal::next),
            Some(LabTool::Link(args)) => volley_lab::link::run(args, signal::next),
        },
        Command::Orders(args) => volley_lab::orders::run(args, signal::next),
        Command::Link(args) => volley_lab::link::run(args, signal::next),
        Command::Completions { shell } => completions(shell),
    };
    done.map(|()| ExitCode::SUCCESS)
}

/// Prints the completion script for `shell`. Written from a buffer: a reader that closes early
/// (`| head`) ends the output, not the process with a panic.
fn completions(shell: clap_complete::Shell) -> Result<()> {
    use std::io::Write;
    let mut script = Vec::new();
    let mut cmd = <Cli as clap::CommandFactory>::command();
    clap_complete::generate(shell, &mut cmd, "volley", &mut script);
    match std::io::stdout().lock().write_all(&script) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}
