//! `-O json` (beyond grpcurl): one JSON document per call for scripts, with the method,
//! protocol, target, the messages (each in grpcurl's JSON mapping, fields in its order), response
//! headers, trailers, status (code, grpc-go's name, message, details) and timing in
//! milliseconds. Written as text (two-space indents, keys in this order) so the messages keep
//! their field order; serde_json's maps would sort them.

use std::time::Duration;

use base64::Engine as _;
use prost_reflect::{DynamicMessage, MethodDescriptor};
use volley_proto::gofmt::json_string;

use crate::{
    errors::code_name, invoke::Events, json_out::JsonFormat, metadata::Metadata, status::CallStatus,
};

/// Collects one call.
pub(crate) struct Report<'a> {
    fmt: &'a JsonFormat,
    method: String,
    headers: Metadata,
    /// Each message's compact JSON.
    messages: Vec<String>,
    status: CallStatus,
    trailers: Metadata,
}

impl<'a> Report<'a> {
    /// An empty report whose messages print with `fmt`.
    pub(crate) fn new(fmt: &'a JsonFormat) -> Report<'a> {
        Report {
            fmt,
            method: String::new(),
            headers: Metadata::new(),
            messages: Vec::new(),
            status: CallStatus::default(),
            trailers: Metadata::new(),
        }
    }

    /// The call's status.
    pub(crate) fn status(&self) -> &CallStatus {
        &self.status
    }

    /// Responses collected.
    pub(crate) fn responses(&self) -> usize {
        self.messages.len()
    }

    /// The document (indented, newline-terminated).
    pub(crate) fn finish(&self, facts: &Facts<'_>) -> String {
        let ms = |d: Duration| format!("{:.3}", d.as_secs_f64() * 1e3);
        let q = |s: &str| {
            let mut out = String::new();
            json_string(&mut out, s);
            out
        };
        let details: Vec<String> = self
            .status
            .details
            .iter()
            .map(|d| {
                let mut shown = String::new();
                if self.fmt.any(&mut shown, &d.type_url, &d.value).is_err() {
                    shown = "null".into();
                }
                let value = base64::engine::general_purpose::STANDARD.encode(&d.value);
                format!(
                    "{{\"type_url\":{},\"value\":{},\"json\":{shown}}}",
                    q(&d.type_url),
                    q(&value)
                )
            })
            .collect();
        let doc = format!(
            "{{\"method\":{},\"target\":{},\"protocol\":{},\"requests\":{},\"headers\":{},\"messages\":[{}],\"status\":{{\"code\":{},\"name\":{},\"message\":{},\"details\":[{}]}},\"trailers\":{},\"timing\":{{\"dial_ms\":{},\"call_ms\":{},\"total_ms\":{}}}}}",
            q(&self.method),
            q(facts.target),
            q(facts.protocol),
            facts.requests,
            md_json(&self.headers),
            self.messages.join(","),
            self.status.code,
            q(&code_name(self.status.code)),
            q(&self.status.message),
            details.join(","),
            md_json(&self.trailers),
            facts.dial.map_or_else(|| "null".to_owned(), ms),
            ms(facts.call),
            ms(facts.total),
        );
        crate::json_out::indent(&doc) + "\n"
    }
}

/// What the report adds besides the call's events.
pub(crate) struct Facts<'a> {
    /// The address.
    pub target: &'a str,
    /// `grpc`, `grpc-web` or `connect`.
    pub protocol: &'a str,
    /// Request messages sent.
    pub requests: usize,
    /// Time to connect (none when the connection was made for reflection before).
    pub dial: Option<Duration>,
    /// Time in the call.
    pub call: Duration,
    /// Time in all.
    pub total: Duration,
}

/// Metadata as `{"key": ["value", ...]}` (keys sorted), `-bin` values in base64.
fn md_json(md: &Metadata) -> String {
    let mut keys: Vec<&str> = md.iter().map(|(k, _)| k.as_str()).collect();
    keys.sort_unstable();
    keys.dedup();
    let fields: Vec<String> = keys
        .iter()
        .map(|k| {
            let values: Vec<String> = md
                .iter()
                .filter(|(name, _)| name == k)
                .map(|(_, v)| {
                    let shown = if k.ends_with("-bin") {
                        base64::engine::general_purpose::STANDARD.encode(v)
                    } else {
                        String::from_utf8_lossy(v).into_owned()
                    };
                    let mut out = String::new();
                    json_string(&mut out, &shown);
                    out
                })
                .collect();
            let mut key = String::new();
            json_string(&mut key, k);
            format!("{key}:[{}]", values.join(","))
        })
        .collect();
    format!("{{{}}}", fields.join(","))
}

impl Events for Report<'_> {
    fn resolved(&mut self, m: &MethodDescriptor) {
        self.method = format!("{}/{}", m.parent_service().full_name(), m.name());
    }

    fn request_metadata(&mut self, _md: &Metadata) {}

    fn headers(&mut self, md: &Metadata) {
        self.headers = md.clone();
    }

    fn response(&mut self, msg: &DynamicMessage) {
        let mut out = String::new();
        if let Err(e) = self.fmt.message(&mut out, msg) {
            out.clear();
            json_string(&mut out, &format!("failed to format the message: {e}"));
        }
        self.messages.push(out);
    }

    fn trailers(&mut self, status: &CallStatus, md: &Metadata) {
        self.status = status.clone();
        self.trailers = md.clone();
    }
}
