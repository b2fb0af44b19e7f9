//! ghz's call-data templates: the subset of Go `text/template` that ghz users write.
//!
//! Supported: `{{.Var}}` for every ghz variable, function calls with literal or variable
//! arguments (`{{randomInt 1 100}}`, `{{randomString 8}}`, `{{newUUID}}`), pipes
//! (`{{.MethodName | upper}}`), trim markers (`{{-`, `-}}`), and a few sprig functions (`upper`,
//! `lower`, `title`, `trim`, `quote`, `squote`, `add`, `sub`, `mul`, `div`, `mod`). Control
//! structures (`if`, `range`, ...) are refused at parse time with a clear error. Written here
//! for that small subset: a template is parsed once, its ghz variables and `.Request` paths
//! resolved at parse time, and each call renders by a walk over the parts (a general Go-template
//! crate such as gtmpl evaluates against a dynamic context built per render). The functions are
//! in `funcs`. volley-mock carries a fuller `text/template` for GripMock's stubs.

use std::{fmt::Write, sync::Arc};

mod funcs;
mod proto;
mod value;

pub use funcs::MAX_RANDOM_STRING;
use funcs::call;
pub use proto::ProtoTemplate;
pub use value::TemplateError;
use value::Value;

/// What a template can refer to, per call. The names are shared (`Arc<str>`): a load generator
/// makes one of these per call, and a clone then costs no allocation.
#[derive(Clone, Debug, Default)]
pub struct CallData {
    /// `g{worker}c{connection}`, prefixed `name:` when the run has a name.
    pub worker_id: Arc<str>,
    /// The call's number in the run (0-based, global).
    pub request_number: i64,
    /// `package.Service.Method`.
    pub fully_qualified_name: Arc<str>,
    /// `Method`.
    pub method_name: Arc<str>,
    /// `package.Service`.
    pub service_name: Arc<str>,
    /// Input message full name.
    pub input_name: Arc<str>,
    /// Output message full name.
    pub output_name: Arc<str>,
    /// The method streams requests.
    pub is_client_streaming: bool,
    /// The method streams replies.
    pub is_server_streaming: bool,
    /// When the call data was made (nanoseconds since the Unix epoch).
    pub timestamp_unix_nano: i64,
    /// A fresh UUID v4 for this call (a caller may leave it empty when no template
    /// [reads](Template::reads) `UUID`).
    pub uuid: String,
    /// The request as JSON, for reply templates (`{{.Request.name}}`, `volley serve --stubs`).
    pub request: Option<serde_json::Value>,
}

#[derive(Clone, Debug)]
enum Operand {
    Var(String),
    /// `.Request.a.b`: the path into the request, split once at parse time.
    Request(Vec<String>),
    Lit(Value),
    Func(String),
}

#[derive(Clone, Debug)]
struct Command {
    head: Operand,
    args: Vec<Operand>,
}

#[derive(Clone, Debug)]
enum Part {
    Text(String),
    Action(Vec<Command>),
}

/// A parsed template.
#[derive(Clone, Debug)]
pub struct Template {
    parts: Vec<Part>,
}

const VARIABLES: [&str; 14] = [
    "WorkerID",
    "RequestNumber",
    "FullyQualifiedName",
    "MethodName",
    "ServiceName",
    "InputName",
    "OutputName",
    "IsClientStreaming",
    "IsServerStreaming",
    "Timestamp",
    "TimestampUnix",
    "TimestampUnixMilli",
    "TimestampUnixNano",
    "UUID",
];

const FUNCTIONS: [&str; 14] = [
    "newUUID",
    "randomString",
    "randomInt",
    "upper",
    "lower",
    "title",
    "trim",
    "quote",
    "squote",
    "add",
    "sub",
    "mul",
    "div",
    "mod",
];

impl Template {
    /// Parses `src`; refuses unknown variables, unknown functions and control structures.
    pub fn parse(src: &str) -> Result<Template, TemplateError> {
        Template::parse_with(src, true)
    }

    /// Parses `src`, with or without functions (ghz `--disable-template-functions`).
    pub fn parse_with(src: &str, functions: bool) -> Result<Template, TemplateError> {
        Template::parse_syntax(
            src,
            Syntax {
                functions,
                request: false,
            },
        )
    }

    /// Parses a reply template (a stub's output): the call-data variables and functions, and the
    /// request's fields, `{{.Request.name}}` (a missing field renders empty).
    pub fn parse_reply(src: &str) -> Result<Template, TemplateError> {
        Template::parse_syntax(
            src,
            Syntax {
                functions: true,
                request: true,
            },
        )
    }

    fn parse_syntax(src: &str, syntax: Syntax) -> Result<Template, TemplateError> {
        let mut parts = Vec::new();
        let mut rest = src;
        let mut trim_next_text = false;
        while let Some(open) = rest.find("{{") {
            let mut text = &rest[..open];
            if trim_next_text {
                text = text.trim_start();
            }
            let after = &rest[open + 2..];
            let close = after
                .find("}}")
                .ok_or_else(|| TemplateError(format!("unclosed action in {src:?}")))?;
            let mut inner = &after[..close];
            if let Some(s) = inner.strip_prefix('-') {
                text = text.trim_end();
                inner = s;
            }
            trim_next_text = false;
            if let Some(s) = inner.strip_suffix('-') {
                trim_next_text = true;
                inner = s;
            }
            if !text.is_empty() {
                parts.push(Part::Text(text.to_owned()));
            }
            parts.push(Part::Action(parse_pipeline(inner.trim(), syntax)?));
            rest = &after[close + 2..];
        }
        let text = if trim_next_text {
            rest.trim_start()
        } else {
            rest
        };
        if !text.is_empty() {
            parts.push(Part::Text(text.to_owned()));
        }
        Ok(Template { parts })
    }

    /// True when the template has any action (otherwise it renders to its own text).
    pub fn has_actions(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::Action(_)))
    }

    /// True when the template reads variable `name` (`{{.UUID}}`: `reads("UUID")`), so a caller
    /// can leave out what no template reads.
    pub fn reads(&self, name: &str) -> bool {
        let is = |o: &Operand| matches!(o, Operand::Var(v) if v == name);
        self.parts.iter().any(|p| match p {
            Part::Action(cmds) => cmds.iter().any(|c| is(&c.head) || c.args.iter().any(is)),
            Part::Text(_) => false,
        })
    }

    /// True when rendering uses per-call variables or functions beyond the run's constants.
    /// Renders into `out` (cleared first).
    pub fn render(&self, data: &CallData, out: &mut String) -> Result<(), TemplateError> {
        out.clear();
        for p in &self.parts {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::Action(cmds) => {
                    let mut piped: Option<Value> = None;
                    for c in cmds {
                        piped = Some(eval(c, data, piped)?);
                    }
                    if let Some(v) = piped {
                        let _ = write!(out, "{v}");
                    }
                }
            }
        }
        Ok(())
    }
}

/// True when `s` contains template actions at all (cheap check before parsing).
pub fn looks_templated(s: &str) -> bool {
    s.contains("{{")
}

/// What a template may use.
#[derive(Clone, Copy)]
struct Syntax {
    functions: bool,
    /// `.Request.field` (reply templates).
    request: bool,
}

fn parse_pipeline(src: &str, syntax: Syntax) -> Result<Vec<Command>, TemplateError> {
    if src.is_empty() {
        return Err(TemplateError("empty action {{}}".into()));
    }
    let tokens = tokenize(src)?;
    let mut cmds = Vec::new();
    for group in tokens.split(|t| t == "|") {
        let mut ops = group.iter().map(|t| operand(t, syntax));
        let head = ops
            .next()
            .ok_or_else(|| TemplateError(format!("missing command in {{{{{src}}}}}")))??;
        let args = ops.collect::<Result<Vec<_>, _>>()?;
        if !args.is_empty() && !matches!(head, Operand::Func(_)) {
            return Err(TemplateError(format!(
                "can't give arguments to a non-function in {{{{{src}}}}}"
            )));
        }
        cmds.push(Command { head, args });
    }
    Ok(cmds)
}

fn tokenize(src: &str) -> Result<Vec<String>, TemplateError> {
    let mut out = Vec::new();
    let mut chars = src.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '"' || c == '`' {
            chars.next();
            let mut s = String::from('"');
            let mut closed = false;
            while let Some(ch) = chars.next() {
                if ch == c {
                    closed = true;
                    break;
                }
                if ch == '\\' && c == '"' {
                    if let Some(n) = chars.next() {
                        s.push(match n {
                            'n' => '\n',
                            't' => '\t',
                            other => other,
                        });
                    }
                    continue;
                }
                s.push(ch);
            }
            if !closed {
                return Err(TemplateError(format!(
                    "unterminated string in {{{{{src}}}}}"
                )));
            }
            out.push(s);
        } else if c == '|' {
            chars.next();
            out.push("|".into());
        } else {
            let mut s = String::new();
            while let Some(&ch) = chars.peek() {
                if ch.is_whitespace() || ch == '|' {
                    break;
                }
                s.push(ch);
                chars.next();
            }
            out.push(s);
        }
    }
    Ok(out)
}

fn operand(tok: &str, syntax: Syntax) -> Result<Operand, TemplateError> {
    let functions = syntax.functions;
    if let Some(s) = tok.strip_prefix('"') {
        return Ok(Operand::Lit(Value::Str(s.to_owned())));
    }
    if let Some(var) = tok.strip_prefix('.') {
        if VARIABLES.contains(&var) {
            return Ok(Operand::Var(var.to_owned()));
        }
        if let Some(path) = var.strip_prefix("Request.").filter(|_| syntax.request) {
            return Ok(Operand::Request(
                path.split('.').map(str::to_owned).collect(),
            ));
        }
        return Err(TemplateError(format!(
            "can't evaluate field {var} (known: {})",
            VARIABLES.join(", ")
        )));
    }
    if let Ok(i) = tok.parse::<i64>() {
        return Ok(Operand::Lit(Value::Int(i)));
    }
    if let Ok(x) = tok.parse::<f64>() {
        return Ok(Operand::Lit(Value::Float(x)));
    }
    match tok {
        "true" => return Ok(Operand::Lit(Value::Bool(true))),
        "false" => return Ok(Operand::Lit(Value::Bool(false))),
        _ => {}
    }
    if [
        "if", "else", "end", "range", "with", "define", "template", "block",
    ]
    .contains(&tok)
    {
        return Err(TemplateError(format!(
            "control structure {tok:?} is not supported in call data"
        )));
    }
    if FUNCTIONS.contains(&tok) {
        if !functions {
            return Err(TemplateError(format!(
                "function {tok:?} not available (--disable-template-functions)"
            )));
        }
        return Ok(Operand::Func(tok.to_owned()));
    }
    Err(TemplateError(format!("function {tok:?} not defined")))
}

/// A field of the request (`a.b` into nested messages), as a template value; empty when absent.
fn request_field(path: &[String], d: &CallData) -> Value {
    let mut v = d.request.as_ref();
    for key in path {
        v = v.and_then(|v| v.get(key));
    }
    match v {
        Some(serde_json::Value::String(s)) => Value::Str(s.clone()),
        Some(serde_json::Value::Bool(b)) => Value::Bool(*b),
        Some(serde_json::Value::Number(n)) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::Float(n.as_f64().unwrap_or(0.0)),
        },
        Some(other) => Value::Str(other.to_string()),
        None => Value::Str(String::new()),
    }
}

fn var(name: &str, d: &CallData) -> Value {
    let ts = d.timestamp_unix_nano;
    match name {
        "WorkerID" => Value::Str(d.worker_id.to_string()),
        "RequestNumber" => Value::Int(d.request_number),
        "FullyQualifiedName" => Value::Str(d.fully_qualified_name.to_string()),
        "MethodName" => Value::Str(d.method_name.to_string()),
        "ServiceName" => Value::Str(d.service_name.to_string()),
        "InputName" => Value::Str(d.input_name.to_string()),
        "OutputName" => Value::Str(d.output_name.to_string()),
        "IsClientStreaming" => Value::Bool(d.is_client_streaming),
        "IsServerStreaming" => Value::Bool(d.is_server_streaming),
        "Timestamp" => Value::Str(crate::gofmt::rfc3339(ts)),
        "TimestampUnix" => Value::Int(ts.div_euclid(1_000_000_000)),
        "TimestampUnixMilli" => Value::Int(ts.div_euclid(1_000_000)),
        "TimestampUnixNano" => Value::Int(ts),
        "UUID" => Value::Str(d.uuid.clone()),
        _ => unreachable!("checked at parse time"),
    }
}

fn eval(c: &Command, d: &CallData, piped: Option<Value>) -> Result<Value, TemplateError> {
    let mut args: Vec<Value> = c
        .args
        .iter()
        .map(|a| match a {
            Operand::Var(v) => Ok(var(v, d)),
            Operand::Request(p) => Ok(request_field(p, d)),
            Operand::Lit(l) => Ok(l.clone()),
            Operand::Func(f) => call(f, &[]),
        })
        .collect::<Result<_, _>>()?;
    if let Some(p) = piped {
        args.push(p);
    }
    match &c.head {
        Operand::Var(v) if args.is_empty() => Ok(var(v, d)),
        Operand::Request(p) if args.is_empty() => Ok(request_field(p, d)),
        Operand::Lit(l) if args.is_empty() => Ok(l.clone()),
        Operand::Func(f) => call(f, &args),
        _ => Err(TemplateError("can't pipe into a non-function".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> CallData {
        CallData {
            worker_id: "g3c1".into(),
            request_number: 41,
            fully_qualified_name: "api.Users.Get".into(),
            method_name: "Get".into(),
            service_name: "api.Users".into(),
            input_name: "api.GetUserRequest".into(),
            output_name: "api.User".into(),
            timestamp_unix_nano: 1_700_000_000_123_456_789,
            uuid: "00000000-0000-4000-8000-000000000000".into(),
            ..CallData::default()
        }
    }

    fn render(src: &str) -> String {
        let mut out = String::new();
        Template::parse(src)
            .unwrap()
            .render(&data(), &mut out)
            .unwrap();
        out
    }

    #[test]
    fn variables() {
        assert_eq!(render(r#"{"id": {{.RequestNumber}}}"#), r#"{"id": 41}"#);
        assert_eq!(
            render("{{.WorkerID}}/{{.MethodName}}/{{.ServiceName}}"),
            "g3c1/Get/api.Users"
        );
        assert_eq!(render("{{.Timestamp}}"), "2023-11-14T22:13:20Z");
        assert_eq!(
            render("{{.TimestampUnix}} {{.TimestampUnixMilli}}"),
            "1700000000 1700000000123"
        );
        assert_eq!(render("{{.TimestampUnixNano}}"), "1700000000123456789");
        assert_eq!(render("{{.IsClientStreaming}}"), "false");
        assert_eq!(
            render("{{ .UUID }}"),
            "00000000-0000-4000-8000-000000000000"
        );
    }

    #[test]
    fn reply_templates_read_the_request() {
        let t = Template::parse_reply(
            "Hello {{.Request.name | upper}} #{{.Request.order.id}}{{.Request.none}}",
        )
        .unwrap();
        let d = CallData {
            request: Some(serde_json::json!({"name": "ada", "order": {"id": 7}})),
            ..CallData::default()
        };
        let mut out = String::new();
        t.render(&d, &mut out).unwrap();
        assert_eq!(out, "Hello ADA #7");
        assert!(
            Template::parse("{{.Request.name}}").is_err(),
            "call data has no request"
        );
    }

    #[test]
    fn functions_and_pipes() {
        assert_eq!(render("{{randomString 12}}").len(), 12);
        let n: i64 = render("{{randomInt 5 7}}").parse().unwrap();
        assert!((5..7).contains(&n));
        assert_eq!(render("{{newUUID}}").len(), 36);
        assert_eq!(render("{{.MethodName | upper}}"), "GET");
        assert_eq!(render(r#"{{"a b" | title}}"#), "A B");
        assert_eq!(render("{{add 2 3}} {{mul .RequestNumber 2}}"), "5 82");
        assert_eq!(render("{{ .MethodName | quote }}"), "\"Get\"");
        assert_eq!(render("a  {{- .MethodName -}}  b"), "aGetb");
    }

    #[test]
    fn plain_text_has_no_actions() {
        let t = Template::parse(r#"{"id": 228}"#).unwrap();
        assert!(!t.has_actions());
        assert!(!looks_templated(r#"{"id": 228}"#));
    }

    #[test]
    fn errors() {
        for bad in [
            "{{.Nope}}",
            "{{nope 1}}",
            "{{if .X}}",
            "{{.MethodName",
            "{{}}",
            r#"{{"x}}"#,
        ] {
            assert!(Template::parse(bad).is_err(), "{bad}");
        }
        let t = Template::parse("{{randomString 2097152}}").unwrap();
        let mut out = String::new();
        let e = t.render(&CallData::default(), &mut out).unwrap_err();
        assert!(e.to_string().contains("over the limit of 1048576"), "{e}");
        let t = Template::parse("{{randomInt 5 1}}").unwrap();
        assert!(t.render(&data(), &mut String::new()).is_err());
        let t = Template::parse("{{div 1 0}}").unwrap();
        assert!(t.render(&data(), &mut String::new()).is_err());
        assert!(Template::parse_with("{{newUUID}}", false).is_err());
        assert!(Template::parse_with("{{.RequestNumber}}", false).is_ok());
    }
}
