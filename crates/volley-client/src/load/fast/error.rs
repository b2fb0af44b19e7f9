//! How a fast-path call failed, told where the failure is known: whether the server never saw
//! the call decides whether it may be sent again (`redial`), and the words users see are
//! grpc-go's.

use volley_wire::{Status, h2::reason};

/// A failed call, and whether the server never saw it (then it may be sent again on a new
/// connection).
#[derive(Clone, Debug)]
pub(crate) enum CallError {
    /// The server never saw the call: it lay past a GOAWAY's last stream, its stream was refused
    /// (REFUSED_STREAM), or a GOAWAY had closed the connection to new calls before it was sent.
    NeverSeen(Status),
    /// The server may have seen it, or sending it again would not help.
    Failed(Status),
}

impl CallError {
    /// Whether the server never saw the call (sending it again is safe).
    pub(crate) fn never_seen(&self) -> bool {
        matches!(self, CallError::NeverSeen(_))
    }

    /// The call's status.
    pub(crate) fn into_status(self) -> Status {
        match self {
            CallError::NeverSeen(s) | CallError::Failed(s) => s,
        }
    }
}

/// The failure of calls a GOAWAY turned away, worded as grpc-go words it.
pub(super) fn going_away() -> CallError {
    CallError::NeverSeen(Status::unavailable("transport is closing"))
}

/// The failure of a call whose stream the server reset with `code`.
pub(super) fn stream_status(code: u32) -> CallError {
    match code {
        reason::CANCEL => {
            CallError::Failed(Status::cancelled("grpc: the server cancelled the stream"))
        }
        reason::REFUSED_STREAM => CallError::NeverSeen(Status::unavailable(
            "the server refused the stream (REFUSED_STREAM)",
        )),
        c => CallError::Failed(Status::internal(format!(
            "stream terminated by RST_STREAM with error code: {}",
            h2::Reason::from(c).description()
        ))),
    }
}
