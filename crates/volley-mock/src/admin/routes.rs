//! GripMock's admin API, request by request: v3's routes under `/api` with its JSON shapes
//! (stubs listed, added, fetched, deleted, searched, used and unused; the history and `verify`;
//! the health probes) and v1's `/add`, `/find`, `/clear` and `GET /`.

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};
use serde_json::{Value, json};

use crate::{
    answer::SESSION,
    model::{Origin, Stub},
    pick::{Call, Picked},
    stubs::Stubs,
};

/// An admin request.
pub(crate) struct Req<'a> {
    pub method: &'a Method,
    pub path: &'a str,
    pub query: &'a str,
    pub headers: &'a HeaderMap,
    pub body: &'a [u8],
}

/// The exact paths served (on the calls' port these are all there is: no `{id}` routes).
pub(crate) const EXACT: &[(Method, &str)] = &[
    (Method::GET, "/api/stubs"),
    (Method::POST, "/api/stubs"),
    (Method::DELETE, "/api/stubs"),
    (Method::POST, "/api/stubs/search"),
    (Method::POST, "/api/stubs/batchDelete"),
    (Method::POST, "/api/stubs/validate"),
    (Method::GET, "/api/stubs/used"),
    (Method::GET, "/api/stubs/unused"),
    (Method::GET, "/api/history"),
    (Method::DELETE, "/api/history"),
    (Method::POST, "/api/verify"),
    (Method::GET, "/api/health/liveness"),
    (Method::GET, "/api/health/readiness"),
    (Method::GET, "/api/scenarios"),
    (Method::POST, "/api/scenarios/reset"),
    (Method::POST, "/add"),
    (Method::POST, "/find"),
    (Method::GET, "/clear"),
];

fn reply(status: StatusCode, body: &Value) -> http::Response<Bytes> {
    let mut r = http::Response::new(Bytes::from(body.to_string()));
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
}

fn empty(status: StatusCode) -> http::Response<Bytes> {
    let mut r = http::Response::new(Bytes::new());
    *r.status_mut() = status;
    r
}

fn error(status: StatusCode, e: impl std::fmt::Display) -> http::Response<Bytes> {
    reply(status, &json!({"error": e.to_string()}))
}

fn counted(list: Vec<Value>, total: usize) -> http::Response<Bytes> {
    let mut r = reply(StatusCode::OK, &Value::Array(list));
    r.headers_mut().insert("x-total-count", total.into());
    r
}

fn now() -> String {
    crate::template::rfc3339_of(std::time::SystemTime::now())
}

/// The query's `key`, percent-decoded.
fn param(query: &str, key: &str) -> Option<String> {
    query.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        (k == key).then(|| decode(v))
    })
}

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => match u8::from_str_radix(&s[i + 1..i + 3], 16) {
                Ok(x) => {
                    out.push(x);
                    i += 2;
                }
                Err(_) => out.push(b'%'),
            },
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A stub as GripMock lists it: as written, with its `id`, `source` (`file`, `rest`, `proxy`)
/// and whether a call used it; volley adds `origin`, the file and position it came from.
pub(crate) fn shown(s: &Stub) -> Value {
    let mut v = s.raw.clone();
    v["source"] = s.origin.name().into();
    v["used"] = (s.matched.load(std::sync::atomic::Ordering::Relaxed) > 0).into();
    v["origin"] = s.source.clone().into();
    v
}

fn session(headers: &HeaderMap) -> Option<String> {
    headers
        .get(SESSION)
        .and_then(|v| v.to_str().ok())
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// `limit` and `offset` of the query applied to `items`.
fn page<T>(items: Vec<T>, query: &str) -> Vec<T> {
    let offset = param(query, "offset")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let limit = param(query, "limit")
        .and_then(|v| v.parse().ok())
        .unwrap_or(usize::MAX);
    items.into_iter().skip(offset).take(limit).collect()
}

fn list(stubs: &Stubs, query: &str, keep: impl Fn(&Stub) -> bool) -> http::Response<Bytes> {
    let table = stubs.current();
    let want = |k: &str| param(query, k).filter(|v| !v.is_empty());
    let (service, method, source, sess) = (
        want("service"),
        want("method"),
        want("source"),
        want("session"),
    );
    let matching: Vec<&std::sync::Arc<Stub>> = table
        .all
        .iter()
        .filter(|s| keep(s))
        .filter(|s| {
            service.as_deref().is_none_or(|x| {
                s.method.parent_service().full_name() == x || s.method.parent_service().name() == x
            })
        })
        .filter(|s| method.as_deref().is_none_or(|x| s.method.name() == x))
        .filter(|s| source.as_deref().is_none_or(|x| s.origin.name() == x))
        .filter(|s| {
            sess.as_deref()
                .is_none_or(|x| s.session.as_deref() == Some(x))
        })
        .collect();
    let total = matching.len();
    // volley's `counts=true`: how many calls each stub answered (the mock's page shows it).
    let counts = param(query, "counts").is_some_and(|v| v == "true");
    counted(
        page(matching, query)
            .into_iter()
            .map(|s| {
                let mut v = shown(s);
                if counts {
                    v["matchCount"] = s.matched.load(std::sync::atomic::Ordering::Relaxed).into();
                }
                v
            })
            .collect(),
        total,
    )
}

/// The body's stub or list of stubs.
fn values(body: &[u8]) -> Result<Vec<Value>, String> {
    match serde_json::from_slice(body).map_err(|e| format!("invalid JSON: {e}"))? {
        Value::Array(a) => Ok(a),
        one => Ok(vec![one]),
    }
}

fn add(stubs: &Stubs, r: &Req<'_>) -> http::Response<Bytes> {
    let values = match values(r.body) {
        Ok(v) => v,
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, e),
    };
    match stubs.upsert(&values, Origin::Rest, session(r.headers).as_deref()) {
        Ok(ids) => reply(
            StatusCode::OK,
            &json!(ids.iter().map(ToString::to_string).collect::<Vec<_>>()),
        ),
        Err(e) => error(StatusCode::BAD_REQUEST, e),
    }
}

/// GripMock's search: the output (as written) of the stub a request picks, no match counted.
fn search(stubs: &Stubs, r: &Req<'_>) -> http::Response<Bytes> {
    #[derive(serde::Deserialize)]
    struct Search {
        service: String,
        method: String,
        #[serde(default)]
        headers: std::collections::BTreeMap<String, String>,
        #[serde(default)]
        data: Value,
        #[serde(default)]
        input: Vec<Value>,
    }
    let f: Search = match serde_json::from_slice(r.body) {
        Ok(f) => f,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("expected service, method and data: {e}"),
            );
        }
    };
    let method = match crate::check::find_method(&stubs.inner().pools, &f.service, &f.method) {
        Ok(m) => m,
        Err(e) => return error(StatusCode::NOT_FOUND, e),
    };
    let mut datas = f.input;
    if datas.is_empty() {
        datas.push(if f.data.is_null() { json!({}) } else { f.data });
    }
    let mut msgs = Vec::new();
    for d in datas {
        match prost_reflect::DynamicMessage::deserialize(method.input(), d) {
            Ok(m) => msgs.push(m),
            Err(e) => {
                return error(
                    StatusCode::BAD_REQUEST,
                    format!("data does not fit {}: {e}", method.input().full_name()),
                );
            }
        }
    }
    let mut headers = HeaderMap::new();
    for (k, v) in &f.headers {
        if let (Ok(n), Ok(v)) = (
            http::HeaderName::from_bytes(k.to_ascii_lowercase().as_bytes()),
            http::HeaderValue::from_str(v),
        ) {
            headers.insert(n, v);
        }
    }
    let sess = session(r.headers).unwrap_or_default();
    let call = Call {
        method: &method,
        headers: &headers,
        session: &sess,
        count: false,
    };
    let picked = if method.is_client_streaming() {
        stubs.pick_all(&call, &msgs)
    } else {
        stubs.pick_one(&call, &msgs[0])
    };
    match picked {
        Picked::Stub(s, _) => reply(
            StatusCode::OK,
            &s.raw.get("output").cloned().unwrap_or_default(),
        ),
        Picked::NoStubs => error(
            StatusCode::NOT_FOUND,
            crate::notfound::gripmock(
                &method,
                &headers,
                &msgs.iter().collect::<Vec<_>>(),
                method.is_client_streaming(),
                None,
            ),
        ),
        Picked::NotFound(st) => error(StatusCode::NOT_FOUND, st.message()),
    }
}

fn ids(body: &[u8]) -> Result<Vec<uuid::Uuid>, String> {
    let list: Vec<String> =
        serde_json::from_slice(body).map_err(|e| format!("expected a list of ids: {e}"))?;
    list.iter()
        .map(|s| uuid::Uuid::parse_str(s).map_err(|_| format!("{s:?} is not a UUID")))
        .collect()
}

fn history(stubs: &Stubs, query: &str) -> http::Response<Bytes> {
    let want = |k: &str| param(query, k).filter(|v| !v.is_empty());
    let (service, method) = (want("service"), want("method"));
    let errors = want("error").is_some_and(|v| v == "true");
    let keep = |c: &crate::history::Call| {
        service
            .as_deref()
            .is_none_or(|s| c.service == s || c.service.rsplit('.').next() == Some(s))
            && method.as_deref().is_none_or(|m| c.method == m)
            && (!errors || c.code != volley_server::Code::Ok)
    };
    let number = |k: &str, default: usize| {
        param(query, k)
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    // volley's `nearest=true`: each call no stub matched carries the stub nearest to it and the
    // conditions it missed (the mock's page shows them).
    let nearest = param(query, "nearest").is_some_and(|v| v == "true");
    let add = |c: &crate::history::Call, v: &mut Value| {
        if !nearest || c.stub.is_some() || c.code != volley_server::Code::NotFound {
            return;
        }
        let method = format!("{}.{}", c.service, c.method);
        if let Some((id, misses)) = stubs.nearest(&method, &c.session, c.requests.last()) {
            v["nearest"] = json!({"stubId": id.to_string(), "misses": misses});
        }
    };
    let (list, total) =
        stubs
            .inner()
            .history
            .page(keep, number("offset", 0), number("limit", usize::MAX), add);
    counted(list, total)
}

fn verify(stubs: &Stubs, body: &[u8]) -> http::Response<Bytes> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Verify {
        service: String,
        method: String,
        expected_count: usize,
    }
    let v: Verify = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            return reply(
                StatusCode::BAD_REQUEST,
                &json!({"message": format!("expected service, method and expectedCount: {e}")}),
            );
        }
    };
    let h = &stubs.inner().history;
    if !h.enabled {
        return reply(
            StatusCode::BAD_REQUEST,
            &json!({"message": "history is disabled"}),
        );
    }
    let actual = h.count(|c| {
        (c.service == v.service || c.service.rsplit('.').next() == Some(v.service.as_str()))
            && c.method == v.method
    });
    if actual == v.expected_count {
        return reply(StatusCode::OK, &json!({"message": "ok", "time": now()}));
    }
    reply(
        StatusCode::BAD_REQUEST,
        &json!({
            "message": format!("expected {}/{} to be called {} times, got {actual}", v.service, v.method, v.expected_count),
            "expected": v.expected_count,
            "actual": actual,
        }),
    )
}

/// `PUT /api/scenarios/{name}/state` with `{"state": "..."}` (WireMock's): sets a scenario's
/// state (in the request's session, when it names one).
fn set_state(stubs: &Stubs, r: &Req<'_>) -> http::Response<Bytes> {
    let Some(name) = (r.path.strip_prefix("/api/scenarios/"))
        .and_then(|p| p.strip_suffix("/state"))
        .map(decode)
    else {
        return error(
            StatusCode::NOT_FOUND,
            "expected PUT /api/scenarios/{name}/state",
        );
    };
    let state = match serde_json::from_slice::<Value>(r.body) {
        Ok(v) => match v.get("state").and_then(Value::as_str) {
            Some(s) => s.to_owned(),
            None => {
                return error(
                    StatusCode::BAD_REQUEST,
                    "the body needs {\"state\": \"...\"}",
                );
            }
        },
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("the body is not JSON: {e}"),
            );
        }
    };
    let session = session(r.headers).unwrap_or_default();
    match stubs.set_scenario(&name, &state, &session) {
        Ok(()) => empty(StatusCode::OK),
        Err(e) => error(StatusCode::BAD_REQUEST, e),
    }
}

/// The answer to `r`, or `None` when it is not an admin route.
pub(crate) fn handle(stubs: &Stubs, r: &Req<'_>) -> Option<http::Response<Bytes>> {
    let used = |s: &Stub| s.matched.load(std::sync::atomic::Ordering::Relaxed) > 0;
    Some(match (r.method.clone(), r.path) {
        (Method::GET, "/api/stubs") | (Method::GET, "/") => list(stubs, r.query, |_| true),
        (Method::GET, "/api/stubs/used") => list(stubs, r.query, used),
        (Method::GET, "/api/stubs/unused") => list(stubs, r.query, |s| !used(s)),
        (Method::POST, "/api/stubs") | (Method::POST, "/add") => add(stubs, r),
        (Method::DELETE, "/api/stubs") => {
            stubs.clear_api(session(r.headers).as_deref());
            empty(StatusCode::NO_CONTENT)
        }
        (Method::GET, "/clear") => {
            stubs.clear_api(None);
            reply(StatusCode::OK, &json!({"message": "ok"}))
        }
        (Method::POST, "/api/stubs/search") | (Method::POST, "/find") => search(stubs, r),
        (Method::POST, "/api/stubs/batchDelete") => match ids(r.body) {
            Ok(ids) => {
                stubs.delete(&ids);
                empty(StatusCode::NO_CONTENT)
            }
            Err(e) => error(StatusCode::BAD_REQUEST, e),
        },
        (Method::POST, "/api/stubs/validate") => {
            match values(r.body).and_then(|v| stubs.checked(&v, Origin::Rest, None)) {
                Ok(list) => reply(
                    StatusCode::OK,
                    &Value::Array(list.iter().map(|s| s.raw.clone()).collect()),
                ),
                Err(e) => error(StatusCode::BAD_REQUEST, e),
            }
        }
        (Method::GET, "/api/history") => history(stubs, r.query),
        (Method::DELETE, "/api/history") => {
            let s = session(r.headers);
            let n = stubs.inner().history.clear(s.as_deref());
            let mut body = json!({"deletedCount": n});
            if let Some(s) = s {
                body["session"] = s.into();
            }
            reply(StatusCode::OK, &body)
        }
        (Method::POST, "/api/verify") => verify(stubs, r.body),
        (Method::GET, "/api/scenarios") => reply(StatusCode::OK, &stubs.scenarios_json()),
        (Method::POST, "/api/scenarios/reset") => {
            stubs.reset_scenarios(session(r.headers).as_deref());
            empty(StatusCode::NO_CONTENT)
        }
        (Method::GET, "/api/health/liveness") => {
            reply(StatusCode::OK, &json!({"message": "ok", "time": now()}))
        }
        (Method::GET, "/api/health/readiness") => {
            if stubs
                .inner()
                .ready
                .load(std::sync::atomic::Ordering::Relaxed)
            {
                reply(StatusCode::OK, &json!({"message": "ok", "time": now()}))
            } else {
                reply(
                    StatusCode::SERVICE_UNAVAILABLE,
                    &json!({"message": "not ready", "time": now()}),
                )
            }
        }
        (Method::PUT, p) if p.starts_with("/api/scenarios/") => set_state(stubs, r),
        (m, p) => {
            let id = p.strip_prefix("/api/stubs/")?;
            let Ok(id) = uuid::Uuid::parse_str(id) else {
                return Some(error(
                    StatusCode::BAD_REQUEST,
                    format!("{id:?} is not a UUID"),
                ));
            };
            match m {
                Method::GET => match stubs.get(id) {
                    Some(s) => reply(StatusCode::OK, &shown(&s)),
                    None => error(
                        StatusCode::NOT_FOUND,
                        format!("Stub with ID '{id}' not found"),
                    ),
                },
                Method::DELETE => {
                    stubs.delete(&[id]);
                    empty(StatusCode::NO_CONTENT)
                }
                _ => return None,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_parameters() {
        assert_eq!(
            param("a=1&service=x.Y&q=a%20b+c", "q").as_deref(),
            Some("a b c")
        );
        assert_eq!(param("service=x.Y", "service").as_deref(), Some("x.Y"));
        assert_eq!(param("a=1", "b"), None);
        assert_eq!(page(vec![1, 2, 3, 4], "offset=1&limit=2"), [2, 3]);
    }
}
