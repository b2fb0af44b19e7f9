//! volley, the tool: the command line and one module per subcommand. `main.rs` only parses,
//! runs and maps the outcome to an exit code, so tests drive everything in-process.

pub mod bench;
pub mod child;
pub mod cli;
pub mod gateway;
pub mod lab;
pub mod netns;
pub mod orders;
pub mod progress;
pub mod serve;

use anyhow::Result;

use cli::{Cli, Command, ServeWhat};

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Serve(mut args) => match args.what.take() {
            Some(ServeWhat::Gateway(g)) => gateway::run(g),
            None => serve::run(*args),
        },
        Command::Bench(args) => bench::run(*args),
        Command::Orders(args) => orders::run(args),
        Command::Lab(args) => lab::run(args),
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
