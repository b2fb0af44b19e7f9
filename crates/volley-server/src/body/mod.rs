//! Bodies: the request body (drained on HTTP/1.1 when a call ends early), the inbound message
//! stream, the response body of a call, and the envelopes gRPC-Web and Connect wrap it in.

mod envelope;
mod request;
mod response;
mod streaming;

pub(crate) use envelope::{EnvelopeBody, Mode, connect_end};
pub(crate) use request::{BoxError, RequestBody, discard, read_limited};
pub use response::ResponseBody;
pub(crate) use response::{
    FrameStream, HttpResponse, outgoing_frame, plain, status_trailers, trailers_only,
};
pub(crate) use streaming::RawStreaming;
pub use streaming::Streaming;
