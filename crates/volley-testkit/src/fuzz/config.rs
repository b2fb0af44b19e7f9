//! Fuzz body for configuration text that picks routes and policies: gRPC service configs as
//! `volley-client` reads them, and `google.api.http` path templates as the server's REST routes
//! compile and match them.

use volley_client::{
    ServiceConfig,
    service_config::{CallPolicy, RetryPolicy},
};
use volley_server::fuzz_match_template;

/// Service configs and REST path templates. The first byte picks what reads the rest (UTF-8):
///
/// - `0`: a service config (JSON). One that parses is asked about a few methods, and what it
///   says must hold: retry and hedging policies make 2 to 5 attempts, backoffs stay within their
///   bounds, the throttle's tokens stay within 0 and its maximum.
/// - `1`: a path template, a newline, then a request path. A template that parses must match a
///   path made from it (each variable bound); then the request path is matched against it.
pub fn service_config(data: &[u8]) {
    let [mode, rest @ ..] = data else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    if mode % 2 == 0 {
        config(text);
    } else {
        let (template, path) = text.split_once('\n').unwrap_or((text, "/"));
        template_and_path(template, path);
    }
}

fn config(text: &str) {
    let Ok(c) = ServiceConfig::parse(text) else {
        return;
    };
    for path in [
        "/helloworld.Greeter/SayHello",
        "helloworld.Greeter/SayHello",
        "/",
        "",
        "/a/b/c",
    ] {
        if let Some(m) = c.method(path) {
            match &m.policy {
                Some(CallPolicy::Retry(r)) => retry(r),
                Some(CallPolicy::Hedge(h)) => {
                    assert!((2..=5).contains(&h.max_attempts), "{h:?}");
                }
                None => {}
            }
        }
    }
    if let Some(t) = c.throttle() {
        let max = t.tokens();
        for _ in 0..3 {
            t.failed();
            let _ = t.allows();
        }
        for _ in 0..5 {
            t.succeeded();
        }
        assert!(
            (0.0..=max).contains(&t.tokens()),
            "tokens {} of {max}",
            t.tokens()
        );
    }
    let _ = c.lb_policy();
}

/// What a retry policy promises the retry loop.
fn retry(r: &RetryPolicy) {
    assert!((2..=5).contains(&r.max_attempts), "{r:?}");
    assert!(!r.initial_backoff.is_zero(), "{r:?}");
    assert!(!r.max_backoff.is_zero(), "{r:?}");
    assert!(
        r.backoff_multiplier.is_finite() && r.backoff_multiplier > 0.0,
        "{r:?}"
    );
}

fn template_and_path(template: &str, path: &str) {
    let Ok(_) = fuzz_match_template(template, "/") else {
        return;
    };
    let (made, vars) = example_path(template);
    let bound = fuzz_match_template(template, &made)
        .expect("it parsed a moment ago")
        .unwrap_or_else(|| panic!("template {template:?} does not match {made:?}"));
    assert_eq!(bound.len(), vars, "template {template:?}, path {made:?}");
    let _ = fuzz_match_template(template, path);
}

/// A request path the template (one that parses) matches: each `*` one segment, each `**` two,
/// literals and the verb as written; and how many variables it binds.
fn example_path(template: &str) -> (String, usize) {
    let path = template.strip_prefix('/').unwrap_or(template);
    // The verb follows the last ':' outside a variable (as the parser splits it).
    let (path, verb) = match path.rfind(':') {
        Some(i) if !path[i..].contains('}') => (&path[..i], &path[i..]),
        _ => (path, ""),
    };
    let fill = |s: &str| -> String {
        s.split('/')
            .map(|seg| match seg {
                "*" => "x",
                "**" => "x/y",
                s => s,
            })
            .collect::<Vec<_>>()
            .join("/")
    };
    let (mut out, mut vars, mut rest) = (String::from("/"), 0, path);
    while let Some(open) = rest.find('{') {
        out.push_str(&fill(&rest[..open]));
        let close = open + rest[open..].find('}').unwrap_or(rest.len() - open);
        let inner = &rest[open + 1..close];
        out.push_str(&fill(inner.split_once('=').map_or("*", |(_, p)| p)));
        vars += 1;
        rest = rest.get(close + 1..).unwrap_or("");
    }
    out.push_str(&fill(rest));
    out.push_str(verb);
    (out, vars)
}
