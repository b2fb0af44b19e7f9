//! The `volley` binary: parse, run, and turn an error into one line and a non-zero exit.

use std::{io::IsTerminal, process::ExitCode};

use clap::Parser;
use tracing_subscriber::EnvFilter;

/// The binary's allocator is mimalloc, not glibc's malloc: a unary call's allocations cost
/// fewer instructions and less CPU per call (BENCHMARKS.md, "The binary on mimalloc 2"). Its v2
/// line: v3 keeps freed memory for a second before returning it (a client fed a hostile 16 MiB
/// header block peaked at 77-98 MiB on it, `tests/hostile_server.rs`), v2 for 10 ms. Built
/// without transparent huge pages (`no_thp`): with them an idle `volley serve` held 9 MiB more
/// anonymous memory. The library crates leave the allocator to the application that links
/// them.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // Run as `gripmock` (a symlink or a copy), the binary is `volley mock`.
    let cli = match volley::cli::Cli::try_parse_from(volley::mock::argv(std::env::args_os())) {
        Ok(cli) => cli,
        // Help and version go out as clap writes them; a usage error becomes one line.
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            // clap's message without its usage and help hints, on one line.
            let text = e.to_string();
            let line = text
                .lines()
                .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with("tip:"))
                .collect::<Vec<_>>()
                .join(" ");
            eprintln!("volley: {line}");
            return ExitCode::from(2);
        }
    };
    // RUST_LOG as every tracing-based Rust program reads it; VOLLEY_LOG, the older name, wins;
    // `volley mock` also takes GripMock's LOG_LEVEL (debug, info, warn, error).
    let mock = matches!(cli.command, volley::cli::Command::Mock(_));
    let filter = EnvFilter::try_from_env("VOLLEY_LOG")
        .or_else(|_| EnvFilter::try_from_default_env())
        .or_else(|e| match mock {
            true => EnvFilter::try_from_env("LOG_LEVEL"),
            false => Err(e),
        })
        .unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .init();
    match volley::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("volley: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
