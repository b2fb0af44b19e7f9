//! GripMock's templates: the part of Go's `text/template` stub writers use (actions, pipelines,
//! `if`/`range`/`with`, variables, Go's builtins) with GripMock's functions, rendered per call
//! from the request (`.Request`, `.Requests`, `.Headers`, ...), and run once at load where
//! GripMock runs them (the YAML pre-pass).
//!
//! The engine and GripMock's functions are `volley_proto::gotemplate`'s (one engine for ghz's
//! call data and GripMock's stubs); here are the call's data (`Ctx`) and the stub's shapes.

pub(crate) mod prepass;
mod shape;

use std::sync::OnceLock;

use serde_json::Value;
use volley_proto::gotemplate::{self, GRIPMOCK};

pub(crate) use gotemplate::{Root, TemplateError, Val};
pub(crate) use shape::{Shape, is_templated};

/// A stub's template: Go's `text/template` with GripMock's functions.
#[derive(Debug)]
pub(crate) struct Template(gotemplate::Template);

impl Template {
    /// Parses `src`; an unknown function is an error.
    pub(crate) fn parse(src: &str) -> Result<Template, TemplateError> {
        gotemplate::Template::parse(src, GRIPMOCK).map(Template)
    }

    /// The text the template makes from `root`.
    pub(crate) fn render(&self, root: &dyn Root) -> Result<String, TemplateError> {
        self.0.render(root)
    }
}

/// What a stub's templates read for one call.
#[derive(Default)]
pub(crate) struct Ctx {
    /// The request (the last one of a client stream) as JSON: fields by their .proto names and
    /// their JSON names, defaults included.
    pub request: Value,
    /// Every request of the call, in order.
    pub requests: Value,
    /// The request headers, by lowercase name (several values joined with `;`).
    pub headers: Value,
    /// Which message of a bidi stream this reply answers (0-based).
    pub message_index: i64,
    /// When the call came (nanoseconds since the epoch).
    pub time: i64,
    pub stub_id: String,
    /// How many times this stub has matched, this call included.
    pub attempt: i64,
    /// The stub's `options.times` (0: unlimited).
    pub max_attempts: i64,
    /// `package.Service/Method` parts, for volley's call-data names.
    pub service: String,
    pub method: String,
    pub input: String,
    pub output: String,
    pub uuid: OnceLock<String>,
}

impl Root for Ctx {
    fn field(&self, name: &str) -> Option<Val<'_>> {
        let str = |s: &str| Val::Str(std::borrow::Cow::Owned(s.to_owned()));
        Some(match name {
            "Request" => Val::Json(&self.request),
            "Requests" => Val::Json(&self.requests),
            "Headers" => Val::Json(&self.headers),
            "MessageIndex" => Val::Int(self.message_index),
            "RequestTime" | "Timestamp" => Val::Time(self.time),
            "StubID" | "RequestID" => str(&self.stub_id),
            "AttemptNumber" | "AttemptIndex" => Val::Int(self.attempt),
            "MaxAttempts" | "TotalAttempts" => Val::Int(self.max_attempts),
            "State" => Val::Map(Default::default()),
            "UUID" => str(self.uuid.get_or_init(|| uuid::Uuid::new_v4().to_string())),
            "ServiceName" => str(&self.service),
            "MethodName" => str(&self.method),
            "FullyQualifiedName" => str(&format!("{}.{}", self.service, self.method)),
            "InputName" => str(&self.input),
            "OutputName" => str(&self.output),
            "TimestampUnix" => Val::Int(self.time / 1_000_000_000),
            "TimestampUnixMilli" => Val::Int(self.time / 1_000_000),
            "TimestampUnixNano" => Val::Int(self.time),
            "WorkerID" => str(""),
            "RequestNumber" => Val::Int(0),
            _ => return None,
        })
    }
}

/// For volley-testkit's `stubs` fuzz target (not an API): parses `src` as a reply template and
/// renders it for a unary call of `package.Service/Method` whose request is `request` (JSON); the
/// text, or what went wrong.
#[doc(hidden)]
pub fn fuzz_render(src: &str, request: Value, headers: Value) -> Result<String, String> {
    let t = Template::parse(src).map_err(|e| e.to_string())?;
    let ctx = Ctx {
        requests: Value::Array(vec![request.clone()]),
        request,
        headers,
        time: 1_700_000_000_000_000_000,
        stub_id: "00000000-0000-4000-8000-000000000000".into(),
        attempt: 1,
        service: "conformance.v1.Conformance".into(),
        method: "Unary".into(),
        input: "conformance.v1.Req".into(),
        output: "conformance.v1.Reply".into(),
        ..Ctx::default()
    };
    t.render(&ctx).map_err(|e| e.to_string())
}

/// A moment as RFC 3339 (UTC, nanoseconds when there are any).
pub(crate) fn rfc3339_of(t: std::time::SystemTime) -> String {
    let nanos = t
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    volley_proto::gofmt::rfc3339_nano(nanos)
}

/// No data: templates run at load time read nothing.
pub(crate) struct Nothing;

impl Root for Nothing {
    fn field(&self, _: &str) -> Option<Val<'_>> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn render(src: &str, ctx: &Ctx) -> String {
        Template::parse(src)
            .and_then(|t| t.render(ctx))
            .unwrap_or_else(|e| panic!("{src}: {e}"))
    }

    #[test]
    fn gripmock_stub_templates() {
        let ctx = Ctx {
            request: json!({"user_id": "user_42", "name": "ann", "n": 3}),
            requests: json!([{"value": 10.0}, {"value": 20.0}, {"value": 30.0}]),
            headers: json!({"x-user": "root"}),
            message_index: 1,
            ..Ctx::default()
        };
        assert_eq!(render("Hello {{.Request.name}}", &ctx), "Hello ann");
        assert_eq!(
            render("{{index (split .Request.user_id \"_\") 1}}", &ctx),
            "42"
        );
        assert_eq!(
            render(
                "{{sum (extract .Requests `value`)}}/{{len .Requests}}",
                &ctx
            ),
            "60/3"
        );
        assert_eq!(render("{{(index .Requests 0).value}}", &ctx), "10");
        assert_eq!(render("{{index .Headers \"x-user\"}}", &ctx), "root");
        assert_eq!(
            render("{{if gt .Request.n 2}}big{{else}}small{{end}}", &ctx),
            "big"
        );
        assert_eq!(
            render(
                "{{range $i, $r := .Requests}}{{$i}}:{{$r.value}} {{end}}",
                &ctx
            ),
            "0:10 1:20 2:30 "
        );
        assert_eq!(
            render("{{.MessageIndex}} {{.Request.missing}}", &ctx),
            "1 <no value>"
        );
        assert_eq!(render("{{ .Request.name | upper }}", &ctx), "ANN");
        assert_eq!(render("{{$x := add .Request.n 1}}{{$x}}", &ctx), "4");
    }

    #[test]
    fn a_reply_that_would_not_end_is_an_error() {
        let ctx = Ctx::default();
        let err = |src: &str| {
            Template::parse(src)
                .unwrap()
                .render(&ctx)
                .unwrap_err()
                .to_string()
        };
        // Found by the stubs fuzz target: 11 billion iterations asked for at once.
        let e = err("{{ range 11111111111 }}={{ end }}");
        assert!(e.contains("more than 1000000 iterations"), "{e}");
        let e = err("{{range 1000}}{{range 1000}}{{range 2}}x{{end}}{{end}}{{end}}");
        assert!(e.contains("more than 1000000 iterations"), "{e}");
        let e = err(
            "{{range 100000}}0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789{{end}}",
        );
        assert!(e.contains("past 16 MiB"), "{e}");
        // ghz's bound on randomString, which this engine lacked (100 GB asked for at once).
        let e = err("{{ randomString 100000000000 }}");
        assert!(
            e.contains("randomString: length 100000000000 is over the limit of 1048576"),
            "{e}"
        );
        assert_eq!(render("{{ len (randomString 1048576) }}", &ctx), "1048576");
        assert_eq!(render("{{range 3}}{{.}}{{end}}", &ctx), "012");
        // Found by the stubs fuzz target: a precision past what Rust formats panicked.
        assert_eq!(render("{{printf \"%.2f\" 1.5}}", &ctx), "1.50");
        assert_eq!(
            render("{{printf \"%0.0002929546013f|%d\" 1.5 7}}", &ctx),
            "%!(BADPREC)|7"
        );
    }

    #[test]
    fn errors_name_the_function() {
        let e = Template::parse("{{ uuid2base64 .Request.name }}")
            .unwrap()
            .render(&Ctx {
                request: json!({"name": "x"}),
                ..Ctx::default()
            })
            .unwrap_err();
        assert!(e.to_string().contains("error calling uuid2base64"), "{e}");
    }
}
