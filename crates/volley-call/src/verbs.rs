//! The three verbs as grpcurl runs them: `list` (services sorted, or a service's methods),
//! `describe` (one symbol, or every service in the source's order), and a call, with
//! `-protoset-out`; a call is `call`'s.

use crate::{
    args::go_quote,
    call,
    ctx::{Ctx, Exit},
    describe::{self, Symbol},
    format::Formatter,
    hint,
    opts::Verb,
    source::SourceError,
    template,
};

/// Runs the verb; `Ok` carries the exit code.
pub(crate) async fn run(ctx: &mut Ctx<'_>) -> Result<i32, Exit> {
    match ctx.plan.verb.clone() {
        Verb::List(None) => {
            let mut services = ctx
                .source
                .list_services()
                .await
                .map_err(|e| source_failed(ctx, "Failed to list services", &e))?;
            services.sort();
            if services.is_empty() {
                let _ = writeln!(ctx.io.stdout, "(No services)");
            }
            for s in &services {
                let _ = writeln!(ctx.io.stdout, "{s}");
            }
            protoset_out(ctx, &services).await?;
        }
        Verb::List(Some(name)) => {
            let failed = format!("Failed to list methods for service {}", go_quote(&name));
            let symbol = ctx
                .source
                .find(&name)
                .await
                .map_err(|e| source_failed(ctx, &failed, &e))?;
            let Some(service) = symbol.service() else {
                return Err(ctx.io.fail(&failed, &format!("Service not found: {name}")));
            };
            let mut methods: Vec<String> = service
                .methods()
                .map(|m| m.full_name().to_owned())
                .collect();
            methods.sort();
            if methods.is_empty() {
                let _ = writeln!(ctx.io.stdout, "(No methods)");
            }
            for m in &methods {
                let _ = writeln!(ctx.io.stdout, "{m}");
            }
            protoset_out(ctx, &[name]).await?;
        }
        Verb::Describe(symbol) => describe_all(ctx, symbol).await?,
        Verb::Invoke(symbol) => return call::call(ctx, &symbol).await,
    }
    Ok(0)
}

async fn describe_all(ctx: &mut Ctx<'_>, symbol: Option<String>) -> Result<(), Exit> {
    let symbols = match symbol {
        Some(s) => vec![s],
        None => {
            let services = ctx
                .source
                .list_services()
                .await
                .map_err(|e| source_failed(ctx, "Failed to list services", &e))?;
            if services.is_empty() {
                let _ = writeln!(
                    ctx.io.stdout,
                    "Server returned an empty list of exposed services"
                );
            }
            services
        }
    };
    for s in &symbols {
        let s = s.strip_prefix('.').unwrap_or(s);
        let failed = format!("Failed to resolve symbol {}", go_quote(s));
        let found = ctx
            .source
            .find(s)
            .await
            .map_err(|e| source_failed(ctx, &failed, &e))?;
        let _ = write!(ctx.io.stdout, "{}", describe::describe(&found));
        if let (Symbol::Message(m), true) = (&found, ctx.o.msg_template) {
            let fmt = Formatter::new(&ctx.o.format, true, false, ctx.source.pool());
            let text = fmt.message(&template::make(m)).map_err(|e| {
                ctx.io
                    .fail(&format!("Failed to print template for message {s}"), &e)
            })?;
            let _ = write!(ctx.io.stdout, "\nMessage template:\n{text}\n");
        }
    }
    protoset_out(ctx, &symbols).await
}

/// grpcurl's failure line for a schema lookup, and the flags to give when the server has no
/// reflection.
fn source_failed(ctx: &mut Ctx<'_>, msg: &str, e: &SourceError) -> Exit {
    let exit = ctx.io.fail(msg, e);
    if matches!(e, SourceError::Unsupported) {
        ctx.io.hint(hint::NO_REFLECTION);
    }
    exit
}

async fn protoset_out(ctx: &mut Ctx<'_>, symbols: &[String]) -> Result<(), Exit> {
    if ctx.o.protoset_out.is_empty() {
        return Ok(());
    }
    let failed = format!("Failed to write protoset to {}", ctx.o.protoset_out);
    let bytes = ctx
        .source
        .protoset(symbols)
        .await
        .map_err(|e| ctx.io.fail(&failed, &e))?;
    std::fs::write(&ctx.o.protoset_out, bytes)
        .map_err(|e| ctx.io.fail(&failed, &crate::goerr::io(&e)))
}
