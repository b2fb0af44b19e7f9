//! Request bodies. Data without template actions is parsed, checked and framed once before the
//! run (`Static`: a clone of `Bytes` per call); templated data is rendered, parsed and encoded per
//! call (or per message) as ghz does, from the call's [`CallData`] (made once per call and shared
//! with templated metadata, as ghz shares it: `{{.UUID}}` is the same in both).

use std::sync::Arc;

use bytes::Bytes;
use prost_reflect::MessageDescriptor;
use volley_proto::{
    message::{encode_all, from_json},
    template::{CallData, Template},
};

use super::{frame::frame, lines::Lines};

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
            Payload::Templated(_) | Payload::Lines(_) => {
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
/// number, worker, time and a fresh UUID.
pub fn call_data(base: &CallData, i: u64, worker_id: &str) -> CallData {
    let mut data = base.clone();
    data.request_number = i as i64;
    data.worker_id = worker_id.to_owned();
    data.timestamp_unix_nano = now_unix_nanos();
    data.uuid = uuid_v4();
    data
}

impl Templated {
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
}
