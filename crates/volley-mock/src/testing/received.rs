//! The calls a [`MockServer`](super::MockServer) received, as a test reads them: the method,
//! the metadata, the request messages typed (`message::<HelloRequest>()`) or as JSON.

use std::fmt;

use http::HeaderMap;
use prost::Message;
use prost_reflect::DynamicMessage;
use serde_json::Value;

/// One call the server received.
#[derive(Clone, Debug)]
pub struct ReceivedCall {
    /// `package.Service/Method`.
    pub method: String,
    /// The request's metadata.
    pub metadata: HeaderMap,
    /// The request messages, in order (one for a unary or server-streaming call).
    pub messages: Vec<DynamicMessage>,
}

impl ReceivedCall {
    /// The first request message as `T` (the method's input type); `None` when there is none
    /// or it does not decode as `T`.
    pub fn message<T: Message + Default>(&self) -> Option<T> {
        self.messages.first().and_then(decode_as)
    }

    /// Every request message as `T`, those that decode.
    pub fn messages<T: Message + Default>(&self) -> Vec<T> {
        self.messages.iter().filter_map(decode_as).collect()
    }

    /// The request messages in proto3's JSON form.
    pub fn json(&self) -> Vec<Value> {
        self.messages.iter().map(to_json).collect()
    }
}

impl fmt::Display for ReceivedCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown: Vec<String> = self.json().iter().map(Value::to_string).collect();
        write!(f, "{} {}", self.method, shown.join(" "))
    }
}

/// `m` re-read as the prost type `T`.
pub(crate) fn decode_as<T: Message + Default>(m: &DynamicMessage) -> Option<T> {
    T::decode(m.encode_to_vec().as_slice()).ok()
}

/// `m` in proto3's JSON form (`null` if it cannot be written, which a decoded message can).
pub(crate) fn to_json(m: &DynamicMessage) -> Value {
    serde_json::to_value(m).unwrap_or(Value::Null)
}
