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

mod args;
mod call;
mod ctx;
mod describe;
mod dial;
mod envelope;
mod errors;
mod format;
mod go_json;
mod goerr;
mod hint;
mod input;
mod invoke;
mod json_in;
mod json_out;
mod metadata;
mod opts;
mod protoprint;
mod report;
mod rpc;
mod run;
mod source;
mod status;
mod template;
mod text_out;
mod usage;
mod verbose;
mod verbs;
mod web;

pub use ctx::Io;
pub use run::run;

/// One call with a schema known only at run time, on gRPC, gRPC-Web or Connect: dial a target
/// (plaintext or TLS, as grpcurl's flags say), open a [`Call`](dynamic::Call) of any of the four
/// kinds, send `DynamicMessage`s, read the reply's headers, messages, status and trailers. The
/// layer under `volley call`, used as it is by `volley run`'s scripts (`volley-script`).
pub mod dynamic {
    pub use crate::dial::{DialError, DialOpts, Dialed, dial};
    pub use crate::metadata::{Metadata, to_header_map};
    pub use crate::rpc::{Call, Head, Sender};
    pub use crate::source::{compile_protos, load_protosets};
    pub use crate::status::CallStatus;
    pub use crate::web::Protocol;
}

/// What the fuzz targets (`volley-testkit`'s `fuzz`) drive: the readers of untrusted input
/// (the command line, `-d` JSON, gRPC-Web and Connect bodies) and `-proto` compilation for
/// their schema. Not a stable API.
#[doc(hidden)]
pub mod fuzz {
    pub use crate::args::parse as parse_args;
    pub use crate::envelope::{Envelopes, Item};
    pub use crate::go_json::Values;
    pub use crate::json_in::message as json_message;
    pub use crate::opts::{Opts, check as check_opts};
    pub use crate::source::compile_protos;
    pub use crate::web::connect_error;
}

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
