//! What a run shares between its steps: where output goes, grpcurl's `fail` and `warn` (usage
//! errors with `Try '... -help'` and exit 2, others exit 1), the flags and plan, the schema
//! source, the connection (dialled once, with `-vv`'s timings) and `-max-time`'s deadline.

use std::{
    io::{Read, Write},
    time::{Duration, Instant as StdInstant},
};

use http::{HeaderName, HeaderValue};
use tokio::time::Instant;

use crate::{
    args::go_quote,
    dial::{self, DialError, DialOpts, Dialed},
    metadata,
    opts::{Opts, Plan},
    source::Source,
    verbose::Timing,
};

/// The program name in messages.
pub(crate) const PROGRAM: &str = "volley call";

/// Where output goes.
pub struct Io<'a> {
    /// Standard output.
    pub stdout: &'a mut dyn Write,
    /// Standard error.
    pub stderr: &'a mut dyn Write,
    /// What `-d @` reads (standard input when `None`).
    pub stdin: Option<Box<dyn Read + Send>>,
}

/// Ends the run with an exit code; the message is already printed.
pub struct Exit(pub i32);

impl Io<'_> {
    /// grpcurl's `fail(nil, msg)`: a usage error.
    pub fn usage(&mut self, msg: &str) -> Exit {
        let _ = writeln!(self.stderr, "{msg}");
        let _ = writeln!(self.stderr, "Try '{PROGRAM} -help' for more details.");
        Exit(2)
    }

    /// grpcurl's `fail(err, msg)`.
    pub fn fail(&mut self, msg: &str, err: &dyn std::fmt::Display) -> Exit {
        let _ = writeln!(self.stderr, "{msg}: {err}");
        Exit(1)
    }

    /// grpcurl's `warn`.
    pub fn warn(&mut self, msg: &str) {
        let _ = writeln!(self.stderr, "Warning: {msg}");
    }

    /// What to do about the error just printed (volley's own line, after grpcurl's).
    pub fn hint(&mut self, msg: &str) {
        let _ = writeln!(self.stderr, "Hint: {msg}");
    }
}

/// What the verbs share.
pub(crate) struct Ctx<'a> {
    /// The flags.
    pub o: Opts,
    /// The checked command line.
    pub plan: Plan,
    /// Output.
    pub io: Io<'a>,
    /// The schema.
    pub source: Source,
    /// The connection, once dialled.
    pub dialed: Option<Dialed>,
    /// `-vv`'s timing tree (its root's children).
    pub timing: Vec<Timing>,
    /// `-max-time`'s end.
    pub deadline: Option<Instant>,
    /// The address as dialled (`-unix` applied).
    pub target: String,
    /// When the run began.
    pub started: StdInstant,
}

/// Dials the target (grpcurl's `dial`), recording `-vv`'s timings.
pub(crate) async fn dial_now(ctx: &mut Ctx<'_>) -> Result<(), Exit> {
    let started = StdInstant::now();
    let connect = if ctx.o.connect_timeout > 0.0 {
        seconds(ctx.o.connect_timeout)
    } else {
        Duration::from_secs(10)
    };
    let mut deadline = Instant::now() + connect;
    if let Some(d) = ctx.deadline {
        deadline = deadline.min(d);
    }
    let opts = DialOpts {
        target: ctx.target.clone(),
        plaintext: ctx.o.plaintext,
        insecure: ctx.o.insecure,
        cacert: ctx.o.cacert.clone(),
        cert: ctx.o.cert.clone(),
        key: ctx.o.key.clone(),
        authority: ctx.o.authority.clone(),
        servername: ctx.o.servername.clone(),
        keepalive: (ctx.o.keepalive_time > 0.0).then(|| seconds(ctx.o.keepalive_time)),
        deadline,
    };
    let mut warnings = Vec::new();
    let dialed = dial::dial(&opts, &mut warnings).await;
    for w in &warnings {
        ctx.io.warn(w);
    }
    let dialed = match dialed {
        Ok(d) => d,
        Err(DialError::Usage(m)) => return Err(ctx.io.usage(&m)),
        Err(DialError::TlsConfig(e)) => return Err(ctx.io.fail("Failed to create TLS config", &e)),
        Err(DialError::Dial(e, hint)) => {
            let msg = format!("Failed to dial target host {}", go_quote(&ctx.target));
            let exit = ctx.io.fail(&msg, &e);
            if let Some(h) = hint {
                ctx.io.hint(&h);
            }
            return Err(exit);
        }
    };
    let total = started.elapsed();
    let mut children = Vec::new();
    if let Some(t) = dialed.tls_setup {
        children.push(Timing {
            title: "TLS Setup",
            took: t,
            children: vec![],
        });
    }
    children.push(Timing {
        title: "BlockingDial",
        took: total.saturating_sub(dialed.tls_setup.unwrap_or_default()),
        children: vec![],
    });
    ctx.timing.push(Timing {
        title: "Dial",
        took: total,
        children,
    });
    ctx.dialed = Some(dialed);
    Ok(())
}

/// Metadata as HTTP/2 header pairs, or grpc-go's reason to refuse them.
pub(crate) fn header_pairs(
    md: &metadata::Metadata,
) -> Result<Vec<(HeaderName, HeaderValue)>, String> {
    let mut out = Vec::new();
    let mut name: Option<HeaderName> = None;
    for (k, v) in metadata::to_header_map(md)? {
        if k.is_some() {
            name = k;
        }
        if let Some(n) = &name {
            out.push((n.clone(), v));
        }
    }
    Ok(out)
}

/// grpcurl's `floatSecondsToDuration`.
pub(crate) fn seconds(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX)
}
