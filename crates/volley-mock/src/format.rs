//! The stub files' raw forms: GripMock's keys as serde reads them from JSON or YAML (one stub or
//! a list per file; v1's, v2's and v3's forms alike), the line each stub starts on, and the
//! keys volley does not know.

use std::{collections::BTreeMap, path::Path};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::MockError;

/// A stub as GripMock writes it.
#[derive(Deserialize, Serialize, Clone, Debug, Default)]
pub(crate) struct RawStub {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default)]
    pub service: String,
    #[serde(default)]
    pub method: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub priority: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<RawMatcher>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<RawMatcher>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<Vec<RawMatcher>>,
    #[serde(default)]
    pub output: RawOutput,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<RawOptions>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub effects: Vec<RawEffect>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// WireMock's scenario keys (volley's extension; `--strict` refuses them).
    #[serde(
        rename = "scenarioName",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub scenario_name: Option<String>,
    #[serde(
        rename = "requiredScenarioState",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub required_scenario_state: Option<String>,
    #[serde(
        rename = "newScenarioState",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub new_scenario_state: Option<String>,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// `input`, an element of `inputs` or `anyOf`, or `headers`.
#[derive(Deserialize, Serialize, Clone, Debug, Default)]
pub(crate) struct RawMatcher {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contains: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matches: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glob: Option<Map<String, Value>>,
    #[serde(rename = "anyOf", default, skip_serializing_if = "Option::is_none")]
    pub any_of: Option<Vec<RawMatcher>>,
    #[serde(rename = "ignoreArrayOrder", default, skip_serializing_if = "is_false")]
    pub ignore_array_order: bool,
    /// GripMock v1's `input.headers` (equal values), read as the stub's `headers.equals`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<Map<String, Value>>,
    /// GripMock v1's `equals_unordered`: `equals` with `ignoreArrayOrder`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals_unordered: Option<Map<String, Value>>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl RawMatcher {
    /// Whether no matcher is given (`{}` or all empty): it passes everything.
    pub(crate) fn is_empty(&self) -> bool {
        let none = |m: &Option<Map<String, Value>>| m.as_ref().is_none_or(Map::is_empty);
        none(&self.equals)
            && none(&self.contains)
            && none(&self.matches)
            && none(&self.glob)
            && none(&self.equals_unordered)
            && self.any_of.as_ref().is_none_or(Vec::is_empty)
    }
}

/// An output header's or trailer's value: GripMock's text, where `;` separates several values,
/// or (volley's extension, which recordings write when a value holds a `;`) a list whose
/// values are taken whole.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(untagged)]
pub(crate) enum MetaValue {
    /// `"a;b"`: the values `a` and `b`.
    Text(String),
    /// `["a;b", "c"]`: the values `a;b` and `c`.
    List(Vec<String>),
}

#[derive(Deserialize, Serialize, Clone, Debug, Default)]
pub(crate) struct RawOutput {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A number (0 to 16) or a code's name (`NOT_FOUND`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<Value>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, MetaValue>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub trailers: BTreeMap<String, MetaValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<Value>,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default)]
pub(crate) struct RawOptions {
    #[serde(default)]
    pub times: i64,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default)]
pub(crate) struct RawEffect {
    #[serde(default)]
    pub action: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stub: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// One stub of a file: its JSON and the line it starts on.
pub(crate) struct Item {
    pub value: Value,
    pub line: usize,
}

const TOP: &[&str] = &[
    "id", "service", "method", "priority", "headers", "input", "inputs", "output", "options",
    "effects", "session", "source", "used", "_meta",
];
/// volley's extensions beside GripMock's keys (`docs/mock.md`): WireMock's scenarios, and the
/// fields `volley mock verify` leaves out of its comparison.
const EXTENSIONS: &[&str] = &[
    "scenarioName",
    "requiredScenarioState",
    "newScenarioState",
    "ignoreFields",
];
const MATCHER: &[&str] = &[
    "equals",
    "contains",
    "matches",
    "glob",
    "anyOf",
    "ignoreArrayOrder",
    "headers",
    "equals_unordered",
];
const OUTPUT: &[&str] = &[
    "data", "stream", "error", "code", "details", "headers", "trailers", "delay",
];

fn unknown_in(v: &Value, known: &[&str], at: &str, out: &mut Vec<String>) {
    if let Value::Object(m) = v {
        for k in m.keys().filter(|k| !known.contains(&k.as_str())) {
            out.push(format!("{at}{k}"));
        }
    }
}

fn unknown_in_matcher(v: &Value, at: &str, out: &mut Vec<String>) {
    unknown_in(v, MATCHER, at, out);
    if let Some(Value::Array(items)) = v.get("anyOf") {
        for (i, item) in items.iter().enumerate() {
            unknown_in(item, &MATCHER[..6], &format!("{at}anyOf[{i}]."), out);
        }
    }
}

/// The keys of a stub GripMock does not define, by their paths (`output.return_code`);
/// volley's extensions (the scenario keys) among them only when `strict`.
pub(crate) fn unknown_keys(v: &Value, strict: bool) -> Vec<String> {
    let mut out = Vec::new();
    let top: Vec<&str> = match strict {
        true => TOP.to_vec(),
        false => TOP.iter().chain(EXTENSIONS).copied().collect(),
    };
    unknown_in(v, &top, "", &mut out);
    if let Some(h) = v.get("headers") {
        unknown_in_matcher(h, "headers.", &mut out);
    }
    if let Some(i) = v.get("input") {
        unknown_in_matcher(i, "input.", &mut out);
    }
    if let Some(Value::Array(items)) = v.get("inputs") {
        for (i, item) in items.iter().enumerate() {
            unknown_in_matcher(item, &format!("inputs[{i}]."), &mut out);
        }
    }
    if let Some(o) = v.get("output") {
        unknown_in(o, OUTPUT, "output.", &mut out);
    }
    if let Some(o) = v.get("options") {
        unknown_in(o, &["times"], "options.", &mut out);
    }
    if let Some(Value::Array(items)) = v.get("effects") {
        for (i, item) in items.iter().enumerate() {
            unknown_in(
                item,
                &["action", "stub", "id"],
                &format!("effects[{i}]."),
                &mut out,
            );
        }
    }
    out
}

/// The error `--strict` gives for an unknown `key`.
pub(crate) fn refused(key: &str) -> String {
    if EXTENSIONS.contains(&key) {
        return format!(
            "{key:?} is volley's extension to GripMock's stubs (docs/mock.md), refused under \
             --strict, which takes GripMock's keys only"
        );
    }
    format!(
        "{key:?} is not a key volley's stubs take (GripMock's keys: service, method, priority, \
         headers, input, inputs, output, options, effects, session; see docs/mock.md)"
    )
}

/// The stubs of one file with their lines, or `file:line:column` and why not. YAML files get
/// GripMock's load-time template pass first.
pub(crate) fn parse_file(path: &Path) -> Result<Vec<Item>, MockError> {
    let text = std::fs::read_to_string(path).map_err(|reason| MockError::StubFile {
        path: path.to_owned(),
        reason,
    })?;
    parse_text(&text, path.extension().is_some_and(|e| e == "json"))
        .map_err(|e| MockError::Stub(format!("{}:{e}", path.display())))
}

/// As `parse_file`, from text; an error starts with `line:column: ` (or `line: `).
pub(crate) fn parse_text(text: &str, json: bool) -> Result<Vec<Item>, String> {
    // Where each stub starts; an error names the stub it falls in (the last one starting at or
    // before its line), in a file that does not parse as in one whose stub does not fit.
    let lines = if json {
        json_lines(text)
    } else {
        yaml_lines(text)
    };
    let stub_at = |line: usize| lines.iter().filter(|l| **l <= line).count();
    let named = |line: usize| match stub_at(line) {
        0 => String::new(),
        n => format!("stub #{n}: "),
    };
    let value: Value = if json {
        serde_json::from_str(text).map_err(|e| {
            format!(
                "{}:{}: {}the JSON does not parse: {}",
                e.line(),
                e.column(),
                named(e.line()),
                plain(&e.to_string())
            )
        })?
    } else {
        let text = crate::template::prepass::yaml(text)
            .map_err(|(line, e)| format!("{line}: stub #{}: {e}", stub_at(line).max(1)))?;
        serde_yaml::from_str(&text).map_err(|e| match e.location() {
            Some(l) => format!(
                "{}:{}: {}the YAML does not parse: {}",
                l.line(),
                l.column(),
                named(l.line()),
                plain(&e.to_string())
            ),
            None => format!("1: the YAML does not parse: {e}"),
        })?
    };
    let values = match value {
        Value::Array(items) => items,
        Value::Null => Vec::new(),
        one => vec![one],
    };
    Ok(values
        .into_iter()
        .enumerate()
        .map(|(i, value)| Item {
            value,
            line: lines.get(i).copied().unwrap_or(1),
        })
        .collect())
}

/// The stub `value`, or what does not fit GripMock's keys.
pub(crate) fn raw(value: &Value) -> Result<RawStub, String> {
    if !value.is_object() {
        return Err(format!("a stub is an object, not {value}"));
    }
    RawStub::deserialize(value).map_err(|e| plain(&e.to_string()))
}

/// The lines (1-based) where a JSON file's stubs start: its object, or each object of its array.
fn json_lines(text: &str) -> Vec<usize> {
    let (mut depth, mut line, mut in_str, mut esc) = (0usize, 1usize, false, false);
    let mut array = false;
    let mut out = Vec::new();
    for c in text.chars() {
        if c == '\n' {
            line += 1;
        }
        if in_str {
            match (esc, c) {
                (true, _) => esc = false,
                (false, '\\') => esc = true,
                (false, '"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '[' | '{' => {
                if depth == 0 {
                    array = c == '[';
                    if c == '{' {
                        out.push(line);
                    }
                } else if depth == 1 && array && c == '{' {
                    out.push(line);
                }
                depth += 1;
            }
            ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    out
}

/// The lines (1-based) where a YAML file's stubs start: each `- ` at the top list's indent, or
/// the first line of a single stub.
fn yaml_lines(text: &str) -> Vec<usize> {
    let meaningful = |l: &str| {
        let t = l.trim_start();
        !t.is_empty() && !t.starts_with('#') && t != "---"
    };
    let Some((first, first_line)) = text.lines().enumerate().find(|(_, l)| meaningful(l)) else {
        return Vec::new();
    };
    let indent = first_line.len() - first_line.trim_start().len();
    let item = |l: &str| {
        l.len() - l.trim_start().len() == indent
            && (l.trim_start().starts_with("- ") || l.trim() == "-")
    };
    if !item(first_line) {
        return vec![first + 1];
    }
    text.lines()
        .enumerate()
        .filter(|(_, l)| item(l))
        .map(|(i, _)| i + 1)
        .collect()
}

/// A parser's message without its own " at line X column Y" (the location leads the line).
fn plain(msg: &str) -> String {
    msg.split(" at line ").next().unwrap_or(msg).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stubs_and_their_lines() {
        let json = "[\n  {\"service\": \"S\", \"method\": \"M\"},\n\n  {\"service\": \"S\",\n \"method\": \"{\"}\n]";
        let items = parse_text(json, true).unwrap();
        assert_eq!(items.iter().map(|i| i.line).collect::<Vec<_>>(), [2, 4]);
        let yaml = "# a comment\n- service: S\n  method: M\n- service: S\n  method: N\n";
        let items = parse_text(yaml, false).unwrap();
        assert_eq!(items.iter().map(|i| i.line).collect::<Vec<_>>(), [2, 4]);
        let one = parse_text("\nservice: S\nmethod: M\n", false).unwrap();
        assert_eq!(one[0].line, 2);
        let e = parse_text("{\"service\": \"S\",\n  \"method\": }", true)
            .err()
            .unwrap();
        assert!(e.starts_with("2:"), "{e}");
    }

    #[test]
    fn unknown_keys_are_named_by_path() {
        let v = serde_json::json!({"service": "S", "method": "M", "id": "x",
            "input": {"equals": {}, "anyOf": [{"glob": {}, "nope": 1}]},
            "output": {"data": {}, "return_code": 1}, "extra": true});
        let mut keys = unknown_keys(&v, false);
        keys.sort();
        assert_eq!(keys, ["extra", "input.anyOf[0].nope", "output.return_code"]);
        let r = raw(&v).unwrap();
        assert_eq!(r.service, "S");
        assert!(refused("output.return_code").starts_with("\"output.return_code\" is not a key"));
    }

    #[test]
    fn gripmock_v1_v2_v3_forms() {
        let v1 = raw(&serde_json::json!({"service": "S", "method": "M",
            "input": {"equals": {"a": 1}, "headers": {"x": "y"}},
            "output": {"data": {}, "code": 0}}))
        .unwrap();
        assert!(v1.input.unwrap().headers.is_some());
        let v2 = raw(&serde_json::json!({"service": "S", "method": "M",
            "inputs": [{"equals": {"a": 1}}, {"matches": {"a": "^2"}}],
            "output": {"stream": [{}, {}]}}))
        .unwrap();
        assert_eq!(v2.inputs.unwrap().len(), 2);
        let v3 = raw(
            &serde_json::json!({"service": "S", "method": "M", "priority": 5,
            "headers": {"anyOf": [{"equals": {"x-a": "1"}}]},
            "input": {"glob": {"f": "*.pdf"}, "ignoreArrayOrder": true},
            "options": {"times": 2}, "effects": [{"action": "delete", "id": "x"}],
            "output": {"error": "e", "code": "NOT_FOUND", "details": [{"type": "t"}],
                       "trailers": {"k": "v"}, "delay": "10ms"}}),
        )
        .unwrap();
        assert_eq!(v3.priority, 5);
        assert_eq!(v3.options.unwrap().times, 2);
        assert!(raw(&serde_json::json!({"service": "S", "priority": "high"})).is_err());
    }
}
