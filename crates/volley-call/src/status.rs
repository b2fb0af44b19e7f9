//! A call's end as grpc-go reports it to grpcurl: the code as sent (even outside 0..16), the
//! percent-decoded message, and the details of `grpc-status-details-bin`.

use http::HeaderMap;
use prost::Message as _;

use crate::metadata;

/// A call's end: grpc-go's status (code as sent, even out of range), message and details.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CallStatus {
    /// The status code.
    pub code: i32,
    /// The status message.
    pub message: String,
    /// `grpc-status-details-bin`'s details.
    pub details: Vec<prost_types::Any>,
}

impl CallStatus {
    /// A status with no details.
    pub fn new(code: i32, message: impl Into<String>) -> CallStatus {
        CallStatus {
            code,
            message: message.into(),
            details: Vec::new(),
        }
    }

    /// The status of a volley-wire error (a transport failure, a framing error).
    pub fn from_wire(s: &volley_wire::Status) -> CallStatus {
        CallStatus::new(s.code() as i32, s.message())
    }

    /// Reads `grpc-status`, `grpc-message` and `grpc-status-details-bin`; `None` without a status.
    pub fn from_headers(h: &HeaderMap) -> Option<CallStatus> {
        let raw = h.get("grpc-status")?;
        let code = match std::str::from_utf8(raw.as_bytes())
            .ok()
            .and_then(|s| s.parse::<i32>().ok())
        {
            Some(c) => c,
            None => {
                return Some(CallStatus::new(
                    2,
                    format!(
                        "transport: malformed grpc-status: strconv.ParseInt: parsing {}: invalid syntax",
                        crate::args::go_quote(&String::from_utf8_lossy(raw.as_bytes()))
                    ),
                ));
            }
        };
        let message = h
            .get("grpc-message")
            .map(|m| {
                percent_encoding::percent_decode(m.as_bytes())
                    .decode_utf8_lossy()
                    .into_owned()
            })
            .unwrap_or_default();
        let mut status = CallStatus::new(code, message);
        let details = metadata::from_response(h)
            .into_iter()
            .find(|(k, _)| k == "grpc-status-details-bin")
            .map(|(_, v)| v);
        if let Some(d) = details.and_then(|d| RpcStatus::decode(&d[..]).ok()) {
            status.details = d.details;
        }
        Some(status)
    }
}

/// `google.rpc.Status`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct RpcStatus {
    /// The code.
    #[prost(int32, tag = "1")]
    pub code: i32,
    /// The message.
    #[prost(string, tag = "2")]
    pub message: String,
    /// The details.
    #[prost(message, repeated, tag = "3")]
    pub details: Vec<prost_types::Any>,
}
