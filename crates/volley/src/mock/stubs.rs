//! Stubs in GripMock's format, so GripMock users bring theirs unchanged: JSON or YAML files (one
//! stub or a list), found in `--stubs` folders (subfolders too) or named one by one.
//!
//! ```yaml
//! - service: Catalog            # or shop.v1.Catalog
//!   method: Get
//!   input:
//!     equals: {prefix: "a"}     # or contains: {...}, or matches: {field: regex}
//!   output:
//!     data: {sku: "a-1", count: 2}
//!     headers: {x-source: stub}
//!     delay: 50ms
//! - service: Catalog
//!   method: Get
//!   input: {contains: {prefix: "gone"}}
//!   output: {error: "no such item", code: 5}
//! ```
//!
//! Everything is checked at start against the served descriptors: the service and method exist,
//! the matchers name fields of the input type, the data fits the output type. A call is matched
//! against its method's stubs in file order; a method with stubs answers a request none matches
//! with NOT_FOUND naming the closest stub, and a method without stubs answers default messages.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::{Arc, RwLock},
    time::Duration,
};

use anyhow::{Context, Result, bail};
use futures_util::StreamExt;
use http::{HeaderName, HeaderValue};
use prost_reflect::{
    DescriptorPool, DynamicMessage, MessageDescriptor, MethodDescriptor, SerializeOptions,
};
use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use volley_proto::template::{CallData, Template};
use volley_server::{
    Code, DynamicFuture, DynamicHandler, DynamicStream, Request, Response, Status,
};

use super::Defaults;

/// A stub as GripMock writes it.
#[derive(Deserialize, Serialize, Clone)]
struct RawStub {
    service: String,
    method: String,
    #[serde(default)]
    input: RawInput,
    output: RawOutput,
    /// Keys volley does not take (GripMock v2/v3's `priority`, `times`, ...): refused at start
    /// rather than ignored. `id` and `source`, which the admin API's list adds, are let through.
    #[serde(flatten, skip_serializing)]
    other: Map<String, Value>,
}

#[derive(Deserialize, Serialize, Clone, Default)]
struct RawInput {
    #[serde(skip_serializing_if = "Option::is_none")]
    equals: Option<Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    contains: Option<Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    matches: Option<Map<String, Value>>,
    #[serde(flatten, skip_serializing)]
    other: Map<String, Value>,
}

#[derive(Deserialize, Serialize, Clone)]
struct RawOutput {
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<Value>,
    /// Server and bidi streams: the messages, in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    stream: Option<Vec<Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<i32>,
    #[serde(default, skip_serializing_if = "HashMap::is_empty")]
    headers: HashMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    delay: Option<Value>,
    #[serde(flatten, skip_serializing)]
    other: Map<String, Value>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    Many(Vec<RawStub>),
    One(Box<RawStub>),
}

impl OneOrMany {
    fn into_vec(self) -> Vec<RawStub> {
        match self {
            OneOrMany::Many(v) => v,
            OneOrMany::One(s) => vec![*s],
        }
    }
}

/// How a stub picks requests.
enum Matcher {
    Equals(Map<String, Value>),
    Contains(Map<String, Value>),
    Matches(Vec<(String, Regex)>),
    Any,
}

/// What a stub answers.
enum Answer {
    Messages(Vec<Msg>),
    Failure(Code, String),
}

/// One reply message: checked at start, or a template rendered per call.
enum Msg {
    Fixed(DynamicMessage),
    /// Data with `{{...}}` in its strings: rendered with the request, then decoded.
    Templated(Shape),
}

fn is_templated(v: &Value) -> bool {
    match v {
        Value::String(s) => volley_proto::template::looks_templated(s),
        Value::Array(a) => a.iter().any(is_templated),
        Value::Object(m) => m.values().any(is_templated),
        _ => false,
    }
}

/// A reply's JSON with its templates parsed once, at start (parsing per call cost about a
/// third of a templated stub's time, BENCHMARKS.md).
enum Shape {
    /// No template below here.
    Fixed(Value),
    /// A templated string: its text (for messages) and the parsed template.
    Template(String, Box<Template>),
    Array(Vec<Shape>),
    Object(Vec<(String, Shape)>),
}

impl Shape {
    /// Whether a template reads `{{.UUID}}`.
    fn reads_uuid(&self) -> bool {
        match self {
            Shape::Fixed(_) => false,
            Shape::Template(src, _) => src.contains("UUID"),
            Shape::Array(a) => a.iter().any(Shape::reads_uuid),
            Shape::Object(m) => m.iter().any(|(_, x)| x.reads_uuid()),
        }
    }

    /// Parses every templated string in `v`.
    fn parse(v: &Value) -> Result<Shape, String> {
        if !is_templated(v) {
            return Ok(Shape::Fixed(v.clone()));
        }
        Ok(match v {
            Value::String(s) => {
                let t = Template::parse_reply(s).map_err(|e| format!("{s:?}: {e}"))?;
                Shape::Template(s.clone(), Box::new(t))
            }
            Value::Array(a) => Shape::Array(a.iter().map(Shape::parse).collect::<Result<_, _>>()?),
            Value::Object(m) => Shape::Object(
                m.iter()
                    .map(|(k, x)| Ok((k.clone(), Shape::parse(x)?)))
                    .collect::<Result<_, String>>()?,
            ),
            other => Shape::Fixed(other.clone()),
        })
    }

    /// The JSON with every template rendered from `data`.
    fn render(&self, data: &CallData) -> Result<Value, String> {
        Ok(match self {
            Shape::Fixed(v) => v.clone(),
            Shape::Template(src, t) => {
                let mut out = String::new();
                t.render(data, &mut out)
                    .map_err(|e| format!("{src:?}: {e}"))?;
                Value::String(out)
            }
            Shape::Array(a) => {
                Value::Array(a.iter().map(|x| x.render(data)).collect::<Result<_, _>>()?)
            }
            Shape::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, x)| Ok((k.clone(), x.render(data)?)))
                    .collect::<Result<_, String>>()?,
            ),
        })
    }
}

/// The request for templates: its fields by their .proto names and their JSON names, defaults
/// included (`{{.Request.name}}` of an unset name is empty).
fn template_request(req: &DynamicMessage) -> Value {
    let by_proto = SerializeOptions::new()
        .use_proto_field_name(true)
        .skip_default_fields(false);
    let by_json = SerializeOptions::new().skip_default_fields(false);
    let mut out = match req.serialize_with_options(serde_json::value::Serializer, &by_proto) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    // Only top-level names are added, so a second pass is needed only when one differs.
    let renamed = prost_reflect::ReflectMessage::descriptor(req)
        .fields()
        .any(|f| f.json_name() != f.name());
    if !renamed {
        return Value::Object(out);
    }
    if let Ok(Value::Object(m)) =
        req.serialize_with_options(serde_json::value::Serializer, &by_json)
    {
        for (k, v) in m {
            out.entry(k).or_insert(v);
        }
    }
    Value::Object(out)
}

/// One checked stub.
struct Stub {
    /// `file #n`, for messages.
    source: String,
    matcher: Matcher,
    /// The input as written, for the NOT_FOUND message.
    shown: String,
    answer: Answer,
    headers: Vec<(HeaderName, HeaderValue)>,
    delay: Duration,
    /// Whether a reply template reads `{{.UUID}}` (a v4 UUID is a getrandom call: made only then).
    reads_uuid: bool,
    /// The output as written (the admin API's `POST /find` answers it).
    output: RawOutput,
}

/// Field names compared as GripMock users write them: `user_id`, `userId` and `userid` alike.
fn norm(key: &str) -> String {
    key.replace('_', "").to_ascii_lowercase()
}

fn norm_value(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            Value::Object(m.iter().map(|(k, v)| (norm(k), norm_value(v))).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(norm_value).collect()),
        other => other.clone(),
    }
}

fn norm_map(m: &Map<String, Value>) -> Map<String, Value> {
    m.iter().map(|(k, v)| (norm(k), norm_value(v))).collect()
}

/// A request as JSON with normalized names, default fields left out (as GripMock sees it).
fn request_json(msg: &DynamicMessage) -> Map<String, Value> {
    let options = SerializeOptions::new().skip_default_fields(true);
    match msg.serialize_with_options(serde_json::value::Serializer, &options) {
        Ok(Value::Object(m)) => norm_map(&m),
        _ => Map::new(),
    }
}

/// Numbers compare by value: a stub's `2` matches the request's `2` and `"2"` (int64 in JSON).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::String(y)) | (Value::String(y), Value::Number(x)) => {
            x.to_string() == *y
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(v, w))
        }
        _ => a == b,
    }
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl Matcher {
    /// How many of its conditions `req` meets, and whether it meets them all.
    fn score(&self, req: &Map<String, Value>) -> (usize, bool) {
        match self {
            Matcher::Any => (0, true),
            Matcher::Equals(want) | Matcher::Contains(want) => {
                let hits = want
                    .iter()
                    .filter(|(k, v)| req.get(*k).is_some_and(|r| same(v, r)))
                    .count();
                // Equals is the whole request: no field beyond those named.
                let whole = matches!(self, Matcher::Contains(_)) || req.len() == want.len();
                (hits, hits == want.len() && whole)
            }
            Matcher::Matches(want) => {
                let hits = want
                    .iter()
                    .filter(|(k, re)| req.get(k).is_some_and(|r| re.is_match(&text_of(r))))
                    .count();
                (hits, hits == want.len())
            }
        }
    }
}

/// The stubs in force: the files' and those added over the admin API.
#[derive(Default)]
struct Table {
    /// By the method's full name (`package.Service.Method`).
    by_method: HashMap<String, Vec<Arc<Stub>>>,
    /// Every stub as written, with where it came from, in order (the admin API's `GET /`).
    listed: Vec<(String, RawStub)>,
    /// Those added over the admin API, kept across reloads of the files.
    added: Vec<RawStub>,
}

impl Table {
    fn push(
        &mut self,
        raw: RawStub,
        pools: &[DescriptorPool],
        source: String,
    ) -> Result<usize, String> {
        let (path, stub) = check(&raw, pools, &source).map_err(|e| format!("{source}: {e}"))?;
        self.by_method.entry(path).or_default().push(Arc::new(stub));
        self.listed.push((source, raw));
        Ok(self.listed.len() - 1)
    }
}

/// Answers from stubs, and default messages for methods that have none. Cheap to clone: the
/// table is shared, and swapped whole when the files change or the admin API adds a stub.
#[derive(Clone)]
pub struct Stubs {
    table: Arc<RwLock<Arc<Table>>>,
    pools: Arc<Vec<DescriptorPool>>,
    paths: Arc<Vec<PathBuf>>,
    defaults: Defaults,
}

/// The stub files under `paths` (folders walked, subfolders too), sorted.
fn stub_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .with_context(|| format!("cannot read --stubs {}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out)?;
            } else if matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("json" | "yaml" | "yml")
            ) {
                out.push(p);
            }
        }
        Ok(())
    }
    for p in paths {
        if p.is_dir() {
            walk(p, &mut out)?;
        } else if p.is_file() {
            out.push(p.clone());
        } else {
            bail!("--stubs {}: no such file or folder", p.display());
        }
    }
    Ok(out)
}

fn parse_file(path: &Path) -> Result<Vec<RawStub>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let shown = path.display();
    let parsed: OneOrMany = match path.extension().and_then(|e| e.to_str()) {
        Some("json") => serde_json::from_str(&text).map_err(|e| {
            anyhow::anyhow!(
                "{shown}:{}:{}: not a stub (or a list of stubs): {}",
                e.line(),
                e.column(),
                plain(&e.to_string())
            )
        })?,
        _ => serde_yaml::from_str(&text).map_err(|e| match e.location() {
            Some(l) => anyhow::anyhow!(
                "{shown}:{}:{}: not a stub (or a list of stubs): {}",
                l.line(),
                l.column(),
                plain(&e.to_string())
            ),
            None => anyhow::anyhow!("{shown}: not a stub (or a list of stubs): {e}"),
        })?,
    };
    Ok(parsed.into_vec())
}

/// The stubs of the files under `paths`, then `added` (the admin API's), checked.
fn read_table(paths: &[PathBuf], pools: &[DescriptorPool], added: &[RawStub]) -> Result<Table> {
    let mut table = Table::default();
    for file in stub_files(paths)? {
        for (i, raw) in parse_file(&file)?.into_iter().enumerate() {
            let source = format!("{} stub #{}", file.display(), i + 1);
            table.push(raw, pools, source).map_err(anyhow::Error::msg)?;
        }
    }
    for (i, raw) in added.iter().enumerate() {
        table
            .push(raw.clone(), pools, format!("admin stub #{}", i + 1))
            .map_err(anyhow::Error::msg)?;
    }
    table.added = added.to_vec();
    Ok(table)
}

/// A parser's message without its own " at line X column Y" (the location leads the line).
fn plain(msg: &str) -> String {
    msg.split(" at line ").next().unwrap_or(msg).to_owned()
}

fn find_method(
    pools: &[DescriptorPool],
    service: &str,
    method: &str,
) -> Result<MethodDescriptor, String> {
    let services: Vec<_> = pools
        .iter()
        .flat_map(|p| p.services())
        .filter(|s| s.full_name() == service || s.name() == service)
        .collect();
    let s = match services.as_slice() {
        [] => return Err(format!("no service {service:?} is served")),
        [one] => one.clone(),
        many => {
            if many.iter().all(|s| s.full_name() == many[0].full_name()) {
                many[0].clone()
            } else {
                let names: Vec<&str> = many.iter().map(|s| s.full_name()).collect();
                return Err(format!(
                    "service {service:?} is ambiguous ({}): give its full name",
                    names.join(", ")
                ));
            }
        }
    };
    // GripMock v1 capitalised the first letter (Go's exported names): `sayHello` is `SayHello`.
    s.methods()
        .find(|m| m.name() == method)
        .or_else(|| {
            s.methods().find(|m| {
                let (a, b) = (m.name(), method);
                a.len() == b.len()
                    && a.get(..1)
                        .zip(b.get(..1))
                        .is_some_and(|(x, y)| x.eq_ignore_ascii_case(y))
                    && a.get(1..) == b.get(1..)
            })
        })
        .ok_or_else(|| format!("service {} has no method {method:?}", s.full_name()))
}

fn check_fields(
    desc: &MessageDescriptor,
    keys: &Map<String, Value>,
    what: &str,
) -> Result<(), String> {
    for k in keys.keys() {
        let known = desc
            .fields()
            .any(|f| norm(f.name()) == norm(k) || norm(f.json_name()) == norm(k));
        if !known {
            return Err(format!(
                "{what} names no field {k:?} of {}",
                desc.full_name()
            ));
        }
    }
    Ok(())
}

fn message(desc: &MessageDescriptor, v: &Value) -> Result<DynamicMessage, String> {
    DynamicMessage::deserialize(desc.clone(), v.clone())
        .map_err(|e| format!("output does not fit {}: {e}", desc.full_name()))
}

fn delay_of(v: &Value) -> Result<Duration, String> {
    match v {
        Value::Number(n) => Ok(Duration::from_millis(n.as_u64().unwrap_or(0))),
        Value::String(s) => volley_bench::plan::units::parse_duration(s)
            .map_err(|_| format!("output.delay {s:?} is not a duration (50ms, 1s)")),
        other => Err(format!("output.delay {other} is not a duration")),
    }
}

/// The first key of a stub volley does not take, as an error naming it.
fn unknown_keys(raw: &RawStub) -> Result<(), String> {
    let top = raw
        .other
        .keys()
        .find(|k| !matches!(k.as_str(), "id" | "source"))
        .map(|k| k.to_string());
    let input = raw.input.other.keys().next().map(|k| format!("input.{k}"));
    let output = raw
        .output
        .other
        .keys()
        .next()
        .map(|k| format!("output.{k}"));
    match top.or(input).or(output) {
        None => Ok(()),
        Some(key) => Err(format!(
            "{key:?} is not a key volley's stubs take (service, method, input: equals, contains, \
             matches; output: data, stream, error, code, headers, delay; see docs/mock.md)"
        )),
    }
}

fn check(raw: &RawStub, pools: &[DescriptorPool], source: &str) -> Result<(String, Stub), String> {
    unknown_keys(raw)?;
    let method = find_method(pools, &raw.service, &raw.method)?;
    let input = method.input();
    let given = [
        raw.input.equals.is_some(),
        raw.input.contains.is_some(),
        raw.input.matches.is_some(),
    ];
    if given.iter().filter(|g| **g).count() > 1 {
        return Err("input takes one of equals, contains, matches".into());
    }
    let (matcher, shown) = if let Some(m) = &raw.input.equals {
        check_fields(&input, m, "input.equals")?;
        (
            Matcher::Equals(norm_map(m)),
            format!("equals {}", Value::Object(m.clone())),
        )
    } else if let Some(m) = &raw.input.contains {
        check_fields(&input, m, "input.contains")?;
        (
            Matcher::Contains(norm_map(m)),
            format!("contains {}", Value::Object(m.clone())),
        )
    } else if let Some(m) = &raw.input.matches {
        check_fields(&input, m, "input.matches")?;
        let mut res = Vec::new();
        for (k, v) in m {
            let text = text_of(v);
            let re = Regex::new(&text).map_err(|e| {
                // regex draws the place on lines of their own: keep the last one, the reason.
                let why = e.to_string();
                let why = why.lines().last().unwrap_or_default();
                let why = why.trim_start_matches("error: ");
                format!("input.matches.{k}: {text:?} is not a regex: {why}")
            })?;
            res.push((norm(k), re));
        }
        (
            Matcher::Matches(res),
            format!("matches {}", Value::Object(m.clone())),
        )
    } else {
        (Matcher::Any, "any request".to_owned())
    };
    let out = &raw.output;
    let answer = match (&out.error, out.code) {
        (Some(_), _) | (None, Some(1..)) => {
            let code = out.code.unwrap_or(Code::Unknown as i32);
            if !(1..=16).contains(&code) {
                return Err(format!(
                    "output.code {code} is not a gRPC status code (1 to 16)"
                ));
            }
            Answer::Failure(Code::from_i32(code), out.error.clone().unwrap_or_default())
        }
        _ => {
            let output = method.output();
            let values: Vec<Value> = match (&out.stream, &out.data) {
                (Some(list), _) => list.clone(),
                (None, Some(v)) => vec![v.clone()],
                (None, None) => vec![Value::Object(Map::new())],
            };
            let mut msgs = Vec::new();
            for v in &values {
                if is_templated(v) {
                    // Checked at start as far as it can be: the templates parse and the fields
                    // exist; the rendered values are checked per call.
                    let shape = Shape::parse(v).map_err(|e| format!("output template {e}"))?;
                    if let Value::Object(m) = v {
                        check_fields(&output, m, "output.data")?;
                    }
                    msgs.push(Msg::Templated(shape));
                } else {
                    msgs.push(Msg::Fixed(message(&output, v)?));
                }
            }
            Answer::Messages(msgs)
        }
    };
    let mut headers = Vec::new();
    for (k, v) in &out.headers {
        let name = HeaderName::from_bytes(k.to_ascii_lowercase().as_bytes())
            .map_err(|_| format!("output.headers: {k:?} is not a header name"))?;
        let value = HeaderValue::from_str(v)
            .map_err(|_| format!("output.headers.{k}: {v:?} is not a header value"))?;
        headers.push((name, value));
    }
    let delay = match &out.delay {
        Some(v) => delay_of(v)?,
        None => Duration::ZERO,
    };
    let reads_uuid = matches!(&answer, Answer::Messages(msgs)
        if msgs.iter().any(|m| matches!(m, Msg::Templated(s) if s.reads_uuid())));
    Ok((
        method.full_name().to_owned(),
        Stub {
            source: source.to_owned(),
            matcher,
            shown,
            answer,
            headers,
            delay,
            reads_uuid,
            output: raw.output.clone(),
        },
    ))
}

impl Stubs {
    /// Loads and checks every stub under `paths` against the services in `pools`.
    pub fn load(paths: &[PathBuf], pools: &[DescriptorPool], defaults: Defaults) -> Result<Stubs> {
        let table = read_table(paths, pools, &[])?;
        Ok(Stubs {
            table: Arc::new(RwLock::new(Arc::new(table))),
            pools: Arc::new(pools.to_vec()),
            paths: Arc::new(paths.to_vec()),
            defaults,
        })
    }

    fn current(&self) -> Arc<Table> {
        match self.table.read() {
            Ok(t) => t.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn replace(&self, table: Table) {
        match self.table.write() {
            Ok(mut t) => *t = Arc::new(table),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(table),
        }
    }

    /// How many stubs are in force.
    pub fn len(&self) -> usize {
        self.current().listed.len()
    }

    /// Every stub in force, as GripMock's `GET /` lists them.
    pub fn list(&self) -> Value {
        let table = self.current();
        Value::Array(
            table
                .listed
                .iter()
                .enumerate()
                .map(|(id, (source, raw))| {
                    let mut v = serde_json::to_value(raw).unwrap_or_default();
                    if let Some(m) = v.as_object_mut() {
                        m.insert("id".into(), id.into());
                        m.insert("source".into(), source.clone().into());
                    }
                    v
                })
                .collect(),
        )
    }

    /// Adds the stub (or list of stubs) in `body` (GripMock's `POST /add`): checked as the
    /// files' are; their ids, or what is wrong.
    pub fn add(&self, body: &[u8]) -> Result<Vec<usize>, String> {
        let raws = serde_json::from_slice::<OneOrMany>(body)
            .map_err(|e| format!("not a stub (or a list of stubs): {e}"))?
            .into_vec();
        let old = self.current();
        let mut added = old.added.clone();
        added.extend(raws.iter().cloned());
        let table = read_table(&self.paths, &self.pools, &added).map_err(|e| e.to_string())?;
        let first = table.listed.len() - raws.len();
        self.replace(table);
        Ok((first..first + raws.len()).collect())
    }

    /// The answer the stubs give a request (GripMock's `POST /find`: `service`, `method`,
    /// `data`): the stub's output, or what is wrong.
    pub fn find(&self, body: &[u8]) -> Result<Value, String> {
        #[derive(Deserialize)]
        struct Find {
            service: String,
            method: String,
            #[serde(default)]
            data: Value,
        }
        let f: Find = serde_json::from_slice(body)
            .map_err(|e| format!("expected service, method and data: {e}"))?;
        let method = find_method(&self.pools, &f.service, &f.method)?;
        let data = if f.data.is_null() {
            Value::Object(Map::new())
        } else {
            f.data
        };
        let req = DynamicMessage::deserialize(method.input(), data)
            .map_err(|e| format!("data does not fit {}: {e}", method.input().full_name()))?;
        match self
            .pick(&method, &req)
            .map_err(|s| s.message().to_owned())?
        {
            None => Err(format!("{} has no stubs", slash_name(&method))),
            Some(stub) => Ok(serde_json::to_value(&stub.output).unwrap_or_default()),
        }
    }

    /// Drops the stubs added over the admin API (GripMock's `GET /clear`, `DELETE /api/stubs`);
    /// the files' stay, as they are on disk. How many were dropped.
    pub fn clear(&self) -> usize {
        let old = self.current();
        let n = old.added.len();
        if n > 0 {
            // The files' stubs in force, as they were checked (the watcher rereads the files).
            let mut table = Table::default();
            for (source, raw) in &old.listed[..old.listed.len() - n] {
                let _ = table.push(raw.clone(), &self.pools, source.clone());
            }
            self.replace(table);
        }
        n
    }

    /// Rereads the stub files every second when they change, keeping the stubs in force when
    /// the new ones do not check (and saying why, once per change).
    pub fn watch(&self) {
        let this = self.clone();
        let fingerprint = move || -> Vec<(PathBuf, Option<std::time::SystemTime>, u64)> {
            stub_files(&this.paths)
                .unwrap_or_default()
                .into_iter()
                .map(|p| {
                    let meta = std::fs::metadata(&p).ok();
                    let modified = meta.as_ref().and_then(|m| m.modified().ok());
                    (p, modified, meta.map_or(0, |m| m.len()))
                })
                .collect()
        };
        let this = self.clone();
        let _ = std::thread::Builder::new()
            .name("volley-stubs".into())
            .spawn(move || {
                let mut seen = fingerprint();
                loop {
                    std::thread::sleep(Duration::from_secs(1));
                    let now = fingerprint();
                    if now == seen {
                        continue;
                    }
                    seen = now;
                    let added = this.current().added.clone();
                    match read_table(&this.paths, &this.pools, &added) {
                        Ok(table) => {
                            tracing::info!("stubs reloaded: {} in force", table.listed.len());
                            this.replace(table);
                        }
                        Err(e) => tracing::warn!("stubs not reloaded, the old ones stay: {e:#}"),
                    }
                }
            });
    }

    /// Whether none were.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The stub for `req` to `method`: `Ok(None)` when the method has no stubs (defaults answer).
    fn pick(
        &self,
        method: &MethodDescriptor,
        req: &DynamicMessage,
    ) -> Result<Option<Arc<Stub>>, Status> {
        // Keyed by the method's full name, which the descriptor holds: no string made per call.
        let table = self.current();
        let Some(stubs) = table.by_method.get(method.full_name()) else {
            return Ok(None);
        };
        // A first stub that matches any request needs no look at it: the request is turned into
        // JSON only when a matcher reads it (about half of what a fixed stub cost over the
        // compiled method, BENCHMARKS.md).
        if let Some(s) = stubs.first().filter(|s| matches!(s.matcher, Matcher::Any)) {
            return Ok(Some(s.clone()));
        }
        let json = request_json(req);
        let mut best: Option<(usize, &Stub)> = None;
        for s in stubs {
            let (hits, all) = s.matcher.score(&json);
            if all {
                return Ok(Some(s.clone()));
            }
            if best.is_none_or(|(h, _)| hits > h) {
                best = Some((hits, s));
            }
        }
        let closest = best.map_or(String::new(), |(_, s)| {
            format!("; closest: {} ({})", s.source, s.shown)
        });
        Err(Status::not_found(format!(
            "no stub matches {} for {}{closest}",
            Value::Object(json),
            slash_name(method)
        )))
    }
}

/// `package.Service/Method`, as messages name a method.
fn slash_name(method: &MethodDescriptor) -> String {
    format!("{}/{}", method.parent_service().full_name(), method.name())
}

/// Waits the stub's delay, then gives its failure, or the replies it makes.
async fn due(stub: &Stub) -> Result<&[Msg], Status> {
    if !stub.delay.is_zero() {
        tokio::time::sleep(stub.delay).await;
    }
    match &stub.answer {
        Answer::Messages(m) => Ok(m),
        Answer::Failure(code, msg) => Err(Status::new(*code, msg.clone())),
    }
}

/// One reply: a fixed message, or a template rendered with `data` (made on first need, once a
/// call).
fn reply(
    m: &Msg,
    stub: &Stub,
    method: &MethodDescriptor,
    req: &DynamicMessage,
    data: &mut Option<CallData>,
) -> Result<DynamicMessage, Status> {
    let shape = match m {
        Msg::Fixed(m) => return Ok(m.clone()),
        Msg::Templated(shape) => shape,
    };
    let d = data.get_or_insert_with(|| CallData {
        request: Some(template_request(req)),
        fully_qualified_name: method.full_name().to_owned(),
        method_name: method.name().to_owned(),
        service_name: method.parent_service().full_name().to_owned(),
        input_name: method.input().full_name().to_owned(),
        output_name: method.output().full_name().to_owned(),
        timestamp_unix_nano: volley_bench::target::payload::now_unix_nanos(),
        uuid: if stub.reads_uuid {
            volley_bench::target::payload::uuid_v4()
        } else {
            String::new()
        },
        ..CallData::default()
    });
    let rendered = shape
        .render(d)
        .map_err(|e| Status::internal(format!("{}: output template {e}", stub.source)))?;
    DynamicMessage::deserialize(method.output(), rendered).map_err(|e| {
        Status::internal(format!(
            "{}: the rendered output does not fit {}: {e}",
            stub.source,
            method.output().full_name()
        ))
    })
}

/// Every reply of the stub to `req` (streams).
async fn answer(
    stub: &Stub,
    method: &MethodDescriptor,
    req: &DynamicMessage,
) -> Result<Vec<DynamicMessage>, Status> {
    let mut data = None;
    due(stub)
        .await?
        .iter()
        .map(|m| reply(m, stub, method, req, &mut data))
        .collect()
}

/// The stub's first reply to `req` (unary and client-streaming calls: no list made).
async fn answer_one(
    stub: &Stub,
    method: &MethodDescriptor,
    req: &DynamicMessage,
) -> Result<DynamicMessage, Status> {
    match due(stub).await?.first() {
        Some(m) => reply(m, stub, method, req, &mut None),
        None => Ok(DynamicMessage::new(method.output())),
    }
}

fn with_headers<T>(mut resp: Response<T>, stub: &Stub) -> Response<T> {
    for (k, v) in &stub.headers {
        resp.metadata_mut().insert(k.clone(), v.clone());
    }
    resp
}

impl DynamicHandler for Stubs {
    fn unary(
        &self,
        method: &MethodDescriptor,
        request: Request<DynamicMessage>,
    ) -> DynamicFuture<Result<Response<DynamicMessage>, Status>> {
        let stub = match self.pick(method, request.get_ref()) {
            Ok(None) => return self.defaults.unary(method, request),
            Ok(Some(stub)) => stub,
            Err(e) => return Box::pin(std::future::ready(Err(e))),
        };
        let method = method.clone();
        Box::pin(async move {
            let reply = answer_one(&stub, &method, request.get_ref()).await?;
            Ok(with_headers(Response::new(reply), &stub))
        })
    }

    fn server_streaming(
        &self,
        method: &MethodDescriptor,
        request: Request<DynamicMessage>,
    ) -> DynamicFuture<Result<Response<DynamicStream>, Status>> {
        let stub = match self.pick(method, request.get_ref()) {
            Ok(None) => return self.defaults.server_streaming(method, request),
            Ok(Some(stub)) => stub,
            Err(e) => return Box::pin(std::future::ready(Err(e))),
        };
        let method = method.clone();
        Box::pin(async move {
            let messages = answer(&stub, &method, request.get_ref()).await?;
            let s: DynamicStream =
                Box::pin(futures_util::stream::iter(messages.into_iter().map(Ok)));
            Ok(with_headers(Response::new(s), &stub))
        })
    }

    fn client_streaming(
        &self,
        method: &MethodDescriptor,
        request: Request<DynamicStream>,
    ) -> DynamicFuture<Result<Response<DynamicMessage>, Status>> {
        let (this, method) = (self.clone(), method.clone());
        let mut requests = request.into_inner();
        Box::pin(async move {
            // The last request picks the stub.
            let mut last = DynamicMessage::new(method.input());
            while let Some(r) = requests.next().await {
                last = r?;
            }
            let Some(stub) = this.pick(&method, &last)? else {
                return Ok(Response::new(DynamicMessage::new(method.output())));
            };
            let reply = answer_one(&stub, &method, &last).await?;
            Ok(with_headers(Response::new(reply), &stub))
        })
    }

    fn bidi_streaming(
        &self,
        method: &MethodDescriptor,
        request: Request<DynamicStream>,
    ) -> DynamicFuture<Result<Response<DynamicStream>, Status>> {
        let (this, method) = (self.clone(), method.clone());
        let n = self.defaults.stream_messages;
        let replies: DynamicStream = Box::pin(
            request
                .into_inner()
                .then(move |r| {
                    let (this, method) = (this.clone(), method.clone());
                    async move {
                        let req = r?;
                        match this.pick(&method, &req)? {
                            None => Ok(vec![DynamicMessage::new(method.output()); n]),
                            Some(stub) => answer(&stub, &method, &req).await,
                        }
                    }
                })
                .flat_map(|r: Result<Vec<DynamicMessage>, Status>| {
                    let items: Vec<Result<DynamicMessage, Status>> = match r {
                        Ok(v) => v.into_iter().map(Ok).collect(),
                        Err(e) => vec![Err(e)],
                    };
                    futures_util::stream::iter(items)
                }),
        );
        Box::pin(std::future::ready(Ok(Response::new(replies))))
    }
}
