//! Builds a [`Target`] from a [`Plan`]: the endpoint (TLS, server name, authority), the schema
//! (a .proto compiled in-process, a protoset, or server reflection), the method, the payload
//! encoded once (or its template checked by one render), metadata, and the request head; or,
//! for `http(s)://` targets, the one HTTP request.

use std::sync::Arc;

use http::{HeaderName, HeaderValue};
use prost_reflect::DescriptorPool;
use volley_client::{
    CallHead, Connection, Endpoint,
    endpoint::Target as Addr,
    reflect::fetch_pool,
    tls::{TlsOptions, client_config},
};
use volley_proto::{
    load::{compile_proto, load_protoset},
    message::{encode_all, from_binary, from_json},
    schema::{resolve as resolve_call, split_call},
    template::{CallData, ProtoTemplate, Template, looks_templated},
};

use volley_call::dynamic::Protocol;

use super::{
    CallKind, CustomTarget, GrpcTarget, HttpTarget, Target,
    lines::Lines,
    metadata,
    mix::{MixEntry, MixTarget},
    payload::{self, Payload, Templated},
    web::WebCall,
};
use crate::plan::{DataSource, Plan, SchemaSource, mix::MixCall};

/// Why a target could not be built. Each variant's message is its source's, unchanged.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// Flags that do not fit the target (the message names the flag).
    #[error("{0}")]
    Invalid(String),
    /// The schema could not be loaded, or has no such method.
    #[error(transparent)]
    Schema(#[from] volley_proto::SchemaError),
    /// The request data does not fit the method's input.
    #[error(transparent)]
    Data(#[from] volley_proto::message::DataError),
    /// An address or server name that cannot be used.
    #[error(transparent)]
    Endpoint(#[from] volley_client::EndpointError),
    /// TLS files that could not be used.
    #[error(transparent)]
    Tls(#[from] volley_client::tls::TlsSetupError),
    /// The server could not be reached for reflection.
    #[error(transparent)]
    Connect(#[from] volley_client::connection::ConnectError),
    /// Reflection failed.
    #[error(transparent)]
    Reflect(#[from] volley_client::reflect::ReflectError),
}

macro_rules! invalid {
    ($($t:tt)*) => {
        TargetError::Invalid(format!($($t)*))
    };
}

macro_rules! fail {
    ($($t:tt)*) => {
        return Err(invalid!($($t)*))
    };
}

/// The gRPC target of a plan, calling `host`.
pub(crate) async fn grpc(plan: &Plan, host: &str) -> Result<Target, TargetError> {
    let endpoint = endpoint(plan, host)?;
    let pool = schema(plan, &endpoint).await?;
    let method = resolve_call(&pool, &plan.call)?;
    let desc = &method.descriptor;
    let scheme = if plan.insecure { "http" } else { "https" };
    let base = CallData {
        fully_qualified_name: desc.full_name().into(),
        method_name: desc.name().into(),
        service_name: desc.parent_service().full_name().into(),
        input_name: desc.input().full_name().into(),
        output_name: desc.output().full_name().into(),
        is_client_streaming: desc.is_client_streaming(),
        is_server_streaming: desc.is_server_streaming(),
        ..CallData::default()
    };
    let payload = payload(plan, desc, &base)?;
    if let Payload::Static(frames) = &payload
        && let Some(f) = frames.iter().find(|f| f.len() - 5 > plan.max_send)
    {
        fail!(
            "--max-send-message-size: the request message is {} bytes, over the limit of {}",
            f.len() - 5,
            plan.max_send
        );
    }
    // -H is grpcurl's metadata flag: on a gRPC target its lines are sent as metadata, before
    // -m's pairs.
    let mut fixed = metadata::headers(&plan.headers).map_err(TargetError::Invalid)?;
    let md = metadata::parse(
        plan.metadata.as_deref(),
        &payload::call_data(&base, 0, &"".into(), true),
        "-m",
    )
    .map_err(TargetError::Invalid)?;
    fixed.extend(md.fixed);
    let mut head = CallHead::new(
        scheme,
        &endpoint.authority,
        &method.path,
        &fixed,
        plan.run.timeout,
        plan.gzip,
    )
    .map_err(TargetError::Invalid)?;
    head.max_recv = plan.max_recv;
    let block = volley_client::load::fast::frame::HeaderBlock::of(&head);
    let uuid = matches!(&payload, Payload::Templated(t) if t.template.reads("UUID"))
        || md.per_call.as_ref().is_some_and(|m| m.reads("UUID"));
    if let Some(protocol) = plan.protocol {
        let name = match protocol {
            Protocol::GrpcWeb => "grpc-web",
            Protocol::Connect => "connect",
            Protocol::Grpc => "grpc",
        };
        if desc.is_client_streaming() || desc.is_server_streaming() {
            fail!(
                "--protocol {name}: volley bench makes unary calls over gRPC-Web and Connect; {} streams",
                desc.full_name()
            );
        }
        if md.per_call.is_some() {
            fail!(
                "--protocol {name}: -m with template actions is not sent over gRPC-Web or Connect; give fixed metadata"
            );
        }
        if plan.gzip {
            fail!(
                "--protocol {name}: --enable-compression compresses gRPC messages; leave it off for gRPC-Web and Connect"
            );
        }
        let call = WebCall::new(
            protocol,
            (scheme, &endpoint.authority, &method.path),
            &fixed,
            plan.run.timeout,
            plan.max_recv,
            (payload, base, uuid),
        );
        return Ok(Target::Custom(CustomTarget {
            endpoint,
            call: Arc::new(call),
        }));
    }
    Ok(Target::Grpc(GrpcTarget {
        block,
        endpoint,
        head,
        kind: CallKind::of(desc.is_client_streaming(), desc.is_server_streaming()),
        payload,
        worker_prefix: if plan.run.name.is_empty() {
            String::new()
        } else {
            format!("{}:", plan.run.name)
        },
        stream_call_count: None,
        uuid,
        metadata: md.per_call.map(Arc::new),
        base: Box::new(base),
    }))
}

/// The target of a plan with a mix: each entry built as a target of its own (its data and
/// metadata over the run's), all on `host`'s connections.
pub(crate) async fn mix(plan: &Plan, host: &str) -> Result<Target, TargetError> {
    let mut entries = Vec::new();
    let main = endpoint(plan, host)?;
    for (k, spec) in plan.mix.iter().enumerate() {
        let at = |e: TargetError| invalid!("mix entry {} ({}): {e}", k + 1, spec.name);
        let mut p = plan.clone();
        p.mix.clear();
        if let Some(d) = &spec.data {
            p.data = d.clone();
        }
        if let Some(m) = &spec.metadata {
            p.metadata = Some(m.clone());
        }
        let target = match &spec.call {
            MixCall::Grpc(call) => {
                p.call = call.clone();
                let mut t = grpc(&p, host).await.map_err(at)?;
                if let Target::Grpc(g) = &mut t {
                    g.stream_call_count = spec.stream_call_count;
                }
                t
            }
            MixCall::Http { method, url } => {
                p.method = Some(method.clone());
                p.http2 = true;
                let t = http(&p, url).map_err(at)?;
                let ep = t.endpoint();
                if ep.target.to_string() != main.target.to_string()
                    || ep.tls.is_some() != main.tls.is_some()
                {
                    return Err(at(invalid!(
                        "a mix calls one server: {url} is not {}{host}",
                        if main.tls.is_some() {
                            "https://"
                        } else {
                            "http://"
                        }
                    )));
                }
                t
            }
        };
        entries.push(MixEntry {
            name: spec.name.clone(),
            weight: spec.weight,
            target,
        });
    }
    MixTarget::new(entries)
        .map(Target::Mix)
        .ok_or_else(|| invalid!("the mix's weights sum to 0"))
}

/// The target of `volley bench http(s)://host:port/path`: one prepared HTTP request.
pub(crate) fn http(plan: &Plan, url: &str) -> Result<Target, TargetError> {
    let uri: http::Uri = url
        .parse()
        .map_err(|e| invalid!("invalid URL {url:?}: {e}"))?;
    let https = uri.scheme_str() == Some("https");
    let host = uri
        .host()
        .ok_or_else(|| invalid!("invalid URL {url:?}: no host"))?;
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    let hostport = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let mut ep = Endpoint::new(Addr::parse(&hostport)?)?;
    if https {
        let mut cfg = (*client_config(&tls_options(plan))?).clone();
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
        DataSource::Lines(p, _) => fail!(
            "{}: an NDJSON data file is for gRPC calls (give the HTTP body with -d)",
            p.display()
        ),
    };
    let method = match &plan.method {
        Some(m) => http::Method::from_bytes(m.to_ascii_uppercase().as_bytes())
            .map_err(|_| invalid!("--method: invalid method {m:?}"))?,
        None if body.is_empty() => http::Method::GET,
        None => http::Method::POST,
    };
    let mut headers = http::HeaderMap::new();
    for h in &plan.headers {
        let (k, v) = h
            .split_once(':')
            .ok_or_else(|| invalid!("-H {h:?}: expected 'Name: value'"))?;
        headers.append(
            HeaderName::from_bytes(k.trim().as_bytes())
                .map_err(|_| invalid!("-H {h:?}: invalid header name"))?,
            HeaderValue::from_str(v.trim())
                .map_err(|_| invalid!("-H {h:?}: invalid header value"))?,
        );
    }
    if !plan.http2 && !headers.contains_key(http::header::HOST) {
        headers.insert(
            http::header::HOST,
            HeaderValue::from_str(&ep.authority)
                .map_err(|_| invalid!("invalid authority {:?}", ep.authority))?,
        );
    }
    Ok(Target::Http(HttpTarget {
        endpoint: ep,
        method,
        uri,
        headers,
        body,
        http2: plan.http2,
    }))
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

fn endpoint(plan: &Plan, host: &str) -> Result<Endpoint, TargetError> {
    let addr = Addr::parse(host)?;
    let mut ep = Endpoint::new(addr)?;
    if !plan.insecure {
        let cfg = client_config(&tls_options(plan))?;
        ep = ep.tls(cfg);
    }
    if let Some(n) = &plan.cname {
        ep = ep.server_name(n)?;
    }
    if let Some(a) = &plan.authority {
        ep.authority = a.clone();
    }
    ep.connect_timeout = plan.connect_timeout;
    ep.keepalive = plan.keepalive;
    Ok(ep)
}

async fn schema(plan: &Plan, ep: &Endpoint) -> Result<DescriptorPool, TargetError> {
    Ok(match &plan.schema {
        SchemaSource::Proto(file, imports) => compile_proto(file, imports)?,
        SchemaSource::Protoset(file) => load_protoset(file)?,
        SchemaSource::Reflection => {
            let (service, _) = split_call(&plan.call)?;
            let conn = Connection::connect(ep).await?;
            let md = metadata::parse(
                plan.reflect_metadata.as_deref(),
                &CallData::default(),
                "--reflect-metadata",
            )
            .map_err(TargetError::Invalid)?;
            let md = md.fixed;
            let scheme = if plan.insecure { "http" } else { "https" };
            fetch_pool(&conn, scheme, &ep.authority, service, &md).await?
        }
    })
}

fn payload(
    plan: &Plan,
    desc: &prost_reflect::MethodDescriptor,
    base: &CallData,
) -> Result<Payload, TargetError> {
    let input = desc.input();
    Ok(match &plan.data {
        DataSource::Empty => {
            Payload::from_messages(&encode_all(&from_json(&input, "{}")?), plan.gzip)
        }
        DataSource::Binary(b) => Payload::from_messages(&from_binary(&input, b)?, plan.gzip),
        DataSource::Lines(p, order) => Payload::Lines(Arc::new(
            Lines::open(p, input, plan.gzip, *order).map_err(|e| invalid!("{e}"))?,
        )),
        DataSource::Json(text) if !plan.no_templates && looks_templated(text) => {
            let template = Template::parse_with(text, !plan.no_template_functions)
                .map_err(|e| invalid!("-d: {e}"))?;
            // Render once now, so that data that cannot fit fails before any load.
            let mut sample = String::new();
            template
                .render(base, &mut sample)
                .map_err(|e| invalid!("-d: {e}"))?;
            from_json(&input, &sample).map_err(|e| invalid!("-d (rendered): {e}"))?;
            // Compiled to protobuf when its shape allows, checked on a sample call's data.
            let compiled = ProtoTemplate::compile(
                &template,
                &input,
                &payload::call_data(base, 1, &"g0c0".into(), true),
            );
            Payload::Templated(Arc::new(Templated {
                template,
                compiled,
                input,
                gzip: plan.gzip,
            }))
        }
        DataSource::Json(text) => {
            let msgs = from_json(&input, text).map_err(|e| invalid!("-d: {e}"))?;
            if msgs.is_empty() {
                fail!("-d: an empty array sends nothing");
            }
            Payload::from_messages(&encode_all(&msgs), plan.gzip)
        }
    })
}
