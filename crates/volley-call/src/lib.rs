//! volley-call: `volley call`, grpcurl's everyday job in volley's binary. A grpcurl command line
//! works unchanged with `volley call` in grpcurl's place and prints the same bytes (stdout,
//! stderr, exit code); `-protocol grpc-web|connect` and `-O json` go beyond it.
//!
//! Layout, from the command line down:
//! - `args` (Go's flag grammar), `opts` (grpcurl's checks, in order), `usage` (`-help`);
//! - `run` (flags to exit code), `ctx` (what the steps share), `verbs` (`list`, `describe`),
//!   `call` (a call);
//! - `source` (reflection, `-proto`, `-protoset`), `describe` and `protoprint`
//!   (grpcurl's descriptor text), `template` (`-msg-template`);
//! - `dial` and `goerr` (connections and Go's error words), `rpc`, `web`, `envelope` and
//!   `status` (one call over gRPC, gRPC-Web or Connect), `invoke` (the four kinds, grpcurl's event order);
//! - `input`, `go_json`, `json_in` (request data as grpcurl reads it);
//! - `format`, `json_out`, `text_out` (responses as grpcurl prints them, in Go's number, string
//!   and time forms from `volley_proto::gofmt`),
//!   `metadata`, `verbose` (`-v`, `-vv`), `errors` (the `ERROR:` block, exit codes),
//!   `report` (`-O json`);
//! - `hint` (volley's own line after an error grpcurl leaves there: the flag to give, the
//!   nearest name).

pub mod args;
pub mod call;
pub mod ctx;
pub mod describe;
pub mod dial;
pub mod envelope;
pub mod errors;
pub mod format;
pub mod go_json;
pub mod goerr;
pub mod hint;
pub mod input;
pub mod invoke;
pub mod json_in;
pub mod json_out;
pub mod metadata;
pub mod opts;
mod protoprint;
pub mod report;
pub mod rpc;
pub mod run;
pub mod source;
pub mod status;
pub mod template;
pub mod text_out;
pub mod usage;
pub mod verbose;
pub mod verbs;
pub mod web;

pub use ctx::Io;
pub use run::run;

/// Runs `volley call ARGS` on this process's standard streams; returns the exit code.
pub fn main(args: &[String]) -> i32 {
    let args = args.to_vec();
    let run = std::thread::Builder::new()
        .name("volley-call".into())
        .stack_size(go_json::STACK)
        .spawn(move || main_here(&args));
    match run.map(std::thread::JoinHandle::join) {
        Ok(Ok(code)) => code,
        Ok(Err(_)) => 1,
        Err(e) => {
            eprintln!("volley call: cannot start: {e}");
            1
        }
    }
}

fn main_here(args: &[String]) -> i32 {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("volley call: cannot start: {e}");
            return 1;
        }
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut err = std::io::stderr();
    let code = rt.block_on(run(
        args,
        Io {
            stdout: &mut out,
            stderr: &mut err,
            stdin: None,
        },
    ));
    use std::io::Write as _;
    let _ = out.flush();
    code
}
