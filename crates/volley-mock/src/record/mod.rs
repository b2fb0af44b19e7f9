//! Record and replay (WireMock's way, which GripMock does not have): `volley mock --record
//! UPSTREAM --stubs-out DIR` proxies every call of every kind to a real server (gRPC, gRPC-Web
//! and Connect callers alike: the server turns them all into these handlers) and writes each
//! distinct call as a GripMock stub that answers as the upstream did; `--data-out` writes every
//! call's request(s) as NDJSON for `volley bench --data-file`. Later, `volley mock --stub DIR`
//! answers the same calls with no upstream.

pub(crate) mod raw;
#[cfg(test)]
mod roundtrip;
mod write;

use std::{
    cell::RefCell,
    collections::HashMap,
    path::PathBuf,
    sync::{Arc, Mutex},
};

use futures_util::StreamExt;
use http::HeaderMap;
use prost::Message as _;
use prost_reflect::{DynamicMessage, MethodDescriptor, ServiceDescriptor};
use tokio::sync::oneshot;
use volley_client::Grpc;
use volley_server::{DynamicFuture, DynamicHandler, DynamicStream, Request, Response, Status};

use raw::Raw;
use write::{Recorded, Writer};

use crate::MockError;

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

/// The most of a call's messages (encoded, requests and replies together) kept for its
/// recording: a stub holds a call whole, so a longer one is proxied to its end but not recorded
/// (one line says so), and the proxy's memory stays bounded on an endless stream.
pub const MAX_RECORDED: usize = 64 << 20;

/// What one call has shown so far, for its recording.
struct Tape {
    requests: Vec<DynamicMessage>,
    replies: Vec<DynamicMessage>,
    bytes: usize,
    /// [`MAX_RECORDED`], but in tests.
    limit: usize,
    /// Past `limit`: the call goes on, its recording does not.
    over: bool,
}

impl Default for Tape {
    fn default() -> Tape {
        Tape {
            requests: Vec::new(),
            replies: Vec::new(),
            bytes: 0,
            limit: MAX_RECORDED,
            over: false,
        }
    }
}

impl Tape {
    fn with_request(m: DynamicMessage) -> Arc<Mutex<Tape>> {
        let mut t = Tape::default();
        t.keep(m, true);
        Arc::new(Mutex::new(t))
    }

    fn keep(&mut self, m: DynamicMessage, request: bool) {
        if self.over {
            return;
        }
        self.bytes += m.encoded_len();
        if self.bytes > self.limit {
            self.over = true;
            self.requests = Vec::new();
            self.replies = Vec::new();
            return;
        }
        match request {
            true => self.requests.push(m),
            false => self.replies.push(m),
        }
    }
}

/// A call's tape, shared by its request and reply sides.
type SharedTape = Arc<Mutex<Tape>>;

fn lock(t: &SharedTape) -> std::sync::MutexGuard<'_, Tape> {
    t.lock().unwrap_or_else(|p| p.into_inner())
}

/// A call not yet ended on the caller's side. Dropped before [`done`](Unfinished::done) (the
/// caller went away, so the server dropped the call and with it the upstream call, which is
/// cancelled), it says in one line that nothing is recorded.
struct Unfinished(Option<MethodDescriptor>);

impl Unfinished {
    fn new(method: &MethodDescriptor) -> Unfinished {
        Unfinished(Some(method.clone()))
    }

    fn done(&mut self) {
        self.0 = None;
    }
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        if let Some(m) = self.0.take() {
            tracing::warn!(
                "recording {}: the caller went away before the call ended; the upstream call \
                 was cancelled and nothing is recorded",
                m.full_name()
            );
        }
    }
}

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
    pub fn new(record: &Record, services: &[ServiceDescriptor]) -> Result<Recorder, MockError> {
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
            writer: Writer::new(record.stubs_out.clone(), record.data_out.clone()).map_err(
                |reason| MockError::Record {
                    path: record.stubs_out.clone(),
                    reason,
                },
            )?,
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

    /// Writes the call the tape holds, unless it passed [`MAX_RECORDED`].
    fn save(
        &self,
        method: &MethodDescriptor,
        tape: &SharedTape,
        headers: HeaderMap,
        trailers: HeaderMap,
        status: Option<Status>,
    ) {
        let (requests, replies) = {
            let mut t = lock(tape);
            if t.over {
                tracing::warn!(
                    "recording {}: the call's messages passed {} MiB; it was proxied but is not \
                     recorded (a stub holds a call whole)",
                    method.full_name(),
                    MAX_RECORDED >> 20
                );
                return;
            }
            (
                std::mem::take(&mut t.requests),
                std::mem::take(&mut t.replies),
            )
        };
        let call = Recorded {
            method: method.clone(),
            requests,
            replies,
            headers,
            trailers,
            status,
        };
        if let Err(e) = self.0.writer.write(&call) {
            tracing::warn!("recording {}: {e}", call.method.full_name());
        }
    }

    /// Says why a call whose caller failed mid-stream is not recorded (its upstream call was
    /// cancelled, not ended).
    fn not_recorded(method: &MethodDescriptor, st: &Status) {
        tracing::warn!(
            "recording {}: the caller's stream failed ({:?}: {}); the upstream call was \
             cancelled and nothing is recorded",
            method.full_name(),
            st.code(),
            st.message()
        );
    }

    fn decode(method: &MethodDescriptor, raw: &Raw) -> Result<DynamicMessage, Status> {
        DynamicMessage::decode(method.output(), raw.0.as_slice()).map_err(|e| {
            Status::internal(format!(
                "the upstream's reply is not a {}: {e}",
                method.output().full_name()
            ))
        })
    }

    /// Relays a reply stream, recording it when it ends; when `failed` says the caller's
    /// stream failed first, the upstream call is dropped (cancelled) and nothing is recorded.
    fn relay(
        &self,
        method: MethodDescriptor,
        tape: SharedTape,
        headers: HeaderMap,
        replies: volley_client::Streaming<Raw>,
        failed: Option<oneshot::Receiver<Status>>,
        unfinished: Unfinished,
    ) -> DynamicStream {
        struct Relay {
            this: Recorder,
            method: MethodDescriptor,
            tape: SharedTape,
            headers: HeaderMap,
            replies: volley_client::Streaming<Raw>,
            failed: Option<oneshot::Receiver<Status>>,
            unfinished: Unfinished,
        }
        let state = Relay {
            this: self.clone(),
            method,
            tape,
            headers,
            replies,
            failed,
            unfinished,
        };
        Box::pin(futures_util::stream::unfold(
            Some(state),
            |state| async move {
                let mut r = state?;
                let next = match r.failed.take() {
                    Some(failed) => match unless_failed(r.replies.next(), failed).await {
                        Ok((n, failed)) => {
                            r.failed = failed;
                            n
                        }
                        Err(st) => {
                            Recorder::not_recorded(&r.method, &st);
                            r.unfinished.done();
                            return Some((Err(st), None));
                        }
                    },
                    None => r.replies.next().await,
                };
                match next {
                    Some(Ok(raw)) => match Recorder::decode(&r.method, &raw) {
                        Ok(m) => {
                            lock(&r.tape).keep(m.clone(), false);
                            Some((Ok(m), Some(r)))
                        }
                        Err(st) => {
                            r.unfinished.done();
                            Some((Err(st), None))
                        }
                    },
                    Some(Err(st)) => {
                        r.unfinished.done();
                        let headers = std::mem::take(&mut r.headers);
                        r.this.save(
                            &r.method,
                            &r.tape,
                            headers,
                            HeaderMap::new(),
                            Some(st.clone()),
                        );
                        Some((Err(relayed(&st)), None))
                    }
                    None => {
                        r.unfinished.done();
                        let trailers = r.replies.trailers().cloned().unwrap_or_default();
                        let headers = std::mem::take(&mut r.headers);
                        r.this.save(&r.method, &r.tape, headers, trailers, None);
                        None
                    }
                }
            },
        ))
    }
}

/// Runs `call` to its end unless the caller's stream fails first (`Err` with its status; `call`
/// is dropped, so the upstream call is cancelled). With the outcome comes the receiver still to
/// watch, `None` once the caller's stream has ended whole.
async fn unless_failed<T>(
    call: impl std::future::Future<Output = T>,
    mut failed: oneshot::Receiver<Status>,
) -> Result<(T, Option<oneshot::Receiver<Status>>), Status> {
    let mut call = std::pin::pin!(call);
    let mut watching = true;
    loop {
        tokio::select! {
            out = &mut call => return Ok((out, watching.then_some(failed))),
            told = &mut failed, if watching => match told {
                Ok(st) => return Err(st),
                // The sender is gone: the caller's stream ended whole.
                Err(_) => watching = false,
            },
        }
    }
}

/// The caller's request stream as messages, each kept for the recording. When it fails, the
/// failure goes to `failed` and the stream never ends: the upstream must not see a clean end
/// (the recorder drops its call instead, which cancels it).
fn tapped(
    requests: DynamicStream,
    tape: SharedTape,
    failed: oneshot::Sender<Status>,
) -> impl futures_util::Stream<Item = DynamicMessage> + Send + 'static {
    futures_util::stream::unfold(
        (requests, tape, Some(failed)),
        |(mut requests, tape, mut failed)| async move {
            match requests.next().await {
                Some(Ok(m)) => {
                    lock(&tape).keep(m.clone(), true);
                    Some((m, (requests, tape, failed)))
                }
                Some(Err(st)) => {
                    if let Some(tx) = failed.take() {
                        let _ = tx.send(st);
                    }
                    std::future::pending().await
                }
                None => None,
            }
        },
    )
}

/// The upstream's request for a call whose caller streams: the caller's metadata forwarded and
/// its messages tapped onto a new tape; the receiver says if the caller's stream failed.
#[allow(clippy::type_complexity)]
fn upstream(
    request: Request<DynamicStream>,
) -> (
    volley_client::Request<impl futures_util::Stream<Item = DynamicMessage> + Send + 'static>,
    SharedTape,
    oneshot::Receiver<Status>,
) {
    let (headers, incoming) = request.into_parts();
    let tape = SharedTape::default();
    let (tx, failed) = oneshot::channel();
    let mut req = volley_client::Request::new(tapped(incoming, tape.clone(), tx));
    *req.metadata_mut() = forwarded(&headers);
    (req, tape, failed)
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
            let tape = Tape::with_request(msg);
            let mut unfinished = Unfinished::new(&method);
            let result = g.unary::<_, Raw>(path, req).await;
            unfinished.done();
            this.answer(&method, &tape, result)
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
            let tape = Tape::with_request(msg);
            let unfinished = Unfinished::new(&method);
            let result = g.server_streaming::<_, Raw>(path, req).await;
            this.stream(method, tape, result, None, unfinished)
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
            let g = this.client().await?;
            let (req, tape, failed) = upstream(request);
            let mut unfinished = Unfinished::new(&method);
            let upstream = unless_failed(g.client_streaming::<_, Raw>(path, req), failed).await;
            unfinished.done();
            let (result, _) = upstream.inspect_err(|st| Recorder::not_recorded(&method, st))?;
            this.answer(&method, &tape, result)
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
            let g = this.client().await?;
            let (req, tape, failed) = upstream(request);
            let mut unfinished = Unfinished::new(&method);
            let (result, failed) = unless_failed(g.streaming::<_, Raw>(path, req), failed)
                .await
                .inspect_err(|st| {
                    Recorder::not_recorded(&method, st);
                    unfinished.done();
                })?;
            this.stream(method, tape, result, failed, unfinished)
        })
    }
}

impl Recorder {
    /// A one-reply call's outcome: recorded, and relayed to the caller.
    fn answer(
        &self,
        method: &MethodDescriptor,
        tape: &SharedTape,
        result: Result<volley_client::Response<Raw>, Status>,
    ) -> Result<Response<DynamicMessage>, Status> {
        match result {
            Ok(resp) => {
                let (h, raw, t) = resp.into_parts();
                let reply = Recorder::decode(method, &raw)?;
                lock(tape).keep(reply.clone(), false);
                self.save(method, tape, h.clone(), t.clone(), None);
                let mut r = Response::new(reply);
                *r.metadata_mut() = passed(&h);
                *r.trailers_mut() = passed(&t);
                Ok(r)
            }
            Err(st) => {
                self.save(
                    method,
                    tape,
                    HeaderMap::new(),
                    HeaderMap::new(),
                    Some(st.clone()),
                );
                Err(relayed(&st))
            }
        }
    }

    /// A reply stream's start: relayed (and recorded as it ends), or the failure recorded.
    fn stream(
        &self,
        method: MethodDescriptor,
        tape: SharedTape,
        result: Result<volley_client::Response<volley_client::Streaming<Raw>>, Status>,
        failed: Option<oneshot::Receiver<Status>>,
        mut unfinished: Unfinished,
    ) -> Result<Response<DynamicStream>, Status> {
        match result {
            Ok(resp) => {
                let (h, replies, _) = resp.into_parts();
                let relay = self.relay(method, tape, h.clone(), replies, failed, unfinished);
                let mut r = Response::new(relay);
                *r.metadata_mut() = passed(&h);
                Ok(r)
            }
            Err(st) => {
                unfinished.done();
                self.save(
                    &method,
                    &tape,
                    HeaderMap::new(),
                    HeaderMap::new(),
                    Some(st.clone()),
                );
                Err(relayed(&st))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;
    use volley_server::Code;

    use super::*;
    use crate::testkit::{check, method, pool, temp_dir};

    /// A recording folder that cannot be made is named in the error (it was the bare I/O
    /// error, "Not a directory (os error 20)", with no path).
    #[test]
    fn a_recording_folder_that_cannot_be_made_is_named() {
        let dir = temp_dir("record-out");
        let file = dir.join("a-file");
        std::fs::write(&file, "").unwrap();
        let record = Record {
            upstream: "127.0.0.1:1".into(),
            stubs_out: file.join("stubs"),
            data_out: None,
        };
        let Err(e) = Recorder::new(&record, &[]) else {
            panic!("a folder under a file was made");
        };
        let said = e.to_string();
        assert!(
            said.starts_with(&format!(
                "cannot write the recording to {}: ",
                file.join("stubs").display()
            )),
            "{said}"
        );
    }

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
    fn a_call_past_the_cap_keeps_nothing_and_is_not_written() {
        let pool = pool();
        let m = check(&pool);
        let dir = temp_dir("record-cap");
        let r = Recorder::new(
            &Record {
                upstream: "127.0.0.1:1".into(),
                stubs_out: dir.join("stubs"),
                data_out: None,
            },
            &[crate::health::descriptor(&pool).unwrap()],
        )
        .unwrap();
        let one = crate::testkit::msg(m.input(), serde_json::json!({"service": "x".repeat(100)}));
        let tape = SharedTape::default();
        lock(&tape).limit = 250;
        lock(&tape).keep(one.clone(), true);
        lock(&tape).keep(one.clone(), false);
        assert!(!lock(&tape).over);
        lock(&tape).keep(one.clone(), false);
        // Past the cap: what was kept is let go, and nothing more is kept.
        let t = lock(&tape);
        assert!(t.over && t.requests.is_empty() && t.replies.is_empty());
        drop(t);
        r.save(&m, &tape, HeaderMap::new(), HeaderMap::new(), None);
        let service = dir.join("stubs/grpc.health.v1.Health");
        assert_eq!(std::fs::read_dir(service).map_or(0, |d| d.count()), 0);
        // Under the cap, the same call is written.
        let tape = Tape::with_request(one.clone());
        lock(&tape).keep(one, false);
        r.save(&m, &tape, HeaderMap::new(), HeaderMap::new(), None);
        let service = dir.join("stubs/grpc.health.v1.Health");
        assert_eq!(std::fs::read_dir(service).map_or(0, |d| d.count()), 1);
        std::fs::remove_dir_all(dir).unwrap();
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
