//! HTTP rules from a file, for upstreams whose protos carry no `google.api.http` options: the
//! `http.rules` of a Google API service config in YAML, the file grpc-gateway takes as
//! `--grpc-api-configuration` and Envoy's transcoder as its service config:
//!
//! ```yaml
//! type: google.api.Service
//! config_version: 3
//! http:
//!   rules:
//!     - selector: grpc.testing.TestService.UnaryCall
//!       post: /v1/unary
//!       body: "*"
//! ```

use serde_yaml::Value;
use volley_server::pb::google_api::{CustomHttpPattern, HttpRule, http_rule::Pattern};

/// The rules of a service config's text; `Err` names the rule and what is wrong with it.
pub fn parse(text: &str) -> Result<Vec<HttpRule>, String> {
    let doc: Value = serde_yaml::from_str(text).map_err(|e| format!("not YAML: {e}"))?;
    let Some(rules) = doc.get("http").and_then(|h| h.get("rules")) else {
        return Err("no http.rules in it (a google.api.Service config's HTTP rules)".into());
    };
    let Value::Sequence(list) = rules else {
        return Err("http.rules is not a list".into());
    };
    list.iter()
        .enumerate()
        .map(|(i, r)| rule(r, true).map_err(|e| format!("http.rules[{i}]: {e}")))
        .collect()
}

fn text(v: &Value, key: &str) -> Result<String, String> {
    match v.get(key) {
        None => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!("{key} is not a string: {other:?}")),
    }
}

fn rule(v: &Value, top: bool) -> Result<HttpRule, String> {
    if !v.is_mapping() {
        return Err(
            "a rule is a mapping (selector, get/put/post/delete/patch/custom, body)".into(),
        );
    }
    let selector = text(v, "selector")?;
    if top && selector.is_empty() {
        return Err("no selector (the method, package.Service.Method)".into());
    }
    let mut patterns = Vec::new();
    for (key, make) in [
        ("get", Pattern::Get as fn(String) -> Pattern),
        ("put", Pattern::Put),
        ("post", Pattern::Post),
        ("delete", Pattern::Delete),
        ("patch", Pattern::Patch),
    ] {
        let path = text(v, key)?;
        if !path.is_empty() {
            patterns.push(make(path));
        }
    }
    if let Some(c) = v.get("custom") {
        patterns.push(Pattern::Custom(CustomHttpPattern {
            kind: text(c, "kind")?,
            path: text(c, "path")?,
        }));
    }
    let pattern = match patterns.len() {
        1 => patterns.pop(),
        0 => {
            return Err(format!(
                "{selector}: no get, put, post, delete, patch or custom path"
            ));
        }
        _ => return Err(format!("{selector}: more than one HTTP method")),
    };
    let additional_bindings = match v.get("additional_bindings") {
        None => Vec::new(),
        Some(Value::Sequence(more)) => more
            .iter()
            .map(|m| rule(m, false))
            .collect::<Result<_, _>>()
            .map_err(|e| format!("{selector}: additional_bindings: {e}"))?,
        Some(_) => return Err(format!("{selector}: additional_bindings is not a list")),
    };
    Ok(HttpRule {
        selector,
        pattern,
        body: text(v, "body")?,
        response_body: text(v, "response_body")?,
        additional_bindings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_configs_rules() {
        let rules = parse(
            r#"
type: google.api.Service
config_version: 3
http:
  rules:
    - selector: grpc.testing.TestService.UnaryCall
      post: /v1/unary
      body: "*"
    - selector: grpc.testing.TestService.EmptyCall
      get: /v1/empty
      additional_bindings:
        - get: /v1/nothing
    - selector: a.B.C
      custom: {kind: HEAD, path: /v1/c}
      response_body: x
"#,
        )
        .unwrap();
        assert_eq!(rules.len(), 3);
        assert_eq!(rules[0].pattern, Some(Pattern::Post("/v1/unary".into())));
        assert_eq!(rules[0].body, "*");
        assert_eq!(
            rules[1].additional_bindings[0].pattern,
            Some(Pattern::Get("/v1/nothing".into()))
        );
        assert_eq!(rules[2].response_body, "x");
    }

    #[test]
    fn a_bad_rule_is_named() {
        let e = parse("http:\n  rules:\n    - selector: a.B.C\n      body: '*'\n").unwrap_err();
        assert!(
            e.contains("http.rules[0]") && e.contains("a.B.C") && e.contains("no get"),
            "{e}"
        );
        let e = parse("http:\n  rules:\n    - get: /x\n").unwrap_err();
        assert!(e.contains("no selector"), "{e}");
        assert!(
            parse("nothing: here")
                .unwrap_err()
                .contains("no http.rules")
        );
        let e = parse("http:\n  rules:\n    - {selector: a.B.C, get: /x, post: /y}\n").unwrap_err();
        assert!(e.contains("more than one"), "{e}");
    }
}
