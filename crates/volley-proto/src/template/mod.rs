//! ghz's call data on Go's `text/template` ([`crate::gotemplate`] with ghz's functions): the
//! variables ghz gives a template (`{{.RequestNumber}}`, `{{.UUID}}`, `{{.Timestamp}}`, ...),
//! checked when the template is parsed, and a render per call into a reused buffer. `proto`
//! compiles a template against its message type so a call renders straight into protobuf.

use std::{borrow::Cow, sync::Arc};

mod proto;
mod value;

use crate::gotemplate::{self, GHZ, GHZ_WITHOUT_FUNCTIONS, Part, Root, Val};
pub use crate::gotemplate::{MAX_RANDOM_STRING, TemplateError};
pub use proto::ProtoTemplate;
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
}

/// ghz's variables, the names a template may read from its root.
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

impl Root for CallData {
    fn field(&self, name: &str) -> Option<Val<'_>> {
        let ts = self.timestamp_unix_nano;
        fn str(s: &Arc<str>) -> Val<'_> {
            Val::Str(Cow::Borrowed(s))
        }
        Some(match name {
            "WorkerID" => str(&self.worker_id),
            "RequestNumber" => Val::Int(self.request_number),
            "FullyQualifiedName" => str(&self.fully_qualified_name),
            "MethodName" => str(&self.method_name),
            "ServiceName" => str(&self.service_name),
            "InputName" => str(&self.input_name),
            "OutputName" => str(&self.output_name),
            "IsClientStreaming" => Val::Bool(self.is_client_streaming),
            "IsServerStreaming" => Val::Bool(self.is_server_streaming),
            "Timestamp" => Val::Str(Cow::Owned(crate::gofmt::rfc3339(ts))),
            "TimestampUnix" => Val::Int(ts.div_euclid(1_000_000_000)),
            "TimestampUnixMilli" => Val::Int(ts.div_euclid(1_000_000)),
            "TimestampUnixNano" => Val::Int(ts),
            "UUID" => Val::Str(Cow::Borrowed(&self.uuid)),
            _ => return None,
        })
    }
}

/// A parsed call-data template.
#[derive(Clone, Debug)]
pub struct Template {
    inner: gotemplate::Template,
}

impl Template {
    /// Parses `src` with ghz's functions; refuses unknown variables and functions.
    pub fn parse(src: &str) -> Result<Template, TemplateError> {
        Template::parse_with(src, true)
    }

    /// Parses `src`, with or without ghz's functions (`--disable-template-functions`: Go's
    /// builtins stay, as they do in ghz).
    pub fn parse_with(src: &str, functions: bool) -> Result<Template, TemplateError> {
        let funcs = if functions {
            GHZ
        } else {
            GHZ_WITHOUT_FUNCTIONS
        };
        let inner = match gotemplate::Template::parse(src, funcs) {
            Ok(t) => t,
            // Say why a function ghz has is missing.
            Err(e) if !functions && gotemplate::Template::parse(src, GHZ).is_ok() => {
                return Err(TemplateError::new(format!(
                    "{} (not available with --disable-template-functions)",
                    e.to_string().trim_start_matches("template: ")
                )));
            }
            Err(e) => return Err(e),
        };
        for path in inner.root_paths() {
            if !VARIABLES.contains(&path[0].as_str()) {
                return Err(TemplateError::new(format!(
                    "can't evaluate field {} (known: {})",
                    path[0],
                    VARIABLES.join(", ")
                )));
            }
        }
        Ok(Template { inner })
    }

    /// True when the template has any action (otherwise it renders to its own text).
    pub fn has_actions(&self) -> bool {
        self.inner.has_actions()
    }

    /// True when the template reads variable `name` (`{{.UUID}}`: `reads("UUID")`), so a caller
    /// can leave out what no template reads.
    pub fn reads(&self, name: &str) -> bool {
        self.inner.root_paths().iter().any(|p| p[0] == name)
    }

    /// Renders into `out` (cleared first).
    pub fn render(&self, data: &CallData, out: &mut String) -> Result<(), TemplateError> {
        self.inner.render_into(data, out)
    }

    /// The top level as text and actions, when that is all there is.
    fn plain_parts(&self) -> Option<Vec<Part<'_>>> {
        self.inner.plain_parts()
    }

    /// The value of top-level action `index` for `data`, owned.
    fn action(&self, index: usize, data: &CallData) -> Result<Value, TemplateError> {
        Ok(Value::from(self.inner.eval_action(index, data)?))
    }

    /// The ghz variable the top-level action at `index` is, when it is one alone
    /// (`{{.RequestNumber}}`).
    fn bare_field(&self, index: usize) -> Option<&'static str> {
        let name = self.inner.bare_field(index)?;
        VARIABLES.iter().copied().find(|v| *v == name)
    }
}

/// True when `s` contains template actions at all (cheap check before parsing).
pub fn looks_templated(s: &str) -> bool {
    s.contains("{{")
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

    /// A ghz variable alone is read from the call data directly (`ProtoTemplate`'s fast path);
    /// anything more goes through the pipeline.
    #[test]
    fn a_variable_alone_is_known_as_one() {
        let t = Template::parse(
            r#"{"a":{{.RequestNumber}},"b":"{{ .UUID }}","c":"{{.WorkerID | printf "%s"}}","d":"{{printf "%d" .RequestNumber}}"}"#,
        )
        .unwrap();
        let bare: Vec<_> = t
            .plain_parts()
            .unwrap()
            .iter()
            .filter_map(|p| match p {
                Part::Action(i) => Some(t.bare_field(*i)),
                Part::Text(_) => None,
            })
            .collect();
        assert_eq!(bare, [Some("RequestNumber"), Some("UUID"), None, None]);
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
    fn go_template_control_and_builtins_run_as_in_ghz() {
        // ghz hands call data to Go's text/template: control structures and Go's builtins work
        // there, so they work here (this engine once refused them).
        assert_eq!(
            render("{{if eq .RequestNumber 41}}odd{{else}}even{{end}}"),
            "odd"
        );
        assert_eq!(render("{{range $i := 3}}{{$i}}{{end}}"), "012");
        assert_eq!(render(r#"{{printf "%05d" .RequestNumber}}"#), "00041");
        assert_eq!(render("{{with .MethodName}}{{.}}!{{end}}"), "Get!");
        assert_eq!(render("{{len .WorkerID}}"), "4");
        // `$` is the root everywhere, and a read through it counts.
        assert!(
            Template::parse("{{range 2}}{{$.UUID}}{{end}}")
                .unwrap()
                .reads("UUID")
        );
        assert!(Template::parse("{{range 2}}{{$.Nope}}{{end}}").is_err());
        // Inside `with` and `range` the dot is not the root: its fields are the value's.
        assert!(Template::parse("{{with .MethodName}}{{.}}{{end}}").is_ok());
        // Go's builtins stay without ghz's functions, as in ghz.
        assert!(Template::parse_with(r#"{{printf "%d" 1}}"#, false).is_ok());
        let e = Template::parse_with("{{newUUID}}", false).unwrap_err();
        assert!(
            e.to_string()
                .contains("not available with --disable-template-functions"),
            "{e}"
        );
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
