//! Record, then replay: random calls of every kind (messages with `{{`, templates' words,
//! unicode, control characters, random bytes, huge and empty strings; metadata with `;`, `{{`,
//! unicode and `-bin` values; statuses with messages alike and details of known and unknown
//! types) written as stubs by the recorder's writer, loaded back, and answered: the replay
//! gives back what the upstream said.

use futures_util::StreamExt;
use http::{HeaderMap, HeaderName, HeaderValue};
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, MethodDescriptor, Value};
use volley_server::{Code, DynamicHandler, Request, Status};

use super::write::{Recorded, Writer};
use crate::{
    stubs::{Options, Stubs},
    testkit::{block_on, split, temp_dir},
};

const PROTO: &str = r#"syntax = "proto3";
package rt.v1;
message Inner { string s = 1; repeated bytes b = 2; }
message Msg {
  string text = 1; bytes blob = 2; repeated string tags = 3; map<string, string> attrs = 4;
  int64 big = 5; double real = 6; bool flag = 7; Inner inner = 8; repeated Inner many = 9;
  enum E { ZERO = 0; ONE = 1; TWO = 2; } E e = 10; optional string maybe = 11; sint32 neg = 12;
  uint64 id = 13;
}
message Unknown { string secret = 1; }
service RoundTrip {
  rpc Unary(Msg) returns (Msg);
  rpc Server(Msg) returns (stream Msg);
  rpc Client(stream Msg) returns (Msg);
  rpc Bidi(stream Msg) returns (stream Msg);
}
"#;

/// xorshift64*: the same cases every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn pick<'a, T>(&mut self, from: &'a [T]) -> &'a T {
        &from[self.below(from.len() as u64) as usize]
    }

    fn bytes(&mut self, max: u64) -> Vec<u8> {
        (0..self.below(max + 1))
            .map(|_| self.next() as u8)
            .collect()
    }
}

/// Pieces that have broken record and replay, or could: template syntax, quoting, separators.
const NASTY: &[&str] = &[
    "{{",
    "}}",
    "{{ .Request.name }}",
    "{{uuid}}",
    "{{\"{{\"}}",
    "{{{",
    "{{-",
    "$",
    ";",
    "\"",
    "\\",
    "\n",
    "\t",
    "\u{0}",
    "\u{7f}",
    "é",
    "😀",
    "\u{202e}",
    "%s",
    "<b>",
    " ",
    "",
];

fn text(r: &mut Rng) -> String {
    if r.chance(3) {
        // Huge: 256 KiB to 1 MiB.
        let n = 256 * 1024 + r.below(768 * 1024) as usize;
        return "{{x}};".repeat(n / 6);
    }
    let mut s = String::new();
    for _ in 0..r.below(6) {
        if r.chance(50) {
            s.push_str(r.pick::<&str>(NASTY));
        } else {
            s.push(char::from(b' ' + r.below(95) as u8));
        }
    }
    s
}

/// Header-safe text: what a header value may carry (visible ASCII, space, tab, UTF-8).
fn header_text(r: &mut Rng) -> String {
    let pieces = [
        "{{", "}}", ";", "é", "😀", "a b", "\t", "x", "{{uuid}}", "\"",
    ];
    let mut s = String::from(*r.pick(&pieces));
    for _ in 0..r.below(4) {
        s.push_str(r.pick::<&str>(&pieces));
    }
    s.trim().to_owned()
}

fn message(r: &mut Rng, desc: &MessageDescriptor, inner: &MessageDescriptor) -> DynamicMessage {
    let mut m = DynamicMessage::new(desc.clone());
    let set = |m: &mut DynamicMessage, name: &str, v: Value| {
        let fd = desc.get_field_by_name(name).unwrap();
        if !v.is_default_for_field(&fd) || fd.supports_presence() {
            m.set_field(&fd, v);
        }
    };
    let inner_msg = |r: &mut Rng| {
        let mut i = DynamicMessage::new(inner.clone());
        let s = text(r);
        if !s.is_empty() {
            i.set_field_by_name("s", Value::String(s));
        }
        let b: Vec<Value> = (0..r.below(3))
            .map(|_| Value::Bytes(r.bytes(40).into()))
            .collect();
        if !b.is_empty() {
            i.set_field_by_name("b", Value::List(b));
        }
        i
    };
    if r.chance(80) {
        set(&mut m, "text", Value::String(text(r)));
    }
    if r.chance(50) {
        set(&mut m, "blob", Value::Bytes(r.bytes(300).into()));
    }
    if r.chance(50) {
        let tags = (0..r.below(4)).map(|_| Value::String(text(r))).collect();
        set(&mut m, "tags", Value::List(tags));
    }
    if r.chance(40) {
        let attrs = (0..r.below(4))
            .map(|_| {
                (
                    prost_reflect::MapKey::String(text(r)),
                    Value::String(text(r)),
                )
            })
            .collect();
        set(&mut m, "attrs", Value::Map(attrs));
    }
    if r.chance(50) {
        set(&mut m, "big", Value::I64(r.next() as i64));
    }
    if r.chance(50) {
        let v = match r.below(4) {
            0 => f64::INFINITY,
            1 => -1.5e300,
            _ => (r.next() as i64) as f64 / 7.0,
        };
        set(&mut m, "real", Value::F64(v));
    }
    if r.chance(30) {
        set(&mut m, "flag", Value::Bool(true));
    }
    if r.chance(40) {
        let i = inner_msg(r);
        set(&mut m, "inner", Value::Message(i));
    }
    if r.chance(30) {
        let many = (0..r.below(3))
            .map(|_| Value::Message(inner_msg(r)))
            .collect();
        set(&mut m, "many", Value::List(many));
    }
    if r.chance(40) {
        set(&mut m, "e", Value::EnumNumber(r.below(3) as i32));
    }
    if r.chance(30) {
        set(&mut m, "maybe", Value::String(text(r)));
    }
    if r.chance(40) {
        set(&mut m, "neg", Value::I32(r.next() as i32));
    }
    if r.chance(40) {
        set(&mut m, "id", Value::U64(r.next()));
    }
    m
}

fn metadata(r: &mut Rng) -> HeaderMap {
    use base64::Engine as _;
    let mut h = HeaderMap::new();
    for i in 0..r.below(4) {
        let bin = r.chance(30);
        let name = if bin {
            format!("x-k{i}-bin")
        } else {
            format!("x-k{i}")
        };
        let name = HeaderName::from_bytes(name.as_bytes()).unwrap();
        for _ in 0..=r.below(2) {
            let value = if bin {
                base64::engine::general_purpose::STANDARD_NO_PAD.encode(r.bytes(30))
            } else {
                header_text(r)
            };
            if let Ok(v) = HeaderValue::from_str(&value)
                && !value.is_empty()
            {
                h.append(name.clone(), v);
            }
        }
    }
    h
}

fn status(r: &mut Rng, pool: &DescriptorPool) -> Status {
    use prost::Message as _;
    let code = Code::from_i32(1 + r.below(16) as i32);
    let mut details = Vec::new();
    if r.chance(50) {
        let info = pool.get_message_by_name("google.rpc.ErrorInfo").unwrap();
        let mut m = DynamicMessage::new(info);
        m.set_field_by_name("reason", Value::String(text(r)));
        details.push(prost_types::Any {
            type_url: "type.googleapis.com/google.rpc.ErrorInfo".into(),
            value: m.encode_to_vec(),
        });
    }
    if r.chance(50) {
        details.push(prost_types::Any {
            type_url: "type.googleapis.com/elsewhere.v9.NotServed".into(),
            value: r.bytes(64),
        });
    }
    let message = text(r);
    let mut st = if details.is_empty() {
        Status::new(code, message)
    } else {
        Status::with_details(code, message, details)
    };
    *st.metadata_mut() = metadata(r);
    st
}

/// The stub's metadata as the caller gets it: the multimap, sorted, in text.
fn shown(h: &HeaderMap) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = h
        .iter()
        .filter(|(k, _)| k.as_str().starts_with("x-"))
        .map(|(k, v)| (k.as_str().to_owned(), v.as_bytes().to_vec()))
        .collect();
    v.sort();
    v
}

/// Messages as their fields (a failure prints those, not the descriptors).
fn brief(msgs: &[DynamicMessage]) -> Vec<Vec<(u32, Value)>> {
    msgs.iter()
        .map(|m| m.fields().map(|(f, v)| (f.number(), v.clone())).collect())
        .collect()
}

fn requests(msgs: &[DynamicMessage]) -> volley_server::DynamicStream {
    let owned: Vec<DynamicMessage> = msgs.to_vec();
    Box::pin(futures_util::stream::iter(owned.into_iter().map(Ok)))
}

/// What the replay answered: replies, headers, trailers, and the status.
struct Replayed {
    replies: Vec<DynamicMessage>,
    headers: HeaderMap,
    trailers: HeaderMap,
    status: Option<Status>,
}

fn replay(s: &Stubs, m: &MethodDescriptor, reqs: &[DynamicMessage]) -> Replayed {
    let failed = |st: Status| Replayed {
        replies: Vec::new(),
        headers: HeaderMap::new(),
        trailers: HeaderMap::new(),
        status: Some(st),
    };
    let one = |r: Result<volley_server::Response<DynamicMessage>, Status>| match r {
        Ok(resp) => {
            let (headers, trailers, reply) = split(resp);
            Replayed {
                replies: vec![reply],
                headers,
                trailers,
                status: None,
            }
        }
        Err(st) => failed(st),
    };
    let many = |r: Result<volley_server::Response<volley_server::DynamicStream>, Status>| match r {
        Ok(resp) => {
            let (headers, trailers, mut stream) = split(resp);
            let mut replies = Vec::new();
            let mut status = None;
            while let Some(item) = block_on(stream.next()) {
                match item {
                    Ok(m) => replies.push(m),
                    Err(st) => {
                        status = Some(st);
                        break;
                    }
                }
            }
            Replayed {
                replies,
                headers,
                trailers,
                status,
            }
        }
        Err(st) => failed(st),
    };
    match (m.is_client_streaming(), m.is_server_streaming()) {
        (false, false) => one(block_on(s.unary(m, Request::new(reqs[0].clone())))),
        (false, true) => many(block_on(
            s.server_streaming(m, Request::new(reqs[0].clone())),
        )),
        (true, false) => one(block_on(
            s.client_streaming(m, Request::new(requests(reqs))),
        )),
        (true, true) => many(block_on(s.bidi_streaming(m, Request::new(requests(reqs))))),
    }
}

#[test]
fn what_is_recorded_replays_as_the_upstream_said_it() {
    let dir = temp_dir("roundtrip-proto");
    std::fs::write(dir.join("rt.proto"), PROTO).unwrap();
    let loaded = volley_proto::load::load_sources(&[dir.join("rt.proto")], &[]).unwrap();
    let mut pool = loaded.pool.clone();
    volley_proto::load::add_common(&mut pool).unwrap();
    let svc = pool.get_service_by_name("rt.v1.RoundTrip").unwrap();
    let methods: Vec<MethodDescriptor> = svc.methods().collect();
    let msg = pool.get_message_by_name("rt.v1.Msg").unwrap();
    let inner = pool.get_message_by_name("rt.v1.Inner").unwrap();
    let mut r = Rng(0x5eed_0f70_11e7);
    for case in 0..160 {
        let m = r.pick(&methods).clone();
        let n_req = if m.is_client_streaming() {
            1 + r.below(3)
        } else {
            1
        };
        let mut reqs: Vec<DynamicMessage> =
            (0..n_req).map(|_| message(&mut r, &msg, &inner)).collect();
        // Each case's requests are its own (the writer keeps one stub per distinct call).
        reqs[0].set_field_by_name("id", Value::U64(case));
        let n_rep = if m.is_server_streaming() {
            r.below(4)
        } else {
            1
        };
        let fails = r.chance(30);
        let replies: Vec<DynamicMessage> = match (fails, m.is_server_streaming()) {
            (true, false) => Vec::new(),
            _ => (0..n_rep).map(|_| message(&mut r, &msg, &inner)).collect(),
        };
        let st = fails.then(|| status(&mut r, &pool));
        let (headers, trailers) = match st {
            Some(_) => (HeaderMap::new(), HeaderMap::new()),
            None => (metadata(&mut r), metadata(&mut r)),
        };
        let out = temp_dir("roundtrip");
        let w = Writer::new(out.join("stubs"), None).unwrap();
        let call = Recorded {
            method: m.clone(),
            requests: reqs.clone(),
            replies: replies.clone(),
            headers: headers.clone(),
            trailers: trailers.clone(),
            status: st.clone(),
        };
        w.write(&call).unwrap();
        let stubs = Stubs::load_with(
            &[out.join("stubs")],
            std::slice::from_ref(&pool),
            Options::gripmock(),
        )
        .unwrap_or_else(|e| panic!("case {case} ({}): the stub does not load: {e:#}", m.name()));
        let got = replay(&stubs, &m, &reqs);
        let what = format!("case {case}, {}", m.name());
        assert_eq!(
            brief(&got.replies),
            brief(&replies),
            "{what}: replies (then {:?})",
            got.status
        );
        match (&st, &got.status) {
            (None, None) => {
                assert_eq!(shown(&got.headers), shown(&headers), "{what}: headers");
                assert_eq!(shown(&got.trailers), shown(&trailers), "{what}: trailers");
            }
            (Some(want), Some(have)) => {
                assert_eq!(have.code(), want.code(), "{what}: code");
                assert_eq!(have.message(), want.message(), "{what}: message");
                assert_eq!(have.detail_list(), want.detail_list(), "{what}: details");
                assert_eq!(
                    shown(have.metadata()),
                    shown(want.metadata()),
                    "{what}: the error's metadata"
                );
            }
            (want, have) => panic!("{what}: status {want:?} replayed as {have:?}"),
        }
        std::fs::remove_dir_all(out).unwrap();
    }
    std::fs::remove_dir_all(dir).unwrap();
}
