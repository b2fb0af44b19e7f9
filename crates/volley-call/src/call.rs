//! The call verb as grpcurl runs it: dial if reflection did not, resolve the method, read `-d`,
//! call with `-H` and `-rpc-header`, print each event (or the `-O json` document), then `-v`'s
//! summary line and a non-OK status on standard error, exit 64 plus its code.

use std::{io::Write, time::Instant as StdInstant};

use crate::{
    args::go_quote,
    ctx::{Ctx, Exit, dial_now},
    errors,
    format::Formatter,
    input::{Data, Requests},
    invoke::{self, InvokeError},
    json_out::JsonFormat,
    metadata,
    report::{Facts, Report},
    rpc::Head,
    status::CallStatus,
    verbose::{self, Printer, Timing},
    web::Protocol,
};

/// Calls `symbol`; `Ok` carries the exit code.
pub(crate) async fn call(ctx: &mut Ctx<'_>, symbol: &str) -> Result<i32, Exit> {
    let total_started = ctx.started;
    if ctx.dialed.is_none() {
        dial_now(ctx).await?;
    }
    let dial_took = ctx
        .timing
        .iter()
        .find(|t| t.title == "Dial")
        .map(|t| t.took);
    let invoking = format!("Error invoking method {}", go_quote(symbol));
    let call_started = StdInstant::now();
    let method = match invoke::resolve(&mut ctx.source, symbol).await {
        Ok(m) => m,
        Err(InvokeError::Status(s)) if ctx.o.format_error => {
            return Ok(end_with_status(ctx, &s, 0, 0));
        }
        Err(InvokeError::Status(s)) => {
            let text = format!(
                "rpc error: code = {} desc = {}",
                errors::code_name(s.code),
                s.message
            );
            return Err(ctx.io.fail(&invoking, &text));
        }
        Err(InvokeError::Plain(e)) => return Err(ctx.io.fail(&invoking, &e)),
        Err(InvokeError::Hinted(e, h)) => {
            let exit = ctx.io.fail(&invoking, &e);
            ctx.io.hint(&h);
            return Err(exit);
        }
    };
    let data = if ctx.o.data == "@" {
        match ctx.io.stdin.take() {
            Some(r) => Data::Reader(r),
            None => Data::Stdin,
        }
    } else {
        Data::Inline(ctx.o.data.clone())
    };
    let mut requests = Requests::start(
        data,
        method.input(),
        ctx.o.format == "text",
        ctx.o.allow_unknown_fields,
    );
    let fmt = Formatter::new(
        &ctx.o.format,
        ctx.o.emit_defaults,
        ctx.plan.verbosity == 0,
        ctx.source.pool(),
    );
    let protocol = crate::web::Protocol::parse(&ctx.o.protocol).unwrap_or(Protocol::Grpc);
    if protocol == Protocol::GrpcWeb && method.is_client_streaming() {
        return Err(ctx.io.usage(&format!(
            "-protocol {} calls unary and server-streaming methods; {} is {}.",
            ctx.o.protocol,
            method.full_name(),
            if method.is_server_streaming() {
                "bidi-streaming"
            } else {
                "client-streaming"
            }
        )));
    }
    let mut headers = ctx.o.headers.clone();
    headers.extend(ctx.o.rpc_headers.iter().cloned());
    let md = metadata::from_headers(&headers);
    // Metadata grpc-go refuses fails the call with INTERNAL, as grpc-go fails it.
    let header_map = metadata::to_header_map(&md);
    let dialed = ctx.dialed.as_ref().expect("dialled above");
    let ua = if ctx.o.user_agent.is_empty() {
        format!("volley-call/{}", env!("CARGO_PKG_VERSION"))
    } else {
        format!(
            "{} volley-call/{}",
            ctx.o.user_agent,
            env!("CARGO_PKG_VERSION")
        )
    };
    let head = Head {
        scheme: dialed.scheme,
        authority: dialed.authority.clone(),
        path: format!("/{}/{}", method.parent_service().full_name(), method.name()),
        metadata: header_map,
        timeout: ctx
            .deadline
            .map(|d| d.saturating_duration_since(tokio::time::Instant::now())),
        user_agent: ua,
        protocol,
        max_recv: if ctx.o.max_msg_sz > 0 {
            ctx.o.max_msg_sz as usize
        } else {
            4 << 20
        },
        unary: !method.is_client_streaming() && !method.is_server_streaming(),
    };
    let conn = dialed.conn.clone();
    let json_out = ctx.o.output == "json";
    let (target, protocol_name) = (ctx.target.clone(), ctx.o.protocol.clone());
    let mut sink: Vec<u8> = Vec::new();
    let (outcome, responses, status, doc) = {
        let report_fmt = JsonFormat {
            emit_defaults: ctx.o.emit_defaults,
            pool: ctx.source.pool(),
        };
        let mut report = Report::new(&report_fmt);
        let out: &mut dyn Write = if json_out {
            &mut sink
        } else {
            &mut *ctx.io.stdout
        };
        let mut printer = Printer::new(out, ctx.plan.verbosity, &fmt);
        let events: &mut dyn invoke::Events = if json_out { &mut report } else { &mut printer };
        events.resolved(&method);
        events.request_metadata(&md);
        let outcome =
            invoke::invoke(&conn, &head, &method, &mut requests, events, ctx.deadline).await;
        let (responses, status) = if json_out {
            (report.responses(), report.status().clone())
        } else {
            (printer.responses, printer.status.clone())
        };
        let doc = json_out.then(|| {
            report.finish(&Facts {
                target: &target,
                protocol: &protocol_name,
                requests: requests.count(),
                dial: dial_took,
                call: call_started.elapsed(),
                total: total_started.elapsed(),
            })
        });
        (outcome, responses, status, doc)
    };
    ctx.timing.push(Timing {
        title: "InvokeRPC",
        took: call_started.elapsed(),
        children: vec![],
    });
    if let Err(e) = outcome {
        return match e {
            InvokeError::Plain(e) => Err(ctx.io.fail(&invoking, &e)),
            InvokeError::Hinted(e, h) => {
                let exit = ctx.io.fail(&invoking, &e);
                ctx.io.hint(&h);
                Err(exit)
            }
            InvokeError::Status(s) => Ok(end_with_status(ctx, &s, requests.count(), responses)),
        };
    }
    if let Some(doc) = doc {
        let _ = write!(ctx.io.stdout, "{doc}");
        return Ok(if status.code == 0 {
            0
        } else {
            errors::exit_code(&status)
        });
    }
    if ctx.plan.verbosity > 0 {
        let _ = write!(
            ctx.io.stdout,
            "{}",
            verbose::summary(requests.count(), responses)
        );
    }
    if status.code != 0 {
        print_failure(ctx, &status, &fmt);
        return Ok(errors::exit_code(&status));
    }
    Ok(0)
}

fn end_with_status(ctx: &mut Ctx<'_>, s: &CallStatus, requests: usize, responses: usize) -> i32 {
    if ctx.plan.verbosity > 0 {
        let _ = write!(ctx.io.stdout, "{}", verbose::summary(requests, responses));
    }
    let fmt = Formatter::new(
        &ctx.o.format,
        ctx.o.emit_defaults,
        ctx.plan.verbosity == 0,
        ctx.source.pool(),
    );
    print_failure(ctx, s, &fmt);
    errors::exit_code(s)
}

fn print_failure(ctx: &mut Ctx<'_>, status: &CallStatus, fmt: &Formatter) {
    let _ = ctx.io.stdout.flush();
    if ctx.o.format_error {
        match errors::format_status(status, fmt, ctx.o.emit_defaults) {
            Ok(text) => {
                let _ = write!(ctx.io.stderr, "{text}");
            }
            Err(e) => {
                let _ = write!(ctx.io.stderr, "ERROR: {e}");
            }
        }
    } else {
        let _ = errors::print_status(ctx.io.stderr, status, fmt);
    }
}
