//! REST routes from `google.api.http` rules (in the method options of the registered descriptors,
//! or given in code): path templates in the full grammar (`{field}`, `{field=a/*/b/**}`, `*`,
//! `**`, `:verb`), compiled once and matched without allocating. `call::rest` serves a match.

use http::Method;
use prost_reflect::{MessageDescriptor, MethodDescriptor};
use volley_proto::pb::google_api::{HttpRule, http_rule::Pattern};

use crate::transcode::decode;

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
pub(crate) struct Route {
    pub(crate) method: Method,
    /// The rule's path template as written (for OpenAPI).
    pub(crate) path: String,
    /// The gRPC method.
    pub(crate) rpc: MethodDescriptor,
    template: Template,
    /// `*` (the whole body is the message), a field name, or empty (no body).
    pub(crate) body: String,
    /// The gRPC method's path, `/package.Service/Method`.
    pub(crate) grpc_path: String,
    /// The request message type.
    pub(crate) input: MessageDescriptor,
    /// The reply message type.
    pub(crate) output: MessageDescriptor,
    /// `response_body`: the reply's field that is the HTTP body (its JSON name), or empty
    /// (the whole reply).
    pub(crate) response_body: String,
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
            // A trailing `/` is outside the grammar (`Segments = Segment { "/" Segment }`); taken
            // as written, `/v1/users/` compiled to `/v1/users` and never matched its own path.
            Some("") => return Err(format!("empty segment at the end of {t:?}")),
            Some(r) => rest = r,
            None if rest.is_empty() => break,
            None => return Err(format!("expected / after a variable in {t:?}")),
        }
    }
    if let Some(i) = tpl.segments.iter().position(|s| *s == Segment::DoubleStar)
        && i + 1 != tpl.segments.len()
    {
        return Err(format!("** must be the last segment in {t:?}"));
    }
    Ok(tpl)
}

/// For volley-testkit's `service_config` fuzz target (not an API): parses `template` as a
/// `google.api.http` path template (`Err` when it does not parse) and matches `path` against it
/// (the path variables when it matches).
#[doc(hidden)]
pub fn fuzz_match_template(
    template: &str,
    path: &str,
) -> Result<Option<Vec<(String, String)>>, String> {
    Ok(parse_template(template)?.matches(path))
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
    pub(crate) fn from_rule(
        method: &MethodDescriptor,
        rule: &HttpRule,
    ) -> Result<Vec<Route>, RuleError> {
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
        let named = |what: &str, name: &str, m: &MessageDescriptor| -> Result<String, RuleError> {
            m.get_field_by_name(name)
                .map(|f| f.json_name().to_owned())
                .ok_or_else(|| {
                    err(format!(
                        "{what} names {name:?}, no field of {}",
                        m.full_name()
                    ))
                })
        };
        if !matches!(rule.body.as_str(), "" | "*") {
            named("body", &rule.body, &method.input())?;
        }
        let response_body = match rule.response_body.as_str() {
            "" => String::new(),
            f => named("response_body", f, &method.output())?,
        };
        let mut routes = vec![Route {
            method: verb,
            path: template.clone(),
            rpc: method.clone(),
            template: parse_template(template).map_err(err)?,
            body: rule.body.clone(),
            grpc_path: format!("/{}/{}", method.parent_service().full_name(), method.name()),
            input: method.input(),
            output: method.output(),
            response_body,
        }];
        for extra in &rule.additional_bindings {
            routes.extend(Route::from_rule(method, extra)?);
        }
        Ok(routes)
    }

    /// The rule in a method's options, if it has one.
    pub(crate) fn from_options(method: &MethodDescriptor) -> Result<Vec<Route>, RuleError> {
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
        for bad in [
            "v1",
            "/v1/{name",
            "/v1/**/x",
            "/v1//x",
            "/v1/a*",
            "/v1/",
            "/v1/{id}/",
            "/v1/x/:get",
        ] {
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
