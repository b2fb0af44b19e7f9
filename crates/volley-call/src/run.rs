//! A `volley call` command line from flags to exit code, in grpcurl's order: flags, checks,
//! schema files, the dial (when reflection or the call needs it), then the verb. Failures print
//! as grpcurl's `fail` does: usage errors with `Try '... -help'` and exit 2, others exit 1.

use std::time::Instant as StdInstant;

use tokio::time::Instant;

use crate::{
    args::{self, ParseError},
    ctx::{Ctx, Exit, Io, PROGRAM, dial_now, header_pairs, seconds},
    metadata,
    opts::{self, Opts, Plan, Usage},
    source::{self, Reflector, Source},
    usage,
    verbose::Timing,
    verbs,
};

/// Runs `args` (without the program name); returns the exit code.
pub async fn run(args: &[String], mut io: Io<'_>) -> i32 {
    let started = StdInstant::now();
    let parsed = match args::parse(args) {
        Ok(p) => p,
        Err(ParseError::Help) => {
            let _ = write!(io.stderr, "{}", usage::text(PROGRAM));
            return 0;
        }
        Err(ParseError::Bad(m)) => {
            let _ = writeln!(io.stderr, "{m}");
            let _ = write!(io.stderr, "{}", usage::text(PROGRAM));
            return 2;
        }
    };
    let o = Opts::from_parsed(parsed);
    if o.help {
        let _ = write!(io.stderr, "{}", usage::text(PROGRAM));
        return 0;
    }
    if o.version {
        let _ = writeln!(io.stderr, "{PROGRAM} {}", env!("CARGO_PKG_VERSION"));
        return 0;
    }
    let mut warnings = Vec::new();
    let checked = opts::check(&o, &mut warnings);
    for w in &warnings {
        io.warn(w);
    }
    let plan = match checked {
        Ok(p) => p,
        Err(Usage(m)) => return io.usage(&m).0,
    };
    match setup(o, plan, io, started).await {
        Ok(code) | Err(Exit(code)) => code,
    }
}

async fn setup(o: Opts, plan: Plan, mut io: Io<'_>, started: StdInstant) -> Result<i32, Exit> {
    if o.alts {
        return Err(io.usage("The -alts argument is not supported by volley call."));
    }
    if !o.proto_out_dir.is_empty() {
        return Err(io.usage("The -proto-out-dir argument is not supported by volley call."));
    }
    if crate::web::Protocol::parse(&o.protocol).is_none() {
        return Err(io.usage("The -protocol option must be 'grpc', 'grpc-web' or 'connect'."));
    }
    if !o.output.is_empty() && o.output != "json" {
        return Err(io.usage("The -O option must be 'json'."));
    }
    let deadline = (o.max_time > 0.0).then(|| Instant::now() + seconds(o.max_time));
    let mut o = o;
    if o.expand_headers {
        for (list, what) in [
            (&mut o.headers, "additional headers"),
            (&mut o.rpc_headers, "rpc headers"),
            (&mut o.reflect_headers, "reflection headers"),
        ] {
            *list = metadata::expand(list)
                .map_err(|e| io.fail(&format!("Failed to expand {what}"), &e))?;
        }
    }
    let files = if !o.protoset.is_empty() {
        Some(
            source::load_protosets(&o.protoset)
                .map_err(|e| io.fail("Failed to process proto descriptor sets.", &e))?,
        )
    } else if !o.proto.is_empty() {
        Some(
            source::compile_protos(&o.proto, &o.import_path)
                .map_err(|e| io.fail("Failed to process proto source files.", &e))?,
        )
    } else {
        None
    };
    let mut target = plan.target.clone().unwrap_or_default();
    if o.unix && !target.starts_with("unix://") {
        target = format!("unix://{target}");
    }
    let mut ctx = Ctx {
        o,
        plan,
        io,
        source: Source::new(None, files.clone()),
        dialed: None,
        timing: Vec::new(),
        deadline,
        target,
        started,
    };
    if ctx.plan.reflection {
        dial_now(&mut ctx).await?;
        let d = ctx.dialed.as_ref().expect("just dialled");
        let mut headers = ctx.o.headers.clone();
        headers.extend(ctx.o.reflect_headers.iter().cloned());
        let reflector = Reflector {
            conn: d.conn.clone(),
            scheme: d.scheme,
            authority: d.authority.clone(),
            metadata: header_pairs(&metadata::from_headers(&headers)),
        };
        ctx.source = Source::new(Some(reflector), files);
    }
    let code = verbs::run(&mut ctx).await?;
    if ctx.plan.verbosity > 1 && code == 0 {
        let root = Timing {
            title: "Timing Data",
            took: started.elapsed(),
            children: std::mem::take(&mut ctx.timing),
        };
        let _ = write!(ctx.io.stdout, "{}", root.render());
    }
    Ok(code)
}
