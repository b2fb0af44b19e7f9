//! The calls of a [`MockServer`](super::MockServer) answered: each call kept, the first mounted
//! mock (by priority, then mount order) that matches it answers, else the GripMock stubs added
//! to the server, else NOT_FOUND naming the call and the mocks of its method. A stream of
//! requests goes to the stubs whole when its method has stubs and no mock.

use std::{
    collections::VecDeque,
    future::Future,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use futures_util::StreamExt;
use http::HeaderMap;
use prost_reflect::{DescriptorPool, DynamicMessage, MethodDescriptor};
use volley_server::{DynamicFuture, DynamicHandler, DynamicStream, Request, Response, Status};

use super::{
    mock::{Mock, view},
    received::ReceivedCall,
    respond::Respond,
};
use crate::{answer::session_of, stubs::Stubs, stubs::lock};

/// A mounted mock and the calls it answered.
pub(crate) struct Mounted {
    pub mock: Mock,
    /// Its number, in mount order.
    pub n: usize,
    pub method: MethodDescriptor,
    pub hits: AtomicU64,
}

/// What the server's handler and the test share.
pub(crate) struct Shared {
    pub pool: DescriptorPool,
    /// GripMock stubs (`add_stubs`, `MockServerBuilder::stubs`) and the scenarios' states.
    pub stubs: Stubs,
    /// By priority, then mount order.
    pub mounts: Mutex<Vec<Arc<Mounted>>>,
    pub received: Mutex<Vec<ReceivedCall>>,
}

impl Shared {
    fn keep(&self, call: ReceivedCall) {
        lock(&self.received).push(call);
    }

    fn mounted_for(&self, method: &MethodDescriptor) -> Vec<Arc<Mounted>> {
        lock(&self.mounts)
            .iter()
            .filter(|m| m.method == *method)
            .cloned()
            .collect()
    }

    /// The mock that answers `call`, its answer counted and its scenario moved on.
    fn pick(
        &self,
        method: &MethodDescriptor,
        call: &ReceivedCall,
        session: &str,
    ) -> Option<Arc<Mounted>> {
        let states = &self.stubs.inner().scenarios;
        for m in self.mounted_for(method) {
            let mock = &m.mock;
            let spent = |hits: u64| mock.up_to.is_some_and(|max| hits >= max);
            if spent(m.hits.load(Ordering::Acquire))
                || !mock
                    .scenario
                    .as_ref()
                    .is_none_or(|s| states.allows(s, session))
                || !mock.matches(call)
            {
                continue;
            }
            if !mock
                .scenario
                .as_ref()
                .is_none_or(|s| states.advance(s, session))
            {
                continue;
            }
            let taken = m
                .hits
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |h| {
                    (!spent(h)).then_some(h + 1)
                })
                .is_ok();
            if taken {
                return Some(m);
            }
        }
        None
    }

    /// NOT_FOUND for `call`, naming the mocks of its method.
    fn missed(&self, method: &MethodDescriptor, call: &ReceivedCall) -> Status {
        let mine = self.mounted_for(method);
        let mocks = match mine.len() {
            0 => "no mock of the method is mounted".to_owned(),
            n => {
                let shown: Vec<String> = mine.iter().map(|m| m.mock.shown(m.n)).collect();
                format!(
                    "{n} mock(s) of the method did not match: {}",
                    shown.join("; ")
                )
            }
        };
        Status::not_found(format!("volley-mock: no mock matches {call}; {mocks}"))
    }

    /// NOT_FOUND for a call neither a mock nor a stub matched (`stubs`: the stubs' own).
    fn missed_both(
        &self,
        method: &MethodDescriptor,
        call: &ReceivedCall,
        stubs: Option<Status>,
    ) -> Status {
        let st = self.missed(method, call);
        match stubs {
            Some(s) => Status::not_found(format!("{}; and {}", st.message(), s.message())),
            None => st,
        }
    }

    fn has_stubs(&self, method: &MethodDescriptor) -> bool {
        self.stubs
            .current()
            .methods
            .contains_key(method.full_name())
    }
}

/// The server's handler of every service.
#[derive(Clone)]
pub(crate) struct Mocked(pub Arc<Shared>);

/// `package.Service/Method`.
fn name(method: &MethodDescriptor) -> String {
    format!("{}/{}", method.parent_service().full_name(), method.name())
}

fn with_metadata<T>(mut resp: Response<T>, r: &Respond) -> Response<T> {
    for (k, v) in &r.headers {
        resp.metadata_mut().append(k.clone(), v.clone());
    }
    for (k, v) in &r.trailers {
        resp.trailers_mut().append(k.clone(), v.clone());
    }
    resp
}

fn failed(mut st: Status, r: &Respond) -> Status {
    for (k, v) in r.headers.iter().chain(&r.trailers) {
        st.metadata_mut().append(k.clone(), v.clone());
    }
    st
}

/// One reply: the first message (an empty one when the mock gives none).
async fn one(
    r: Respond,
    method: MethodDescriptor,
    request: Option<DynamicMessage>,
) -> Result<Response<DynamicMessage>, Status> {
    pause(r.delay).await;
    let msgs = r
        .messages(&method, request.as_ref())
        .map_err(|e| failed(e, &r))?;
    let first = msgs
        .into_iter()
        .next()
        .unwrap_or_else(|| DynamicMessage::new(method.output()));
    Ok(with_metadata(Response::new(first), &r))
}

/// A stream of replies.
async fn many(
    r: Respond,
    method: MethodDescriptor,
    request: DynamicMessage,
) -> Result<Response<DynamicStream>, Status> {
    pause(r.delay).await;
    let msgs = r
        .messages(&method, Some(&request))
        .map_err(|e| failed(e, &r))?;
    let s: DynamicStream = Box::pin(futures_util::stream::iter(msgs.into_iter().map(Ok)));
    Ok(with_metadata(Response::new(s), &r))
}

/// Waits `d`; none at all for no delay (a zero sleep still waits for the timer's next tick,
/// a millisecond: it was most of a call's time before).
async fn pause(d: std::time::Duration) {
    if !d.is_zero() {
        tokio::time::sleep(d).await;
    }
}

fn ready<T: Send + 'static>(r: Result<T, Status>) -> DynamicFuture<Result<T, Status>> {
    Box::pin(std::future::ready(r))
}

/// A call's answer, to come.
type Answer<T> = DynamicFuture<Result<Response<T>, Status>>;

impl Mocked {
    /// A call of one request message, kept: the mock it picks answers with `mocked`, else the
    /// stubs with `stubbed` (their NOT_FOUND given back when none matches either).
    fn one_request<T, F>(
        &self,
        method: &MethodDescriptor,
        request: Request<DynamicMessage>,
        mocked: impl FnOnce(Respond, MethodDescriptor, DynamicMessage) -> F,
        stubbed: impl FnOnce(
            &Stubs,
            &MethodDescriptor,
            Request<DynamicMessage>,
        ) -> Result<Answer<T>, Option<Status>>,
    ) -> Answer<T>
    where
        T: Send + 'static,
        F: Future<Output = Result<Response<T>, Status>> + Send + 'static,
    {
        let message = vec![request.get_ref().clone()];
        let call = view(&name(method), request.metadata(), message);
        self.0.keep(call.clone());
        let session = session_of(request.metadata());
        match self.0.pick(method, &call, &session) {
            Some(m) => Box::pin(mocked(
                m.mock.respond.clone(),
                method.clone(),
                request.into_inner(),
            )),
            None => stubbed(&self.0.stubs, method, request)
                .unwrap_or_else(|st| ready(Err(self.0.missed_both(method, &call, st)))),
        }
    }
}

impl DynamicHandler for Mocked {
    fn unary(
        &self,
        method: &MethodDescriptor,
        request: Request<DynamicMessage>,
    ) -> Answer<DynamicMessage> {
        self.one_request(
            method,
            request,
            |r, m, req| one(r, m, Some(req)),
            |s, m, req| s.try_unary(m, req).map_err(|missed| missed.1),
        )
    }

    fn server_streaming(
        &self,
        method: &MethodDescriptor,
        request: Request<DynamicMessage>,
    ) -> Answer<DynamicStream> {
        self.one_request(method, request, many, |s, m, req| {
            s.try_server_streaming(m, req).map_err(|missed| missed.1)
        })
    }

    fn client_streaming(
        &self,
        method: &MethodDescriptor,
        request: Request<DynamicStream>,
    ) -> DynamicFuture<Result<Response<DynamicMessage>, Status>> {
        if self.0.mounted_for(method).is_empty() && self.0.has_stubs(method) {
            return self.0.stubs.client_streaming(method, request);
        }
        let (this, method) = (self.0.clone(), method.clone());
        let (headers, mut requests) = request.into_parts();
        Box::pin(async move {
            let mut msgs = Vec::new();
            while let Some(r) = requests.next().await {
                msgs.push(r?);
            }
            let call = view(&name(&method), &headers, msgs);
            this.keep(call.clone());
            let session = session_of(&headers);
            match this.pick(&method, &call, &session) {
                Some(m) => {
                    let last = call.messages.last().cloned();
                    one(m.mock.respond.clone(), method, last).await
                }
                None => Err(this.missed(&method, &call)),
            }
        })
    }

    fn bidi_streaming(
        &self,
        method: &MethodDescriptor,
        request: Request<DynamicStream>,
    ) -> DynamicFuture<Result<Response<DynamicStream>, Status>> {
        if self.0.mounted_for(method).is_empty() && self.0.has_stubs(method) {
            return self.0.stubs.bidi_streaming(method, request);
        }
        let (headers, requests) = request.into_parts();
        let state = Bidi {
            shared: self.0.clone(),
            method: method.clone(),
            session: session_of(&headers),
            headers,
            requests,
            seen: Vec::new(),
            out: VecDeque::new(),
            done: false,
        };
        let replies: DynamicStream = Box::pin(futures_util::stream::unfold(state, Bidi::next));
        ready(Ok(Response::new(replies)))
    }
}

/// A bidi stream answered message by message: each request message picks its own mock.
struct Bidi {
    shared: Arc<Shared>,
    method: MethodDescriptor,
    session: String,
    headers: HeaderMap,
    requests: DynamicStream,
    seen: Vec<DynamicMessage>,
    out: VecDeque<DynamicMessage>,
    done: bool,
}

impl Bidi {
    async fn next(mut self) -> Option<(Result<DynamicMessage, Status>, Bidi)> {
        loop {
            if let Some(m) = self.out.pop_front() {
                return Some((Ok(m), self));
            }
            if self.done {
                return None;
            }
            let msg = match self.requests.next().await {
                Some(Ok(m)) => m,
                Some(Err(e)) => {
                    self.done = true;
                    return Some((Err(e), self));
                }
                None => {
                    self.done = true;
                    let all = std::mem::take(&mut self.seen);
                    let call = view(&name(&self.method), &self.headers, all);
                    self.shared.keep(call);
                    return None;
                }
            };
            self.seen.push(msg.clone());
            let one = view(&name(&self.method), &self.headers, vec![msg.clone()]);
            let Some(m) = self.shared.pick(&self.method, &one, &self.session) else {
                self.done = true;
                let st = self.shared.missed(&self.method, &one);
                let all = std::mem::take(&mut self.seen);
                let call = view(&name(&self.method), &self.headers, all);
                self.shared.keep(call);
                return Some((Err(st), self));
            };
            let r = &m.mock.respond;
            pause(r.delay).await;
            match r.messages(&self.method, Some(&msg)) {
                Ok(list) => self.out.extend(list),
                Err(st) => {
                    self.done = true;
                    return Some((Err(st), self));
                }
            }
        }
    }
}
