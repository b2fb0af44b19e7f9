//! Services from descriptors loaded at run time: handlers over `prost_reflect::DynamicMessage`,
//! no generated code (seed 003's gRPCity model, and `volley serve --proto`). A dynamic service is
//! erased to the same byte handlers as a compiled one, so its calls go through the same adapters:
//! gRPC, gRPC-Web, Connect (JSON too) and REST rules, reflection and interceptors.

use std::{future::Future, pin::Pin, sync::Arc};

use bytes::Bytes;
use futures_core::Stream;
use futures_util::{FutureExt, StreamExt};
use prost_reflect::{DynamicMessage, MethodDescriptor, ServiceDescriptor};
use volley_wire::{IntoFrame, Status};

use super::{Request, Response, Service, service::Handler};
use crate::body::{FrameStream, RawStreaming};

/// A boxed future, as dynamic handlers return them.
pub type DynamicFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// A stream of dynamic messages: a client's requests, or a handler's replies.
pub type DynamicStream = Pin<Box<dyn Stream<Item = Result<DynamicMessage, Status>> + Send>>;

/// Handles the calls of a service known only by its descriptor. Each method receives the
/// method's descriptor, so one handler can serve any service.
pub trait DynamicHandler: Send + Sync + 'static {
    /// One request, one reply.
    fn unary(
        &self,
        method: &MethodDescriptor,
        request: Request<DynamicMessage>,
    ) -> DynamicFuture<Result<Response<DynamicMessage>, Status>>;

    /// One request, a stream of replies.
    fn server_streaming(
        &self,
        method: &MethodDescriptor,
        request: Request<DynamicMessage>,
    ) -> DynamicFuture<Result<Response<DynamicStream>, Status>>;

    /// A stream of requests, one reply.
    fn client_streaming(
        &self,
        method: &MethodDescriptor,
        request: Request<DynamicStream>,
    ) -> DynamicFuture<Result<Response<DynamicMessage>, Status>>;

    /// Streams both ways.
    fn bidi_streaming(
        &self,
        method: &MethodDescriptor,
        request: Request<DynamicStream>,
    ) -> DynamicFuture<Result<Response<DynamicStream>, Status>>;
}

fn decode_one(
    method: &MethodDescriptor,
    req: Request<Bytes>,
) -> Result<Request<DynamicMessage>, Status> {
    let input = method.input();
    req.try_map(|b| {
        DynamicMessage::decode(input, b)
            .map_err(|e| Status::internal(format!("grpc: error unmarshalling request: {e}")))
    })
}

/// The client's messages, decoded as `method`'s input type as they arrive.
fn decode_stream(method: &MethodDescriptor, mut raw: RawStreaming) -> DynamicStream {
    let input = method.input();
    Box::pin(futures_util::stream::poll_fn(move |cx| {
        raw.poll_message(cx).map(|next| {
            next.map(|r| {
                r.and_then(|b| {
                    DynamicMessage::decode(input.clone(), b).map_err(|e| {
                        Status::internal(format!(
                            "grpc: failed to unmarshal the received message: {e}"
                        ))
                    })
                })
            })
        })
    }))
}

fn frames(s: DynamicStream) -> FrameStream {
    Box::pin(s.map(|r| r.map(IntoFrame::into_frame)))
}

fn handler(method: MethodDescriptor, h: Arc<dyn DynamicHandler>) -> Handler {
    match (method.is_client_streaming(), method.is_server_streaming()) {
        (false, false) => Handler::Unary(Arc::new(move |req: Request<Bytes>| {
            match decode_one(&method, req) {
                Ok(req) => Box::pin(
                    h.unary(&method, req)
                        .map(|r| r.map(|resp| resp.map(IntoFrame::into_frame))),
                ) as DynamicFuture<_>,
                Err(e) => Box::pin(std::future::ready(Err(e))),
            }
        })),
        (false, true) => Handler::ServerStreaming(Arc::new(move |req: Request<Bytes>| {
            match decode_one(&method, req) {
                Ok(req) => Box::pin(
                    h.server_streaming(&method, req)
                        .map(|r| r.map(|resp| resp.map(frames))),
                ) as DynamicFuture<_>,
                Err(e) => Box::pin(std::future::ready(Err(e))),
            }
        })),
        (true, false) => Handler::ClientStreaming(Arc::new(move |req: Request<RawStreaming>| {
            let req = req.map(|raw| decode_stream(&method, raw));
            Box::pin(
                h.client_streaming(&method, req)
                    .map(|r| r.map(|resp| resp.map(IntoFrame::into_frame))),
            )
        })),
        (true, true) => Handler::Bidi(Arc::new(move |req: Request<RawStreaming>| {
            let req = req.map(|raw| decode_stream(&method, raw));
            Box::pin(
                h.bidi_streaming(&method, req)
                    .map(|r| r.map(|resp| resp.map(frames))),
            )
        })),
    }
}

impl Service {
    /// A service from its descriptor (loaded at run time: `volley_proto::load::compile_proto`,
    /// a protoset), every method served by `handler` over dynamic messages. Its descriptors go
    /// to the server with it, so reflection, Connect/JSON and REST rules know it.
    pub fn dynamic(service: &ServiceDescriptor, handler: impl DynamicHandler) -> Service {
        let h: Arc<dyn DynamicHandler> = Arc::new(handler);
        let mut builder = Service::builder(service.full_name());
        for method in service.methods() {
            builder = builder.handler(method.name(), self::handler(method.clone(), h.clone()));
        }
        builder
            .file_descriptor_set(service.parent_pool().encode_to_vec())
            .build()
    }
}
