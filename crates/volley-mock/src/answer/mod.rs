//! The four call kinds answered from the stub each call picks: the delay, the effects, then the
//! status or the messages (a stream's message by message, each after its delay, a `_gripmock`
//! marker ending it with a status), with the stub's headers and trailers; each call kept in the
//! history when it is on.

mod reply;
mod stream;
mod trace;

use std::sync::Arc;

use futures_util::StreamExt;
use http::HeaderMap;
use prost_reflect::{DynamicMessage, MethodDescriptor};
use volley_server::{DynamicFuture, DynamicHandler, DynamicStream, Request, Response, Status};

use reply::{add_metadata, ctx, delay, effects, message, status, wait};
pub(crate) use trace::session_of;
pub(crate) use trace::{SESSION, Trace};

use crate::{
    model::Stub,
    notfound,
    pick::{Call, Picked},
    stubs::Stubs,
};

/// A call's answer, to come.
type Answer<T> = DynamicFuture<Result<Response<T>, Status>>;

/// A request no stub matched, handed back, and NOT_FOUND when the method has stubs.
type Missed = Box<(Request<DynamicMessage>, Option<Status>)>;

fn ready<T: Send + 'static>(r: Result<T, Status>) -> DynamicFuture<Result<T, Status>> {
    Box::pin(std::future::ready(r))
}

impl Stubs {
    /// NOT_FOUND for a method no stub is written for.
    fn no_stubs(
        &self,
        method: &MethodDescriptor,
        headers: &HeaderMap,
        requests: &[&DynamicMessage],
        stream: bool,
    ) -> Status {
        if self.inner().options.gripmock_text {
            Status::not_found(notfound::gripmock(method, headers, requests, stream, None))
        } else {
            Status::not_found(format!(
                "{}/{} has no stubs",
                method.parent_service().full_name(),
                method.name()
            ))
        }
    }

    fn keeps(&self) -> bool {
        self.inner().history.enabled
    }

    /// A unary call answered by the stub it matches; `Err` with the request back when none
    /// does (health falls back to its own answer then).
    pub(crate) fn try_unary(
        &self,
        method: &MethodDescriptor,
        request: Request<DynamicMessage>,
    ) -> Result<Answer<DynamicMessage>, Missed> {
        let session = session_of(request.metadata());
        let call = Call {
            method,
            headers: request.metadata(),
            session: &session,
            count: true,
        };
        let (stub, attempt) = match self.pick_one(&call, request.get_ref()) {
            Picked::Stub(s, n) => (s, n),
            Picked::NoStubs => return Err(Box::new((request, None))),
            Picked::NotFound(st) => return Err(Box::new((request, Some(st)))),
        };
        let (this, method) = (self.clone(), method.clone());
        Ok(Box::pin(async move {
            let (headers, msg) = request.into_parts();
            let mut trace = Trace::new(&method, &session);
            trace.stub = Some(stub.id);
            let ctx = stub.templated.then(|| {
                ctx(
                    &stub,
                    &method,
                    &headers,
                    std::slice::from_ref(&msg),
                    0,
                    attempt,
                    trace.at,
                )
            });
            let result = unary_answer(&this, &stub, &method, ctx.as_ref()).await;
            if this.keeps() {
                trace.requests.push(msg);
                if let Ok(r) = &result {
                    trace.responses.push(r.get_ref().clone());
                }
                trace.done(&this, result.as_ref().err());
            }
            result
        }))
    }

    /// A server-streaming call answered by the stub it matches, or the request back.
    pub(crate) fn try_server_streaming(
        &self,
        method: &MethodDescriptor,
        request: Request<DynamicMessage>,
    ) -> Result<Answer<DynamicStream>, Missed> {
        let session = session_of(request.metadata());
        let call = Call {
            method,
            headers: request.metadata(),
            session: &session,
            count: true,
        };
        let (stub, attempt) = match self.pick_one(&call, request.get_ref()) {
            Picked::Stub(s, n) => (s, n),
            Picked::NoStubs => return Err(Box::new((request, None))),
            Picked::NotFound(st) => return Err(Box::new((request, Some(st)))),
        };
        let (this, method) = (self.clone(), method.clone());
        Ok(Box::pin(async move {
            let (headers, msg) = request.into_parts();
            let mut trace = Trace::new(&method, &session);
            trace.stub = Some(stub.id);
            let requests = vec![msg];
            let ctx = stub
                .templated
                .then(|| ctx(&stub, &method, &headers, &requests, 0, attempt, trace.at));
            if this.keeps() {
                trace.requests = requests;
            }
            stream::respond(&this, &stub, &method, ctx.as_ref(), None, trace).await
        }))
    }

    fn missed<T: Send + 'static>(
        &self,
        method: &MethodDescriptor,
        request: &Request<DynamicMessage>,
        status: Option<Status>,
    ) -> DynamicFuture<Result<T, Status>> {
        let session = session_of(request.metadata());
        let st = status.unwrap_or_else(|| {
            self.no_stubs(method, request.metadata(), &[request.get_ref()], false)
        });
        if self.keeps() {
            let mut t = Trace::new(method, &session);
            t.requests.push(request.get_ref().clone());
            t.done(self, Some(&st));
        }
        ready(Err(st))
    }
}

/// A unary (or client-streaming) answer: delay, effects, then the status or the message.
async fn unary_answer(
    stubs: &Stubs,
    stub: &Stub,
    method: &MethodDescriptor,
    ctx: Option<&crate::template::Ctx>,
) -> Result<Response<DynamicMessage>, Status> {
    wait(delay(&stub.output.delay, ctx, stub)?).await;
    effects(stubs, stub, ctx);
    let out = &stub.output;
    if let Some((code, msg)) = &out.status {
        return Err(status(stub, *code, msg, &out.details, ctx));
    }
    let first = out
        .data
        .as_ref()
        .or_else(|| out.stream.iter().flatten().find_map(|i| i.reply.as_ref()));
    let reply = match first {
        Some(r) => message(r, ctx, stub, method)?,
        None => DynamicMessage::new(method.output()),
    };
    let mut resp = Response::new(reply);
    add_metadata(resp.metadata_mut(), &out.headers, ctx, stub)?;
    add_metadata(resp.trailers_mut(), &out.trailers, ctx, stub)?;
    Ok(resp)
}

impl DynamicHandler for Stubs {
    fn unary(
        &self,
        method: &MethodDescriptor,
        request: Request<DynamicMessage>,
    ) -> DynamicFuture<Result<Response<DynamicMessage>, Status>> {
        match self.try_unary(method, request).map_err(|m| *m) {
            Ok(f) => f,
            Err((request, None)) if self.inner().options.defaults.is_some() => {
                let d = self.inner().options.defaults.clone();
                d.map_or_else(
                    || ready(Err(Status::internal("no defaults"))),
                    |d| d.unary(method, request),
                )
            }
            Err((request, st)) => self.missed(method, &request, st),
        }
    }

    fn server_streaming(
        &self,
        method: &MethodDescriptor,
        request: Request<DynamicMessage>,
    ) -> DynamicFuture<Result<Response<DynamicStream>, Status>> {
        match self.try_server_streaming(method, request).map_err(|m| *m) {
            Ok(f) => f,
            Err((request, None)) if self.inner().options.defaults.is_some() => {
                let d = self.inner().options.defaults.clone();
                d.map_or_else(
                    || ready(Err(Status::internal("no defaults"))),
                    |d| d.server_streaming(method, request),
                )
            }
            Err((request, st)) => self.missed(method, &request, st),
        }
    }

    fn client_streaming(
        &self,
        method: &MethodDescriptor,
        request: Request<DynamicStream>,
    ) -> DynamicFuture<Result<Response<DynamicMessage>, Status>> {
        let (this, method) = (self.clone(), method.clone());
        let (headers, mut requests) = request.into_parts();
        Box::pin(async move {
            let session = session_of(&headers);
            let mut msgs = Vec::new();
            while let Some(r) = requests.next().await {
                msgs.push(r?);
            }
            let call = Call {
                method: &method,
                headers: &headers,
                session: &session,
                count: true,
            };
            let mut trace = Trace::new(&method, &session);
            let picked = this.pick_all(&call, &msgs);
            let result = match picked {
                Picked::Stub(stub, attempt) => {
                    trace.stub = Some(stub.id);
                    let ctx = stub.templated.then(|| {
                        ctx(
                            &stub,
                            &method,
                            &headers,
                            &msgs,
                            msgs.len().saturating_sub(1),
                            attempt,
                            trace.at,
                        )
                    });
                    unary_answer(&this, &stub, &method, ctx.as_ref()).await
                }
                Picked::NoStubs if this.inner().options.defaults.is_some() => {
                    Ok(Response::new(DynamicMessage::new(method.output())))
                }
                Picked::NoStubs => {
                    let refs: Vec<&DynamicMessage> = msgs.iter().collect();
                    Err(this.no_stubs(&method, &headers, &refs, true))
                }
                Picked::NotFound(st) => Err(st),
            };
            if this.keeps() {
                if let Ok(r) = &result {
                    trace.responses.push(r.get_ref().clone());
                }
                trace.requests = msgs;
                trace.done(&this, result.as_ref().err());
            }
            result
        })
    }

    fn bidi_streaming(
        &self,
        method: &MethodDescriptor,
        request: Request<DynamicStream>,
    ) -> DynamicFuture<Result<Response<DynamicStream>, Status>> {
        let (this, method) = (self.clone(), method.clone());
        let (headers, requests) = request.into_parts();
        Box::pin(stream::bidi(this, method, Arc::new(headers), requests))
    }
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;
    use prost_reflect::Value as Field;
    use serde_json::json;
    use volley_server::Code;

    use super::*;
    use crate::{
        model::Origin,
        stubs::Options,
        testkit::{block_on, check, msg, pool, split, stubs, stubs_with},
    };

    fn request(method: &MethodDescriptor, service: &str) -> Request<DynamicMessage> {
        Request::new(msg(method.input(), json!({ "service": service })))
    }

    fn status_of(m: &DynamicMessage) -> Option<i32> {
        match m.get_field_by_name("status").as_deref() {
            Some(Field::EnumNumber(n)) => Some(*n),
            _ => None,
        }
    }

    #[test]
    fn a_unary_call_answers_from_its_stub_with_headers_and_trailers_and_is_kept() {
        let pool = pool();
        let m = check(&pool);
        let s = stubs(
            &pool,
            json!([{"service": "grpc.health.v1.Health", "method": "Check",
                    "input": {"equals": {"service": "users"}},
                    "output": {"data": {"status": "NOT_SERVING"},
                               "headers": {"x-a": "1;2"}, "trailers": {"x-t": "done"}}}]),
        );
        let id = s.current().all[0].id;
        let (headers, trailers, reply) =
            split(block_on(s.unary(&m, request(&m, "users"))).unwrap());
        assert_eq!(status_of(&reply), Some(2));
        let a: Vec<&HeaderValue> = headers.get_all("x-a").iter().collect();
        assert_eq!(a, ["1", "2"]);
        assert_eq!(trailers["x-t"], "done");
        let seen = s.inner().history.list(|_| true);
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0]["stubId"], id.to_string());
        assert_eq!(seen[0]["requests"], json!([{"service": "users"}]));
        assert_eq!(seen[0]["responses"], json!([{"status": "NOT_SERVING"}]));
        assert_eq!(seen[0]["code"], 0);
    }

    #[test]
    fn a_call_no_stub_matches_is_not_found_and_kept_with_its_status() {
        let pool = pool();
        let m = check(&pool);
        let s = stubs(
            &pool,
            json!([{"service": "grpc.health.v1.Health", "method": "Check",
                    "input": {"equals": {"service": "users"}}, "output": {"data": {}}}]),
        );
        let e = block_on(s.unary(&m, request(&m, "orders"))).unwrap_err();
        assert_eq!(e.code(), Code::NotFound);
        let seen = s.inner().history.list(|_| true);
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0]["code"], Code::NotFound as i32);
        assert_eq!(seen[0]["error"], e.message());
        assert!(seen[0].get("stubId").is_none());

        // A method with no stubs at all: the request comes back (health answers it then),
        // and volley's own words when GripMock's are off.
        let plain = stubs_with(
            &pool,
            Options {
                defaults: None,
                strict: true,
                gripmock_text: false,
                history: 0,
            },
            json!([]),
        );
        let Err(missed) = plain.try_unary(&m, request(&m, "back")) else {
            panic!("no stub, no answer");
        };
        let (back, status) = *missed;
        assert!(status.is_none());
        assert_eq!(back.get_ref(), &msg(m.input(), json!({"service": "back"})));
        let e = block_on(plain.unary(&m, request(&m, "x"))).unwrap_err();
        assert_eq!(
            (e.code(), e.message()),
            (Code::NotFound, "grpc.health.v1.Health/Check has no stubs")
        );
    }

    #[test]
    fn a_session_s_stubs_answer_only_its_calls_and_a_trace_keeps_the_session() {
        let pool = pool();
        let m = check(&pool);
        let s = stubs(&pool, json!([]));
        s.upsert(
            &[
                json!({"service": "grpc.health.v1.Health", "method": "Check",
                     "output": {"data": {"status": "SERVING"}}}),
            ],
            Origin::Rest,
            Some("one"),
        )
        .unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(SESSION, HeaderValue::from_static("one"));
        assert_eq!(session_of(&headers), "one");
        assert_eq!(session_of(&HeaderMap::new()), "");
        // A call without the session header does not see the session's stub.
        let e = block_on(s.unary(&m, request(&m, "x"))).unwrap_err();
        assert_eq!(e.code(), Code::NotFound);

        let mut t = Trace::new(&m, "one");
        t.requests.push(msg(m.input(), json!({"service": "y"})));
        t.done(&s, Some(&Status::new(Code::Aborted, "stop")));
        let kept = s.inner().history.list(|c| c.session == "one");
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0]["service"], "grpc.health.v1.Health");
        assert_eq!(kept[0]["method"], "Check");
        assert_eq!(kept[0]["session"], "one");
        assert_eq!(kept[0]["code"], Code::Aborted as i32);
        assert_eq!(kept[0]["error"], "stop");
        assert_eq!(kept[0]["requests"], json!([{"service": "y"}]));
    }
}
