//! What the history keeps of a call as it goes, and the session a call belongs to.

use std::time::{Instant, SystemTime};

use http::HeaderMap;
use prost_reflect::{DynamicMessage, MethodDescriptor};
use volley_server::Status;

use crate::{history::Call as Seen, stubs::Stubs};

/// The metadata key naming a call's session (GripMock's `X-Gripmock-Session`).
pub(crate) const SESSION: &str = "x-gripmock-session";

pub(crate) fn session_of(headers: &HeaderMap) -> String {
    headers
        .get(SESSION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

/// What the history keeps of a call, filled in as it goes.
pub(crate) struct Trace {
    method: MethodDescriptor,
    session: String,
    pub(super) at: SystemTime,
    started: Instant,
    pub stub: Option<uuid::Uuid>,
    pub requests: Vec<DynamicMessage>,
    pub responses: Vec<DynamicMessage>,
}

impl Trace {
    pub(super) fn new(method: &MethodDescriptor, session: &str) -> Trace {
        Trace {
            method: method.clone(),
            session: session.to_owned(),
            at: SystemTime::now(),
            started: Instant::now(),
            stub: None,
            requests: Vec::new(),
            responses: Vec::new(),
        }
    }

    pub(crate) fn done(self, stubs: &Stubs, outcome: Option<&Status>) {
        stubs.inner().history.record(Seen {
            service: self.method.parent_service().full_name().to_owned(),
            method: self.method.name().to_owned(),
            session: self.session,
            stub: self.stub,
            at: self.at,
            requests: self.requests,
            responses: self.responses,
            code: outcome.map_or(volley_server::Code::Ok, Status::code),
            error: outcome.map_or(String::new(), |s| s.message().to_owned()),
            elapsed: self.started.elapsed(),
        });
    }
}
