//! `grpc.health.v1.Health` as GripMock serves it: stubs for it answer first; without one, the
//! server's own answer (SERVING for `""`, the served services and `gripmock`; NOT_FOUND
//! `unknown service` for others). `gripmock` is GripMock's reserved name for the server itself:
//! it answers SERVING once the server is up, whatever the stubs say (`gripmock check` polls it).

use std::{collections::HashSet, sync::Arc};

use prost_reflect::{DescriptorPool, DynamicMessage, MethodDescriptor, ServiceDescriptor, Value};
use volley_server::{DynamicFuture, DynamicHandler, DynamicStream, Request, Response, Status};

use crate::stubs::Stubs;

/// The service's full name.
pub const SERVICE: &str = "grpc.health.v1.Health";

/// The descriptors of the health service (and of reflection), as volley-server serves them.
pub fn pool() -> DescriptorPool {
    DescriptorPool::decode(volley_proto::pb::FILE_DESCRIPTOR_SET)
        .expect("the framework's descriptors decode")
}

/// The health service's descriptor in `pool`.
pub fn descriptor(pool: &DescriptorPool) -> Option<ServiceDescriptor> {
    pool.get_service_by_name(SERVICE)
}

/// Health answers: stubs first, then the served names.
#[derive(Clone)]
pub struct Health {
    stubs: Stubs,
    served: Arc<HashSet<String>>,
}

impl Health {
    /// Answers for `served` (service full names), with `stubs` first.
    pub fn new(stubs: Stubs, served: impl IntoIterator<Item = String>) -> Health {
        let mut names: HashSet<String> = served.into_iter().collect();
        names.extend(["".to_owned(), "gripmock".to_owned(), SERVICE.to_owned()]);
        Health {
            stubs,
            served: Arc::new(names),
        }
    }

    /// The name the request asks about.
    fn asked(req: &DynamicMessage) -> String {
        match req.get_field_by_name("service").as_deref() {
            Some(Value::String(s)) => s.clone(),
            _ => String::new(),
        }
    }

    /// The server's own answer: `{status: SERVING}` or NOT_FOUND.
    fn own(
        &self,
        method: &MethodDescriptor,
        req: &DynamicMessage,
    ) -> Result<DynamicMessage, Status> {
        if !self.served.contains(&Self::asked(req)) {
            return Err(Status::not_found("unknown service"));
        }
        let mut reply = DynamicMessage::new(method.output());
        // ServingStatus.SERVING
        reply.set_field_by_name("status", Value::EnumNumber(1));
        Ok(reply)
    }
}

impl DynamicHandler for Health {
    fn unary(
        &self,
        method: &MethodDescriptor,
        request: Request<DynamicMessage>,
    ) -> DynamicFuture<Result<Response<DynamicMessage>, Status>> {
        let request = if Self::asked(request.get_ref()) == "gripmock" {
            request
        } else {
            match self.stubs.try_unary(method, request) {
                Ok(answer) => return answer,
                Err(missed) => missed.0,
            }
        };
        let reply = self.own(method, request.get_ref()).map(Response::new);
        Box::pin(std::future::ready(reply))
    }

    fn server_streaming(
        &self,
        method: &MethodDescriptor,
        request: Request<DynamicMessage>,
    ) -> DynamicFuture<Result<Response<DynamicStream>, Status>> {
        let request = if Self::asked(request.get_ref()) == "gripmock" {
            request
        } else {
            match self.stubs.try_server_streaming(method, request) {
                Ok(answer) => return answer,
                Err(missed) => missed.0,
            }
        };
        let reply = self.own(method, request.get_ref()).map(|m| {
            use futures_util::StreamExt;
            // Watch: the status now, then the stream stays open (the status does not change).
            let s: DynamicStream = Box::pin(
                futures_util::stream::once(std::future::ready(Ok(m)))
                    .chain(futures_util::stream::pending()),
            );
            Response::new(s)
        });
        Box::pin(std::future::ready(reply))
    }

    fn client_streaming(
        &self,
        method: &MethodDescriptor,
        request: Request<DynamicStream>,
    ) -> DynamicFuture<Result<Response<DynamicMessage>, Status>> {
        self.stubs.client_streaming(method, request)
    }

    fn bidi_streaming(
        &self,
        method: &MethodDescriptor,
        request: Request<DynamicStream>,
    ) -> DynamicFuture<Result<Response<DynamicStream>, Status>> {
        self.stubs.bidi_streaming(method, request)
    }
}
