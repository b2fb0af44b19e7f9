//! Default answers for the methods of services loaded at run time (a default message of the
//! output type: one for unary and client-streaming methods, N for server-streaming ones, N per
//! request for bidi ones), and the descriptors and services of `--proto`/`--protoset` files.

use std::{path::PathBuf, time::Duration};

use futures_util::StreamExt;
use prost_reflect::{DescriptorPool, DynamicMessage, MethodDescriptor};
use volley_server::{
    DynamicFuture, DynamicHandler, DynamicStream, Request, Response, Service, Status,
};

use crate::MockError;

/// Answers every method with default messages, after `delay`.
#[derive(Clone)]
pub struct Defaults {
    /// Messages per server stream (and per request on a bidi stream).
    pub stream_messages: usize,
    /// Added before each reply (`volley serve --delay`).
    pub delay: Duration,
}

fn default_of(method: &MethodDescriptor) -> DynamicMessage {
    DynamicMessage::new(method.output())
}

impl DynamicHandler for Defaults {
    fn unary(
        &self,
        method: &MethodDescriptor,
        _: Request<DynamicMessage>,
    ) -> DynamicFuture<Result<Response<DynamicMessage>, Status>> {
        let (reply, delay) = (default_of(method), self.delay);
        Box::pin(async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            Ok(Response::new(reply))
        })
    }

    fn server_streaming(
        &self,
        method: &MethodDescriptor,
        _: Request<DynamicMessage>,
    ) -> DynamicFuture<Result<Response<DynamicStream>, Status>> {
        let (reply, n, delay) = (default_of(method), self.stream_messages, self.delay);
        Box::pin(async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            let s: DynamicStream = Box::pin(futures_util::stream::iter(
                std::iter::repeat_n(reply, n).map(Ok),
            ));
            Ok(Response::new(s))
        })
    }

    fn client_streaming(
        &self,
        method: &MethodDescriptor,
        request: Request<DynamicStream>,
    ) -> DynamicFuture<Result<Response<DynamicMessage>, Status>> {
        let (reply, delay) = (default_of(method), self.delay);
        let mut requests = request.into_inner();
        Box::pin(async move {
            while let Some(r) = requests.next().await {
                r?;
            }
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            Ok(Response::new(reply))
        })
    }

    fn bidi_streaming(
        &self,
        method: &MethodDescriptor,
        request: Request<DynamicStream>,
    ) -> DynamicFuture<Result<Response<DynamicStream>, Status>> {
        let (reply, n) = (default_of(method), self.stream_messages);
        let replies: DynamicStream = Box::pin(request.into_inner().flat_map(move |r| {
            let out: Vec<Result<DynamicMessage, Status>> = match r {
                Ok(_) => std::iter::repeat_n(reply.clone(), n).map(Ok).collect(),
                Err(e) => vec![Err(e)],
            };
            futures_util::stream::iter(out)
        }));
        Box::pin(std::future::ready(Ok(Response::new(replies))))
    }
}

/// The descriptors of `protos` (compiled with `import_paths`) and `protosets`.
pub fn pools(
    protos: &[PathBuf],
    import_paths: &[PathBuf],
    protosets: &[PathBuf],
) -> Result<Vec<DescriptorPool>, MockError> {
    let mut pools: Vec<DescriptorPool> = Vec::new();
    for p in protos {
        pools.push(volley_proto::load::compile_proto(p, import_paths)?);
    }
    for p in protosets {
        pools.push(volley_proto::load::load_protoset(p)?);
    }
    Ok(pools)
}

/// The services of `pools`, each served by `handler`.
pub fn services<H: DynamicHandler + Clone>(
    pools: &[DescriptorPool],
    protos: &[PathBuf],
    protosets: &[PathBuf],
    handler: &H,
) -> Result<Vec<Service>, MockError> {
    let mut out = Vec::new();
    let mut names = std::collections::HashSet::new();
    for pool in pools {
        for s in pool.services() {
            if names.insert(s.full_name().to_owned()) {
                out.push(Service::dynamic(&s, handler.clone()));
            }
        }
    }
    if out.is_empty() && !(protos.is_empty() && protosets.is_empty()) {
        let given: Vec<String> = protos
            .iter()
            .chain(protosets)
            .map(|p| p.display().to_string())
            .collect();
        return Err(MockError::NoService(given.join(", ")));
    }
    Ok(out)
}
