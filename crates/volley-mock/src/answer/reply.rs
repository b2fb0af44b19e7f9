//! What a matched stub sends: its templates rendered with the call's data, its messages
//! decoded into the output type, its status with `google.rpc` details, its headers and
//! trailers, its delay; and its effects applied.

use std::time::{Duration, SystemTime};

use http::{HeaderMap, HeaderValue};
use prost_reflect::{DynamicMessage, MethodDescriptor};
use serde_json::{Map, Value};
use volley_server::{Code, Status};

use crate::{
    check::output::fixup,
    model::{Delay, Effect, Origin, Reply, Stub, Text},
    notfound::header_map,
    stubs::Stubs,
    template::{Ctx, Root},
};

/// The request as templates read it: fields by .proto and JSON names, defaults included.
pub(crate) fn request_json(req: &DynamicMessage) -> Value {
    let mut out = match crate::notfound::request_map(req) {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let desc = prost_reflect::ReflectMessage::descriptor(req);
    if desc.fields().any(|f| f.json_name() != f.name()) {
        let opts = prost_reflect::SerializeOptions::new()
            .skip_default_fields(false)
            .stringify_64_bit_integers(false);
        if let Ok(Value::Object(m)) =
            req.serialize_with_options(serde_json::value::Serializer, &opts)
        {
            for (k, v) in m {
                out.entry(k).or_insert(v);
            }
        }
    }
    Value::Object(out)
}

/// The templates' data for one reply of `stub`.
pub(crate) fn ctx(
    stub: &Stub,
    method: &MethodDescriptor,
    headers: &HeaderMap,
    requests: &[DynamicMessage],
    index: usize,
    attempt: u32,
    at: SystemTime,
) -> Ctx {
    let all: Vec<Value> = requests.iter().map(request_json).collect();
    Ctx {
        request: all.last().cloned().unwrap_or(Value::Object(Map::new())),
        requests: Value::Array(all),
        headers: Value::Object(header_map(headers)),
        message_index: index as i64,
        time: at
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i64),
        stub_id: stub.id.to_string(),
        attempt: i64::from(attempt),
        max_attempts: i64::from(stub.times),
        service: method.parent_service().full_name().to_owned(),
        method: method.name().to_owned(),
        input: method.input().full_name().to_owned(),
        output: method.output().full_name().to_owned(),
        ..Ctx::default()
    }
}

fn failed(stub: &Stub, what: &str, e: impl std::fmt::Display) -> Status {
    Status::internal(format!(
        "{}: failed to process dynamic templates: {what}: {e}",
        stub.source
    ))
}

/// A text, rendered when it is a template.
pub(crate) fn text(t: &Text, ctx: Option<&Ctx>, stub: &Stub, what: &str) -> Result<String, Status> {
    match t {
        Text::Fixed(s) => Ok(s.clone()),
        Text::Templated(tpl) => {
            let root: &dyn Root = match ctx {
                Some(c) => c,
                None => &crate::template::Nothing,
            };
            tpl.render(root).map_err(|e| failed(stub, what, e))
        }
    }
}

/// A delay, rendered when it is a template (empty or negative: none).
pub(crate) fn delay(d: &Delay, ctx: Option<&Ctx>, stub: &Stub) -> Result<Duration, Status> {
    match d {
        Delay::None => Ok(Duration::ZERO),
        Delay::Fixed(d) => Ok(*d),
        Delay::Templated(t) => {
            let root: &dyn Root = match ctx {
                Some(c) => c,
                None => &crate::template::Nothing,
            };
            let s = t
                .render(root)
                .map_err(|e| failed(stub, "output.delay", e))?;
            let s = s.trim();
            if s.is_empty() || s.starts_with('-') {
                return Ok(Duration::ZERO);
            }
            crate::duration::parse(s).ok_or_else(|| {
                Status::internal(format!(
                    "{}: delay template rendered an invalid duration {s:?}",
                    stub.source
                ))
            })
        }
    }
}

/// Waits `d` (nothing when zero).
pub(crate) async fn wait(d: Duration) {
    if !d.is_zero() {
        tokio::time::sleep(d).await;
    }
}

/// One reply message: fixed, or rendered and decoded.
pub(crate) fn message(
    r: &Reply,
    ctx: Option<&Ctx>,
    stub: &Stub,
    method: &MethodDescriptor,
) -> Result<DynamicMessage, Status> {
    let shape = match r {
        Reply::Fixed(m) => return Ok(m.clone()),
        Reply::Templated(s) => s,
    };
    let root: &dyn Root = match ctx {
        Some(c) => c,
        None => &crate::template::Nothing,
    };
    let mut v = shape.render(root).map_err(|e| failed(stub, "output", e))?;
    fixup(&method.output(), &mut v);
    DynamicMessage::deserialize(method.output(), v.clone()).map_err(|e| {
        let pool = method.parent_pool();
        match crate::check::output::unresolved_any(pool, &v) {
            // Go's protojson words it so, and GripMock's callers see it.
            Some(url) => Status::new(
                Code::Unknown,
                format!("unable to resolve {url:?}: \"not found\""),
            ),
            None => Status::new(
                Code::Unknown,
                format!(
                    "{}: failed to unmarshal JSON into dynamic message: {e} (json={v})",
                    stub.source
                ),
            ),
        }
    })
}

/// Adds `pairs` (values with `;` are several values) to `map`.
pub(crate) fn add_metadata(
    map: &mut HeaderMap,
    pairs: &[(http::HeaderName, Text)],
    ctx: Option<&Ctx>,
    stub: &Stub,
) -> Result<(), Status> {
    for (k, t) in pairs {
        let v = text(t, ctx, stub, k.as_str())?;
        for part in v.split(';') {
            if let Ok(hv) = HeaderValue::from_str(part) {
                map.append(k.clone(), hv);
            }
        }
    }
    Ok(())
}

/// A failure: the code, the message rendered, the details, and the stub's headers and
/// trailers (sent as trailers: the call ends with them).
pub(crate) fn status(
    stub: &Stub,
    code: Code,
    msg: &Text,
    details: &[prost_types::Any],
    ctx: Option<&Ctx>,
) -> Status {
    let message = match text(msg, ctx, stub, "output.error") {
        Ok(m) => m,
        Err(e) => return e,
    };
    let mut st = if details.is_empty() {
        Status::new(code, message)
    } else {
        Status::with_details(code, message, details.to_vec())
    };
    let _ = add_metadata(st.metadata_mut(), &stub.output.headers, ctx, stub);
    let _ = add_metadata(st.metadata_mut(), &stub.output.trailers, ctx, stub);
    st
}

/// Runs the stub's effects: all rendered first; if one fails, none runs.
pub(crate) fn effects(stubs: &Stubs, stub: &Stub, ctx: Option<&Ctx>) {
    if stub.effects.is_empty() {
        return;
    }
    let root: &dyn Root = match ctx {
        Some(c) => c,
        None => &crate::template::Nothing,
    };
    let mut upserts = Vec::new();
    let mut deletes = Vec::new();
    for e in &stub.effects {
        match e {
            Effect::Upsert(shape) => match shape.render(root) {
                Ok(v) => upserts.push(v),
                Err(e) => {
                    tracing::warn!(
                        "{}: failed to prepare effect; skip all effects for request: {e}",
                        stub.source
                    );
                    return;
                }
            },
            Effect::Delete(t) => {
                match text(t, ctx, stub, "effects.id").map(|s| uuid::Uuid::parse_str(s.trim())) {
                    Ok(Ok(id)) => deletes.push(id),
                    _ => {
                        tracing::warn!(
                            "{}: failed to prepare effect; skip all effects for request: bad id",
                            stub.source
                        );
                        return;
                    }
                }
            }
        }
    }
    if !upserts.is_empty()
        && let Err(e) = stubs.upsert(&upserts, Origin::Rest, stub.session.as_deref())
    {
        tracing::warn!("{}: effect upsert refused: {e}", stub.source);
    }
    if !deletes.is_empty() {
        stubs.delete(&deletes);
    }
}
