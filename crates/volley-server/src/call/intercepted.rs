//! Calls on a server with interceptors: the chain runs over the call's head before any of its
//! body is read, then the protocol's adapter serves it as on any server, and the response leaves
//! with the interceptors' headers, trailers and end guard (which counts what is sent and runs
//! their `on_end` when the body is done).

use std::sync::Arc;

use http::{HeaderMap, HeaderName, StatusCode};
use tokio::time::Instant;
use volley_wire::{
    Code, Status,
    names::{GRPC_STATUS, GRPC_TIMEOUT},
    timeout::parse_grpc_timeout,
};

use super::{Way, connect, grpc, rest};
use crate::{
    body::{HttpResponse, RequestBody, trailers_only},
    deadline::connect_timeout,
    intercept::{Call, CallInfo, CallProtocol, EndGuard, MethodInfo, Peer, Tally},
    route::{Envelope, Shared},
};

/// Serves one call through its interceptors (a method without any is served directly).
pub(crate) async fn serve(
    shared: Arc<Shared>,
    peer: Arc<Peer>,
    req: http::Request<RequestBody>,
    way: Way,
) -> HttpResponse {
    let started = Instant::now();
    let path = match &way {
        Way::Rest { route, .. } => shared.rest[*route].grpc_path.as_str(),
        _ => req.uri().path(),
    };
    let route = shared.router.get(path);
    let chain = match route {
        Some(r) => r.chain.clone(),
        None => shared.chain.clone(),
    };
    let Some(chain) = chain else {
        return serve_plainly(shared, &peer, req, way).await;
    };
    let method = match route {
        Some(r) => r.method.clone(),
        None => Arc::new(MethodInfo::unknown(path)),
    };
    let (protocol, deadline) = facts(&way, req.headers());
    let finish = match &way {
        Way::Framed { env, json } => Finish::Framed(*env, *json),
        Way::ConnectPost { .. } | Way::ConnectGet => Finish::Connect,
        Way::Rest { .. } => Finish::Rest,
    };
    let (mut parts, body) = req.into_parts();
    let mut call = Call::new(
        CallInfo::new(method, &peer, protocol, deadline),
        std::mem::take(&mut parts.headers),
        std::mem::take(&mut parts.extensions),
    );
    let verdict = chain.admit(&mut call).await;
    let (info, head) = call.into_parts();
    let tally = Arc::new(Tally::default());
    let mut guard = EndGuard::new(chain, info, started, tally.clone(), head.kept, head.ran);
    let mut resp = match verdict {
        Err(status) => {
            // The body is dropped unread: a refused upload costs what arrived before the verdict.
            drop(body);
            let resp = refusal(finish, &status);
            guard.set_status(Some(status));
            resp
        }
        Ok(()) => {
            parts.headers = head.metadata;
            parts.extensions = head.extensions;
            parts.extensions.insert(tally);
            let req = http::Request::from_parts(parts, body);
            match way {
                Way::Framed { env, json } => grpc::answer(&shared, &peer, req, env, json).await,
                _ => serve_plainly(shared, &peer, req, way).await,
            }
        }
    };
    resp.headers_mut().extend(head.response_headers);
    match finish {
        Finish::Framed(env, json) => {
            if resp.status() != StatusCode::OK {
                guard.set_status(Some(http_status(resp.status())));
            } else if resp.headers().contains_key(GRPC_STATUS) {
                guard.status_from(resp.headers());
                resp.headers_mut().extend(head.response_trailers);
            } else {
                resp.body_mut().extend_trailers(head.response_trailers);
            }
            resp.body_mut().watch(guard);
            grpc::shape(resp, env, json)
        }
        Finish::Connect | Finish::Rest => {
            let failed = resp.extensions_mut().remove::<Status>();
            guard.unprefixed(failed.is_none());
            guard.set_status(failed);
            if let Finish::Connect = finish {
                connect_trailers(resp.headers_mut(), head.response_trailers);
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
        }
        | Way::ConnectPost { .. }
        | Way::ConnectGet => (CallProtocol::Connect, connect_deadline()),
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
        Finish::Connect => connect::error_response(status, None),
        Finish::Rest => rest::error_response(status),
    }
}

/// How a call's response is finished: the part of its [`Way`] kept once the way has gone to the
/// adapter.
#[derive(Clone, Copy)]
enum Finish {
    Framed(Envelope, bool),
    Connect,
    Rest,
}

/// Serves a call with no interceptors of its own.
async fn serve_plainly(
    shared: Arc<Shared>,
    peer: &Arc<Peer>,
    req: http::Request<RequestBody>,
    way: Way,
) -> HttpResponse {
    match way {
        Way::Framed { env, json } => grpc::serve(&shared, peer, req, env, json).await,
        Way::ConnectPost { json } => connect::serve_unary(shared, peer.clone(), req, json).await,
        Way::ConnectGet => connect::serve_get(shared, peer.clone(), req).await,
        Way::Rest { route, vars } => rest::serve(shared, peer.clone(), req, route, vars).await,
    }
}

/// Interceptors' trailers on a Connect unary response: `trailer-` headers.
fn connect_trailers(headers: &mut HeaderMap, trailers: HeaderMap) {
    for (k, v) in &trailers {
        if let Ok(name) = HeaderName::from_bytes(format!("trailer-{}", k.as_str()).as_bytes()) {
            headers.append(name, v.clone());
        }
    }
}

/// The gRPC status of a plain-HTTP refusal, by gRPC's HTTP-to-status mapping.
fn http_status(code: StatusCode) -> Status {
    let grpc = match code.as_u16() {
        400 => Code::Internal,
        401 => Code::Unauthenticated,
        403 => Code::PermissionDenied,
        404 => Code::Unimplemented,
        429 | 502..=504 => Code::Unavailable,
        _ => Code::Unknown,
    };
    Status::new(grpc, format!("HTTP {code}"))
}
