//! Request bodies. Data without template actions is parsed, checked and framed once before the
//! run (`Static`: a clone of `Bytes` per call); templated data is rendered per call (or per
//! message) as ghz does, from the call's [`CallData`] (made once per call and shared with
//! templated metadata, as ghz shares it: `{{.UUID}}` is the same in both): straight into protobuf
//! when the template compiles against the input type ([`ProtoTemplate`]), else as JSON text that
//! is then parsed and encoded.

use std::sync::Arc;

use bytes::Bytes;
use prost_reflect::MessageDescriptor;
use volley_proto::{
    message::{encode_all, from_json},
    template::{CallData, ProtoTemplate, Template},
};

use super::{frame::frame, lines::Lines};

thread_local! {
    /// Where a compiled template encodes a call's message before it is copied out.
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Where request messages come from.
#[derive(Clone)]
pub enum Payload {
    /// Framed messages made before the run; calls take them round-robin by request number.
    Static(Arc<[Bytes]>),
    /// A template rendered per call.
    Templated(Arc<Templated>),
    /// An NDJSON file read per call, line `i mod n` for call `i`.
    Lines(Arc<Lines>),
}

/// A templated payload.
pub struct Templated {
    /// The data template.
    pub template: Template,
    /// The template compiled to protobuf (`None`: its shape needs the JSON route per call).
    pub compiled: Option<ProtoTemplate>,
    /// The input type.
    pub input: MessageDescriptor,
    /// Compress frames.
    pub gzip: bool,
}

impl Payload {
    /// Frames prepared from encoded messages.
    pub fn from_messages(msgs: &[Bytes], gzip: bool) -> Payload {
        Payload::Static(msgs.iter().map(|m| frame(m, gzip)).collect())
    }

    /// How many messages one call's data holds (for streams), when known up front.
    pub fn static_len(&self) -> Option<usize> {
        match self {
            Payload::Static(f) => Some(f.len()),
            Payload::Templated(_) | Payload::Lines(_) => None,
        }
    }

    /// Whether call data is rendered into this payload (then each call needs its [`CallData`]).
    pub fn is_templated(&self) -> bool {
        matches!(self, Payload::Templated(_))
    }

    /// Every message of call `i`, framed (the sequence a client or bidi stream sends). `data` is
    /// the call's data, needed when the payload is templated.
    pub fn messages(&self, i: u64, data: Option<&CallData>) -> Result<Vec<Bytes>, String> {
        match self {
            Payload::Static(f) => Ok(f.to_vec()),
            Payload::Templated(t) => match data {
                Some(d) => t.render_all(d),
                None => Err("templated data without its call data".into()),
            },
            Payload::Lines(l) => l.messages(i),
        }
    }

    /// The single message of unary call `i`: arrays go round-robin by request number.
    pub fn message(&self, i: u64, data: Option<&CallData>) -> Result<Bytes, String> {
        match self {
            Payload::Static(f) => Ok(f[(i % f.len() as u64) as usize].clone()),
            Payload::Lines(l) => l.message(i),
            Payload::Templated(t) => {
                if let (Some(c), Some(d)) = (&t.compiled, data) {
                    return t.render_one(c, d);
                }
                let all = self.messages(i, data)?;
                let n = all.len() as u64;
                if n == 0 {
                    return Err("templated data rendered to an empty array".into());
                }
                Ok(all[(i % n) as usize].clone())
            }
        }
    }
}

/// The data of call `i` made by worker `worker_id`: `base` (the method's names) with the call's
/// number, worker, time and, when `uuid`, a fresh UUID.
pub fn call_data(base: &CallData, i: u64, worker_id: &Arc<str>, uuid: bool) -> CallData {
    CallData {
        request_number: i as i64,
        worker_id: worker_id.clone(),
        timestamp_unix_nano: now_unix_nanos(),
        uuid: if uuid { uuid_v4() } else { String::new() },
        ..base.clone()
    }
}

impl Templated {
    /// The one message of compiled template `c`, framed: encoded into this thread's scratch
    /// buffer after the five-byte prefix and copied out once (one allocation of the exact size),
    /// or by the JSON route when a value needs it.
    fn render_one(&self, c: &ProtoTemplate, data: &CallData) -> Result<Bytes, String> {
        let framed = SCRATCH.with(|buf| {
            let mut buf = buf.borrow_mut();
            buf.clear();
            buf.extend_from_slice(&[0; 5]);
            if !c.encode(data, &mut buf).map_err(|e| e.to_string())? {
                return Ok::<_, String>(None);
            }
            if self.gzip {
                return Ok(Some(frame(&buf[5..], true)));
            }
            let len = (buf.len() - 5) as u32;
            buf[1..5].copy_from_slice(&len.to_be_bytes());
            Ok(Some(Bytes::copy_from_slice(&buf)))
        })?;
        if let Some(f) = framed {
            return Ok(f);
        }
        let mut all = self.render_all(data)?;
        match all.len() {
            1 => Ok(all.swap_remove(0)),
            _ => Err("templated data did not render to one message".into()),
        }
    }

    fn render_all(&self, data: &CallData) -> Result<Vec<Bytes>, String> {
        let mut json = String::new();
        self.template
            .render(data, &mut json)
            .map_err(|e| e.to_string())?;
        let msgs = from_json(&self.input, &json).map_err(|e| e.to_string())?;
        Ok(encode_all(&msgs)
            .iter()
            .map(|m| frame(m, self.gzip))
            .collect())
    }
}

/// Nanoseconds since the Unix epoch, now.
pub fn now_unix_nanos() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// A fresh random UUID (v4), as `{{.UUID}}` renders it.
///
/// Its 122 random bits come from fastrand (seeded per thread from the OS), not from the OS per
/// call: a call's id needs to be unique within a run, not unpredictable, and asking the OS for
/// randomness on every call was a large part of a templated run's cost.
pub fn uuid_v4() -> String {
    let mut bytes = [0u8; 16];
    fastrand::fill(&mut bytes);
    uuid::Builder::from_random_bytes(bytes)
        .into_uuid()
        .hyphenated()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_round_robin() {
        let p = Payload::from_messages(
            &[Bytes::from_static(b"a"), Bytes::from_static(b"bb")],
            false,
        );
        assert_eq!(&p.message(0, None).unwrap()[..], b"\0\0\0\0\x01a");
        assert_eq!(&p.message(1, None).unwrap()[..], b"\0\0\0\0\x02bb");
        assert_eq!(&p.message(2, None).unwrap()[..], b"\0\0\0\0\x01a");
        assert_eq!(p.messages(7, None).unwrap().len(), 2);
    }

    fn input() -> MessageDescriptor {
        let dir = std::env::temp_dir().join(format!("volley-payload-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t.proto");
        std::fs::write(
            &p,
            "syntax = \"proto3\"; package t; message Req { int64 id = 1; string name = 2; }",
        )
        .unwrap();
        let pool = volley_proto::load::compile_proto(&p, &[]).unwrap();
        pool.get_message_by_name("t.Req").unwrap()
    }

    fn templated(src: &str, compile: bool) -> Payload {
        let template = Template::parse(src).unwrap();
        let sample = call_data(&CallData::default(), 1, &"g0c0".into(), true);
        let compiled = compile
            .then(|| ProtoTemplate::compile(&template, &input(), &sample))
            .flatten();
        assert_eq!(compiled.is_some(), compile, "{src}");
        Payload::Templated(Arc::new(Templated {
            template,
            compiled,
            input: input(),
            gzip: false,
        }))
    }

    #[test]
    fn compiled_templates_frame_what_the_json_route_frames() {
        let src = r#"{"id": {{.RequestNumber}}, "name": "{{.WorkerID}}-{{.UUID}}"}"#;
        let (fast, slow) = (templated(src, true), templated(src, false));
        let base = CallData::default();
        let mut seen = std::collections::HashSet::new();
        for i in [0u64, 1, 2, 127, 128, 1 << 33] {
            let d = call_data(&base, i, &"g1c0".into(), true);
            let f = fast.message(i, Some(&d)).unwrap();
            assert_eq!(f, slow.message(i, Some(&d)).unwrap(), "call {i}");
            assert!(seen.insert(f), "call {i}: a fresh UUID per call");
        }
        // A value the compiled route does not take (an id past int64) goes the JSON route and
        // fails as it does.
        let src = r#"{"id": {{.RequestNumber}}9999999999999999999}"#;
        let e = templated(src, false).message(5, Some(&base));
        assert!(e.is_err());
    }

    #[test]
    fn a_uuid_is_made_only_when_asked() {
        let base = CallData::default();
        assert!(call_data(&base, 0, &"w".into(), false).uuid.is_empty());
        assert_eq!(call_data(&base, 0, &"w".into(), true).uuid.len(), 36);
        assert!(Template::parse("{{.UUID}}").unwrap().reads("UUID"));
        assert!(Template::parse("{{upper .UUID}}").unwrap().reads("UUID"));
        assert!(
            !Template::parse("{{newUUID}} {{.RequestNumber}}")
                .unwrap()
                .reads("UUID")
        );
    }
}
