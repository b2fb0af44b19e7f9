//! `connectrpc.conformance.v1.ConformanceService` on volley-server: each call echoes what the
//! server observed (headers, timeout, requests, Connect GET query) and answers as the request's
//! response definition says (data, headers, trailers, delay, error with details).
//!
//! The behaviour follows the suite's `docs/testing_servers.md` and its Go reference server.

use std::time::Duration;

use futures_util::{Stream, StreamExt, stream};
use http::{HeaderMap, HeaderName, HeaderValue};
use prost::Name;
use tokio::sync::mpsc;
use volley_server::{
    Code, ConnectGetQuery, Request, Response, Service, Status, Streaming, transcode::query_pairs,
};

use crate::pb::{
    BidiStreamRequest, BidiStreamResponse, ClientStreamRequest, ClientStreamResponse,
    ConformancePayload, Error, Header, IdempotentUnaryRequest, IdempotentUnaryResponse,
    ServerStreamRequest, ServerStreamResponse, StreamResponseDefinition, UnaryRequest,
    UnaryResponse, UnaryResponseDefinition, conformance_payload::ConnectGetInfo,
    conformance_payload::RequestInfo, unary_response_definition,
};

/// The service's full name.
pub const NAME: &str = "connectrpc.conformance.v1.ConformanceService";

/// The service, with every method but `Unimplemented` (which must answer UNIMPLEMENTED).
pub fn service() -> Service {
    Service::builder(NAME)
        .unary("Unary", |req: Request<UnaryRequest>| async move {
            let info = observe(&req, vec![any(req.get_ref())]);
            let def = req.into_inner().response_definition;
            let reply = unary_reply(def, info).await?;
            Ok(reply.map(|payload| UnaryResponse { payload }))
        })
        .unary(
            "IdempotentUnary",
            |req: Request<IdempotentUnaryRequest>| async move {
                let info = observe(&req, vec![any(req.get_ref())]);
                let def = req.into_inner().response_definition;
                let reply = unary_reply(def, info).await?;
                Ok(reply.map(|payload| IdempotentUnaryResponse { payload }))
            },
        )
        .client_streaming(
            "ClientStream",
            |req: Request<Streaming<ClientStreamRequest>>| async move {
                let mut info = observe(&req, Vec::new());
                let mut def = None;
                let mut stream = req.into_inner();
                while let Some(m) = stream.message().await? {
                    if info.requests.is_empty() {
                        def = m.response_definition.clone();
                    }
                    info.requests.push(any(&m));
                }
                let reply = unary_reply(def, info).await?;
                Ok(reply.map(|payload| ClientStreamResponse { payload }))
            },
        )
        .server_streaming(
            "ServerStream",
            |req: Request<ServerStreamRequest>| async move {
                let info = observe(&req, vec![any(req.get_ref())]);
                let def = req.into_inner().response_definition.unwrap_or_default();
                Ok(server_stream_reply(def, info))
            },
        )
        .bidi_streaming("BidiStream", bidi)
        .build()
}

fn any<M: Name>(m: &M) -> prost_types::Any {
    prost_types::Any::from_msg(m).expect("encoding into a Vec cannot fail")
}

/// What the server saw: headers, time left before the deadline, the Connect GET query, and
/// the requests so far.
fn observe<T>(req: &Request<T>, requests: Vec<prost_types::Any>) -> RequestInfo {
    RequestInfo {
        request_headers: to_headers(req.metadata()),
        timeout_ms: req.time_left().map(|d| d.as_millis() as i64),
        requests,
        connect_get_info: req
            .extensions()
            .get::<ConnectGetQuery>()
            .map(|q| ConnectGetInfo {
                query_params: query_headers(&q.0),
            }),
    }
}

fn to_headers(map: &HeaderMap) -> Vec<Header> {
    map.keys()
        .map(|k| Header {
            name: k.as_str().to_owned(),
            value: map
                .get_all(k)
                .iter()
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                .collect(),
        })
        .collect()
}

/// Query parameters as headers: one entry per name, values in order.
fn query_headers(q: &str) -> Vec<Header> {
    let mut out: Vec<Header> = Vec::new();
    for (k, v) in query_pairs(q) {
        match out.iter_mut().find(|h| h.name == k) {
            Some(h) => h.value.push(v),
            None => out.push(Header {
                name: k,
                value: vec![v],
            }),
        }
    }
    out
}

fn add_headers(map: &mut HeaderMap, headers: &[Header]) {
    for h in headers {
        let Ok(name) = HeaderName::from_bytes(h.name.to_ascii_lowercase().as_bytes()) else {
            continue;
        };
        for v in &h.value {
            if let Ok(v) = HeaderValue::from_str(v) {
                map.append(name.clone(), v);
            }
        }
    }
}

/// The error a definition asks for, with `info` appended to its details when given.
fn error_status(e: &Error, info: Option<RequestInfo>) -> Status {
    let mut details = e.details.clone();
    details.extend(info.as_ref().map(any));
    Status::with_details(
        Code::from_i32(e.code),
        e.message.clone().unwrap_or_default(),
        details,
    )
}

/// Unary and client-stream replies: the payload after the delay, or the error (carrying the
/// headers and trailers as its metadata: an error reply does not separate them).
async fn unary_reply(
    def: Option<UnaryResponseDefinition>,
    info: RequestInfo,
) -> Result<Response<Option<ConformancePayload>>, Status> {
    let Some(def) = def else {
        return Ok(Response::new(Some(ConformancePayload {
            data: Vec::new(),
            request_info: Some(info),
        })));
    };
    let data = match def.response {
        Some(unary_response_definition::Response::Error(e)) => {
            let mut status = error_status(&e, Some(info));
            add_headers(status.metadata_mut(), &def.response_headers);
            add_headers(status.metadata_mut(), &def.response_trailers);
            return Err(status);
        }
        Some(unary_response_definition::Response::ResponseData(d)) => d,
        None => Vec::new(),
    };
    tokio::time::sleep(Duration::from_millis(def.response_delay_ms.into())).await;
    let mut resp = Response::new(Some(ConformancePayload {
        data,
        request_info: Some(info),
    }));
    add_headers(resp.metadata_mut(), &def.response_headers);
    add_headers(resp.trailers_mut(), &def.response_trailers);
    Ok(resp)
}

fn payload(data: Vec<u8>, info: Option<RequestInfo>) -> Option<ConformancePayload> {
    Some(ConformancePayload {
        data,
        request_info: info,
    })
}

/// Server-stream replies: headers now, each message after the delay (the first one carrying the
/// request info), then the error if one is defined.
fn server_stream_reply(
    def: StreamResponseDefinition,
    info: RequestInfo,
) -> Response<impl Stream<Item = Result<ServerStreamResponse, Status>> + Send + 'static> {
    let delay = Duration::from_millis(def.response_delay_ms.into());
    let no_data = def.response_data.is_empty();
    let first_info = info.clone();
    let messages =
        stream::iter(def.response_data.into_iter().enumerate()).then(move |(i, data)| {
            let info = (i == 0).then(|| first_info.clone());
            async move {
                tokio::time::sleep(delay).await;
                Ok(ServerStreamResponse {
                    payload: payload(data, info),
                })
            }
        });
    let error = def
        .error
        .map(|e| Err(error_status(&e, no_data.then_some(info))));
    let mut resp = Response::new(messages.chain(stream::iter(error)));
    add_headers(resp.metadata_mut(), &def.response_headers);
    add_headers(resp.trailers_mut(), &def.response_trailers);
    resp
}

type BidiItem = Result<BidiStreamResponse, Status>;

/// Bidi: the first request's definition says full or half duplex. Full duplex answers one
/// message per request as they arrive; half duplex reads every request first.
async fn bidi(
    req: Request<Streaming<BidiStreamRequest>>,
) -> Result<Response<impl Stream<Item = BidiItem> + Send + 'static>, Status> {
    let info = observe(&req, Vec::new());
    let mut requests = req.into_inner();
    let (tx, rx) = mpsc::channel::<BidiItem>(1);
    let replies = stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|m| (m, rx)) });
    let Some(first) = requests.message().await? else {
        return Ok(Response::new(replies));
    };
    let def = first.response_definition.clone().unwrap_or_default();
    let full_duplex = first.full_duplex;
    let mut seen = vec![any(&first)];
    if !full_duplex {
        while let Some(m) = requests.message().await? {
            seen.push(any(&m));
        }
    }
    let mut resp = Response::new(replies);
    add_headers(resp.metadata_mut(), &def.response_headers);
    add_headers(resp.trailers_mut(), &def.response_trailers);
    tokio::spawn(async move {
        let delay = Duration::from_millis(def.response_delay_ms.into());
        let data = def.response_data;
        let mut sent = 0;
        let reply = |sent: usize, seen: &mut Vec<prost_types::Any>, full_info: bool| {
            let requests = std::mem::take(seen);
            let info = if full_info {
                RequestInfo {
                    requests,
                    ..info.clone()
                }
            } else {
                RequestInfo {
                    requests,
                    ..Default::default()
                }
            };
            BidiStreamResponse {
                payload: payload(data[sent].clone(), Some(info)),
            }
        };
        if full_duplex {
            while sent < data.len() {
                let msg = reply(sent, &mut seen, sent == 0);
                tokio::time::sleep(delay).await;
                if tx.send(Ok(msg)).await.is_err() {
                    return;
                }
                sent += 1;
                match requests.message().await {
                    Ok(Some(m)) => seen.push(any(&m)),
                    Ok(None) => break,
                    Err(e) => {
                        let _ = tx.send(Err(e)).await;
                        return;
                    }
                }
            }
        }
        while sent < data.len() {
            let msg = BidiStreamResponse {
                payload: payload(
                    data[sent].clone(),
                    (sent == 0).then(|| RequestInfo {
                        requests: std::mem::take(&mut seen),
                        ..info.clone()
                    }),
                ),
            };
            tokio::time::sleep(delay).await;
            if tx.send(Ok(msg)).await.is_err() {
                return;
            }
            sent += 1;
        }
        if let Some(e) = def.error {
            let info = (sent == 0).then(|| RequestInfo {
                requests: seen,
                ..info.clone()
            });
            let _ = tx.send(Err(error_status(&e, info))).await;
        }
    });
    Ok(resp)
}
