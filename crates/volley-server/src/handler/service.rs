//! `Service`: a named set of typed method handlers, erased once at registration to byte handlers.
//!
//! Each call costs one boxed future (the price of storing handlers of different types in one
//! router); decoding and encoding are monomorphised per method, so no other dispatch happens.
//! The adapters wrap the handler's future with `map`, not an `async` block: a block that awaits
//! a future it owns stores it twice.

use std::{future::Future, pin::Pin, sync::Arc};

use bytes::Bytes;
use futures_core::Stream;
use futures_util::{FutureExt, StreamExt};
use prost::Message;

use volley_wire::{IntoFrame, Status};

use super::{Request, Response};
use crate::{
    body::{FrameStream, RawStreaming, Streaming},
    intercept::{Interceptor, MethodKind, Registered},
};

pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

type UnaryFn = dyn Fn(Request<Bytes>) -> BoxFuture<Result<Response<Bytes>, Status>> + Send + Sync;
type ServerStreamFn =
    dyn Fn(Request<Bytes>) -> BoxFuture<Result<Response<FrameStream>, Status>> + Send + Sync;
type ClientStreamFn =
    dyn Fn(Request<RawStreaming>) -> BoxFuture<Result<Response<Bytes>, Status>> + Send + Sync;
type BidiFn =
    dyn Fn(Request<RawStreaming>) -> BoxFuture<Result<Response<FrameStream>, Status>> + Send + Sync;

/// A method handler with its call kind; bytes in, encoded frames out.
#[derive(Clone)]
pub(crate) enum Handler {
    Unary(Arc<UnaryFn>),
    ServerStreaming(Arc<ServerStreamFn>),
    ClientStreaming(Arc<ClientStreamFn>),
    Bidi(Arc<BidiFn>),
}

impl Handler {
    /// The method kind this handler serves.
    pub(crate) fn kind(&self) -> MethodKind {
        match self {
            Handler::Unary(_) => MethodKind::Unary,
            Handler::ServerStreaming(_) => MethodKind::ServerStreaming,
            Handler::ClientStreaming(_) => MethodKind::ClientStreaming,
            Handler::Bidi(_) => MethodKind::BidiStreaming,
        }
    }
}

/// A gRPC service: its fully-qualified name and its methods.
pub struct Service {
    pub(crate) name: String,
    pub(crate) methods: Vec<(String, Handler)>,
    /// Encoded `FileDescriptorSet`s describing the service, added to the server's descriptors.
    pub(crate) descriptors: Vec<Bytes>,
    /// This service's own interceptors, run after the server's.
    pub(crate) interceptors: Vec<Registered>,
}

impl Service {
    /// Starts a service named `name` (fully qualified: `package.Service`).
    pub fn builder(name: impl Into<String>) -> ServiceBuilder {
        ServiceBuilder {
            service: Service {
                name: name.into(),
                methods: Vec::new(),
                descriptors: Vec::new(),
                interceptors: Vec::new(),
            },
        }
    }

    /// The fully-qualified service name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Adds an interceptor for this service's calls to a built service (a generated one:
    /// `Service::from(GreeterServer::new(g)).intercept(auth)`); see
    /// [`ServiceBuilder::intercept`].
    #[must_use]
    pub fn intercept(mut self, interceptor: impl Interceptor) -> Self {
        self.interceptors.push(Registered::new(interceptor));
        self
    }
}

/// Adds methods to a [`Service`].
#[must_use]
pub struct ServiceBuilder {
    service: Service,
}

fn decode<M: Message + Default>(req: Request<Bytes>) -> Result<Request<M>, Status> {
    req.try_map(|b| {
        M::decode(b)
            .map_err(|e| Status::internal(format!("grpc: error unmarshalling request: {e}")))
    })
}

fn encode_stream<M, S>(s: S) -> FrameStream
where
    M: IntoFrame,
    S: Stream<Item = Result<M, Status>> + Send + 'static,
{
    Box::pin(s.map(|r| r.map(IntoFrame::into_frame)))
}

impl ServiceBuilder {
    /// Adds a method's erased handler (the dynamic services build theirs directly).
    #[cfg(feature = "dynamic")]
    pub(crate) fn handler(self, method: &str, h: Handler) -> Self {
        self.add(method, h)
    }

    fn add(mut self, method: &str, h: Handler) -> Self {
        self.service.methods.push((method.to_owned(), h));
        self
    }

    /// A unary method: one request, one reply.
    pub fn unary<Req, Resp, F, Fut>(self, method: &str, f: F) -> Self
    where
        Req: Message + Default + 'static,
        Resp: IntoFrame,
        F: Fn(Request<Req>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Response<Resp>, Status>> + Send + 'static,
    {
        let h = move |req: Request<Bytes>| -> BoxFuture<Result<Response<Bytes>, Status>> {
            match decode::<Req>(req) {
                Ok(req) => Box::pin(f(req).map(|r| r.map(|resp| resp.map(IntoFrame::into_frame)))),
                Err(e) => Box::pin(std::future::ready(Err(e))),
            }
        };
        self.add(method, Handler::Unary(Arc::new(h)))
    }

    /// A server-streaming method: one request, a stream of replies. The stream ends the call
    /// with its first `Err(status)`; an OK status there ends it successfully with the status's
    /// metadata as the call's trailers (a proxy's way to pass on trailers it learns at the end).
    pub fn server_streaming<Req, Resp, S, F, Fut>(self, method: &str, f: F) -> Self
    where
        Req: Message + Default + 'static,
        Resp: IntoFrame,
        S: Stream<Item = Result<Resp, Status>> + Send + 'static,
        F: Fn(Request<Req>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Response<S>, Status>> + Send + 'static,
    {
        let h = move |req: Request<Bytes>| -> BoxFuture<Result<Response<FrameStream>, Status>> {
            match decode::<Req>(req) {
                Ok(req) => Box::pin(f(req).map(|r| r.map(|resp| resp.map(encode_stream)))),
                Err(e) => Box::pin(std::future::ready(Err(e))),
            }
        };
        self.add(method, Handler::ServerStreaming(Arc::new(h)))
    }

    /// A client-streaming method: a stream of requests, one reply.
    pub fn client_streaming<Req, Resp, F, Fut>(self, method: &str, f: F) -> Self
    where
        Req: Message + Default + 'static,
        Resp: IntoFrame,
        F: Fn(Request<Streaming<Req>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Response<Resp>, Status>> + Send + 'static,
    {
        let h = move |req: Request<RawStreaming>| -> BoxFuture<Result<Response<Bytes>, Status>> {
            let fut = f(req.map(Streaming::new));
            Box::pin(fut.map(|r| r.map(|resp| resp.map(IntoFrame::into_frame))))
        };
        self.add(method, Handler::ClientStreaming(Arc::new(h)))
    }

    /// A bidirectional-streaming method: a stream of requests, a stream of replies.
    pub fn bidi_streaming<Req, Resp, S, F, Fut>(self, method: &str, f: F) -> Self
    where
        Req: Message + Default + 'static,
        Resp: IntoFrame,
        S: Stream<Item = Result<Resp, Status>> + Send + 'static,
        F: Fn(Request<Streaming<Req>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Response<S>, Status>> + Send + 'static,
    {
        let h =
            move |req: Request<RawStreaming>| -> BoxFuture<Result<Response<FrameStream>, Status>> {
                let fut = f(req.map(Streaming::new));
                Box::pin(fut.map(|r| r.map(|resp| resp.map(encode_stream))))
            };
        self.add(method, Handler::Bidi(Arc::new(h)))
    }

    /// Attaches an encoded `FileDescriptorSet` describing the service (generated services
    /// attach theirs): the server adds it to its descriptors, so reflection, Connect/JSON and
    /// REST rules (`google.api.http`) know the service without
    /// [`ServerBuilder::file_descriptor_set`](crate::ServerBuilder::file_descriptor_set).
    pub fn file_descriptor_set(mut self, fds: impl Into<Bytes>) -> Self {
        self.service.descriptors.push(fds.into());
        self
    }

    /// Adds an interceptor that sees this service's calls, after the server's own
    /// ([`ServerBuilder::intercept`](crate::ServerBuilder::intercept)); several run in the
    /// order they were added.
    pub fn intercept(mut self, interceptor: impl Interceptor) -> Self {
        self.service.interceptors.push(Registered::new(interceptor));
        self
    }

    /// The finished service.
    pub fn build(self) -> Service {
        self.service
    }
}
