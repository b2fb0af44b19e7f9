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
    model::{Delay, Effect, Meta, Origin, Reply, Stub, Text},
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
            volley_proto::gofmt::parse_duration(s).map_err(|_| {
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

/// Adds `pairs` (in GripMock's form, values with `;` are several values) to `map`.
pub(crate) fn add_metadata(
    map: &mut HeaderMap,
    pairs: &[Meta],
    ctx: Option<&Ctx>,
    stub: &Stub,
) -> Result<(), Status> {
    for m in pairs {
        let v = text(&m.value, ctx, stub, m.name.as_str())?;
        let mut add = |part: &str| {
            if let Ok(hv) = HeaderValue::from_str(part) {
                map.append(m.name.clone(), hv);
            }
        };
        match m.split {
            true => v.split(';').for_each(add),
            false => add(&v),
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

#[cfg(test)]
mod tests {
    use prost_reflect::Value as Field;
    use serde_json::json;

    use super::*;
    use crate::testkit::{check, msg, pool, stubs};

    fn values(map: &HeaderMap, name: &str) -> Vec<String> {
        map.get_all(name)
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn a_failure_carries_code_message_details_and_the_stub_s_metadata() {
        let pool = pool();
        let s = stubs(
            &pool,
            json!([{"service": "grpc.health.v1.Health", "method": "Check", "output": {
                "error": "user gone", "code": "NOT_FOUND",
                "details": [{"type": "type.googleapis.com/google.rpc.ErrorInfo",
                             "reason": "GONE", "domain": "example.com"}],
                "headers": {"x-region": "eu;us"}, "trailers": {"x-trace": "t1"}}}]),
        );
        let stub = s.current().all[0].clone();
        let (code, text) = stub.output.status.as_ref().unwrap();
        let st = status(&stub, *code, text, &stub.output.details, None);
        assert_eq!(st.code(), Code::NotFound);
        assert_eq!(st.message(), "user gone");
        let details = st.detail_list();
        assert_eq!(details.len(), 1);
        assert_eq!(
            details[0].type_url,
            "type.googleapis.com/google.rpc.ErrorInfo"
        );
        let info = DynamicMessage::decode(
            pool.get_message_by_name("google.rpc.ErrorInfo").unwrap(),
            details[0].value.as_slice(),
        )
        .unwrap();
        assert_eq!(
            info.get_field_by_name("reason").unwrap().as_str(),
            Some("GONE")
        );
        // Headers and trailers both travel with the status; `;` separates values.
        assert_eq!(values(st.metadata(), "x-region"), ["eu", "us"]);
        assert_eq!(values(st.metadata(), "x-trace"), ["t1"]);
        // No details: a plain status, no grpc-status-details-bin to send.
        let plain = status(&stub, Code::Internal, text, &[], None);
        assert!(plain.details().is_none());
    }

    #[test]
    fn the_templates_data_names_the_call_and_its_request() {
        let pool = pool();
        let m = check(&pool);
        let s = stubs(
            &pool,
            json!([{"service": "grpc.health.v1.Health", "method": "Check",
                    "options": {"times": 3},
                    "output": {"data": {"status": "{{.Request.service}}"}}}]),
        );
        let stub = s.current().all[0].clone();
        assert!(stub.templated);
        let mut headers = HeaderMap::new();
        headers.insert("x-user", HeaderValue::from_static("ann"));
        let reqs = [
            msg(m.input(), json!({"service": "a"})),
            msg(m.input(), json!({"service": "b"})),
        ];
        let c = ctx(&stub, &m, &headers, &reqs, 1, 2, SystemTime::UNIX_EPOCH);
        assert_eq!(c.request, json!({"service": "b"}));
        assert_eq!(c.requests, json!([{"service": "a"}, {"service": "b"}]));
        assert_eq!(c.headers["x-user"], "ann");
        assert_eq!((c.message_index, c.attempt, c.max_attempts), (1, 2, 3));
        assert_eq!(c.time, 0);
        assert_eq!(c.stub_id, stub.id.to_string());
        assert_eq!(
            (c.service.as_str(), c.method.as_str()),
            ("grpc.health.v1.Health", "Check")
        );
        assert_eq!(c.output, "grpc.health.v1.HealthCheckResponse");
    }

    #[test]
    fn a_templated_reply_reads_the_request_and_one_that_does_not_decode_is_unknown() {
        let pool = pool();
        let m = check(&pool);
        let s = stubs(
            &pool,
            json!([{"service": "grpc.health.v1.Health", "method": "Check",
                    "output": {"data": {"status": "{{.Request.service}}"}}}]),
        );
        let stub = s.current().all[0].clone();
        let reply = stub.output.data.as_ref().unwrap();
        let answer = |service: &str| {
            let req = [msg(m.input(), json!({ "service": service }))];
            let c = ctx(&stub, &m, &HeaderMap::new(), &req, 0, 1, SystemTime::now());
            message(reply, Some(&c), &stub, &m)
        };
        let ok = answer("NOT_SERVING").unwrap();
        assert_eq!(
            ok.get_field_by_name("status").as_deref(),
            Some(&Field::EnumNumber(2))
        );
        let e = answer("BOGUS").unwrap_err();
        assert_eq!(e.code(), Code::Unknown);
        assert!(
            e.message()
                .contains("failed to unmarshal JSON into dynamic message"),
            "{}",
            e.message()
        );
    }

    #[test]
    fn a_templated_delay_is_rendered_per_call_and_empty_or_negative_is_none() {
        let pool = pool();
        let m = check(&pool);
        let s = stubs(
            &pool,
            json!([{"service": "grpc.health.v1.Health", "method": "Check",
                    "output": {"data": {}, "delay": "{{.Request.service}}"}}]),
        );
        let stub = s.current().all[0].clone();
        let wait_for = |service: &str| {
            let req = [msg(m.input(), json!({ "service": service }))];
            let c = ctx(&stub, &m, &HeaderMap::new(), &req, 0, 1, SystemTime::now());
            delay(&stub.output.delay, Some(&c), &stub)
        };
        assert_eq!(wait_for("15ms").unwrap(), Duration::from_millis(15));
        assert_eq!(wait_for(" 1s ").unwrap(), Duration::from_secs(1));
        assert_eq!(wait_for("").unwrap(), Duration::ZERO);
        assert_eq!(wait_for("-2s").unwrap(), Duration::ZERO);
        let e = wait_for("soon").unwrap_err();
        assert_eq!(e.code(), Code::Internal);
        assert!(
            e.message()
                .ends_with("delay template rendered an invalid duration \"soon\""),
            "{}",
            e.message()
        );
        assert_eq!(
            delay(&Delay::Fixed(Duration::from_millis(7)), None, &stub).unwrap(),
            Duration::from_millis(7)
        );
    }

    #[test]
    fn effects_run_all_or_none() {
        let pool = pool();
        let m = check(&pool);
        let victim = "aaaaaaaa-0000-0000-0000-00000000000a";
        let s = stubs(
            &pool,
            json!([
                {"id": victim, "service": "grpc.health.v1.Health", "method": "Check",
                 "input": {"equals": {"service": "victim"}}, "output": {"data": {}}},
                {"service": "grpc.health.v1.Health", "method": "Check",
                 "input": {"equals": {"service": "trigger"}}, "output": {"data": {}},
                 "effects": [
                    {"action": "upsert", "stub": {"service": "grpc.health.v1.Health",
                     "method": "Check", "input": {"equals": {"service": "added"}},
                     "output": {"data": {"status": "SERVING"}}}},
                    {"action": "delete", "id": "{{.Request.service}}"}]}
            ]),
        );
        let trigger = s
            .current()
            .all
            .iter()
            .find(|x| !x.effects.is_empty())
            .cloned()
            .unwrap();
        let run = |service: &str| {
            let req = [msg(m.input(), json!({ "service": service }))];
            let c = ctx(
                &trigger,
                &m,
                &HeaderMap::new(),
                &req,
                0,
                1,
                SystemTime::now(),
            );
            effects(&s, &trigger, Some(&c));
        };
        // The delete's id does not parse: the upsert does not run either.
        run("not-a-uuid");
        assert_eq!(s.len(), 2);
        run(victim);
        assert_eq!(s.len(), 2);
        assert!(s.get(uuid::Uuid::parse_str(victim).unwrap()).is_none());
        assert!(
            s.current()
                .all
                .iter()
                .any(|x| x.raw["input"]["equals"]["service"] == "added")
        );
    }

    #[test]
    fn the_request_reads_by_proto_and_json_names_with_defaults() {
        let pool = pool();
        let info = crate::testkit::method(
            &pool,
            "grpc.reflection.v1.ServerReflection",
            "ServerReflectionInfo",
        );
        let req = msg(info.input(), json!({"listServices": "*"}));
        let v = request_json(&req);
        assert_eq!(v["list_services"], "*");
        assert_eq!(v["listServices"], "*");
        // An unset string is there too, as its default.
        assert_eq!(v["host"], "");
        let health = msg(check(&pool).input(), json!({}));
        assert_eq!(request_json(&health), json!({"service": ""}));
    }
}
