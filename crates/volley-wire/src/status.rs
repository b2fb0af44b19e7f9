//! gRPC status codes and `Status`, the error a call ends with, carried as `grpc-status` / `grpc-message`.

use std::{borrow::Cow, fmt};

use base64::{Engine, engine::general_purpose::STANDARD_NO_PAD};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue};
use percent_encoding::{AsciiSet, CONTROLS, percent_decode_str, utf8_percent_encode};
use prost::Message;

use crate::names::{GRPC_MESSAGE, GRPC_RETRY_PUSHBACK_MS, GRPC_STATUS, GRPC_STATUS_DETAILS};

/// The gRPC status codes (`grpc/doc/statuscodes.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
#[allow(missing_docs)]
pub enum Code {
    Ok = 0,
    Cancelled = 1,
    Unknown = 2,
    InvalidArgument = 3,
    DeadlineExceeded = 4,
    NotFound = 5,
    AlreadyExists = 6,
    PermissionDenied = 7,
    ResourceExhausted = 8,
    FailedPrecondition = 9,
    Aborted = 10,
    OutOfRange = 11,
    Unimplemented = 12,
    Internal = 13,
    Unavailable = 14,
    DataLoss = 15,
    Unauthenticated = 16,
}

/// Every code, in numeric order (index = code).
pub const ALL_CODES: [Code; 17] = [
    Code::Ok,
    Code::Cancelled,
    Code::Unknown,
    Code::InvalidArgument,
    Code::DeadlineExceeded,
    Code::NotFound,
    Code::AlreadyExists,
    Code::PermissionDenied,
    Code::ResourceExhausted,
    Code::FailedPrecondition,
    Code::Aborted,
    Code::OutOfRange,
    Code::Unimplemented,
    Code::Internal,
    Code::Unavailable,
    Code::DataLoss,
    Code::Unauthenticated,
];

const DIGITS: [&str; 17] = [
    "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16",
];

impl Code {
    /// The code for a wire value; values outside 0..=16 are `Unknown`, as the spec asks.
    pub fn from_i32(v: i32) -> Code {
        usize::try_from(v)
            .ok()
            .and_then(|i| ALL_CODES.get(i).copied())
            .unwrap_or(Code::Unknown)
    }

    /// Parses a `grpc-status` header value.
    pub fn from_bytes(b: &[u8]) -> Code {
        std::str::from_utf8(b)
            .ok()
            .and_then(|s| s.parse::<i32>().ok())
            .map_or(Code::Unknown, Code::from_i32)
    }

    /// The decimal wire form, as a static header value (no allocation).
    pub fn header_value(self) -> HeaderValue {
        HeaderValue::from_static(DIGITS[self as usize])
    }

    /// The canonical upper-case name (`OK`, `CANCELLED`, `UNAUTHENTICATED`, ...): the value of
    /// the `grpc.status` attribute in gRPC's OpenTelemetry metrics (gRFC A66).
    pub fn name(self) -> &'static str {
        match self {
            Code::Ok => "OK",
            Code::Cancelled => "CANCELLED",
            Code::Unknown => "UNKNOWN",
            Code::InvalidArgument => "INVALID_ARGUMENT",
            Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
            Code::NotFound => "NOT_FOUND",
            Code::AlreadyExists => "ALREADY_EXISTS",
            Code::PermissionDenied => "PERMISSION_DENIED",
            Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
            Code::FailedPrecondition => "FAILED_PRECONDITION",
            Code::Aborted => "ABORTED",
            Code::OutOfRange => "OUT_OF_RANGE",
            Code::Unimplemented => "UNIMPLEMENTED",
            Code::Internal => "INTERNAL",
            Code::Unavailable => "UNAVAILABLE",
            Code::DataLoss => "DATA_LOSS",
            Code::Unauthenticated => "UNAUTHENTICATED",
        }
    }

    /// gRPC's mapping of a non-200 HTTP status to a code (grpc-go's, in
    /// `doc/http-grpc-status-mapping.md`).
    pub fn from_http_status(status: u16) -> Code {
        match status {
            400 => Code::Internal,
            401 => Code::Unauthenticated,
            403 => Code::PermissionDenied,
            404 => Code::Unimplemented,
            429 | 502..=504 => Code::Unavailable,
            _ => Code::Unknown,
        }
    }

    /// The name grpc-go prints (`codes.Code.String()`), which ghz reports use: `OK`, `Canceled`, ...
    pub fn go_name(self) -> &'static str {
        match self {
            Code::Ok => "OK",
            Code::Cancelled => "Canceled",
            Code::Unknown => "Unknown",
            Code::InvalidArgument => "InvalidArgument",
            Code::DeadlineExceeded => "DeadlineExceeded",
            Code::NotFound => "NotFound",
            Code::AlreadyExists => "AlreadyExists",
            Code::PermissionDenied => "PermissionDenied",
            Code::ResourceExhausted => "ResourceExhausted",
            Code::FailedPrecondition => "FailedPrecondition",
            Code::Aborted => "Aborted",
            Code::OutOfRange => "OutOfRange",
            Code::Unimplemented => "Unimplemented",
            Code::Internal => "Internal",
            Code::Unavailable => "Unavailable",
            Code::DataLoss => "DataLoss",
            Code::Unauthenticated => "Unauthenticated",
        }
    }
}

/// The characters `grpc-message` percent-encodes: controls, `%`, and (implicitly) non-ASCII.
const MESSAGE_ENCODE: &AsciiSet = &CONTROLS.add(b'%');

/// The outcome of a failed call: a code, a message and optional metadata for the trailers.
///
/// Boxed inside so that `Result<T, Status>` stays one pointer wide on the success path.
#[derive(Clone)]
pub struct Status(Box<Inner>);

#[derive(Clone)]
struct Inner {
    code: Code,
    message: Cow<'static, str>,
    metadata: HeaderMap,
    /// An encoded `google.rpc.Status`, sent as `grpc-status-details-bin`.
    details: Option<Bytes>,
}

/// `google.rpc.Status`: the rich error model gRPC carries in `grpc-status-details-bin`.
#[derive(Clone, PartialEq, Message)]
pub struct RpcStatus {
    /// The code, as a number.
    #[prost(int32, tag = "1")]
    pub code: i32,
    /// The message.
    #[prost(string, tag = "2")]
    pub message: String,
    /// Typed error details.
    #[prost(message, repeated, tag = "3")]
    pub details: Vec<prost_types::Any>,
}

impl Status {
    /// A status with a code and a message.
    pub fn new(code: Code, message: impl Into<Cow<'static, str>>) -> Status {
        Status(Box::new(Inner {
            code,
            message: message.into(),
            metadata: HeaderMap::new(),
            details: None,
        }))
    }

    /// A status with typed error details (`google.rpc.Status.details`), which gRPC sends in
    /// `grpc-status-details-bin` and Connect in its error JSON.
    pub fn with_details(
        code: Code,
        message: impl Into<Cow<'static, str>>,
        details: Vec<prost_types::Any>,
    ) -> Status {
        let mut s = Status::new(code, message);
        let rpc = RpcStatus {
            code: code as i32,
            message: s.message().to_owned(),
            details,
        };
        s.0.details = Some(rpc.encode_to_vec().into());
        s
    }

    /// The encoded `google.rpc.Status`, when the status carries details.
    pub fn details(&self) -> Option<&Bytes> {
        self.0.details.as_ref()
    }

    /// The typed details (empty when there are none or they do not decode).
    pub fn detail_list(&self) -> Vec<prost_types::Any> {
        self.0
            .details
            .as_ref()
            .and_then(|d| RpcStatus::decode(d.clone()).ok())
            .map(|s| s.details)
            .unwrap_or_default()
    }

    /// The code.
    pub fn code(&self) -> Code {
        self.0.code
    }

    /// The message, decoded.
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// Metadata sent in the trailers beside the status.
    pub fn metadata(&self) -> &HeaderMap {
        &self.0.metadata
    }

    /// Mutable trailer metadata.
    pub fn metadata_mut(&mut self) -> &mut HeaderMap {
        &mut self.0.metadata
    }

    /// Writes `grpc-status`, `grpc-message` and the metadata into a header or trailer map.
    pub fn write_to(&self, headers: &mut HeaderMap) {
        for (k, v) in &self.0.metadata {
            headers.append(k.clone(), v.clone());
        }
        headers.insert(GRPC_STATUS, self.0.code.header_value());
        if !self.0.message.is_empty() {
            let encoded: Cow<'_, str> = utf8_percent_encode(&self.0.message, MESSAGE_ENCODE).into();
            if let Ok(v) = HeaderValue::from_str(&encoded) {
                headers.insert(GRPC_MESSAGE, v);
            }
        }
        if let Some(d) = &self.0.details
            && let Ok(v) = HeaderValue::from_str(&STANDARD_NO_PAD.encode(d))
        {
            headers.insert(GRPC_STATUS_DETAILS, v);
        }
    }

    /// Reads the status from trailers (or trailers-only headers); `None` when `grpc-status` is absent.
    pub fn from_headers(headers: &HeaderMap) -> Option<Status> {
        let code = Code::from_bytes(headers.get(GRPC_STATUS)?.as_bytes());
        let message = headers
            .get(GRPC_MESSAGE)
            .and_then(|v| v.to_str().ok())
            .map(|m| percent_decode_str(m).decode_utf8_lossy().into_owned())
            .unwrap_or_default();
        let mut status = Status::new(code, message);
        status.0.details = headers.get(GRPC_STATUS_DETAILS).and_then(|v| {
            let v = v.as_bytes();
            let v = v.strip_suffix(b"==").or(v.strip_suffix(b"=")).unwrap_or(v);
            STANDARD_NO_PAD.decode(v).ok().map(Bytes::from)
        });
        // A failure keeps the server's retry pushback, which a retrying client reads (gRFC A6).
        if code != Code::Ok
            && let Some(v) = headers.get(GRPC_RETRY_PUSHBACK_MS)
        {
            status.0.metadata.insert(GRPC_RETRY_PUSHBACK_MS, v.clone());
        }
        Some(status)
    }
}

macro_rules! constructors {
    ($($name:ident => $code:ident),* $(,)?) => {
        impl Status {
            $(
                #[doc = concat!("A `", stringify!($code), "` status.")]
                pub fn $name(message: impl Into<Cow<'static, str>>) -> Status {
                    Status::new(Code::$code, message)
                }
            )*
        }
    };
}

constructors! {
    cancelled => Cancelled,
    unknown => Unknown,
    invalid_argument => InvalidArgument,
    deadline_exceeded => DeadlineExceeded,
    not_found => NotFound,
    resource_exhausted => ResourceExhausted,
    failed_precondition => FailedPrecondition,
    unimplemented => Unimplemented,
    internal => Internal,
    unavailable => Unavailable,
    already_exists => AlreadyExists,
    permission_denied => PermissionDenied,
    aborted => Aborted,
    out_of_range => OutOfRange,
    data_loss => DataLoss,
    unauthenticated => Unauthenticated,
}

impl fmt::Debug for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Status")
            .field("code", &self.0.code)
            .field("message", &self.0.message)
            .finish()
    }
}

impl fmt::Display for Status {
    /// grpc-go's layout, which ghz prints in its error distribution.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rpc error: code = {} desc = {}",
            self.0.code.go_name(),
            self.0.message
        )
    }
}

impl std::error::Error for Status {}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::STANDARD;

    #[test]
    fn codes_round_trip_and_clamp() {
        for (i, c) in ALL_CODES.iter().enumerate() {
            assert_eq!(Code::from_i32(i as i32), *c);
            assert_eq!(Code::from_bytes(c.header_value().as_bytes()), *c);
        }
        assert_eq!(Code::from_i32(17), Code::Unknown);
        assert_eq!(Code::from_i32(-1), Code::Unknown);
        assert_eq!(Code::from_bytes(b"x"), Code::Unknown);
    }

    #[test]
    fn message_is_percent_encoded_and_decoded() {
        let s = Status::internal("50% off\n\u{1F600} ok");
        let mut h = HeaderMap::new();
        s.write_to(&mut h);
        assert_eq!(h["grpc-status"], "13");
        assert_eq!(h["grpc-message"], "50%25 off%0A%F0%9F%98%80 ok");
        let back = Status::from_headers(&h).unwrap();
        assert_eq!(back.code(), Code::Internal);
        assert_eq!(back.message(), "50% off\n\u{1F600} ok");
        assert!(back.details().is_none());
    }

    #[test]
    fn details_travel_in_grpc_status_details_bin() {
        let any = prost_types::Any {
            type_url: "type.googleapis.com/x.Y".into(),
            value: vec![1, 2, 3],
        };
        let s = Status::with_details(Code::NotFound, "gone", vec![any.clone()]);
        let mut h = HeaderMap::new();
        s.write_to(&mut h);
        let back = Status::from_headers(&h).unwrap();
        assert_eq!(back.detail_list(), vec![any.clone()]);
        let decoded = RpcStatus::decode(back.details().unwrap().clone()).unwrap();
        assert_eq!((decoded.code, decoded.message.as_str()), (5, "gone"));
        // Peers may send the value padded.
        let padded = STANDARD.encode(back.details().unwrap());
        h.insert("grpc-status-details-bin", padded.parse().unwrap());
        assert_eq!(Status::from_headers(&h).unwrap().detail_list(), vec![any]);
    }

    #[test]
    fn display_matches_grpc_go() {
        let s = Status::unavailable("transport is closing");
        assert_eq!(
            s.to_string(),
            "rpc error: code = Unavailable desc = transport is closing"
        );
        assert_eq!(Status::cancelled("x").code().go_name(), "Canceled");
    }
}
