//! The gateway's services: every method of the upstream's services, served by forwarding the
//! call as it came (its messages still encoded, [`Opaque`]) to the upstream, whichever protocol
//! the caller spoke; volley-server turned REST, Connect and gRPC-Web into that call, and turns
//! the upstream's answer back. Metadata crosses by [`headers`](crate::headers)' rules, the
//! caller's deadline goes up as the time left, and a caller that goes away drops the upstream
//! call, which cancels it.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use prost_reflect::{MethodDescriptor, ServiceDescriptor};
use volley_server::{Request, Response, Service, Streaming, intercept::CallProtocol};
use volley_wire::Status;

use crate::{
    headers::{passed_back, upstream_metadata},
    opaque::Opaque,
    upstream::Upstream,
};

/// The upstream's call for a caller's request: metadata by the caller's protocol, deadline as
/// the time left.
fn outgoing<T, U>(
    up: &Upstream,
    req: Request<T>,
    message: impl FnOnce(T) -> U,
) -> volley_client::Request<U> {
    let rest = req.call().protocol() == CallProtocol::Rest;
    let peer = req.remote_addr();
    let left = req.time_left();
    let (headers, m) = req.into_parts();
    let mut out = volley_client::Request::new(message(m));
    *out.metadata_mut() = if rest {
        up.rest_headers.metadata(&headers, peer)
    } else {
        upstream_metadata(&headers)
    };
    if let Some(t) = left {
        out.set_timeout(t);
    }
    out
}

/// The upstream's failure as the caller gets it: code, message and details as they came,
/// metadata but the protocol's own.
fn relayed(mut st: Status) -> Status {
    let md = passed_back(st.metadata());
    *st.metadata_mut() = md;
    st
}

/// A reply with the upstream's headers and trailers passed back.
fn answer<T>(headers: &http::HeaderMap, message: T, trailers: &http::HeaderMap) -> Response<T> {
    let mut r = Response::new(message);
    *r.metadata_mut() = passed_back(headers);
    *r.trailers_mut() = passed_back(trailers);
    r
}

/// The caller's messages, as the upstream's request stream. A caller's stream that fails never
/// ends cleanly upstream (it stays open until the caller's call is dropped, which cancels the
/// upstream call): the upstream must not take a broken stream for a whole one.
fn upward(requests: Streaming<Opaque>) -> impl Stream<Item = Opaque> + Send + 'static {
    futures_util::stream::unfold(requests, |mut requests| async move {
        match requests.next().await {
            Some(Ok(m)) => Some((m, requests)),
            Some(Err(_)) => std::future::pending().await,
            None => None,
        }
    })
}

/// The upstream's replies, as the caller's, each failure relayed. The upstream's trailers,
/// known only at the end, end the stream as an OK status carrying them (volley-server sends
/// its metadata as the call's trailers).
fn downward(
    replies: volley_client::Streaming<Opaque>,
) -> impl Stream<Item = Result<Opaque, Status>> + Send + 'static {
    futures_util::stream::unfold(Some(replies), |state| async move {
        let mut replies = state?;
        match replies.next().await {
            Some(Ok(m)) => Some((Ok(m), Some(replies))),
            Some(Err(st)) => Some((Err(relayed(st)), None)),
            None => {
                let trailers = passed_back(replies.trailers()?);
                if trailers.is_empty() {
                    return None;
                }
                let mut end = Status::new(volley_wire::Code::Ok, "");
                *end.metadata_mut() = trailers;
                Some((Err(end), None))
            }
        }
    })
}

/// Registers `method` on `builder`, forwarding to `up` at `path`.
fn method(
    builder: volley_server::ServiceBuilder,
    method: &MethodDescriptor,
    path: &'static str,
    up: &Arc<Upstream>,
) -> volley_server::ServiceBuilder {
    let up = up.clone();
    match (method.is_client_streaming(), method.is_server_streaming()) {
        (false, false) => builder.unary(method.name(), move |req: Request<Opaque>| {
            let up = up.clone();
            async move {
                let out = outgoing(&up, req, |m| m);
                let r = up.client().unary::<_, Opaque>(path, out).await;
                up.note(r.as_ref().map(|_| ()));
                let (h, m, t) = r.map_err(relayed)?.into_parts();
                Ok(answer(&h, m, &t))
            }
        }),
        (false, true) => builder.server_streaming(method.name(), move |req: Request<Opaque>| {
            let up = up.clone();
            async move {
                let out = outgoing(&up, req, |m| m);
                let r = up.client().server_streaming::<_, Opaque>(path, out).await;
                up.note(r.as_ref().map(|_| ()));
                let (h, replies, t) = r.map_err(relayed)?.into_parts();
                Ok(answer(&h, downward(replies), &t))
            }
        }),
        (true, false) => {
            builder.client_streaming(method.name(), move |req: Request<Streaming<Opaque>>| {
                let up = up.clone();
                async move {
                    let out = outgoing(&up, req, upward);
                    let r = up.client().client_streaming::<_, Opaque>(path, out).await;
                    up.note(r.as_ref().map(|_| ()));
                    let (h, m, t) = r.map_err(relayed)?.into_parts();
                    Ok(answer(&h, m, &t))
                }
            })
        }
        (true, true) => {
            builder.bidi_streaming(method.name(), move |req: Request<Streaming<Opaque>>| {
                let up = up.clone();
                async move {
                    let out = outgoing(&up, req, upward);
                    let r = up.client().streaming::<_, Opaque>(path, out).await;
                    up.note(r.as_ref().map(|_| ()));
                    let (h, replies, t) = r.map_err(relayed)?.into_parts();
                    Ok(answer(&h, downward(replies), &t))
                }
            })
        }
    }
}

/// `service` served by forwarding each of its methods to `up`; `descriptors` (the encoded
/// `FileDescriptorSet` of its pool) go with it, for reflection, Connect/JSON and REST rules.
pub(crate) fn service(
    service: &ServiceDescriptor,
    up: &Arc<Upstream>,
    descriptors: Bytes,
) -> Service {
    let mut builder = Service::builder(service.full_name());
    for m in service.methods() {
        // The client takes a `&'static str` path: made once per method, when the gateway
        // starts (or its descriptors are reloaded), never per call.
        let path: &'static str =
            Box::leak(format!("/{}/{}", service.full_name(), m.name()).into_boxed_str());
        builder = method(builder, &m, path, up);
    }
    builder.file_descriptor_set(descriptors).build()
}
