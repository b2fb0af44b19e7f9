//! The page's HTTP server (volley-server's side server): the page and its two files, grpcui's
//! `GET /metadata` and `POST /invoke/` with its CSRF cookie and header, `/examples`; and,
//! with `--ui-token`, a bearer token (or the cookie the page's `?token=` link sets) on every
//! request.

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use serde_json::{Value, json};

use crate::{invoke::invoke, schema, state::Ui, stream};

/// grpcui's CSRF cookie and the header the page echoes it in.
const CSRF_COOKIE: &str = "_grpcui_csrf_token";
const CSRF_HEADER: &str = "x-grpcui-csrf-token";
/// The cookie `?token=` sets when `--ui-token` guards the page.
const TOKEN_COOKIE: &str = "_volley_ui_token";

const INDEX: &str = include_str!("../web/index.html");
const APP_JS: &str = include_str!("../web/app.js");
const APP_CSS: &str = include_str!("../web/app.css");

fn text(status: StatusCode, body: impl Into<String>) -> Response<Bytes> {
    let mut r = Response::new(Bytes::from(body.into()));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

fn typed(body: impl Into<Bytes>, content_type: &'static str) -> Response<Bytes> {
    let mut r = Response::new(body.into());
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

fn json_reply(v: &Value) -> Response<Bytes> {
    let body = serde_json::to_string_pretty(v).unwrap_or_default();
    typed(body, "application/json")
}

/// The value of cookie `name` in `req`.
fn cookie<'a>(req: &'a Request<Bytes>, name: &str) -> Option<&'a str> {
    req.headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

fn query<'a>(req: &'a Request<Bytes>, key: &str) -> Option<&'a str> {
    req.uri()
        .query()?
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v)
}

/// 32 random bytes, base64url (grpcui's CSRF token).
fn new_token() -> String {
    use base64::Engine;
    let mut b = [0u8; 32];
    b[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    b[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}

/// The page with its methods, target and default rows filled in.
fn index(ui: &Ui) -> String {
    let methods: Vec<Value> = ui
        .methods
        .iter()
        .map(|m| {
            json!({"service": m.parent_service().full_name(), "method": m.name(),
                   "clientStreaming": m.is_client_streaming(),
                   "serverStreaming": m.is_server_streaming()})
        })
        .collect();
    let defaults: Vec<Value> = ui
        .default_headers
        .iter()
        .map(|(n, v)| json!({"name": n, "value": v}))
        .collect();
    let config = json!({"target": ui.target, "methods": methods, "defaultMetadata": defaults,
                        "plaintext": ui.dial.plaintext});
    // `</` cannot end the script element the JSON sits in.
    let config = config.to_string().replace("</", "<\\/");
    INDEX.replace("{{CONFIG}}", &config)
}

/// Whether `req` bears the page's token (when one is asked for).
fn authorized(req: &Request<Bytes>, token: Option<&str>) -> bool {
    let Some(t) = token else { return true };
    let bearer = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    [bearer, cookie(req, TOKEN_COOKIE), query(req, "token")]
        .into_iter()
        .flatten()
        .any(|given| volley_server::auth::same_secret(given.as_bytes(), t.as_bytes()))
}

/// The answer to one request of the page.
pub(crate) async fn respond(
    ui: Arc<Ui>,
    streams: Arc<stream::Streams>,
    token: Option<Arc<str>>,
    req: Request<Bytes>,
) -> Response<Bytes> {
    if !authorized(&req, token.as_deref()) {
        return text(
            StatusCode::UNAUTHORIZED,
            "this page needs its token: open the link volley ui printed (?token=...)",
        );
    }
    let path = req.uri().path().to_owned();
    let mut resp = match (req.method().clone(), path.as_str()) {
        (Method::GET, "/") => typed(index(&ui), "text/html; charset=utf-8"),
        (Method::GET, "/app.js") => typed(APP_JS, "text/javascript; charset=UTF-8"),
        (Method::GET, "/app.css") => typed(APP_CSS, "text/css; charset=UTF-8"),
        (_, "/examples") => json_reply(&json!([])),
        // No icon: an empty answer rather than a 404 in the browser's console.
        (Method::GET, "/favicon.ico") => {
            let mut r = Response::new(Bytes::new());
            *r.status_mut() = StatusCode::NO_CONTENT;
            r
        }
        (Method::GET, "/metadata") => match query(&req, "method") {
            Some("*") => json_reply(&schema::of_all(&ui.pool)),
            Some(name) => match ui.method(name) {
                Some(m) => json_reply(&schema::of_method(m)),
                None => text(StatusCode::UNPROCESSABLE_ENTITY, "Unknown RPC Method"),
            },
            None => text(StatusCode::UNPROCESSABLE_ENTITY, "Unknown RPC Method"),
        },
        (_, "/metadata") => {
            let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "");
            r.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET"));
            r
        }
        (m, p) if p.starts_with("/invoke/") => {
            invoke_route(&ui, &req, &m, &p["/invoke/".len()..]).await
        }
        (m, p) if p.starts_with("/stream/") => {
            stream_route(&ui, &streams, &req, &m, &p["/stream/".len()..]).await
        }
        _ => text(StatusCode::NOT_FOUND, "404 page not found"),
    };
    if let Some(t) = token.as_deref().filter(|_| query(&req, "token").is_some()) {
        // The link's token kept as a cookie, so the page's own requests bear it.
        if let Ok(v) = HeaderValue::from_str(&format!(
            "{TOKEN_COOKIE}={t}; Path=/; HttpOnly; SameSite=Strict"
        )) {
            resp.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    if cookie(&req, CSRF_COOKIE).is_none_or(str::is_empty)
        && let Ok(v) = HeaderValue::from_str(&format!("{CSRF_COOKIE}={}", new_token()))
    {
        resp.headers_mut().append(header::SET_COOKIE, v);
    }
    resp
}

/// grpcui's checks of a request that makes a call: POST, the CSRF token echoed, a JSON body.
fn refused_post(req: &Request<Bytes>, m: &Method) -> Option<Response<Bytes>> {
    if m != Method::POST {
        let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "");
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
        return Some(r);
    }
    let sent = req.headers().get(CSRF_HEADER).and_then(|v| v.to_str().ok());
    let kept = cookie(req, CSRF_COOKIE);
    if kept.is_none_or(str::is_empty) || sent != kept {
        return Some(text(StatusCode::UNAUTHORIZED, "incorrect CSRF token"));
    }
    let json_body = req
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes() == b"application/json");
    if !json_body {
        return Some(text(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Request must be JSON",
        ));
    }
    None
}

/// `/stream/open/{method}`, `/stream/{id}/send`, `/stream/{id}/close` (POST, as `invoke/`)
/// and `/stream/{id}/events` (GET).
async fn stream_route(
    ui: &Arc<Ui>,
    streams: &stream::Streams,
    req: &Request<Bytes>,
    m: &Method,
    rest: &str,
) -> Response<Bytes> {
    let answer = |r: Result<serde_json::Value, crate::invoke::Refusal>| match r {
        Ok(v) => json_reply(&v),
        Err((status, why)) => text(status, why),
    };
    if let Some(id) = rest.strip_suffix("/events") {
        if m != Method::GET {
            return text(StatusCode::METHOD_NOT_ALLOWED, "");
        }
        let from = query(req, "from").and_then(|v| v.parse().ok()).unwrap_or(0);
        return answer(stream::events(streams, id, from).await);
    }
    if let Some(r) = refused_post(req, m) {
        return r;
    }
    if let Some(name) = rest.strip_prefix("open/") {
        let Some(method) = ui.method(name) else {
            return text(StatusCode::NOT_FOUND, "404 page not found");
        };
        return answer(stream::open(streams, ui, method, req.body()).await);
    }
    match rest.rsplit_once('/') {
        Some((id, "send")) => answer(stream::send(streams, ui, id, req.body()).await),
        Some((id, "close")) => answer(stream::close(streams, id).await),
        _ => text(StatusCode::NOT_FOUND, "404 page not found"),
    }
}

async fn invoke_route(ui: &Ui, req: &Request<Bytes>, m: &Method, name: &str) -> Response<Bytes> {
    if let Some(r) = refused_post(req, m) {
        return r;
    }
    let Some(method) = ui.method(name) else {
        return text(StatusCode::NOT_FOUND, "404 page not found");
    };
    match invoke(ui, method, req.body()).await {
        Ok(v) => json_reply(&v),
        Err((status, why)) => text(status, why),
    }
}
