//! `volley mock verify --against ADDRESS STUBS...`: each stub's request sent to the real service
//! and its answer compared with the stub's (Pact's and Microcks' provider verification, for
//! GripMock stubs): answer equal, answer differs (a JSON diff), status differs, method missing,
//! or skipped (no concrete request: a pattern matcher; a templated answer).

mod compare;
pub mod report;

use std::{path::PathBuf, time::Duration};

use futures_util::StreamExt;
use http::HeaderMap;
use prost_reflect::{DescriptorPool, DynamicMessage, MethodDescriptor};
use serde_json::{Map, Value};
use volley_client::{Code, Grpc, Status};

use crate::{
    MockError,
    check::check,
    format::{parse_file, raw},
    load::stub_files,
    model::{Origin, Reply, Stub, Text},
    record::raw::Raw,
};

/// What to verify, against what.
#[derive(Clone, Debug)]
pub struct Against {
    /// The real service (`host:port`, `http://`, `https://`).
    pub target: String,
    /// Stub files and folders.
    pub stubs: Vec<PathBuf>,
    /// `.proto` files, folders or descriptor sets (none: the target's reflection).
    pub sources: Vec<PathBuf>,
    /// Import roots for them.
    pub imports: Vec<PathBuf>,
    /// Fields left out of every comparison (`id`, `order.createdAt`).
    pub ignore: Vec<String>,
    /// Each call's deadline.
    pub timeout: Duration,
}

/// One stub's outcome.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// The service answered as the stub does.
    Equal,
    /// The messages differ: one line per differing field.
    Differs(Vec<String>),
    /// The status differs: the stub's and the service's (`OK`, or `CODE: message`).
    StatusDiffers {
        /// The stub's.
        want: String,
        /// The service's.
        got: String,
    },
    /// The service has no such method (UNIMPLEMENTED, or not in its schema).
    Missing(String),
    /// The stub does not fit the method as the service describes it.
    Invalid(String),
    /// Not sent, and why.
    Skipped(String),
}

impl Verdict {
    /// Whether this outcome fails the verification.
    pub fn failed(&self) -> bool {
        !matches!(self, Verdict::Equal | Verdict::Skipped(_))
    }
}

/// A stub and its verdict.
#[derive(Clone, Debug)]
pub struct Checked {
    /// `file:line stub #n`.
    pub stub: String,
    /// `package.Service/Method`.
    pub method: String,
    /// The outcome.
    pub verdict: Verdict,
}

fn failed(e: impl std::fmt::Display) -> MockError {
    MockError::Stub(e.to_string())
}

/// The target's schema from its reflection: every service it lists.
async fn reflected(target: &str) -> Result<DescriptorPool, MockError> {
    let ep = volley_client::Endpoint::from_target_str(target).map_err(failed)?;
    let conn = volley_client::Connection::connect(&ep)
        .await
        .map_err(failed)?;
    let scheme = if ep.is_tls() { "https" } else { "http" };
    volley_client::reflect::fetch_all(&conn, scheme, &ep.authority, &[])
        .await
        .map_err(|e| {
            failed(format!(
                "--against {target}: {e} (or --proto FILE, the service's .proto files)"
            ))
        })
}

/// Sends every stub's request to `a.target` and compares the answers.
pub async fn verify(a: &Against) -> Result<Vec<Checked>, MockError> {
    let pool = match a.sources.is_empty() {
        true => reflected(&a.target).await?,
        false => volley_proto::load::load_sources(&a.sources, &a.imports)?.pool,
    };
    let client = Grpc::connect(a.target.as_str())
        .await
        .map_err(|e| failed(format!("--against {}: {e}", a.target)))?;
    let mut out = Vec::new();
    for file in stub_files(&a.stubs)? {
        let items = parse_file(&file)?;
        if !items.is_empty()
            && items
                .iter()
                .all(|i| !crate::load::looks_like_a_stub(&i.value))
        {
            // A YAML or JSON file beside the stubs that is not one (buf.yaml, a config), passed
            // over as the mock passes over it when it loads the folder.
            tracing::warn!(
                "{}: not a stub file (nothing in it names a service or a method); skipped",
                file.display()
            );
            continue;
        }
        for (i, item) in items.into_iter().enumerate() {
            let at = format!("{}:{} stub #{}", file.display(), item.line, i + 1);
            let named = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
            let method = format!(
                "{}/{}",
                named(&item.value, "service").unwrap_or_default(),
                named(&item.value, "method").unwrap_or_default()
            );
            let verdict = match stub_of(&item.value, &pool, &at) {
                Err(v) => v,
                Ok(stub) => one(&client, &stub, &item.value, a).await,
            };
            out.push(Checked {
                stub: at,
                method,
                verdict,
            });
        }
    }
    Ok(out)
}

/// The stub checked against the service's schema, or the verdict that it cannot be sent.
fn stub_of(value: &Value, pool: &DescriptorPool, at: &str) -> Result<Stub, Verdict> {
    let r = raw(value).map_err(Verdict::Invalid)?;
    let known = pool.services().any(|s| {
        (s.full_name() == r.service || s.name() == r.service)
            && s.methods().any(|m| m.name() == r.method)
    });
    if !known {
        return Err(Verdict::Missing(format!(
            "{}/{} is not in the service's schema",
            r.service, r.method
        )));
    }
    let id = uuid::Uuid::new_v4();
    let mut made = check(
        value,
        r,
        std::slice::from_ref(pool),
        at.to_owned(),
        Origin::File,
        id,
    )
    .map_err(Verdict::Invalid)?;
    made.pop()
        .ok_or_else(|| Verdict::Invalid("no stub made".into()))
}

/// A matcher block's concrete request: `equals` and `contains` merged; `None` when it matches
/// by pattern only.
fn concrete(block: Option<&Value>) -> Option<Value> {
    let Some(Value::Object(b)) = block else {
        return Some(Value::Object(Map::new()));
    };
    let mut msg = Map::new();
    for key in ["equals", "contains"] {
        if let Some(Value::Object(fields)) = b.get(key) {
            msg.extend(fields.clone());
        }
    }
    let patterns = ["matches", "glob", "anyOf"]
        .iter()
        .any(|k| b.get(*k).is_some());
    match msg.is_empty() && patterns {
        true => None,
        false => Some(Value::Object(msg)),
    }
}

/// The stub's request messages, or why none can be sent.
fn requests(value: &Value, method: &MethodDescriptor) -> Result<Vec<DynamicMessage>, String> {
    let blocks: Vec<Option<&Value>> = match value.get("inputs").and_then(Value::as_array) {
        Some(list) if !list.is_empty() => list.iter().map(Some).collect(),
        _ => vec![value.get("input")],
    };
    blocks
        .into_iter()
        .map(|b| {
            let json = concrete(b)
                .ok_or("its input matches by pattern (matches, glob, anyOf): no request to send")?;
            DynamicMessage::deserialize(method.input(), &json)
                .map_err(|e| format!("its input does not make a request: {e}"))
        })
        .collect()
}

/// The request's metadata: the stub's `headers.equals`.
fn metadata(value: &Value) -> HeaderMap {
    let mut h = HeaderMap::new();
    if let Some(Value::Object(eq)) = value.get("headers").and_then(|v| v.get("equals")) {
        for (k, v) in eq {
            let (Ok(name), Some(Ok(val))) = (
                http::HeaderName::try_from(k.to_ascii_lowercase()),
                v.as_str().map(http::HeaderValue::try_from),
            ) else {
                continue;
            };
            h.append(name, val);
        }
    }
    h
}

/// What the stub answers: its messages (fixed ones), or its status.
fn expected(stub: &Stub) -> Result<Result<Vec<DynamicMessage>, (Code, String)>, String> {
    if stub.templated {
        return Err("its answer is a template".into());
    }
    let out = &stub.output;
    if let Some((code, text)) = &out.status {
        let Text::Fixed(msg) = text else {
            return Err("its error message is a template".into());
        };
        return Ok(Err((*code, msg.clone())));
    }
    let fixed = |r: &Reply| match r {
        Reply::Fixed(m) => Ok(m.clone()),
        Reply::Templated(_) => Err("its answer is a template".to_owned()),
    };
    let mut msgs = Vec::new();
    if let Some(list) = &out.stream {
        for item in list {
            if let Some(r) = &item.reply {
                msgs.push(fixed(r)?);
            }
        }
    } else if let Some(r) = &out.data {
        msgs.push(fixed(r)?);
    }
    Ok(Ok(msgs))
}

fn shown(st: &Status) -> String {
    format!("{}: {}", st.code().go_name(), st.message())
}

/// One stub sent and judged.
async fn one(client: &Grpc, stub: &Stub, value: &Value, a: &Against) -> Verdict {
    let method = &stub.method;
    let sent = match requests(value, method) {
        Ok(r) => r,
        Err(why) => return Verdict::Skipped(why),
    };
    let want = match expected(stub) {
        Ok(w) => w,
        Err(why) => return Verdict::Skipped(why),
    };
    let got = call(client, method, sent, metadata(value), a.timeout).await;
    match (want, got) {
        (_, Err(st)) if st.code() == Code::Unimplemented => Verdict::Missing(shown(&st)),
        (Err((code, msg)), Err(st)) if st.code() == code && st.message() == msg => Verdict::Equal,
        (Err((code, msg)), Err(st)) => Verdict::StatusDiffers {
            want: format!("{}: {msg}", code.go_name()),
            got: shown(&st),
        },
        (Err((code, msg)), Ok(_)) => Verdict::StatusDiffers {
            want: format!("{}: {msg}", code.go_name()),
            got: "OK".into(),
        },
        (Ok(_), Err(st)) => Verdict::StatusDiffers {
            want: "OK".into(),
            got: shown(&st),
        },
        (Ok(want), Ok(got)) => {
            let ignore = ignored(value, &a.ignore);
            let lines = compare::diff(&want, &got, &ignore);
            match lines.is_empty() {
                true => Verdict::Equal,
                false => Verdict::Differs(lines),
            }
        }
    }
}

/// The fields left out for this stub: the command's and the stub's own `ignoreFields`.
fn ignored(value: &Value, global: &[String]) -> Vec<String> {
    let mut all = global.to_vec();
    if let Some(list) = value.get("ignoreFields").and_then(Value::as_array) {
        all.extend(list.iter().filter_map(Value::as_str).map(str::to_owned));
    }
    all
}

/// Calls `method` with `sent`; the reply messages, or the status.
async fn call(
    client: &Grpc,
    method: &MethodDescriptor,
    sent: Vec<DynamicMessage>,
    headers: HeaderMap,
    timeout: Duration,
) -> Result<Vec<DynamicMessage>, Status> {
    let path: &'static str = Box::leak(
        format!("/{}/{}", method.parent_service().full_name(), method.name()).into_boxed_str(),
    );
    let decode = |r: Raw| {
        DynamicMessage::decode(method.output(), r.0.as_slice())
            .map_err(|e| Status::internal(format!("the reply does not decode: {e}")))
    };
    let first = sent
        .first()
        .cloned()
        .unwrap_or_else(|| DynamicMessage::new(method.input()));
    match (method.is_client_streaming(), method.is_server_streaming()) {
        (false, false) => {
            let r = client
                .unary::<_, Raw>(path, prepared(first, &headers, timeout))
                .await?;
            Ok(vec![decode(r.into_inner())?])
        }
        (false, true) => {
            let r = client
                .server_streaming::<_, Raw>(path, prepared(first, &headers, timeout))
                .await?;
            collect(r.into_inner(), decode).await
        }
        (true, false) => {
            let stream = futures_util::stream::iter(sent);
            let r = client
                .client_streaming::<_, Raw>(path, prepared(stream, &headers, timeout))
                .await?;
            Ok(vec![decode(r.into_inner())?])
        }
        (true, true) => {
            let stream = futures_util::stream::iter(sent);
            let r = client
                .streaming::<_, Raw>(path, prepared(stream, &headers, timeout))
                .await?;
            collect(r.into_inner(), decode).await
        }
    }
}

fn prepared<T>(message: T, headers: &HeaderMap, timeout: Duration) -> volley_client::Request<T> {
    let mut req = volley_client::Request::new(message);
    *req.metadata_mut() = headers.clone();
    req.set_timeout(timeout);
    req
}

async fn collect(
    mut s: volley_client::Streaming<Raw>,
    decode: impl Fn(Raw) -> Result<DynamicMessage, Status>,
) -> Result<Vec<DynamicMessage>, Status> {
    let mut out = Vec::new();
    while let Some(m) = s.next().await {
        out.push(decode(m?)?);
    }
    Ok(out)
}
