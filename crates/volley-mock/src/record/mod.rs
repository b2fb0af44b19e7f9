//! Record and replay (WireMock's way, which GripMock does not have): `volley mock --record
//! UPSTREAM --stubs-out DIR` proxies every call of every kind to a real server (gRPC, gRPC-Web
//! and Connect callers alike: the server turns them all into these handlers) and writes each
//! distinct call as a GripMock stub that answers as the upstream did; `--data-out` writes every
//! call's request(s) as NDJSON for `volley bench --data-file`. Later, `volley mock --stub DIR`
//! answers the same calls with no upstream.

mod raw;
mod write;

use std::{cell::RefCell, collections::HashMap, path::PathBuf, sync::Arc};

use futures_util::StreamExt;
use http::HeaderMap;
use prost_reflect::{DynamicMessage, MethodDescriptor, ServiceDescriptor};
use volley_client::Grpc;
use volley_server::{DynamicFuture, DynamicHandler, DynamicStream, Request, Response, Status};

use raw::Raw;
use write::{Recorded, Writer};

/// What to record, from where, to where.
#[derive(Clone, Debug)]
pub struct Record {
    /// The real server (`host:port`, `http://host:port`).
    pub upstream: String,
    /// Where the stubs go (one file per distinct call, a folder per service).
    pub stubs_out: PathBuf,
    /// Every call's request(s) as NDJSON: a `.ndjson` file, or a folder with one file per method.
    pub data_out: Option<PathBuf>,
}

struct Inner {
    target: String,
    /// `/package.Service/Method` by the method's full name (the client takes `&'static str`).
    paths: HashMap<String, &'static str>,
    writer: Writer,
}

/// Proxies calls to the upstream and records them.
#[derive(Clone)]
pub struct Recorder(Arc<Inner>);

thread_local! {
    /// Each server thread's connection to the upstream (its runtime drives it).
    static UPSTREAM: RefCell<Option<Grpc>> = const { RefCell::new(None) };
}

/// Request headers not forwarded (the protocol's own).
fn forwarded(h: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::new();
    for (k, v) in h {
        let n = k.as_str();
        let skip = n.starts_with(':')
            || n.starts_with("grpc-")
            || matches!(
                n,
                "content-type"
                    | "te"
                    | "user-agent"
                    | "host"
                    | "content-length"
                    | "connection"
                    | "accept-encoding"
            );
        if !skip {
            out.append(k.clone(), v.clone());
        }
    }
    out
}

/// Response metadata passed back to the caller (the protocol's own left out).
fn passed(h: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::new();
    for (k, v) in h {
        let n = k.as_str();
        if !(n.starts_with(':')
            || n.starts_with("grpc-")
            || matches!(n, "content-type" | "content-length" | "date" | "server"))
        {
            out.append(k.clone(), v.clone());
        }
    }
    out
}

/// The upstream's failure as the caller gets it: code, message, details, metadata.
fn relayed(st: &Status) -> Status {
    let details = st.detail_list();
    let mut out = if details.is_empty() {
        Status::new(st.code(), st.message().to_owned())
    } else {
        Status::with_details(st.code(), st.message().to_owned(), details)
    };
    *out.metadata_mut() = passed(st.metadata());
    out
}

impl Recorder {
    /// A recorder for the methods of `services`.
    pub fn new(record: &Record, services: &[ServiceDescriptor]) -> anyhow::Result<Recorder> {
        let mut paths = HashMap::new();
        for s in services {
            for m in s.methods() {
                let path: &'static str =
                    Box::leak(format!("/{}/{}", s.full_name(), m.name()).into_boxed_str());
                paths.insert(m.full_name().to_owned(), path);
            }
        }
        let target = record
            .upstream
            .trim_start_matches("grpc://")
            .trim_start_matches("http://")
            .to_owned();
        Ok(Recorder(Arc::new(Inner {
            target,
            paths,
            writer: Writer::new(record.stubs_out.clone(), record.data_out.clone())?,
        })))
    }

    async fn client(&self) -> Result<Grpc, Status> {
        if let Some(g) = UPSTREAM.with(|c| c.borrow().clone()) {
            return Ok(g);
        }
        let g = Grpc::connect(&self.0.target)
            .await
            .map_err(|e| Status::unavailable(format!("upstream {}: {e}", self.0.target)))?;
        UPSTREAM.with(|c| *c.borrow_mut() = Some(g.clone()));
        Ok(g)
    }

    fn path(&self, method: &MethodDescriptor) -> Result<&'static str, Status> {
        self.0
            .paths
            .get(method.full_name())
            .copied()
            .ok_or_else(|| Status::unimplemented(format!("{} is not recorded", method.full_name())))
    }

    fn save(&self, call: &Recorded) {
        if let Err(e) = self.0.writer.write(call) {
            tracing::warn!("recording {}: {e}", call.method.full_name());
        }
    }

    fn decode(method: &MethodDescriptor, raw: &Raw) -> Result<DynamicMessage, Status> {
        DynamicMessage::decode(method.output(), raw.0.as_slice()).map_err(|e| {
            Status::internal(format!(
                "the upstream's reply is not a {}: {e}",
                method.output().full_name()
            ))
        })
    }

    /// Relays a reply stream, recording it when it ends.
    fn relay(
        &self,
        method: MethodDescriptor,
        requests: Arc<std::sync::Mutex<Vec<DynamicMessage>>>,
        headers: HeaderMap,
        replies: volley_client::Streaming<Raw>,
    ) -> DynamicStream {
        let state = (
            self.clone(),
            method,
            requests,
            headers,
            replies,
            Vec::new(),
            false,
        );
        Box::pin(futures_util::stream::unfold(
            state,
            |(this, method, requests, headers, mut replies, mut seen, done)| async move {
                if done {
                    return None;
                }
                let finish =
                    |seen: Vec<DynamicMessage>, trailers: HeaderMap, status: Option<Status>| {
                        let reqs = requests.lock().map(|r| r.clone()).unwrap_or_default();
                        this.save(&Recorded {
                            method: method.clone(),
                            requests: reqs,
                            replies: seen,
                            headers: headers.clone(),
                            trailers,
                            status,
                        });
                    };
                match replies.next().await {
                    Some(Ok(raw)) => match Recorder::decode(&method, &raw) {
                        Ok(m) => {
                            seen.push(m.clone());
                            Some((
                                Ok(m),
                                (this, method, requests, headers, replies, seen, false),
                            ))
                        }
                        Err(st) => Some((
                            Err(st),
                            (this, method, requests, headers, replies, seen, true),
                        )),
                    },
                    Some(Err(st)) => {
                        finish(
                            std::mem::take(&mut seen),
                            HeaderMap::new(),
                            Some(st.clone()),
                        );
                        Some((
                            Err(relayed(&st)),
                            (this, method, requests, headers, replies, seen, true),
                        ))
                    }
                    None => {
                        let trailers = replies.trailers().cloned().unwrap_or_default();
                        finish(std::mem::take(&mut seen), trailers, None);
                        None
                    }
                }
            },
        ))
    }
}

/// The caller's request stream as messages, each kept for the recording.
fn tapped(
    requests: DynamicStream,
    kept: Arc<std::sync::Mutex<Vec<DynamicMessage>>>,
) -> impl futures_util::Stream<Item = DynamicMessage> + Send + 'static {
    requests
        .take_while(|r| std::future::ready(r.is_ok()))
        .filter_map(move |r| {
            let kept = kept.clone();
            async move {
                let m = r.ok()?;
                if let Ok(mut k) = kept.lock() {
                    k.push(m.clone());
                }
                Some(m)
            }
        })
}

impl DynamicHandler for Recorder {
    fn unary(
        &self,
        method: &MethodDescriptor,
        request: Request<DynamicMessage>,
    ) -> DynamicFuture<Result<Response<DynamicMessage>, Status>> {
        let (this, method) = (self.clone(), method.clone());
        Box::pin(async move {
            let path = this.path(&method)?;
            let (headers, msg) = request.into_parts();
            let g = this.client().await?;
            let mut req = volley_client::Request::new(msg.clone());
            *req.metadata_mut() = forwarded(&headers);
            let mut call = Recorded {
                method: method.clone(),
                requests: vec![msg],
                replies: Vec::new(),
                headers: HeaderMap::new(),
                trailers: HeaderMap::new(),
                status: None,
            };
            match g.unary::<_, Raw>(path, req).await {
                Ok(resp) => {
                    let (h, raw, t) = resp.into_parts();
                    let reply = Recorder::decode(&method, &raw)?;
                    call.replies.push(reply.clone());
                    (call.headers, call.trailers) = (h.clone(), t.clone());
                    this.save(&call);
                    let mut r = Response::new(reply);
                    *r.metadata_mut() = passed(&h);
                    *r.trailers_mut() = passed(&t);
                    Ok(r)
                }
                Err(st) => {
                    call.status = Some(st.clone());
                    this.save(&call);
                    Err(relayed(&st))
                }
            }
        })
    }

    fn server_streaming(
        &self,
        method: &MethodDescriptor,
        request: Request<DynamicMessage>,
    ) -> DynamicFuture<Result<Response<DynamicStream>, Status>> {
        let (this, method) = (self.clone(), method.clone());
        Box::pin(async move {
            let path = this.path(&method)?;
            let (headers, msg) = request.into_parts();
            let g = this.client().await?;
            let mut req = volley_client::Request::new(msg.clone());
            *req.metadata_mut() = forwarded(&headers);
            let kept = Arc::new(std::sync::Mutex::new(vec![msg]));
            match g.server_streaming::<_, Raw>(path, req).await {
                Ok(resp) => {
                    let (h, replies, _) = resp.into_parts();
                    let mut r = Response::new(this.relay(method, kept, h.clone(), replies));
                    *r.metadata_mut() = passed(&h);
                    Ok(r)
                }
                Err(st) => {
                    this.save(&Recorded {
                        method,
                        requests: kept.lock().map(|k| k.clone()).unwrap_or_default(),
                        replies: Vec::new(),
                        headers: HeaderMap::new(),
                        trailers: HeaderMap::new(),
                        status: Some(st.clone()),
                    });
                    Err(relayed(&st))
                }
            }
        })
    }

    fn client_streaming(
        &self,
        method: &MethodDescriptor,
        request: Request<DynamicStream>,
    ) -> DynamicFuture<Result<Response<DynamicMessage>, Status>> {
        let (this, method) = (self.clone(), method.clone());
        Box::pin(async move {
            let path = this.path(&method)?;
            let (headers, incoming) = request.into_parts();
            let g = this.client().await?;
            let kept = Arc::new(std::sync::Mutex::new(Vec::new()));
            let mut req = volley_client::Request::new(tapped(incoming, kept.clone()));
            *req.metadata_mut() = forwarded(&headers);
            let result = g.client_streaming::<_, Raw>(path, req).await;
            let mut call = Recorded {
                method: method.clone(),
                requests: kept.lock().map(|k| k.clone()).unwrap_or_default(),
                replies: Vec::new(),
                headers: HeaderMap::new(),
                trailers: HeaderMap::new(),
                status: None,
            };
            match result {
                Ok(resp) => {
                    let (h, raw, t) = resp.into_parts();
                    let reply = Recorder::decode(&method, &raw)?;
                    call.replies.push(reply.clone());
                    (call.headers, call.trailers) = (h.clone(), t.clone());
                    this.save(&call);
                    let mut r = Response::new(reply);
                    *r.metadata_mut() = passed(&h);
                    *r.trailers_mut() = passed(&t);
                    Ok(r)
                }
                Err(st) => {
                    call.status = Some(st.clone());
                    this.save(&call);
                    Err(relayed(&st))
                }
            }
        })
    }

    fn bidi_streaming(
        &self,
        method: &MethodDescriptor,
        request: Request<DynamicStream>,
    ) -> DynamicFuture<Result<Response<DynamicStream>, Status>> {
        let (this, method) = (self.clone(), method.clone());
        Box::pin(async move {
            let path = this.path(&method)?;
            let (headers, incoming) = request.into_parts();
            let g = this.client().await?;
            let kept = Arc::new(std::sync::Mutex::new(Vec::new()));
            let mut req = volley_client::Request::new(tapped(incoming, kept.clone()));
            *req.metadata_mut() = forwarded(&headers);
            match g.streaming::<_, Raw>(path, req).await {
                Ok(resp) => {
                    let (h, replies, _) = resp.into_parts();
                    let mut r = Response::new(this.relay(method, kept, h.clone(), replies));
                    *r.metadata_mut() = passed(&h);
                    Ok(r)
                }
                Err(st) => Err(relayed(&st)),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;
    use volley_server::Code;

    use super::*;
    use crate::testkit::{check, method, pool, temp_dir};

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    fn names(h: &HeaderMap) -> Vec<String> {
        let mut v: Vec<String> = h.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
        v.sort();
        v
    }

    #[test]
    fn the_protocol_s_own_headers_are_neither_forwarded_nor_passed_back() {
        let request = headers(&[
            ("content-type", "application/grpc"),
            ("te", "trailers"),
            ("user-agent", "grpc-go/1.60"),
            ("grpc-timeout", "1S"),
            ("grpc-accept-encoding", "gzip"),
            ("x-user", "ann"),
            ("x-user", "bob"),
            ("authorization", "Bearer t"),
            ("x-gripmock-session", "one"),
        ]);
        assert_eq!(
            names(&forwarded(&request)),
            [
                "authorization=\"Bearer t\"",
                "x-gripmock-session=\"one\"",
                "x-user=\"ann\"",
                "x-user=\"bob\""
            ]
        );
        let response = headers(&[
            ("content-type", "application/grpc"),
            ("date", "Mon, 01 Jan 2024 00:00:00 GMT"),
            ("server", "upstream"),
            ("grpc-status", "0"),
            ("user-agent", "kept"),
            ("x-region", "eu"),
        ]);
        assert_eq!(
            names(&passed(&response)),
            ["user-agent=\"kept\"", "x-region=\"eu\""]
        );
    }

    #[test]
    fn a_relayed_failure_keeps_code_message_details_and_the_caller_s_metadata() {
        let detail = prost_types::Any {
            type_url: "type.googleapis.com/google.rpc.ErrorInfo".into(),
            value: vec![10, 4, b'G', b'O', b'N', b'E'],
        };
        let mut st = Status::with_details(Code::NotFound, "gone", vec![detail.clone()]);
        *st.metadata_mut() = headers(&[("grpc-status", "5"), ("x-err", "e1")]);
        let out = relayed(&st);
        assert_eq!((out.code(), out.message()), (Code::NotFound, "gone"));
        assert_eq!(out.detail_list(), [detail]);
        assert_eq!(names(out.metadata()), ["x-err=\"e1\""]);
        let plain = relayed(&Status::new(Code::Unavailable, "down"));
        assert_eq!((plain.code(), plain.message()), (Code::Unavailable, "down"));
        assert!(plain.details().is_none());
    }

    #[test]
    fn a_recorder_knows_each_method_s_path_and_refuses_others() {
        let pool = pool();
        let dir = temp_dir("record-new");
        let health = crate::health::descriptor(&pool).unwrap();
        let r = Recorder::new(
            &Record {
                upstream: "grpc://127.0.0.1:50051".into(),
                stubs_out: dir.join("stubs"),
                data_out: Some(dir.join("out/calls.ndjson")),
            },
            &[health],
        )
        .unwrap();
        assert_eq!(r.0.target, "127.0.0.1:50051");
        // The folders and the data file exist before the first call.
        assert!(dir.join("stubs").is_dir());
        assert!(dir.join("out/calls.ndjson").is_file());
        assert_eq!(
            r.path(&check(&pool)).unwrap(),
            "/grpc.health.v1.Health/Check"
        );
        let other = method(
            &pool,
            "grpc.reflection.v1.ServerReflection",
            "ServerReflectionInfo",
        );
        let e = r.path(&other).unwrap_err();
        assert_eq!(e.code(), Code::Unimplemented);
        assert_eq!(
            e.message(),
            "grpc.reflection.v1.ServerReflection.ServerReflectionInfo is not recorded"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
