//! What a mock answers: a message (a prost value or its JSON), a stream of them, a status with
//! details, or a function of the request; with a delay, headers and trailers.

use std::{sync::Arc, time::Duration};

use bytes::Bytes;
use http::{HeaderName, HeaderValue};
use prost_reflect::{DynamicMessage, MethodDescriptor};
use serde_json::Value;
use volley_server::Status;

use super::received::decode_as;

/// A message to send, kept until the method's output type reads it.
#[derive(Clone)]
enum Out {
    Encoded(Bytes),
    Json(Value),
}

type Computed =
    dyn Fn(&DynamicMessage, &MethodDescriptor) -> Result<DynamicMessage, Status> + Send + Sync;

#[derive(Clone)]
enum Body {
    Messages(Vec<Out>),
    Error(Status),
    Computed(Arc<Computed>),
}

/// A mock's answer. Made by [`reply`], [`reply_json`], [`stream`], [`stream_json`], [`error`]
/// or [`reply_with`]; [`delay`](Self::delay), [`header`](Self::header) and
/// [`trailer`](Self::trailer) add to it.
#[derive(Clone)]
pub struct Respond {
    body: Body,
    pub(crate) delay: Duration,
    pub(crate) headers: Vec<(HeaderName, HeaderValue)>,
    pub(crate) trailers: Vec<(HeaderName, HeaderValue)>,
}

fn of(body: Body) -> Respond {
    Respond {
        body,
        delay: Duration::ZERO,
        headers: Vec::new(),
        trailers: Vec::new(),
    }
}

/// One reply message (a prost value of the method's output type). A streaming method sends it
/// as its one message.
pub fn reply<M: prost::Message>(message: M) -> Respond {
    of(Body::Messages(vec![Out::Encoded(
        message.encode_to_vec().into(),
    )]))
}

/// One reply message from its proto3 JSON form, checked against the output type at mount.
pub fn reply_json(message: Value) -> Respond {
    of(Body::Messages(vec![Out::Json(message)]))
}

/// A stream of reply messages, in order (a unary method sends the first).
pub fn stream<M: prost::Message>(messages: impl IntoIterator<Item = M>) -> Respond {
    let out = messages.into_iter();
    of(Body::Messages(
        out.map(|m| Out::Encoded(m.encode_to_vec().into()))
            .collect(),
    ))
}

/// A stream of reply messages from their JSON forms.
pub fn stream_json(messages: impl IntoIterator<Item = Value>) -> Respond {
    of(Body::Messages(
        messages.into_iter().map(Out::Json).collect(),
    ))
}

/// The call fails with `status` (with its details: `Status::with_details`).
pub fn error(status: Status) -> Respond {
    of(Body::Error(status))
}

/// The reply computed from the request (for a client stream, its last message):
/// `reply_with(|r: &HelloRequest| HelloReply { message: format!("Hello {}", r.name) })`.
pub fn reply_with<Req, Resp, F>(f: F) -> Respond
where
    Req: prost::Message + Default + 'static,
    Resp: prost::Message + 'static,
    F: Fn(&Req) -> Resp + Send + Sync + 'static,
{
    of(Body::Computed(Arc::new(move |request, method| {
        let req: Req = decode_as(request).ok_or_else(|| {
            Status::internal(format!(
                "reply_with: the request does not decode as the function's input type ({})",
                std::any::type_name::<Req>()
            ))
        })?;
        DynamicMessage::decode(method.output(), f(&req).encode_to_vec().as_slice())
            .map_err(|e| Status::internal(format!("reply_with: {e}")))
    })))
}

impl Respond {
    /// Waits `d` before answering (before each message of a stream: no).
    #[must_use]
    pub fn delay(mut self, d: Duration) -> Respond {
        self.delay = d;
        self
    }

    /// A response header (metadata sent before the messages).
    ///
    /// # Panics
    /// When `name` or `value` is not valid as HTTP/2 metadata.
    #[must_use]
    #[track_caller]
    pub fn header(mut self, name: &str, value: &str) -> Respond {
        self.headers.push(pair(name, value));
        self
    }

    /// A response trailer (metadata sent after them, with the status).
    ///
    /// # Panics
    /// When `name` or `value` is not valid as HTTP/2 metadata.
    #[must_use]
    #[track_caller]
    pub fn trailer(mut self, name: &str, value: &str) -> Respond {
        self.trailers.push(pair(name, value));
        self
    }

    /// The messages as `method`'s output type, or why they do not fit (checked at mount).
    pub(crate) fn check(&self, method: &MethodDescriptor) -> Result<(), String> {
        if let Body::Messages(list) = &self.body {
            for (i, out) in list.iter().enumerate() {
                message(out, method).map_err(|e| format!("reply #{}: {}", i + 1, e.message()))?;
            }
        }
        Ok(())
    }

    /// The messages for `request` (or the status to end with).
    pub(crate) fn messages(
        &self,
        method: &MethodDescriptor,
        request: Option<&DynamicMessage>,
    ) -> Result<Vec<DynamicMessage>, Status> {
        match &self.body {
            Body::Messages(list) => list.iter().map(|o| message(o, method)).collect(),
            Body::Error(st) => Err(st.clone()),
            Body::Computed(f) => {
                let empty = DynamicMessage::new(method.input());
                Ok(vec![f(request.unwrap_or(&empty), method)?])
            }
        }
    }
}

#[track_caller]
fn pair(name: &str, value: &str) -> (HeaderName, HeaderValue) {
    match (
        HeaderName::try_from(name.to_ascii_lowercase()),
        HeaderValue::try_from(value),
    ) {
        (Ok(n), Ok(v)) => (n, v),
        _ => panic!("{name:?}: {value:?} is not valid as gRPC metadata"),
    }
}

fn message(out: &Out, method: &MethodDescriptor) -> Result<DynamicMessage, Status> {
    let output = method.output();
    match out {
        Out::Encoded(b) => DynamicMessage::decode(output.clone(), b.clone()).map_err(|e| {
            Status::internal(format!(
                "the reply does not decode as {}: {e}",
                output.full_name()
            ))
        }),
        Out::Json(v) => DynamicMessage::deserialize(output.clone(), v).map_err(|e| {
            Status::internal(format!(
                "the reply's JSON does not fit {}: {e}",
                output.full_name()
            ))
        }),
    }
}
