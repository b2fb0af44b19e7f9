//! volley, the tool: the command line and one module per subcommand. `main.rs` only parses,
//! runs and maps the outcome to an exit code, so tests drive everything in-process.

pub mod bench;
pub mod child;
pub mod cli;
pub mod fds;
pub mod gateway;
pub mod lab;
pub mod link;
pub mod listen;
pub mod mock;
pub mod netns;
pub mod orders;
pub mod progress;
pub mod report;
pub mod serve;
pub mod side_http;

use std::process::ExitCode;

use anyhow::Result;

use cli::{Cli, Command, ServeWhat};

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<ExitCode> {
    let done = match cli.command {
        Command::Serve(mut args) => match args.what.take() {
            Some(ServeWhat::Gateway(g)) => gateway::run(g),
            None => serve::run(*args),
        },
        // Its thresholds choose the exit code (`volley_bench::gate`).
        Command::Bench(args) => return bench::run(*args),
        Command::Orders(args) => orders::run(args),
        Command::Lab(args) => lab::run(args),
        Command::Report(cli::ReportCommand::Merge(args)) => return report::merge(args),
        Command::Report(cli::ReportCommand::Compare(args)) => return report::compare(args),
        Command::Link(args) => link::run(args),
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

/// A multi-threaded runtime with `threads` workers (default: one per core), for the subcommands
/// that serve or call from many tasks (`serve gateway`, `orders`). Returns the thread count too.
pub(crate) fn runtime(threads: Option<usize>) -> Result<(tokio::runtime::Runtime, usize)> {
    let threads = threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()?;
    Ok((rt, threads))
}
