//! What a typed call sends ([`Request`]: a message or stream, metadata, timeout, compression) and
//! what it gets back ([`Response`]: the reply or reply stream, headers and trailers).

use std::time::Duration;

use futures_util::Stream;
use http::HeaderMap;

/// A typed call's input: the request message (or stream of messages) and how to send it.
///
/// Any message converts into a request (`client.say_hello(HelloRequest { .. })`); build one with
/// [`Request::new`] to add metadata, a timeout or compression, as with tonic's `Request`.
#[derive(Debug)]
pub struct Request<T> {
    metadata: HeaderMap,
    timeout: Option<Duration>,
    compress: Option<bool>,
    message: T,
}

impl<T> Request<T> {
    /// A request with no metadata, no timeout and the client's compression default.
    pub fn new(message: T) -> Request<T> {
        Request {
            metadata: HeaderMap::new(),
            timeout: None,
            compress: None,
            message,
        }
    }

    /// Metadata sent as request headers.
    pub fn metadata(&self) -> &HeaderMap {
        &self.metadata
    }

    /// Mutable metadata (`request.metadata_mut().insert("x-token", value)`).
    pub fn metadata_mut(&mut self) -> &mut HeaderMap {
        &mut self.metadata
    }

    /// Sets the call's deadline, `timeout` from when it is sent: sent as `grpc-timeout` so the
    /// server stops too, and enforced here (the call ends with DEADLINE_EXCEEDED).
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = Some(timeout);
    }

    /// The timeout, if one was set.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// Ends the call by `deadline`, when there is one: how a handler passes its own call's
    /// deadline on to the calls it makes, in one line,
    /// `Request::new(msg).deadline(request.deadline())`. The next hop gets what is left
    /// (`grpc-timeout`), and a deadline already past fails the call at once with
    /// DEADLINE_EXCEEDED. Cancellation follows by itself: when the incoming call is cancelled its
    /// handler's future is dropped, and with it this call (its stream is reset).
    #[must_use]
    pub fn deadline(mut self, deadline: Option<tokio::time::Instant>) -> Self {
        if let Some(d) = deadline {
            let left = d.saturating_duration_since(tokio::time::Instant::now());
            // Never later than a timeout set before.
            self.timeout = Some(self.timeout.map_or(left, |t| t.min(left)));
        }
        self
    }

    /// Compresses this call's request messages with gzip (or not), whatever the client's default.
    pub fn set_compressed(&mut self, on: bool) {
        self.compress = Some(on);
    }

    /// This call's compression choice, if one was made.
    pub fn compressed(&self) -> Option<bool> {
        self.compress
    }

    /// The message (or stream).
    pub fn get_ref(&self) -> &T {
        &self.message
    }

    /// The mutable message (or stream).
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.message
    }

    /// Takes the message (or stream), dropping the rest.
    pub fn into_inner(self) -> T {
        self.message
    }

    pub(crate) fn into_parts(self) -> (Parts, T) {
        let parts = Parts {
            metadata: self.metadata,
            timeout: self.timeout,
            compress: self.compress,
        };
        (parts, self.message)
    }
}

impl<T> From<T> for Request<T> {
    fn from(message: T) -> Self {
        Request::new(message)
    }
}

/// A request's settings without its message.
pub(crate) struct Parts {
    pub(crate) metadata: HeaderMap,
    pub(crate) timeout: Option<Duration>,
    pub(crate) compress: Option<bool>,
}

/// What a client- or bidi-streaming call accepts: a stream of messages, or a [`Request`] holding
/// one (to add metadata, a timeout or compression).
pub trait IntoStreamingRequest {
    /// The message type.
    type Message;
    /// The stream of messages.
    type Stream: Stream<Item = Self::Message> + Send + 'static;
    /// The request.
    fn into_streaming_request(self) -> Request<Self::Stream>;
}

impl<S: Stream + Send + 'static> IntoStreamingRequest for S {
    type Message = S::Item;
    type Stream = S;
    fn into_streaming_request(self) -> Request<S> {
        Request::new(self)
    }
}

impl<S: Stream + Send + 'static> IntoStreamingRequest for Request<S> {
    type Message = S::Item;
    type Stream = S;
    fn into_streaming_request(self) -> Request<S> {
        self
    }
}

/// A typed call's output: the reply (or reply stream), the response headers, and for unary and
/// client-streaming calls the trailers (a stream's are on its [`crate::Streaming`]).
#[derive(Debug)]
pub struct Response<T> {
    metadata: HeaderMap,
    trailers: HeaderMap,
    message: T,
}

impl<T> Response<T> {
    pub(crate) fn from_parts(metadata: HeaderMap, message: T, trailers: HeaderMap) -> Self {
        Response {
            metadata,
            trailers,
            message,
        }
    }

    /// The response headers (initial metadata).
    pub fn metadata(&self) -> &HeaderMap {
        &self.metadata
    }

    /// The trailing metadata, `grpc-status` included (empty for streams: see
    /// [`crate::Streaming::trailers`]).
    pub fn trailers(&self) -> &HeaderMap {
        &self.trailers
    }

    /// The reply (or reply stream).
    pub fn get_ref(&self) -> &T {
        &self.message
    }

    /// The mutable reply (or reply stream).
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.message
    }

    /// Takes the reply (or reply stream).
    pub fn into_inner(self) -> T {
        self.message
    }

    /// Headers, reply and trailers.
    pub fn into_parts(self) -> (HeaderMap, T, HeaderMap) {
        (self.metadata, self.message, self.trailers)
    }
}
