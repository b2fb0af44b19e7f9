//! Calls on a server with interceptors: the chain runs over the call's head before any of its
//! body is read, then the protocol's adapter serves it as on any server, and the response leaves
//! with the interceptors' headers, trailers and end guard (which counts what is sent and runs
//! their `on_end` when the body is done).
//!
//! Like [`super::serve`], not `async`: a chain whose interceptors all decide at once
//! ([`Interceptor::on_call_now`](crate::intercept::Interceptor::on_call_now)) is run before any
//! future exists, and the call is the adapter's own boxed future with its finish mapped on.
//! Only a chain with an interceptor that waits gets a future of its own around the adapter's.

use std::sync::Arc;

use futures_util::FutureExt;
#[cfg(feature = "web")]
use http::HeaderName;
use http::{HeaderMap, StatusCode};
use tokio::time::Instant;
use volley_wire::{
    Code, Status,
    names::{GRPC_STATUS, GRPC_TIMEOUT},
    timeout::parse_grpc_timeout,
};

use super::{
    adapter::{Way, adapter},
    grpc,
};
#[cfg(feature = "web")]
use super::{connect, rest};
use crate::{
    body::{HttpResponse, RequestBody, trailers_only},
    deadline::connect_timeout,
    handler::BoxFuture,
    intercept::{
        Admission, Call, CallInfo, CallProtocol, EndGuard, MethodInfo, Peer, Record, share,
    },
    route::{Envelope, Shared},
};

/// Serves one call through its interceptors (a method without any is served directly).
pub(crate) fn serve(
    shared: Arc<Shared>,
    peer: &Arc<Peer>,
    req: http::Request<RequestBody>,
    way: Way,
) -> BoxFuture<HttpResponse> {
    let started = crate::intercept::now();
    let path = match &way {
        #[cfg(feature = "web")]
        Way::Rest { route, .. } => shared.rest[*route].grpc_path.as_str(),
        _ => req.uri().path(),
    };
    let route = shared.router.get(path);
    let chain = match route {
        Some(r) => r.chain.clone(),
        None => shared.chain.clone(),
    };
    let Some(chain) = chain else {
        return adapter(&shared, peer, req, way);
    };
    let method = match route {
        Some(r) => r.method.clone(),
        None => Arc::new(MethodInfo::unknown(path, chain.len())),
    };
    let (protocol, deadline) = facts(&way, req.headers());
    let (mut parts, body) = req.into_parts();
    // The call's one allocation: what the interceptors see, then what its end counts and
    // reports.
    let mut record = Arc::new(Record::new(
        chain,
        Call::new(
            CallInfo::new(method, peer, protocol, deadline),
            std::mem::take(&mut parts.headers),
            std::mem::take(&mut parts.extensions),
        ),
        started,
    ));
    let mut request = Held { parts, body, way };
    let (chain, call) = Record::unshared(&mut record);
    match chain.admit_now(call) {
        Admission::Decided(verdict) => {
            let added = request.take_back(call);
            respond(shared, record, request, added, verdict)
        }
        Admission::Waiting(from) => {
            Box::pin(admit_then_respond(shared, record, Box::new(request), from))
        }
    }
}

/// A call whose interceptor `from` has to wait: the rest of the chain, then the call.
async fn admit_then_respond(
    shared: Arc<Shared>,
    mut record: Arc<Record>,
    mut request: Box<Held>,
    from: usize,
) -> HttpResponse {
    let (chain, call) = Record::unshared(&mut record);
    let verdict = chain.admit_from(call, from).await;
    let added = request.take_back(call);
    respond(shared, record, *request, added, verdict).await
}

/// The request while its interceptors run (boxed if they wait: the future that waits is then
/// small).
struct Held {
    parts: http::request::Parts,
    body: RequestBody,
    way: Way,
}

/// The response headers and trailers interceptors added, boxed (`None` in the common call whose
/// interceptors add none).
type Added = Option<Box<(HeaderMap, HeaderMap)>>;

impl Held {
    /// Takes the request's metadata and extensions back from the interceptors' call, and what
    /// they added to the response.
    fn take_back(&mut self, call: &mut Call) -> Added {
        (self.parts.headers, self.parts.extensions) = call.take_request();
        let added = call.take_response();
        (!added.0.is_empty() || !added.1.is_empty()).then(|| Box::new(added))
    }
}

/// Serves an admitted call with its adapter (or answers a refused one), and finishes the
/// response with the interceptors' headers, trailers and end guard.
fn respond(
    shared: Arc<Shared>,
    record: Arc<Record>,
    request: Held,
    added: Added,
    verdict: Result<(), Status>,
) -> BoxFuture<HttpResponse> {
    let Held { parts, body, way } = request;
    let finish = match &way {
        Way::Framed { env, json } => Finish::Framed(*env, *json),
        #[cfg(feature = "web")]
        Way::ConnectPost { .. } | Way::ConnectGet => Finish::Connect,
        #[cfg(feature = "web")]
        Way::Rest { .. } => Finish::Rest,
    };
    let (tally, guard) = share(record);
    match verdict {
        Err(status) => {
            // The body is dropped unread: a refused upload costs what arrived before the verdict.
            drop((body, tally));
            guard.set_status(Some(status.clone()));
            let resp = refusal(finish, &status);
            Box::pin(std::future::ready(complete(resp, finish, guard, added)))
        }
        Ok(()) => match way {
            Way::Framed { env, json } => {
                let req = http::Request::from_parts(parts, body);
                let answer = grpc::answer(&shared, guard.peer(), req, env, json, Some(tally));
                // One box: the adapter's future with the finish mapped on.
                Box::pin(answer.map(move |resp| complete(resp, finish, guard, added)))
            }
            #[cfg(feature = "web")]
            _ => {
                // Connect unary and REST read the whole body at once: they count it into the
                // tally they find here.
                let mut parts = parts;
                parts.extensions.insert(tally);
                let req = http::Request::from_parts(parts, body);
                let served = adapter(&shared, guard.peer(), req, way);
                Box::pin(served.map(move |resp| complete(resp, finish, guard, added)))
            }
        },
    }
}

/// Gives a served call's response the interceptors' headers and trailers, reads its status, and
/// hands the guard to its body.
fn complete(mut resp: HttpResponse, finish: Finish, guard: EndGuard, added: Added) -> HttpResponse {
    let (response_headers, response_trailers) = match added {
        Some(added) => *added,
        None => Default::default(),
    };
    if !response_headers.is_empty() {
        resp.headers_mut().extend(response_headers);
    }
    match finish {
        Finish::Framed(env, json) => {
            if resp.status() != StatusCode::OK {
                guard.set_status(Some(http_status(resp.status())));
            } else if resp.headers().contains_key(GRPC_STATUS) {
                guard.status_from(resp.headers());
                resp.headers_mut().extend(response_trailers);
            } else if !response_trailers.is_empty() {
                resp.body_mut().extend_trailers(response_trailers);
            }
            resp.body_mut().watch(guard);
            grpc::shape(resp, env, json)
        }
        #[cfg(feature = "web")]
        Finish::Connect | Finish::Rest => {
            let failed = resp.extensions_mut().remove::<Status>();
            guard.unprefixed(failed.is_none());
            guard.set_status(failed);
            if let Finish::Connect = finish {
                connect_trailers(resp.headers_mut(), response_trailers);
            }
            resp.body_mut().watch(guard);
            resp
        }
    }
}

/// The protocol and deadline interceptors are told of.
fn facts(way: &Way, headers: &HeaderMap) -> (CallProtocol, Option<Instant>) {
    let connect_deadline = || connect_timeout(headers).ok().flatten();
    match way {
        Way::Framed {
            env: Envelope::Grpc,
            ..
        } => (CallProtocol::Grpc, grpc_deadline(headers)),
        Way::Framed {
            env: Envelope::Web { .. },
            ..
        } => (CallProtocol::GrpcWeb, grpc_deadline(headers)),
        Way::Framed {
            env: Envelope::Connect,
            ..
        } => (CallProtocol::Connect, connect_deadline()),
        #[cfg(feature = "web")]
        Way::ConnectPost { .. } | Way::ConnectGet => (CallProtocol::Connect, connect_deadline()),
        #[cfg(feature = "web")]
        Way::Rest { .. } => (CallProtocol::Rest, connect_deadline()),
    }
}

/// `grpc-timeout` as an instant (a malformed one is refused later, by the adapter).
fn grpc_deadline(headers: &HeaderMap) -> Option<Instant> {
    let d = parse_grpc_timeout(headers.get(GRPC_TIMEOUT)?.as_bytes())?;
    Some(Instant::now() + d)
}

/// The answer to a call an interceptor refused, in the call's protocol.
fn refusal(finish: Finish, status: &Status) -> HttpResponse {
    match finish {
        Finish::Framed(..) => trailers_only(status),
        #[cfg(feature = "web")]
        Finish::Connect => connect::error_response(status, None),
        #[cfg(feature = "web")]
        Finish::Rest => rest::error_response(status),
    }
}

/// How a call's response is finished: the part of its [`Way`] kept once the way has gone to the
/// adapter.
#[derive(Clone, Copy)]
enum Finish {
    Framed(Envelope, bool),
    #[cfg(feature = "web")]
    Connect,
    #[cfg(feature = "web")]
    Rest,
}

/// Interceptors' trailers on a Connect unary response: `trailer-` headers.
#[cfg(feature = "web")]
fn connect_trailers(headers: &mut HeaderMap, trailers: HeaderMap) {
    for (k, v) in &trailers {
        if let Ok(name) = HeaderName::from_bytes(format!("trailer-{}", k.as_str()).as_bytes()) {
            headers.append(name, v.clone());
        }
    }
}

/// The gRPC status of a plain-HTTP refusal, by gRPC's HTTP-to-status mapping.
fn http_status(code: StatusCode) -> Status {
    Status::new(
        Code::from_http_status(code.as_u16()),
        format!("HTTP {code}"),
    )
}

#[cfg(test)]
mod tests {
    /// A call whose interceptor waits is one small future around the adapter's: the request
    /// and the record are boxed, not carried inline (a future is copied when it is boxed).
    #[test]
    fn the_waiting_call_future_stays_small() {
        use super::*;
        use crate::intercept::{Chain, Interceptor, Registered};
        struct Waits;
        impl Interceptor for Waits {
            async fn on_call(&self, _: &mut Call) -> Result<(), Status> {
                Ok(())
            }
        }
        let shared = Arc::new(crate::route::Shared::empty());
        let chain = Chain::of(&[Registered::new(Waits)], &[]).expect("one interceptor");
        let peer = Arc::new(Peer::new(
            Some(([127, 0, 0, 1], 1).into()),
            false,
            Vec::new(),
        ));
        let info = CallInfo::new(
            Arc::new(MethodInfo::unknown("/a.B/C", 1)),
            &peer,
            CallProtocol::Grpc,
            None,
        );
        let call = Call::new(info, HeaderMap::new(), http::Extensions::new());
        let record = Arc::new(Record::new(chain, call, crate::intercept::now()));
        let (parts, body) = http::Request::new(RequestBody::ended()).into_parts();
        let request = Box::new(Held {
            parts,
            body,
            way: Way::Framed {
                env: Envelope::Grpc,
                json: false,
            },
        });
        let f = admit_then_respond(shared, record, request, 0);
        let size = std::mem::size_of_val(&f);
        assert!(size <= 160, "the waiting call's future is {size} bytes");
    }
}
