//! `volley bench`: resolve the flags, reach the server (or start the built-in one), get the
//! schema, prepare the payload once, run the engine, print the report.

mod config;
mod resolve;

use std::{
    io::{IsTerminal, Write},
    sync::{Arc, atomic::AtomicU64},
    time::Duration,
};

use anyhow::{Context, Result, anyhow, bail};
use http::{HeaderName, HeaderValue};
use prost_reflect::DescriptorPool;
use serde_json::{Map, Value};
use volley_bench::{
    CallKind, Control, GrpcTarget, HttpTarget, Report, ReportOptions, Target,
    schedule::Shape,
    target::payload::{Payload, Templated},
};
use volley_client::{
    CallHead, Connection, Endpoint,
    endpoint::Target as Addr,
    reflect::fetch_pool,
    tls::{TlsOptions, client_config},
};
use volley_proto::{
    message::{encode_all, from_binary, from_json},
    schema::{compile_proto, load_protoset, resolve as resolve_call, split_call},
    template::{CallData, Template, looks_templated},
};

use crate::cli::bench::BenchArgs;
pub use resolve::{DataSource, Plan, SchemaSource, resolve};

/// Runs `volley bench`.
pub fn run(args: BenchArgs) -> Result<()> {
    let cfg = match &args.config {
        Some(p) => config::load(p)?,
        None => Map::new(),
    };
    let mut plan = resolve(&args, &cfg)?;
    let setup = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let _embedded = if plan.host.is_none() {
        let (addr, guard) = crate::serve::start_embedded()?;
        eprintln!("volley: no host given; benching the built-in services on {addr}");
        plan.host = Some(addr.to_string());
        plan.insecure = true;
        Some(guard)
    } else {
        None
    };
    let host = plan.host.clone().unwrap_or_default();
    if plan.http_mode {
        drop(setup);
        return run_http(plan, &host);
    }
    let endpoint = endpoint(&plan, &host)?;
    let pool = setup.block_on(schema(&plan, &endpoint))?;
    let method = resolve_call(&pool, &plan.call)?;
    let desc = &method.descriptor;
    let scheme = if plan.insecure { "http" } else { "https" };
    let base = CallData {
        fully_qualified_name: desc.full_name().to_owned(),
        method_name: desc.name().to_owned(),
        service_name: desc.parent_service().full_name().to_owned(),
        input_name: desc.input().full_name().to_owned(),
        output_name: desc.output().full_name().to_owned(),
        is_client_streaming: desc.is_client_streaming(),
        is_server_streaming: desc.is_server_streaming(),
        ..CallData::default()
    };
    let payload = payload(&plan, desc, &base)?;
    if let Payload::Static(frames) = &payload {
        if let Some(f) = frames.iter().find(|f| f.len() - 5 > plan.max_send) {
            bail!(
                "--max-send-message-size: the request message is {} bytes, over the limit of {}",
                f.len() - 5,
                plan.max_send
            );
        }
    }
    let metadata = metadata(plan.metadata.as_deref(), &base, "-m")?;
    let head = CallHead::new(
        scheme,
        &endpoint.authority,
        &method.path,
        &metadata,
        plan.run.timeout,
        plan.gzip,
    )
    .map_err(|e| anyhow!(e))?;
    let mut head = head;
    head.max_recv = plan.max_recv;
    let target = Arc::new(Target::Grpc(GrpcTarget {
        endpoint,
        head,
        kind: CallKind::of(desc.is_client_streaming(), desc.is_server_streaming()),
        payload,
        worker_prefix: if plan.run.name.is_empty() {
            String::new()
        } else {
            format!("{}:", plan.run.name)
        },
    }));
    drop(setup);

    execute(plan, target, &host)
}

/// Runs the engine and writes the report.
fn execute(mut plan: Plan, target: Arc<Target>, host: &str) -> Result<()> {
    let control = Arc::new(Control::default());
    let progress = std::io::stderr()
        .is_terminal()
        .then(|| Arc::new(AtomicU64::new(0)));
    plan.run.progress = progress.clone();
    spawn_ctrl_c(control.clone());
    let bar = progress.map(|p| crate::progress::Bar::start(p, &plan.run));
    let outcome = volley_bench::run(&plan.run, target, control)?;
    if let Some(b) = bar {
        b.finish();
    }
    if outcome.generator_saturated {
        eprintln!(
            "volley: note: the generator's threads were busy for most of the run; the figures may show the generator's limit, not the server's (try --cpus or fewer workers)"
        );
    }
    if outcome.rate_not_kept {
        eprintln!(
            "volley: note: the rate asked was not kept (calls were sent late); latency is measured from the intended send times"
        );
    }
    let report = Report::new(outcome, report_options(&plan, host), plan.tags.clone());
    if let Some(path) = &plan.debug {
        debug_log(path, &report)?;
    }
    let mut out: Box<dyn Write> = match &plan.output {
        Some(p) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("cannot write -o {}", p.display()))?,
        )),
        None => Box::new(std::io::stdout().lock()),
    };
    volley_bench::format::write(&mut out, plan.format, &report)?;
    out.flush()?;
    Ok(())
}

/// `volley bench http(s)://host:port/path`: plain HTTP load with the same engine and reports.
fn run_http(plan: Plan, url: &str) -> Result<()> {
    let uri: http::Uri = url
        .parse()
        .map_err(|e| anyhow!("invalid URL {url:?}: {e}"))?;
    let https = uri.scheme_str() == Some("https");
    let host = uri
        .host()
        .ok_or_else(|| anyhow!("invalid URL {url:?}: no host"))?;
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    let hostport = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let mut ep =
        Endpoint::new(Addr::parse(&hostport).map_err(|e| anyhow!(e))?).map_err(|e| anyhow!(e))?;
    if https {
        let mut cfg = (*client_config(&tls_options(&plan))?).clone();
        cfg.alpn_protocols = vec![if plan.http2 {
            b"h2".to_vec()
        } else {
            b"http/1.1".to_vec()
        }];
        ep = ep.tls(Arc::new(cfg));
    }
    ep.authority = uri.authority().map(|a| a.to_string()).unwrap_or(hostport);
    ep.connect_timeout = plan.connect_timeout;
    let body = match &plan.data {
        DataSource::Json(t) => bytes::Bytes::from(t.clone()),
        DataSource::Binary(b) => bytes::Bytes::from(b.clone()),
        DataSource::Empty => bytes::Bytes::new(),
    };
    let method = match &plan.method {
        Some(m) => http::Method::from_bytes(m.to_ascii_uppercase().as_bytes())
            .map_err(|_| anyhow!("--method: invalid method {m:?}"))?,
        None if body.is_empty() => http::Method::GET,
        None => http::Method::POST,
    };
    let mut headers = http::HeaderMap::new();
    for h in &plan.headers {
        let (k, v) = h
            .split_once(':')
            .ok_or_else(|| anyhow!("-H {h:?}: expected 'Name: value'"))?;
        headers.append(
            HeaderName::from_bytes(k.trim().as_bytes())
                .map_err(|_| anyhow!("-H {h:?}: invalid header name"))?,
            HeaderValue::from_str(v.trim())
                .map_err(|_| anyhow!("-H {h:?}: invalid header value"))?,
        );
    }
    if !plan.http2 && !headers.contains_key(http::header::HOST) {
        headers.insert(http::header::HOST, HeaderValue::from_str(&ep.authority)?);
    }
    let target = Arc::new(Target::Http(HttpTarget {
        endpoint: ep,
        method,
        uri,
        headers,
        body,
        http2: plan.http2,
    }));
    execute(plan, target, url)
}

/// The TLS flags of a plan.
fn tls_options(plan: &Plan) -> TlsOptions {
    TlsOptions {
        ca: plan.cacert.clone(),
        cert: plan.cert.clone(),
        key: plan.key.clone(),
        skip_verify: plan.skip_tls,
    }
}

fn endpoint(plan: &Plan, host: &str) -> Result<Endpoint> {
    let addr = Addr::parse(host).map_err(|e| anyhow!(e))?;
    let mut ep = Endpoint::new(addr).map_err(|e| anyhow!(e))?;
    if !plan.insecure {
        let cfg = client_config(&tls_options(plan))?;
        ep = ep.tls(cfg);
    }
    if let Some(n) = &plan.cname {
        ep = ep.server_name(n).map_err(|e| anyhow!(e))?;
    }
    if let Some(a) = &plan.authority {
        ep.authority = a.clone();
    }
    ep.connect_timeout = plan.connect_timeout;
    ep.keepalive = plan.keepalive;
    Ok(ep)
}

async fn schema(plan: &Plan, ep: &Endpoint) -> Result<DescriptorPool> {
    Ok(match &plan.schema {
        SchemaSource::Proto(file, imports) => compile_proto(file, imports)?,
        SchemaSource::Protoset(file) => load_protoset(file)?,
        SchemaSource::Reflection => {
            let (service, _) = split_call(&plan.call)?;
            let conn = Connection::connect(ep).await?;
            let md = metadata(
                plan.reflect_metadata.as_deref(),
                &CallData::default(),
                "--reflect-metadata",
            )?;
            let scheme = if plan.insecure { "http" } else { "https" };
            fetch_pool(&conn, scheme, &ep.authority, service, &md).await?
        }
    })
}

fn payload(
    plan: &Plan,
    desc: &prost_reflect::MethodDescriptor,
    base: &CallData,
) -> Result<Payload> {
    let input = desc.input();
    Ok(match &plan.data {
        DataSource::Empty => {
            Payload::from_messages(&encode_all(&from_json(&input, "{}")?), plan.gzip)
        }
        DataSource::Binary(b) => Payload::from_messages(&from_binary(&input, b)?, plan.gzip),
        DataSource::Json(text) if !plan.no_templates && looks_templated(text) => {
            let template = Template::parse_with(text, !plan.no_template_functions)
                .map_err(|e| anyhow!("-d: {e}"))?;
            // Render once now, so that data that cannot fit fails before any load.
            let mut sample = String::new();
            template
                .render(base, &mut sample)
                .map_err(|e| anyhow!("-d: {e}"))?;
            from_json(&input, &sample).map_err(|e| anyhow!("-d (rendered): {e}"))?;
            Payload::Templated(Arc::new(Templated {
                template,
                input,
                base: base.clone(),
                gzip: plan.gzip,
            }))
        }
        DataSource::Json(text) => {
            let msgs = from_json(&input, text).map_err(|e| anyhow!("-d: {e}"))?;
            if msgs.is_empty() {
                bail!("-d: an empty array sends nothing");
            }
            Payload::from_messages(&encode_all(&msgs), plan.gzip)
        }
    })
}

/// Parses a JSON object of metadata; templates are rendered once per run.
fn metadata(
    text: Option<&str>,
    base: &CallData,
    flag: &str,
) -> Result<Vec<(HeaderName, HeaderValue)>> {
    let Some(text) = text else {
        return Ok(Vec::new());
    };
    let rendered = if looks_templated(text) {
        let t = Template::parse(text).map_err(|e| anyhow!("{flag}: {e}"))?;
        let mut out = String::new();
        t.render(base, &mut out)
            .map_err(|e| anyhow!("{flag}: {e}"))?;
        out
    } else {
        text.to_owned()
    };
    let v: Value =
        serde_json::from_str(&rendered).map_err(|e| anyhow!("{flag}: invalid JSON: {e}"))?;
    let Value::Object(map) = v else {
        bail!("{flag}: metadata must be a JSON object of strings");
    };
    let mut out = Vec::new();
    for (k, v) in map {
        let key = HeaderName::from_bytes(k.to_ascii_lowercase().as_bytes())
            .map_err(|_| anyhow!("{flag}: invalid metadata key {k:?}"))?;
        let values: Vec<String> = match v {
            Value::String(s) => vec![s],
            Value::Array(a) => a
                .into_iter()
                .map(|x| {
                    x.as_str()
                        .map(String::from)
                        .unwrap_or_else(|| x.to_string())
                })
                .collect(),
            other => vec![other.to_string()],
        };
        for s in values {
            let val = HeaderValue::from_str(&s)
                .map_err(|_| anyhow!("{flag}: invalid value for metadata key {k:?}"))?;
            out.push((key.clone(), val));
        }
    }
    Ok(out)
}

fn report_options(plan: &Plan, host: &str) -> ReportOptions {
    let r = &plan.run;
    let secs_ns = |d: Duration| d.as_nanos() as u64;
    let data = match &plan.data {
        DataSource::Json(t) => serde_json::from_str(t)
            .ok()
            .or_else(|| Some(Value::String(t.clone()))),
        _ => None,
    };
    let c = &r.concurrency;
    let load = r
        .rate
        .clone()
        .unwrap_or_else(|| volley_bench::schedule::Ramp::constant(0.0));
    ReportOptions {
        call: plan.call.clone(),
        host: host.to_owned(),
        proto: plan.raw.proto.clone(),
        protoset: plan.raw.protoset.clone(),
        import_paths: plan.raw.import_paths.clone(),
        enable_compression: plan.gzip,
        cacert: plan
            .cacert
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        cert: plan
            .cert
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        key: plan
            .key
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        cname: plan.cname.clone().unwrap_or_default(),
        skip_tls: plan.skip_tls,
        insecure: plan.insecure,
        authority: plan.authority.clone().unwrap_or_default(),
        rps: plan.raw.rps,
        load_schedule: load.shape.as_str().into(),
        load_start: if load.shape == Shape::Const {
            0
        } else {
            load.start as u64
        },
        load_end: load.end as u64,
        load_step: load.step as i64,
        load_step_duration: secs_ns(load.step_duration),
        load_max_duration: secs_ns(load.max_duration),
        concurrency: plan.raw.concurrency,
        concurrency_schedule: c.shape.as_str().into(),
        concurrency_start: if c.shape == Shape::Const {
            0
        } else {
            c.start as u64
        },
        concurrency_end: c.end as u64,
        concurrency_step: if c.shape == Shape::Const {
            1
        } else {
            c.step as i64
        },
        concurrency_step_duration: secs_ns(c.step_duration),
        concurrency_max_duration: secs_ns(c.max_duration),
        total: plan.raw.total,
        async_mode: r.async_mode,
        connections: r.connections as u64,
        duration: plan.raw.duration_ns,
        timeout: plan.raw.timeout_ns,
        dial_timeout: secs_ns(plan.connect_timeout),
        keepalive: plan.keepalive.map_or(0, secs_ns),
        data,
        binary: plan.raw.binary,
        metadata: plan
            .metadata
            .as_deref()
            .and_then(|m| serde_json::from_str(m).ok()),
        cpus: r.cpus as u64,
        name: r.name.clone(),
        skip_first: r.skip_first,
        count_errors: r.count_errors,
    }
}

/// `--debug`: JSON lines describing the run (its options, then its outcome and errors).
fn debug_log(path: &std::path::Path, r: &Report) -> Result<()> {
    let mut f = std::fs::File::create(path)
        .with_context(|| format!("cannot write --debug {}", path.display()))?;
    let lines = [
        serde_json::json!({"level": "info", "msg": "run options", "options": &r.options}),
        serde_json::json!({
            "level": "info", "msg": "run done", "endReason": &r.end_reason, "count": r.count,
            "total": r.total, "rps": r.rps, "statusCodeDistribution": &r.status_code_distribution,
        }),
    ];
    for l in lines {
        writeln!(f, "{l}")?;
    }
    for (e, n) in &r.error_distribution.0 {
        writeln!(
            f,
            "{}",
            serde_json::json!({"level": "error", "msg": e, "count": n})
        )?;
    }
    Ok(())
}

fn spawn_ctrl_c(control: Arc<Control>) {
    std::thread::spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        rt.block_on(async {
            if tokio::signal::ctrl_c().await.is_ok() {
                control.cancel();
            }
        });
    });
}
