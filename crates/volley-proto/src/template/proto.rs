//! A call-data template compiled against its message type, so each call renders straight into
//! protobuf bytes: no JSON text, no `serde_json::Value`, no `DynamicMessage` per call.
//!
//! At compile time every action is stood in for by a marker and the JSON is parsed once; each
//! field whose value holds no marker is encoded there and then, and each that does becomes a
//! slot (a string, integer, bool or enum field, or a message holding such fields) that a call
//! fills from its actions' output. Written here because no crate compiles Go-template JSON to
//! protobuf; the per-call JSON route (render, parse, encode) cost several times the call itself
//! under `volley bench` (BENCHMARKS.md, "Call data per call: templates, NDJSON and a mix").
//!
//! Exactness: only canonical values take this route (a plain decimal integer, `true`/`false`,
//! a string without quotes, backslashes or control characters, an enum's name); anything else
//! sends that call down the JSON route, which gives the same bytes or the same error as before.
//! A shape the compiler does not take (arrays, lists, maps, floats, bytes, well-known types,
//! markers in keys) leaves the whole template on the JSON route. [`ProtoTemplate::compile`]
//! checks its output against the JSON route on a sample call before it is used.

mod fill;

use std::fmt::Write as _;

use prost::Message as _;
use prost_reflect::{FieldDescriptor, Kind, MessageDescriptor};

use super::{CallData, Part, Template, TemplateError, Value as Out};
use crate::gotemplate::Root as _;
use crate::message::{encode_all, from_json};

/// Marks action `k` in the JSON parsed at compile time: `OPEN k CLOSE`, from Unicode's private
/// use area, so they stay inside JSON strings untouched.
const OPEN: char = '\u{E000}';
const CLOSE: char = '\u{E001}';

/// A template compiled against its message type.
#[derive(Clone, Debug)]
pub struct ProtoTemplate {
    /// The template (its tree is shared, not copied).
    template: Template,
    /// The template's actions, by their order in it: their indices in its top level.
    actions: Vec<usize>,
    /// Per action, the ghz variable it reads when it is that alone (`{{.RequestNumber}}`): read
    /// from the call data directly, not through the engine's pipeline (measured: the pipeline
    /// made a templated-data call 1.6-6.5 % dearer in instructions than ghz's old engine).
    bare: Vec<Option<&'static str>>,
    plan: Plan,
}

/// A message's fields in field-number order.
#[derive(Clone, Debug, Default)]
struct Plan {
    items: Vec<Item>,
}

#[derive(Clone, Debug)]
enum Item {
    /// A field without actions, encoded at compile time.
    Fixed(Vec<u8>),
    /// A scalar field filled per call.
    Scalar(Slot),
    /// A message field holding slots: its tag, then its fields.
    Message(u32, Plan),
}

#[derive(Clone, Debug)]
struct Slot {
    number: u32,
    ty: Ty,
    /// Encoded even when the value is its type's default (the field has presence).
    presence: bool,
    /// The value's text: literal pieces and actions.
    pieces: Vec<Piece>,
    /// The value sits outside quotes in the JSON (`"id": {{.RequestNumber}}`): its text is a
    /// JSON value, not a string's content.
    bare: bool,
}

#[derive(Clone, Debug)]
enum Piece {
    Text(String),
    Action(usize),
}

#[derive(Clone, Debug)]
enum Ty {
    Str,
    Bool,
    /// Integers of every kind: their range and how they go on the wire.
    Int {
        min: i64,
        max: u64,
        wire: IntWire,
    },
    Enum(prost_reflect::EnumDescriptor),
}

/// How an integer field is encoded.
#[derive(Clone, Copy, Debug)]
enum IntWire {
    /// int32, int64, uint32, uint64 (negatives as 64-bit two's complement).
    Varint,
    /// sint32, sint64.
    Zigzag,
    /// fixed32, sfixed32.
    Fixed32,
    /// fixed64, sfixed64.
    Fixed64,
}

/// A value this route does not take (the call goes the JSON route), or an action that failed.
enum Decline {
    Value,
    Failed(TemplateError),
}

impl From<TemplateError> for Decline {
    fn from(e: TemplateError) -> Decline {
        Decline::Failed(e)
    }
}

/// Action `k`'s output: evaluated per call, or given (the compile-time check).
trait Actions {
    fn get(&self, k: usize) -> Result<Out, TemplateError>;
}

/// A call's actions, each evaluated when its slot is filled.
struct Live<'a> {
    template: &'a Template,
    actions: &'a [usize],
    bare: &'a [Option<&'static str>],
    data: &'a CallData,
}

impl Actions for Live<'_> {
    fn get(&self, k: usize) -> Result<Out, TemplateError> {
        if let Some(v) = self.bare[k].and_then(|name| self.data.field(name)) {
            return Ok(Out::from(v));
        }
        self.template.action(self.actions[k], self.data)
    }
}

impl Actions for [Out] {
    fn get(&self, k: usize) -> Result<Out, TemplateError> {
        Ok(self[k].clone())
    }
}

impl ProtoTemplate {
    /// Compiles `template` for messages of `desc`, checked against the JSON route on `sample`;
    /// `None` when its shape is not one this route takes (then render JSON per call).
    pub fn compile(
        template: &Template,
        desc: &MessageDescriptor,
        sample: &CallData,
    ) -> Option<ProtoTemplate> {
        let parts = template.plain_parts()?;
        let (json, bare) = stand_in(&parts)?;
        let value: serde_json::Value = serde_json::from_str(&json).ok()?;
        let serde_json::Value::Object(fields) = value else {
            return None;
        };
        let plan = plan(desc, &fields, &bare)?;
        let actions: Vec<usize> = parts
            .iter()
            .filter_map(|p| match p {
                Part::Action(index) => Some(*index),
                Part::Text(_) => None,
            })
            .collect();
        let bare: Vec<_> = actions.iter().map(|i| template.bare_field(*i)).collect();
        // The same actions' output through both routes must give the same bytes.
        let live = Live {
            template,
            actions: &actions,
            bare: &bare,
            data: sample,
        };
        let outs: Vec<Out> = (0..actions.len())
            .map(|k| live.get(k))
            .collect::<Result<_, _>>()
            .ok()?;
        let mut ours = Vec::new();
        plan.encode(outs.as_slice(), &mut ours).ok()?;
        let theirs = json_route(&parts, desc, &outs)?;
        (ours == theirs).then_some(ProtoTemplate {
            template: template.clone(),
            actions,
            bare,
            plan,
        })
    }

    /// Appends call `data`'s message, encoded, to `out`; `Ok(false)` (and `out` as it was) when
    /// a value is not one this route takes and the call must render JSON instead.
    pub fn encode(&self, data: &CallData, out: &mut Vec<u8>) -> Result<bool, TemplateError> {
        let live = Live {
            template: &self.template,
            actions: &self.actions,
            bare: &self.bare,
            data,
        };
        let start = out.len();
        match self.plan.encode(&live, out) {
            Ok(()) => Ok(true),
            Err(Decline::Value) => {
                out.truncate(start);
                Ok(false)
            }
            Err(Decline::Failed(e)) => Err(e),
        }
    }
}

/// The template's text with each action replaced by a marker (quoted when the action stands
/// outside a JSON string), and which actions stood outside; `None` when the text already holds
/// a marker character.
fn stand_in(parts: &[Part<'_>]) -> Option<(String, Vec<bool>)> {
    let mut json = String::new();
    let mut bare = Vec::new();
    let (mut in_string, mut escaped) = (false, false);
    for part in parts {
        match part {
            Part::Text(t) => {
                if t.contains([OPEN, CLOSE]) {
                    return None;
                }
                for c in t.chars() {
                    if escaped {
                        escaped = false;
                    } else if in_string && c == '\\' {
                        escaped = true;
                    } else if c == '"' {
                        in_string = !in_string;
                    }
                }
                json.push_str(t);
            }
            Part::Action(_) => {
                let k = bare.len();
                bare.push(!in_string);
                if in_string {
                    let _ = write!(json, "{OPEN}{k}{CLOSE}");
                } else {
                    let _ = write!(json, "\"{OPEN}{k}{CLOSE}\"");
                }
            }
        }
    }
    Some((json, bare))
}

/// The JSON route on given action output: the text the template renders, parsed and encoded.
fn json_route(parts: &[Part<'_>], desc: &MessageDescriptor, outs: &[Out]) -> Option<Vec<u8>> {
    let mut json = String::new();
    let mut k = 0;
    for part in parts {
        match part {
            Part::Text(t) => json.push_str(t),
            Part::Action(_) => {
                let _ = write!(json, "{}", outs[k]);
                k += 1;
            }
        }
    }
    let msgs = from_json(desc, &json).ok()?;
    let [one] = encode_all(&msgs).try_into().ok()?;
    Some(one.to_vec())
}

fn has_marker(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::String(s) => s.contains(OPEN),
        serde_json::Value::Array(a) => a.iter().any(has_marker),
        serde_json::Value::Object(o) => o.iter().any(|(k, v)| k.contains(OPEN) || has_marker(v)),
        _ => false,
    }
}

/// The plan of one JSON object against `desc`; `None` for a shape this route does not take.
fn plan(
    desc: &MessageDescriptor,
    fields: &serde_json::Map<String, serde_json::Value>,
    bare: &[bool],
) -> Option<Plan> {
    let mut numbered: Vec<(u32, Item)> = Vec::new();
    let mut oneofs = Vec::new();
    for (key, value) in fields {
        if key.contains(OPEN) {
            return None;
        }
        let field = desc
            .get_field_by_json_name(key)
            .or_else(|| desc.get_field_by_name(key))?;
        if numbered.iter().any(|(n, _)| *n == field.number()) {
            return None;
        }
        if let Some(o) = field.containing_oneof() {
            if oneofs.contains(&o) {
                return None;
            }
            oneofs.push(o);
        }
        let item = if has_marker(value) {
            slot(&field, value, bare)?
        } else {
            Item::Fixed(fixed(desc, key, value)?)
        };
        numbered.push((field.number(), item));
    }
    numbered.sort_by_key(|(n, _)| *n);
    Some(Plan {
        items: numbered.into_iter().map(|(_, i)| i).collect(),
    })
}

/// One field without actions, encoded as the JSON route encodes it.
fn fixed(desc: &MessageDescriptor, key: &str, value: &serde_json::Value) -> Option<Vec<u8>> {
    let mut one = serde_json::Map::new();
    one.insert(key.to_owned(), value.clone());
    let json = serde_json::Value::Object(one).to_string();
    let msgs = from_json(desc, &json).ok()?;
    Some(msgs.first()?.encode_to_vec())
}

/// A field whose value holds actions.
fn slot(field: &FieldDescriptor, value: &serde_json::Value, bare: &[bool]) -> Option<Item> {
    if field.is_list() || field.is_map() {
        return None;
    }
    let number = field.number();
    if let Kind::Message(m) = field.kind() {
        if m.full_name().starts_with("google.protobuf.") || field.is_group() {
            return None;
        }
        let serde_json::Value::Object(inner) = value else {
            return None;
        };
        return Some(Item::Message(number, plan(&m, inner, bare)?));
    }
    let serde_json::Value::String(s) = value else {
        return None;
    };
    let pieces = pieces(s)?;
    let whole_bare = match pieces.as_slice() {
        [Piece::Action(k)] => bare[*k],
        _ => false,
    };
    // A bare action beside other text is not JSON the JSON route could read either way.
    if !whole_bare
        && pieces
            .iter()
            .any(|p| matches!(p, Piece::Action(k) if bare[*k]))
    {
        return None;
    }
    let ty = match field.kind() {
        Kind::String => Ty::Str,
        Kind::Bool => Ty::Bool,
        Kind::Int32 => int(i32::MIN.into(), i32::MAX as u64, IntWire::Varint),
        Kind::Int64 => int(i64::MIN, i64::MAX as u64, IntWire::Varint),
        Kind::Uint32 => int(0, u32::MAX.into(), IntWire::Varint),
        Kind::Uint64 => int(0, u64::MAX, IntWire::Varint),
        Kind::Sint32 => int(i32::MIN.into(), i32::MAX as u64, IntWire::Zigzag),
        Kind::Sint64 => int(i64::MIN, i64::MAX as u64, IntWire::Zigzag),
        Kind::Fixed32 => int(0, u32::MAX.into(), IntWire::Fixed32),
        Kind::Sfixed32 => int(i32::MIN.into(), i32::MAX as u64, IntWire::Fixed32),
        Kind::Fixed64 => int(0, u64::MAX, IntWire::Fixed64),
        Kind::Sfixed64 => int(i64::MIN, i64::MAX as u64, IntWire::Fixed64),
        Kind::Enum(e) => Ty::Enum(e),
        Kind::Float | Kind::Double | Kind::Bytes | Kind::Message(_) => return None,
    };
    Some(Item::Scalar(Slot {
        number,
        ty,
        presence: field.supports_presence(),
        pieces,
        bare: whole_bare,
    }))
}

fn int(min: i64, max: u64, wire: IntWire) -> Ty {
    Ty::Int { min, max, wire }
}

/// A string holding markers, split into text and actions.
fn pieces(s: &str) -> Option<Vec<Piece>> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(open) = rest.find(OPEN) {
        if open > 0 {
            out.push(Piece::Text(rest[..open].to_owned()));
        }
        let after = &rest[open + OPEN.len_utf8()..];
        let close = after.find(CLOSE)?;
        out.push(Piece::Action(after[..close].parse().ok()?));
        rest = &after[close + CLOSE.len_utf8()..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest.to_owned()));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    //! Every compiled output is compared with the JSON route's bytes for the same call.
    use super::{fill::canonical_int, *};
    use prost_reflect::DynamicMessage;

    fn pool() -> MessageDescriptor {
        let src = r#"
            syntax = "proto3";
            package t;
            enum Color { RED = 0; GREEN = 1; BLUE = 2; }
            message Inner { string label = 1; int64 n = 2; }
            message Req {
                int64 id = 1;
                string name = 2;
                bool flag = 3;
                int32 small = 4;
                uint32 count = 5;
                sint64 delta = 6;
                sint32 d32 = 7;
                fixed32 f32 = 8;
                sfixed64 sf64 = 9;
                Color color = 10;
                Inner inner = 11;
                optional int64 maybe = 12;
                repeated string tags = 13;
                double ratio = 14;
                oneof pick { string a = 15; int64 b = 16; }
            }
        "#;
        static POOL: std::sync::OnceLock<MessageDescriptor> = std::sync::OnceLock::new();
        POOL.get_or_init(|| {
            let dir = std::env::temp_dir().join(format!("volley-proto-tpl-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let file = dir.join("t.proto");
            std::fs::write(&file, src).unwrap();
            let c = crate::load::compile_protos(&[file], std::slice::from_ref(&dir)).unwrap();
            let _ = std::fs::remove_dir_all(&dir);
            c.pool.get_message_by_name("t.Req").unwrap()
        })
        .clone()
    }

    fn data(n: i64) -> CallData {
        CallData {
            worker_id: "g0c1".into(),
            request_number: n,
            method_name: "Green".into(),
            uuid: "0b6b1c9e-58f4-4a4e-9d1e-3f1b2c3d4e5f".into(),
            timestamp_unix_nano: 1_700_000_000_000_000_000,
            ..CallData::default()
        }
    }

    /// The JSON route's bytes for `src` and `d`.
    fn slow(src: &str, d: &CallData) -> Result<Vec<u8>, String> {
        let mut json = String::new();
        Template::parse(src)
            .unwrap()
            .render(d, &mut json)
            .map_err(|e| e.to_string())?;
        let msgs = from_json(&pool(), &json).map_err(|e| e.to_string())?;
        Ok(msgs[0].encode_to_vec())
    }

    fn compiled(src: &str) -> Option<ProtoTemplate> {
        ProtoTemplate::compile(&Template::parse(src).unwrap(), &pool(), &data(7))
    }

    /// Compiles `src` and checks call numbers `ns` give the JSON route's bytes.
    fn same(src: &str, ns: &[i64]) {
        let t = compiled(src).unwrap_or_else(|| panic!("{src} did not compile"));
        for &n in ns {
            let mut out = Vec::new();
            assert!(t.encode(&data(n), &mut out).unwrap(), "{src} declined {n}");
            assert_eq!(out, slow(src, &data(n)).unwrap(), "{src} at {n}");
        }
    }

    #[test]
    fn the_ghz_shapes_give_the_json_routes_bytes() {
        let ns = [0, 1, 41, -5, 127, 128, 300, 1 << 40, i64::MAX, i64::MIN];
        same(r#"{"id":{{.RequestNumber}}}"#, &ns);
        same(r#"{"id":"{{.RequestNumber}}"}"#, &ns);
        same(
            r#"{"name":"user-{{.RequestNumber}}-{{.WorkerID}}", "id": 5}"#,
            &ns,
        );
        same(
            r#"{"name":"{{.UUID}}","flag":true,"tags":["a","b"],"ratio":0.5}"#,
            &[3],
        );
        same(
            r#"{"delta":{{.RequestNumber}},"d32":"{{.RequestNumber}}"}"#,
            &[0, -1, 1, -64],
        );
        same(
            r#"{"f32":{{.RequestNumber}},"sf64":{{.RequestNumber}}}"#,
            &[0, 9, 4_000_000_000],
        );
        same(
            r#"{"inner":{"label":"{{.MethodName}}","n":{{.RequestNumber}}},"id":1}"#,
            &ns,
        );
        same(r#"{"maybe":{{.RequestNumber}}}"#, &[0, 3]);
        same(r#"{"color":"{{.MethodName | upper}}"}"#, &[1]);
        same(r#"{"a":"{{.RequestNumber}}"}"#, &[0, 2]);
        same(r#"{"name":{{quote .WorkerID}}}"#, &[1]);
        same(r#"{"flag":{{.IsClientStreaming}}}"#, &[1]);
        same(
            r#"{"count":{{.RequestNumber}}, "small": {{add .RequestNumber 1}}}"#,
            &[0, 10],
        );
        // Random values differ between two renders: the bytes are checked by decoding.
        let t = compiled(r#"{"small": {{randomInt 1 100}}}"#).unwrap();
        for _ in 0..50 {
            let mut out = Vec::new();
            assert!(t.encode(&data(1), &mut out).unwrap());
            let m = DynamicMessage::decode(pool(), out.as_slice()).unwrap();
            let v = m.get_field_by_name("small").unwrap().as_i32().unwrap();
            assert!((1..100).contains(&v), "{v}");
        }
    }

    #[test]
    fn values_out_of_range_or_not_canonical_go_the_json_route() {
        let t = compiled(r#"{"small":{{.RequestNumber}}}"#).unwrap();
        let mut out = vec![9];
        assert!(!t.encode(&data(1 << 40), &mut out).unwrap());
        assert_eq!(out, [9], "a declined call leaves the buffer as it was");
        let t = compiled(r#"{"count":{{.RequestNumber}}}"#).unwrap();
        assert!(!t.encode(&data(-1), &mut Vec::new()).unwrap());
        let t = compiled(r#"{"name":"{{.WorkerID}}"}"#).unwrap();
        let mut quoted = data(1);
        quoted.worker_id = "a\"b".into();
        assert!(!t.encode(&quoted, &mut Vec::new()).unwrap());
        assert!(slow(r#"{"name":"{{.WorkerID}}"}"#, &quoted).is_err());
    }

    #[test]
    fn shapes_beyond_it_stay_on_the_json_route() {
        for src in [
            r#"[{"id":{{.RequestNumber}}}]"#,
            r#"{"tags":["{{.UUID}}"]}"#,
            r#"{"ratio":{{.RequestNumber}}}"#,
            r#"{"{{.MethodName}}":1}"#,
            r#"{"id":{{.RequestNumber}}0}"#,
            r#"{"nope":{{.RequestNumber}}}"#,
            r#"{"a":"x","b":{{.RequestNumber}}}"#,
            // Control structures and variables: rendered as text, then JSON.
            r#"{"id":{{if .IsClientStreaming}}1{{else}}2{{end}}}"#,
            r#"{{$n := .RequestNumber}}{"id":{{$n}}}"#,
        ] {
            assert!(compiled(src).is_none(), "{src}");
        }
        assert_eq!(
            slow(
                r#"{"id":{{if .IsClientStreaming}}1{{else}}2{{end}}}"#,
                &data(1)
            )
            .unwrap(),
            slow(r#"{"id":2}"#, &data(1)).unwrap()
        );
    }

    #[test]
    fn canonical_ints_only() {
        for (s, v) in [("0", Some(0)), ("-12", Some(-12)), ("12", Some(12))] {
            assert_eq!(canonical_int(s), v);
        }
        for s in ["", "-", "-0", "01", "1e3", "1.0", "+1", " 1", "0x10"] {
            assert_eq!(canonical_int(s), None, "{s}");
        }
    }
}
