//! From flags and config file to a checked plan: every ghz default and validation rule, each
//! failure one line naming the flag. The flags arrive typed and merged (`flags`); here they are
//! resolved one section at a time, each step taking its options: `target` (where, what, TLS),
//! `load` (workers, connections, pace, stop), `data` (which data and metadata), `output`,
//! `gates`, `scale` (shards, `--emit`) and `watch`. What comes from outside the flags is read in
//! `input`: the environment first, then (every rule having held) standard input and files.

macro_rules! bail {
    ($($t:tt)*) => {
        return Err(PlanError::new(format!($($t)*)))
    };
}

mod data;
mod gates;
mod input;
mod load;
mod output;
mod scale;
mod target;
mod watch;

use serde_json::{Map, Value};

use super::{Plan, PlanError, Raw, args::BenchArgs, config, flags::Flags, options::RunOptions};
use input::Env;

/// The plan of `volley bench`'s arguments: `--config`, then `--scenario` (whose keys win over
/// the config's), then the flags over both.
pub fn from_args(a: &BenchArgs) -> Result<Plan, PlanError> {
    let mut cfg = match &a.config {
        Some(p) => config::load(p)?,
        None => Map::new(),
    };
    // A scenario is a config file with a mix and stages; its keys win over --config's.
    if let Some(p) = &a.scenario {
        cfg.extend(config::load_scenario(p)?);
    }
    resolve(a, &cfg)
}

/// Checks and resolves the arguments: the command line over the config file over ghz's defaults.
pub fn resolve(a: &BenchArgs, cfg: &Map<String, Value>) -> Result<Plan, PlanError> {
    resolve_in(a, cfg, &Env::read())
}

/// [`resolve`] in the environment `env`.
fn resolve_in(a: &BenchArgs, cfg: &Map<String, Value>, env: &Env) -> Result<Plan, PlanError> {
    let mut f = Flags::from_args(a)?.or(Flags::from_config(cfg)?);
    let target = target::target(a, cfg, &mut f)?;
    let load = load::load(a, cfg, &mut f, target.http_mode)?;
    let data = data::data(&mut f)?;
    let output = output::output(a, &mut f, target.http_mode)?;
    let gates = gates::gates(a, &mut f, &target.mix)?;
    let scale = scale::scale(a, env, load.max_c, target.host.as_deref())?;
    let watch = watch::watch(a)?;
    let input = input::read(data.data, data.metadata, load.service_config.as_deref())?;
    let lb = load.lb.unwrap_or_else(|| {
        input
            .service_config
            .as_ref()
            .and_then(|c| c.lb_policy())
            .unwrap_or_default()
    });
    Ok(Plan {
        host: target.host,
        call: target.call,
        mix: target.mix,
        schema: target.schema,
        insecure: target.insecure,
        cacert: target.cacert,
        cert: target.cert,
        key: target.key,
        cname: target.cname,
        skip_tls: target.skip_tls,
        authority: target.authority,
        data: input.data,
        metadata: input.metadata,
        reflect_metadata: data.reflect_metadata,
        run: RunOptions {
            stop: load.stop,
            max_duration: load.max_duration,
            duration_stop: load.duration_stop,
            concurrency: load.concurrency,
            pace: load.pace,
            async_mode: load.async_mode,
            connections: load.connections,
            strategy: load.strategy,
            lb,
            service_config: input.service_config,
            timeout: load.timeout,
            cpus: load.cpus,
            skip_first: load.skip_first,
            count_errors: output.count_errors,
            details_cap: output.details_cap,
            stream: data.stream,
            name: output.name,
            shard: scale.shard,
            start_at: scale.start_at,
            abort_on: gates.abort_on,
            client: env.client,
        },
        gzip: target.gzip,
        protocol: target.protocol,
        connect_timeout: target.connect_timeout,
        keepalive: target.keepalive,
        format: output.format,
        output: output.output,
        tags: output.tags,
        no_templates: data.no_templates,
        no_template_functions: data.no_template_functions,
        max_recv: target.max_recv,
        max_send: target.max_send,
        debug: output.debug,
        http_mode: target.http_mode,
        thresholds: gates.thresholds,
        junit: gates.junit,
        headers: a.header.clone(),
        method: a.method.clone(),
        http2: a.http2,
        server_metrics: output.server_metrics,
        watch,
        emit: scale.emit,
        raw: Raw {
            total: if load.duration.is_some() { 0 } else { load.n },
            concurrency: load.c,
            rps: load.rps,
            import_paths: target.report_import_paths,
            proto: target
                .proto
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            protoset: target
                .protoset
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            timeout_ns: load.timeout.map_or(0, |t| t.as_nanos() as u64),
            duration_ns: load.duration.map_or(0, |d| d.as_nanos() as u64),
            binary: data.binary,
        },
    })
}

#[cfg(test)]
mod tests;
