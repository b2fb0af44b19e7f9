//! `POST /invoke/pkg.Svc.Method`: grpcui's request (`timeout_seconds`, `metadata`, `data`) made
//! into a call on volley's client (any of the four kinds, over gRPC, gRPC-Web or Connect), and
//! its outcome in grpcui's reply shape (`headers`, `error`, `responses`, `requests`,
//! `trailers`). A gRPC status is a 200 with `error` set, as grpcui answers; what is not a gRPC
//! status (a request that does not fit, no connection) is grpcui's plain-text 400 or 500.

use std::time::Duration;

use base64::Engine;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use prost_reflect::{DeserializeOptions, DynamicMessage, MethodDescriptor, SerializeOptions};
use serde_json::{Value, json};
use volley_call::dynamic::{Call, CallStatus, Head, Metadata};
use volley_client::Code;

use crate::state::Ui;

/// A failure that is not a gRPC status: grpcui's HTTP status and text.
pub(crate) type Refusal = (StatusCode, String);

/// grpcui's `rpcInput`.
pub(crate) struct Input {
    timeout: Option<Duration>,
    metadata: Vec<(String, String)>,
    pub(crate) data: Vec<Value>,
}

pub(crate) fn input(body: &[u8]) -> Result<Input, Refusal> {
    let bad = |e: String| {
        (
            StatusCode::BAD_REQUEST,
            format!("Failed to parse JSON: {e}"),
        )
    };
    let v: Value = serde_json::from_slice(body).map_err(|e| bad(e.to_string()))?;
    let timeout = v
        .get("timeout_seconds")
        .and_then(Value::as_f64)
        .filter(|t| *t > 0.0)
        .map(Duration::from_secs_f64);
    let metadata = match v.get("metadata") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(rows)) => rows
            .iter()
            .map(|r| {
                let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or_default();
                (s("name").to_owned(), s("value").to_owned())
            })
            .collect(),
        Some(_) => return Err(bad("metadata: expected a list".into())),
    };
    let data = match v.get("data") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(d)) => d.clone(),
        Some(_) => return Err(bad("data: expected a list".into())),
    };
    Ok(Input {
        timeout,
        metadata,
        data,
    })
}

pub(crate) fn unexpected(e: impl std::fmt::Display) -> Refusal {
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        format!("Unexpected error: {e}"),
    )
}

/// The request messages of `data`, as grpcurl reads JSON (field names or JSON names).
pub(crate) fn messages(
    method: &MethodDescriptor,
    data: &[Value],
) -> Result<Vec<DynamicMessage>, Refusal> {
    let opts = DeserializeOptions::new();
    let msgs = data
        .iter()
        .map(|d| {
            DynamicMessage::deserialize_with_options(method.input(), d, &opts)
                .map_err(|e| unexpected(format!("error getting request data: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if !method.is_client_streaming() && msgs.len() > 1 {
        return Err(unexpected(format!(
            "method {:?} is a unary or server-streaming RPC, but request data contained {} messages",
            method.full_name(),
            msgs.len()
        )));
    }
    Ok(msgs)
}

/// The call's metadata: the form's rows, then `-H` and `-rpc-header` over them.
fn metadata(ui: &Ui, rows: &[(String, String)]) -> Result<HeaderMap, String> {
    let mut h = HeaderMap::new();
    let mut put = |name: &str, value: &str, replace: bool| -> Result<(), String> {
        let n = HeaderName::try_from(name.trim().to_ascii_lowercase())
            .map_err(|_| format!("{name:?} is not a valid metadata name"))?;
        let v = match n.as_str().ends_with("-bin") {
            // grpcui's form takes a -bin value as text; it travels base64, as grpc-go sends it.
            true => HeaderValue::try_from(
                base64::engine::general_purpose::STANDARD_NO_PAD.encode(value),
            ),
            false => HeaderValue::try_from(value.trim()),
        }
        .map_err(|_| format!("{name}: {value:?} is not a valid metadata value"))?;
        if replace {
            h.insert(n, v);
        } else {
            h.append(n, v);
        }
        Ok(())
    };
    for (n, v) in rows.iter().filter(|(n, _)| !n.is_empty()) {
        put(n, v, false)?;
    }
    for (n, v) in &ui.rpc_headers {
        put(n, v, true)?;
    }
    Ok(h)
}

/// grpcui's `rpcMetadata` list, sorted by name; `-bin` values base64.
pub(crate) fn shown(md: &Metadata) -> Value {
    let mut rows: Vec<(String, String)> = md
        .iter()
        .map(|(k, v)| {
            let value = match k.ends_with("-bin") {
                true => base64::engine::general_purpose::STANDARD.encode(v),
                false => String::from_utf8_lossy(v).into_owned(),
            };
            (k.clone(), value)
        })
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    Value::Array(
        rows.into_iter()
            .map(|(name, value)| json!({"name": name, "value": value}))
            .collect(),
    )
}

/// A message as grpcui shows it: field names as in the .proto, defaults emitted.
pub(crate) fn json_of(ui: &Ui, m: &DynamicMessage) -> Value {
    let opts = SerializeOptions::new()
        .use_proto_field_name(true)
        .skip_default_fields(!ui.emit_defaults);
    m.serialize_with_options(serde_json::value::Serializer, &opts)
        .unwrap_or_else(|e| Value::String(e.to_string()))
}

/// One reply as grpcui's `responses` list it: `{"message", "isError"}` (a reply that does not
/// decode as the method's output: its error, as the message).
pub(crate) fn reply(ui: &Ui, method: &MethodDescriptor, bytes: bytes::Bytes) -> Value {
    match DynamicMessage::decode(method.output(), bytes) {
        Ok(m) => json!({"message": json_of(ui, &m), "isError": false}),
        Err(e) => json!({"message": e.to_string(), "isError": true}),
    }
}

pub(crate) fn error_of(ui: &Ui, st: &CallStatus) -> Value {
    let details: Vec<Value> = st
        .details
        .iter()
        .map(|any| {
            let resolved = ui
                .pool
                .get_message_by_name(any.type_url.rsplit('/').next().unwrap_or_default())
                .and_then(|d| DynamicMessage::decode(d, any.value.as_slice()).ok());
            match resolved {
                Some(m) => {
                    let mut v = json_of(ui, &m);
                    if let Value::Object(o) = &mut v {
                        let mut with_type = serde_json::Map::new();
                        with_type.insert("@type".into(), any.type_url.clone().into());
                        with_type.extend(std::mem::take(o));
                        *o = with_type;
                    }
                    json!({"message": v, "isError": false})
                }
                None => {
                    json!({"message": format!("unknown type {}", any.type_url), "isError": true})
                }
            }
        })
        .collect();
    json!({
        "code": st.code,
        "name": Code::from_i32(st.code).go_name(),
        "message": st.message,
        // grpcui lists none as `[]`.
        "details": details,
    })
}

/// The target's connection and the head of a call of `method` as `input` asks for it.
pub(crate) async fn head(
    ui: &Ui,
    method: &MethodDescriptor,
    input: &Input,
) -> Result<(crate::state::Conn, Head), Refusal> {
    let conn = ui.connection().await.map_err(unexpected)?;
    let timeout = match (input.timeout, ui.max_time) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let head = Head {
        scheme: conn.scheme,
        authority: conn.authority.clone(),
        path: format!("/{}/{}", method.parent_service().full_name(), method.name()),
        metadata: metadata(ui, &input.metadata),
        timeout,
        user_agent: format!("volley-ui/{}", env!("CARGO_PKG_VERSION")),
        protocol: ui.protocol,
        max_recv: ui.max_recv,
        unary: !method.is_client_streaming() && !method.is_server_streaming(),
    };
    if let Err(e) = &head.metadata {
        return Err(unexpected(e));
    }
    Ok((conn, head))
}

/// Runs the call `body` asks for on `method`: grpcui's reply, or its refusal.
pub(crate) async fn invoke(
    ui: &Ui,
    method: &MethodDescriptor,
    body: &[u8],
) -> Result<Value, Refusal> {
    let input = input(body)?;
    let msgs = messages(method, &input.data)?;
    let (conn, head) = head(ui, method, &input).await?;
    let total = msgs.len();
    let mut sent = 0;
    let mut call = match Call::open(&conn.conn, &head).await {
        Ok(c) => c,
        Err(st) => {
            return Ok(result(
                ui,
                Metadata::new(),
                Vec::new(),
                Some(st),
                (total, 0),
                Metadata::new(),
            ));
        }
    };
    let unary_request = !method.is_client_streaming();
    let to_send = if unary_request && msgs.is_empty() {
        vec![DynamicMessage::new(method.input())]
    } else {
        msgs
    };
    let count = to_send.len();
    for (i, m) in to_send.iter().enumerate() {
        if call.send(m, i + 1 == count).await.is_err() {
            break;
        }
        sent += 1;
    }
    if count == 0 {
        call.close_send();
    }
    let headers = call.headers().await;
    let mut responses = Vec::new();
    let mut failed = None;
    loop {
        match call.message().await {
            Ok(Some(bytes)) => responses.push(reply(ui, method, bytes)),
            Ok(None) => break,
            Err(st) => {
                failed = Some(st);
                break;
            }
        }
    }
    let (status, trailers) = match failed {
        Some(st) => (st, Metadata::new()),
        None => call.finish().await,
    };
    let error = (status.code != 0).then_some(status);
    if error.is_some() && !method.is_server_streaming() {
        // grpcui adds a unary call's response only when its status is OK.
        responses.clear();
    }
    Ok(result(
        ui,
        headers,
        responses,
        error,
        (total.max(usize::from(unary_request)), sent),
        trailers,
    ))
}

fn result(
    ui: &Ui,
    headers: Metadata,
    responses: Vec<Value>,
    error: Option<CallStatus>,
    (total, sent): (usize, usize),
    trailers: Metadata,
) -> Value {
    json!({
        "headers": shown(&headers),
        "error": error.as_ref().map(|e| error_of(ui, e)),
        "responses": if responses.is_empty() { Value::Null } else { Value::Array(responses) },
        "requests": {"total": total, "sent": sent},
        "trailers": shown(&trailers),
    })
}
