//! volley-script: `volley run script.js`, k6's `k6 run` for gRPC scripts. A script written for
//! k6 (ES modules, `k6/net/grpc`'s `Client` and `Stream`, `check`, `sleep`, `group`, `options`
//! with thresholds and scenarios, `setup`/`teardown`/`handleSummary`, `k6/metrics`, `k6/data`,
//! `k6/execution`) runs unchanged, on an embedded QuickJS (one runtime per VU, on its own
//! thread) and volley's client, and prints k6's banner, progress and summary.
//!
//! Layout, from the command line down:
//! - `cli` (k6's flags), `run` (a run: options, setup, scenarios, thresholds, summary, exit
//!   code as k6 sets it: 99 thresholds crossed, 104 bad options, 107 a script error, 108
//!   aborted);
//! - `options` (k6's options and shortcuts to scenarios), `thresholds`, `exec` (the executors;
//!   `arrival`, the start times of an arrival rate),
//!   `ui` (banner and progress), `summary` (the end-of-test summary and `handleSummary` data);
//! - `sched` (VUs as coroutines on a worker thread per core), `vu` (a VU: runtime, iteration,
//!   event loop), `state` (what its natives share with it),
//!   `natives` (`__k6` and k6's globals), `modules` (what `import` finds), the built-in
//!   modules' JavaScript in `js/`, `grpc` (`k6/net/grpc` on `volley_call::dynamic`), `http`
//!   (`k6/http`'s requests on HTTP/1.1);
//! - `metrics` (k6's metrics, per-VU sinks, totals), `shared` (what the VUs share), `log`.

mod arrival;
mod cli;
mod duration;
mod exec;
mod exit;
mod grpc;
mod http;
mod log;
mod metrics;
mod modules;
mod natives;
mod options;
mod out;
mod report;
mod run;
mod sched;
mod shard;
mod shared;
mod state;
mod summary;
mod thresholds;
mod ui;
mod vu;

use std::{
    collections::BTreeMap,
    sync::{Arc, atomic::Ordering},
};

use clap::Parser;
pub use cli::RunArgs;

use crate::{run::Run, shared::Shared};

/// Runs `volley run ARGS` (or `k6 run ARGS`); returns the exit code.
pub fn main(args: &[String]) -> i32 {
    let argv = std::iter::once("volley run".to_owned()).chain(args.iter().cloned());
    match RunArgs::try_parse_from(argv) {
        Ok(a) => run(a),
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            0
        }
        Err(e) => {
            let text = e.to_string();
            let line = text
                .lines()
                .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with("tip:"))
                .collect::<Vec<_>>()
                .join(" ");
            eprintln!("volley run: {line}");
            exit::GENERIC
        }
    }
}

/// Runs a parsed command line; returns the exit code.
pub fn run(args: RunArgs) -> i32 {
    let log = match log::Logger::new(&args.log_output, &args.log_format, args.verbose) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("volley run: {e}");
            return exit::GENERIC;
        }
    };
    let script = match std::fs::canonicalize(&args.script) {
        Ok(p) if p.is_file() => p,
        _ => {
            log.line(
                "error",
                &format!(
                    "The moduleSpecifier \"{}\" couldn't be found on local disk. Make sure that you've specified the right path to the file.",
                    args.script
                ),
                &[],
            );
            return exit::GENERIC;
        }
    };
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    if args.include_system_env_vars {
        env.extend(std::env::vars());
    }
    for kv in &args.env {
        match kv.split_once('=') {
            Some((k, v)) if !k.is_empty() => {
                env.insert(k.to_owned(), v.to_owned());
            }
            _ => {
                log.line("error", &format!("--env {kv:?}: give KEY=VALUE"), &[]);
                return exit::INVALID_CONFIG;
            }
        }
    }
    let shared = Arc::new(Shared::new(script, env, log));
    shared
        .insecure_tls
        .store(args.insecure_skip_tls_verify, Ordering::Relaxed);
    let code = match Run::prepare(&shared, &args) {
        Ok(run) => run.go(&shared, &args),
        Err(code) => code,
    };
    if let Some(dir) = shared.tls_dir.get() {
        let _ = std::fs::remove_dir_all(dir);
    }
    code
}
