//! REST routes from `google.api.http` rules (in the method options of the registered descriptors,
//! or given in code): path templates in the full grammar (`{field}`, `{field=a/*/b/**}`, `*`,
//! `**`, `:verb`), query parameters
//! and a JSON body mapped onto the request message; replies as JSON (server streams as
//! newline-delimited `{"result": ...}` objects, as grpc-gateway writes them).

use std::{
    convert::Infallible,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use crate::drain::RequestBody;
use bytes::Bytes;
use http::{HeaderValue, Method, StatusCode, header::CONTENT_TYPE};
use http_body::{Body, Frame};
use prost_reflect::{Kind, MessageDescriptor, MethodDescriptor};
use serde_json::{Map, Value};
use volley_proto::pb::google_api::{HttpRule, http_rule::Pattern};

use crate::{
    Code, Request, ResponseBody, Status,
    call::{HttpResponse, within},
    codec::HEADER_LEN,
    connect::{http_status, json_to_proto, proto_to_json, read_limited},
    server::Shared,
    service::{FrameStream, Handler},
};

/// One segment of a compiled path template.
#[derive(Clone, Debug, PartialEq)]
enum Segment {
    Literal(String),
    /// `*`: exactly one non-empty segment.
    Star,
    /// `**`: the rest of the path (zero or more segments); only last.
    DoubleStar,
}

/// A variable bound to segments `start..end` of the template.
#[derive(Clone, Debug, PartialEq)]
struct Binding {
    field: String,
    start: usize,
    end: usize,
}

/// A compiled path template: `/Segments[:verb]` (google/api/http.proto's grammar).
#[derive(Clone, Debug, PartialEq)]
struct Template {
    segments: Vec<Segment>,
    bindings: Vec<Binding>,
    verb: Option<String>,
}

/// One REST route: an HTTP method and path template bound to a gRPC method.
#[derive(Clone, Debug)]
pub struct Route {
    method: Method,
    template: Template,
    /// `*` (the whole body is the message), a field name, or empty (no body).
    body: String,
    grpc_path: String,
    input: MessageDescriptor,
    output: MessageDescriptor,
}

/// A rule that could not be used.
#[derive(Debug, thiserror::Error)]
#[error("google.api.http rule for {method}: {problem}")]
pub struct RuleError {
    method: String,
    problem: String,
}

fn parse_template(t: &str) -> Result<Template, String> {
    let path = t
        .strip_prefix('/')
        .ok_or_else(|| format!("path template {t:?} must start with /"))?;
    // The verb follows the last ':' outside a variable.
    let (path, verb) = match path.rfind(':') {
        Some(i) if !path[i..].contains('}') => (&path[..i], Some(path[i + 1..].to_owned())),
        _ => (path, None),
    };
    let mut tpl = Template {
        segments: Vec::new(),
        bindings: Vec::new(),
        verb,
    };
    let mut rest = path;
    while !rest.is_empty() || tpl.segments.is_empty() {
        if let Some(var) = rest.strip_prefix('{') {
            let close = var
                .find('}')
                .ok_or_else(|| format!("unclosed variable in {t:?}"))?;
            let (field, pattern) = var[..close].split_once('=').unwrap_or((&var[..close], "*"));
            if field.is_empty() || pattern.contains(['{', '}']) {
                return Err(format!("bad variable {{{}}} in {t:?}", &var[..close]));
            }
            let start = tpl.segments.len();
            for seg in pattern.split('/') {
                tpl.segments.push(plain_segment(seg, t)?);
            }
            tpl.bindings.push(Binding {
                field: field.to_owned(),
                start,
                end: tpl.segments.len(),
            });
            rest = &var[close + 1..];
        } else {
            let end = rest.find('/').unwrap_or(rest.len());
            tpl.segments.push(plain_segment(&rest[..end], t)?);
            rest = &rest[end..];
        }
        match rest.strip_prefix('/') {
            Some(r) => rest = r,
            None if rest.is_empty() => break,
            None => return Err(format!("expected / after a variable in {t:?}")),
        }
    }
    if let Some(i) = tpl.segments.iter().position(|s| *s == Segment::DoubleStar) {
        if i + 1 != tpl.segments.len() {
            return Err(format!("** must be the last segment in {t:?}"));
        }
    }
    Ok(tpl)
}

fn plain_segment(seg: &str, t: &str) -> Result<Segment, String> {
    match seg {
        "*" => Ok(Segment::Star),
        "**" => Ok(Segment::DoubleStar),
        "" => Err(format!("empty segment in {t:?}")),
        s if s.contains(['{', '}', '*', ':']) => Err(format!("unsupported segment {s:?} in {t:?}")),
        s => Ok(Segment::Literal(s.to_owned())),
    }
}

impl Template {
    /// Walks `path` (without its leading `/` and verb) along the template, calling `seg` with
    /// each template segment's byte range in `path`; false when it does not match. Allocates
    /// nothing: every REST request tries every route.
    fn walk(&self, path: &str, mut seg: impl FnMut(usize, usize, usize)) -> bool {
        let (mut pos, mut consumed) = (0, false);
        for (k, s) in self.segments.iter().enumerate() {
            if *s == Segment::DoubleStar {
                seg(k, pos, path.len());
                pos = path.len();
                consumed = true;
                continue;
            }
            if consumed {
                return false;
            }
            let end = path[pos..].find('/').map_or(path.len(), |i| pos + i);
            let part = &path[pos..end];
            let ok = match s {
                Segment::Literal(l) => part == l,
                _ => !part.is_empty(),
            };
            if !ok {
                return false;
            }
            seg(k, pos, end);
            consumed = end == path.len();
            pos = if consumed { end } else { end + 1 };
        }
        consumed
    }

    /// The path variables when `path` matches.
    fn matches(&self, path: &str) -> Option<Vec<(String, String)>> {
        let mut path = path.strip_prefix('/')?;
        if let Some(verb) = &self.verb {
            path = path.strip_suffix(verb.as_str())?.strip_suffix(':')?;
        }
        if !self.walk(path, |_, _, _| {}) {
            return None;
        }
        let mut ranges = vec![(0, 0); self.segments.len()];
        self.walk(path, |k, from, to| ranges[k] = (from, to));
        Some(
            self.bindings
                .iter()
                .map(|b| {
                    let (from, to) = (ranges[b.start].0, ranges[b.end - 1].1);
                    (b.field.clone(), decode(&path[from..to]))
                })
                .collect(),
        )
    }
}

impl Route {
    /// Builds routes for `method` from a rule (and its additional bindings).
    pub fn from_rule(method: &MethodDescriptor, rule: &HttpRule) -> Result<Vec<Route>, RuleError> {
        let err = |problem: String| RuleError {
            method: method.full_name().to_owned(),
            problem,
        };
        let (verb, template) = match &rule.pattern {
            Some(Pattern::Get(p)) => (Method::GET, p),
            Some(Pattern::Put(p)) => (Method::PUT, p),
            Some(Pattern::Post(p)) => (Method::POST, p),
            Some(Pattern::Delete(p)) => (Method::DELETE, p),
            Some(Pattern::Patch(p)) => (Method::PATCH, p),
            Some(Pattern::Custom(c)) => (
                Method::from_bytes(c.kind.as_bytes()).map_err(|e| err(e.to_string()))?,
                &c.path,
            ),
            None => return Err(err("no HTTP pattern".into())),
        };
        let mut routes = vec![Route {
            method: verb,
            template: parse_template(template).map_err(err)?,
            body: rule.body.clone(),
            grpc_path: format!("/{}/{}", method.parent_service().full_name(), method.name()),
            input: method.input(),
            output: method.output(),
        }];
        for extra in &rule.additional_bindings {
            routes.extend(Route::from_rule(method, extra)?);
        }
        Ok(routes)
    }

    /// The rule in a method's options, if it has one.
    pub fn from_options(method: &MethodDescriptor) -> Result<Vec<Route>, RuleError> {
        let pool = method.parent_pool();
        let Some(ext) = pool.get_extension_by_name("google.api.http") else {
            return Ok(Vec::new());
        };
        let options = method.options();
        if !options.has_extension(&ext) {
            return Ok(Vec::new());
        }
        let value = options.get_extension(&ext);
        let rule: HttpRule = value
            .as_message()
            .and_then(|m| m.transcode_to().ok())
            .ok_or_else(|| RuleError {
                method: method.full_name().to_owned(),
                problem: "the option is not a google.api.HttpRule".into(),
            })?;
        Route::from_rule(method, &rule)
    }

    /// The path variables when `path` matches.
    fn matches(&self, path: &str) -> Option<Vec<(String, String)>> {
        self.template.matches(path)
    }
}

fn decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// A query string's `key=value` pairs, percent-decoded (`+` as space), in order.
pub fn query_pairs(q: &str) -> impl Iterator<Item = (String, String)> + '_ {
    q.split('&').filter(|p| !p.is_empty()).map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (decode(&k.replace('+', " ")), decode(&v.replace('+', " ")))
    })
}

/// Finds the route for a request: its index in `routes` and the path variables.
pub(crate) fn find(
    routes: &[Route],
    method: &Method,
    path: &str,
) -> Option<(usize, Vec<(String, String)>)> {
    routes
        .iter()
        .enumerate()
        .filter(|(_, r)| r.method == method)
        .find_map(|(i, r)| r.matches(path).map(|v| (i, v)))
}

/// Sets `a.b.c` in a JSON object to a value typed for the message field it names.
fn set_field(
    obj: &mut Map<String, Value>,
    desc: &MessageDescriptor,
    path: &str,
    raw: &str,
    repeated_ok: bool,
) -> Result<(), Status> {
    let (head, tail) = path
        .split_once('.')
        .map_or((path, None), |(h, t)| (h, Some(t)));
    let field = desc
        .get_field_by_name(head)
        .or_else(|| desc.get_field_by_json_name(head))
        .ok_or_else(|| {
            Status::invalid_argument(format!("{} has no field {head:?}", desc.full_name()))
        })?;
    let key = field.json_name().to_owned();
    if let Some(rest) = tail {
        let Kind::Message(inner) = field.kind() else {
            return Err(Status::invalid_argument(format!("{head} is not a message")));
        };
        let entry = obj.entry(key).or_insert_with(|| Value::Object(Map::new()));
        let Value::Object(m) = entry else {
            return Err(Status::invalid_argument(format!("{head} is set twice")));
        };
        return set_field(m, &inner, rest, raw, repeated_ok);
    }
    let value = match field.kind() {
        Kind::Bool => Value::Bool(raw == "true"),
        Kind::Double | Kind::Float => raw
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or_else(|| Value::String(raw.to_owned()), Value::Number),
        _ => Value::String(raw.to_owned()),
    };
    if field.is_list() && repeated_ok {
        match obj.entry(key).or_insert_with(|| Value::Array(Vec::new())) {
            Value::Array(a) => a.push(value),
            _ => return Err(Status::invalid_argument(format!("{head} is set twice"))),
        }
    } else {
        obj.insert(key, value);
    }
    Ok(())
}

fn error_response(s: &Status) -> HttpResponse {
    // grpc-gateway's error shape.
    let body = serde_json::json!({"code": s.code() as i32, "message": s.message(), "details": []});
    let mut resp = http::Response::new(ResponseBody::other(http_body_util::Full::new(
        Bytes::from(body.to_string()),
    )));
    *resp.status_mut() = if s.code() == Code::Unimplemented {
        StatusCode::NOT_FOUND
    } else {
        http_status(s.code())
    };
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

/// Serves a REST call.
pub(crate) async fn serve(
    shared: Arc<Shared>,
    req: http::Request<RequestBody>,
    route: usize,
    vars: Vec<(String, String)>,
) -> HttpResponse {
    let route = &shared.rest[route];
    let (parts, body) = req.into_parts();
    let Some(handler) = shared.router.get(&route.grpc_path).cloned() else {
        return error_response(&shared.router.not_found(&route.grpc_path));
    };
    let deadline = match crate::connect::timeout(&parts.headers) {
        Ok(d) => d,
        Err(s) => return error_response(&s),
    };
    let limit = shared.limits.max_recv;
    let input = async {
        let raw = read_limited(body, limit).await.map_err(|(s, _)| s)?;
        let mut obj = Map::new();
        if !route.body.is_empty() && !raw.is_empty() {
            let v: Value = serde_json::from_slice(&raw)
                .map_err(|e| Status::invalid_argument(format!("invalid JSON body: {e}")))?;
            if route.body == "*" {
                match v {
                    Value::Object(m) => obj = m,
                    _ => return Err(Status::invalid_argument("the body must be a JSON object")),
                }
            } else {
                let f = route.input.get_field_by_name(&route.body).ok_or_else(|| {
                    Status::internal(format!("rule body names no field {:?}", route.body))
                })?;
                obj.insert(f.json_name().to_owned(), v);
            }
        }
        for (field, value) in &vars {
            set_field(&mut obj, &route.input, field, value, false)?;
        }
        if route.body != "*" {
            if let Some(q) = parts.uri.query() {
                for (k, v) in query_pairs(q) {
                    set_field(&mut obj, &route.input, &k, &v, true)?;
                }
            }
        }
        json_to_proto(&route.input, Value::Object(obj).to_string().as_bytes())
    };
    let msg = match within(deadline, input).await {
        Ok(m) => m,
        Err(s) => return error_response(&s),
    };
    let request = Request::from_parts(parts.headers, deadline, msg);
    match handler {
        Handler::Unary(h) => match within(deadline, h(request)).await {
            Ok(resp) => {
                let (_, frame, _) = resp.into_parts();
                match proto_to_json(&route.output, &frame[HEADER_LEN..]) {
                    Ok(json) => json_response(json),
                    Err(s) => error_response(&s),
                }
            }
            Err(s) => error_response(&s),
        },
        Handler::ServerStreaming(h) => match within(deadline, h(request)).await {
            Ok(resp) => {
                let (_, frames, _) = resp.into_parts();
                let body = NdJson {
                    frames: Some(frames),
                    output: route.output.clone(),
                };
                let mut r = http::Response::new(ResponseBody::other(body));
                r.headers_mut()
                    .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                r
            }
            Err(s) => error_response(&s),
        },
        _ => error_response(&Status::unimplemented(
            "client and bidi streams have no REST mapping",
        )),
    }
}

fn json_response(json: Bytes) -> HttpResponse {
    let mut r = http::Response::new(ResponseBody::other(http_body_util::Full::new(json)));
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// A server stream as newline-delimited `{"result": ...}` / `{"error": ...}` objects.
struct NdJson {
    frames: Option<FrameStream>,
    output: MessageDescriptor,
}

impl Body for NdJson {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let Some(frames) = self.frames.as_mut() else {
            return Poll::Ready(None);
        };
        let line = match frames.as_mut().poll_next(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(None) => {
                self.frames = None;
                return Poll::Ready(None);
            }
            Poll::Ready(Some(Ok(frame))) => match proto_to_json(&self.output, &frame[HEADER_LEN..])
            {
                Ok(json) => {
                    let mut l = b"{\"result\":".to_vec();
                    l.extend_from_slice(&json);
                    l.extend_from_slice(b"}\n");
                    l
                }
                Err(s) => error_line(&s, &mut self.frames),
            },
            Poll::Ready(Some(Err(s))) => error_line(&s, &mut self.frames),
        };
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(line)))))
    }
}

fn error_line(s: &Status, frames: &mut Option<FrameStream>) -> Vec<u8> {
    *frames = None;
    let mut l = serde_json::json!({"error": {"code": s.code() as i32, "message": s.message()}})
        .to_string()
        .into_bytes();
    l.push(b'\n');
    l
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates() {
        let t = parse_template("/v1/users/{id}").unwrap();
        assert_eq!(
            t.segments,
            vec![
                Segment::Literal("v1".into()),
                Segment::Literal("users".into()),
                Segment::Star
            ]
        );
        assert_eq!(
            t.matches("/v1/users/7"),
            Some(vec![("id".into(), "7".into())])
        );
        assert_eq!(t.matches("/v1/users/"), None);
        assert_eq!(t.matches("/v1/users/7/x"), None);
        for bad in ["v1", "/v1/{name", "/v1/**/x", "/v1//x", "/v1/a*"] {
            assert!(parse_template(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn nested_patterns_wildcards_and_verbs() {
        let t = parse_template("/v1/{name=shelves/*/books/*}").unwrap();
        assert_eq!(
            t.matches("/v1/shelves/1/books/a%20b"),
            Some(vec![("name".into(), "shelves/1/books/a b".into())])
        );
        assert_eq!(t.matches("/v1/shelves/1/novels/2"), None);

        let t = parse_template("/v1/{name=messages/*}:cancel").unwrap();
        assert_eq!(t.verb.as_deref(), Some("cancel"));
        assert_eq!(
            t.matches("/v1/messages/9:cancel"),
            Some(vec![("name".into(), "messages/9".into())])
        );
        assert_eq!(t.matches("/v1/messages/9"), None);

        let t = parse_template("/v1/*/items/{path=**}").unwrap();
        assert_eq!(
            t.matches("/v1/any/items/a/b/c"),
            Some(vec![("path".into(), "a/b/c".into())])
        );
        // `**` is zero or more segments.
        assert_eq!(
            t.matches("/v1/any/items"),
            Some(vec![("path".into(), "".into())])
        );
        assert_eq!(t.matches("/v1/any/thing/a"), None);

        let t = parse_template("/v1/{a}/{b.c=x/*}").unwrap();
        assert_eq!(
            t.matches("/v1/1/x/2"),
            Some(vec![("a".into(), "1".into()), ("b.c".into(), "x/2".into())])
        );
    }
}
