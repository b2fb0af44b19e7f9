//! Streamed answers: a server stream's messages and a bidi stream's replies, each sent after
//! its delay, a status (GripMock's `_gripmock` marker, or the stub's error after its messages)
//! ending the stream; a bidi stream answered message by message, its headers those of the stub
//! its first message picks.

use std::{collections::VecDeque, sync::Arc, time::Duration};

use futures_util::StreamExt;
use http::HeaderMap;
use prost_reflect::{DynamicMessage, MethodDescriptor};
use volley_server::{DynamicStream, Response, Status};

use super::{
    reply,
    trace::{Trace, session_of},
};
use crate::{
    model::{Input, Stub},
    pick::{Call, Picked},
    stubs::Stubs,
    template::Ctx,
};

/// One message (or the status ending the stream) and the delay before it.
struct Step {
    delay: Duration,
    item: Result<DynamicMessage, Status>,
}

/// What `stub` sends: all of its stream, or (an `inputs` stub answering bidi message `index`)
/// the element for that message, and the rest after the script's last message.
fn steps(
    stub: &Stub,
    method: &MethodDescriptor,
    ctx: Option<&Ctx>,
    index: Option<usize>,
) -> Result<VecDeque<Step>, Status> {
    let out = &stub.output;
    let base = reply::delay(&out.delay, ctx, stub)?;
    let mut steps = VecDeque::new();
    // An `inputs` stub answering bidi message `index`: that message's element, and after the
    // script's last message the rest and the stub's status (not before: the status ends the
    // stream).
    let last = match (&stub.input, index) {
        (Input::Each(list), Some(i)) => i + 1 >= list.len(),
        _ => true,
    };
    let items: Vec<_> = match (&out.stream, &stub.input, index) {
        (Some(items), Input::Each(list), Some(i)) => {
            let mut v: Vec<_> = items.get(i).into_iter().collect();
            if last {
                v.extend(items.iter().skip(list.len()));
            }
            v
        }
        (Some(items), ..) => items.iter().collect(),
        (None, ..) => Vec::new(),
    };
    if out.stream.is_none()
        && let Some(r) = &out.data
    {
        steps.push_back(Step {
            delay: base,
            item: Ok(reply::message(r, ctx, stub, method)?),
        });
    }
    for item in items {
        let d = match &item.delay {
            Some(d) => reply::delay(d, ctx, stub)?,
            None => base,
        };
        if let Some((code, msg, details)) = &item.status {
            steps.push_back(Step {
                delay: d,
                item: Err(reply::status(stub, *code, msg, details, ctx)),
            });
            return Ok(steps);
        }
        if let Some(r) = &item.reply {
            steps.push_back(Step {
                delay: d,
                item: Ok(reply::message(r, ctx, stub, method)?),
            });
        }
    }
    if let Some((code, msg)) = out.status.as_ref().filter(|_| last) {
        steps.push_back(Step {
            delay: Duration::ZERO,
            item: Err(reply::status(stub, *code, msg, &out.details, ctx)),
        });
    }
    Ok(steps)
}

/// A server stream's response: headers now, messages as their delays pass.
pub(super) async fn respond(
    stubs: &Stubs,
    stub: &Arc<Stub>,
    method: &MethodDescriptor,
    ctx: Option<&Ctx>,
    index: Option<usize>,
    trace: Trace,
) -> Result<Response<DynamicStream>, Status> {
    reply::effects(stubs, stub, ctx);
    let mut steps = steps(stub, method, ctx, index)?;
    // A stream that starts with its status fails the call at once.
    if let Some(Step { item: Err(_), .. }) = steps.front() {
        let Some(Step {
            delay,
            item: Err(st),
        }) = steps.pop_front()
        else {
            unreachable!("checked above");
        };
        reply::wait(delay).await;
        if stubs.keeps() {
            trace.done(stubs, Some(&st));
        }
        return Err(st);
    }
    let mut resp = Response::new(timed(steps, stubs.clone(), trace));
    reply::add_metadata(resp.metadata_mut(), &stub.output.headers, ctx, stub)?;
    reply::add_metadata(resp.trailers_mut(), &stub.output.trailers, ctx, stub)?;
    Ok(resp)
}

fn timed(steps: VecDeque<Step>, stubs: Stubs, trace: Trace) -> DynamicStream {
    Box::pin(futures_util::stream::unfold(
        (steps, Some(trace), stubs),
        |(mut steps, mut trace, stubs)| async move {
            let Some(step) = steps.pop_front() else {
                if let Some(t) = trace.take().filter(|_| stubs.keeps()) {
                    t.done(&stubs, None);
                }
                return None;
            };
            reply::wait(step.delay).await;
            match step.item {
                Ok(m) => {
                    if let Some(t) = trace.as_mut().filter(|_| stubs.keeps()) {
                        t.responses.push(m.clone());
                    }
                    Some((Ok(m), (steps, trace, stubs)))
                }
                Err(st) => {
                    if let Some(t) = trace.take().filter(|_| stubs.keeps()) {
                        t.done(&stubs, Some(&st));
                    }
                    Some((Err(st), (VecDeque::new(), None, stubs)))
                }
            }
        },
    ))
}

/// A bidi stream in progress.
struct Bidi {
    stubs: Stubs,
    method: MethodDescriptor,
    headers: Arc<HeaderMap>,
    session: String,
    requests: DynamicStream,
    /// The messages so far (`.Requests`).
    seen: Vec<DynamicMessage>,
    alive: Option<Vec<uuid::Uuid>>,
    queue: VecDeque<Step>,
    trace: Option<Trace>,
    ended: bool,
}

impl Bidi {
    /// Answers message `msg`: its replies queued; the stub that answers.
    fn answer(&mut self, msg: DynamicMessage) -> Result<Option<Arc<Stub>>, Status> {
        let i = self.seen.len();
        self.seen.push(msg);
        let msg = &self.seen[i];
        let call = Call {
            method: &self.method,
            headers: &self.headers,
            session: &self.session,
            count: true,
        };
        let (stub, attempt) = match self.stubs.pick_bidi(&call, msg, i, &mut self.alive) {
            Picked::Stub(s, n) => (s, n),
            Picked::NotFound(st) => return Err(st),
            Picked::NoStubs => match &self.stubs.inner().options.defaults {
                Some(d) => {
                    for _ in 0..d.stream_messages {
                        self.queue.push_back(Step {
                            delay: Duration::ZERO,
                            item: Ok(DynamicMessage::new(self.method.output())),
                        });
                    }
                    return Ok(None);
                }
                None => {
                    return Err(self
                        .stubs
                        .no_stubs(&self.method, &self.headers, &[msg], false));
                }
            },
        };
        if let Some(t) = &mut self.trace {
            t.stub = Some(stub.id);
        }
        let at = std::time::SystemTime::now();
        let ctx = stub.templated.then(|| {
            reply::ctx(
                &stub,
                &self.method,
                &self.headers,
                &self.seen,
                i,
                attempt,
                at,
            )
        });
        reply::effects(&self.stubs, &stub, ctx.as_ref());
        let index = matches!(stub.input, Input::Each(_)).then_some(i);
        self.queue
            .extend(steps(&stub, &self.method, ctx.as_ref(), index)?);
        Ok(Some(stub))
    }

    fn finish(&mut self, outcome: Option<&Status>) {
        if let Some(mut t) = self.trace.take().filter(|_| self.stubs.keeps()) {
            t.requests = std::mem::take(&mut self.seen);
            t.done(&self.stubs, outcome);
        }
    }

    async fn next(&mut self) -> Option<Result<DynamicMessage, Status>> {
        loop {
            if let Some(step) = self.queue.pop_front() {
                reply::wait(step.delay).await;
                match step.item {
                    Ok(m) => {
                        if let Some(t) = self.trace.as_mut().filter(|_| self.stubs.keeps()) {
                            t.responses.push(m.clone());
                        }
                        return Some(Ok(m));
                    }
                    Err(st) => {
                        self.ended = true;
                        self.queue.clear();
                        self.finish(Some(&st));
                        return Some(Err(st));
                    }
                }
            }
            if self.ended {
                self.finish(None);
                return None;
            }
            match self.requests.next().await {
                None => {
                    self.ended = true;
                }
                Some(Err(e)) => {
                    self.ended = true;
                    self.finish(Some(&e));
                    return Some(Err(e));
                }
                Some(Ok(m)) => {
                    if let Err(st) = self.answer(m) {
                        self.ended = true;
                        self.finish(Some(&st));
                        return Some(Err(st));
                    }
                }
            }
        }
    }
}

/// A bidi call: its first message read and answered before the response starts (so the
/// stub's headers lead it), the rest as they come.
pub(super) async fn bidi(
    stubs: Stubs,
    method: MethodDescriptor,
    headers: Arc<HeaderMap>,
    requests: DynamicStream,
) -> Result<Response<DynamicStream>, Status> {
    let session = session_of(&headers);
    let mut state = Bidi {
        trace: Some(Trace::new(&method, &session)),
        stubs,
        method,
        headers,
        session,
        requests,
        seen: Vec::new(),
        alive: None,
        queue: VecDeque::new(),
        ended: false,
    };
    let first = match state.requests.next().await {
        None => {
            state.finish(None);
            let empty: DynamicStream = Box::pin(futures_util::stream::empty());
            return Ok(Response::new(empty));
        }
        Some(Err(e)) => return Err(e),
        Some(Ok(m)) => m,
    };
    let stub = match state.answer(first) {
        Ok(s) => s,
        Err(st) => {
            state.finish(Some(&st));
            return Err(st);
        }
    };
    let mut headers = HeaderMap::new();
    let mut trailers = HeaderMap::new();
    if let Some(s) = &stub {
        reply::add_metadata(&mut headers, &s.output.headers, None, s)?;
        reply::add_metadata(&mut trailers, &s.output.trailers, None, s)?;
    }
    let replies: DynamicStream =
        Box::pin(futures_util::stream::unfold(state, |mut st| async move {
            st.next().await.map(|item| (item, st))
        }));
    let mut resp = Response::new(replies);
    *resp.metadata_mut() = headers;
    *resp.trailers_mut() = trailers;
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use prost_reflect::Value as Field;
    use serde_json::json;
    use volley_server::{Code, DynamicHandler, Request};

    use super::*;
    use crate::testkit::{block_on, method, msg, pool, split, stubs};

    /// A step as `(delay ms, what)`: the reply's field `field`, or the status.
    fn shown(steps: VecDeque<Step>, field: &str) -> Vec<(u128, String)> {
        steps
            .into_iter()
            .map(|s| {
                let what = match s.item {
                    Ok(m) => match m.get_field_by_name(field).as_deref() {
                        Some(Field::EnumNumber(n)) => n.to_string(),
                        Some(Field::String(t)) => t.clone(),
                        other => format!("{other:?}"),
                    },
                    Err(st) => format!("{:?}: {}", st.code(), st.message()),
                };
                (s.delay.as_millis(), what)
            })
            .collect()
    }

    fn watch_stub(output: serde_json::Value) -> (Stubs, Arc<Stub>, MethodDescriptor) {
        let pool = pool();
        let m = method(&pool, "grpc.health.v1.Health", "Watch");
        let s = stubs(
            &pool,
            json!([{"service": "grpc.health.v1.Health", "method": "Watch", "output": output}]),
        );
        let stub = s.current().all[0].clone();
        (s, stub, m)
    }

    #[test]
    fn a_marker_status_ends_the_stream_where_it_stands() {
        let (_, stub, m) = watch_stub(json!({"delay": "2ms", "stream": [
            {"status": "SERVING"},
            {"status": "NOT_SERVING", "_gripmock": {"delay": "5ms"}},
            {"_gripmock": {"error": "gone", "code": 14}},
            {"status": "SERVING"}
        ]}));
        assert_eq!(
            shown(steps(&stub, &m, None, None).unwrap(), "status"),
            [
                (2, "1".to_owned()),
                (5, "2".to_owned()),
                (2, "Unavailable: gone".to_owned())
            ]
        );
    }

    #[test]
    fn data_comes_first_and_the_stub_s_status_ends_the_stream() {
        let (_, stub, m) = watch_stub(json!({"data": {"status": "SERVING"},
                                             "error": "later", "code": "FAILED_PRECONDITION"}));
        assert_eq!(
            shown(steps(&stub, &m, None, None).unwrap(), "status"),
            [
                (0, "1".to_owned()),
                (0, "FailedPrecondition: later".to_owned())
            ]
        );
    }

    /// The statuses a stream yields to its end, `-1` for an error.
    async fn statuses(mut stream: DynamicStream) -> Vec<i32> {
        let mut out = Vec::new();
        while let Some(item) = stream.next().await {
            out.push(match item {
                Ok(m) => match m.get_field_by_name("status").as_deref() {
                    Some(Field::EnumNumber(n)) => *n,
                    _ => 0,
                },
                Err(_) => -1,
            });
        }
        out
    }

    #[test]
    fn a_server_stream_sends_its_messages_and_one_starting_with_a_status_fails_at_once() {
        let (s, stub, m) = watch_stub(json!({"headers": {"x-a": "1"}, "trailers": {"x-t": "2"},
            "stream": [{"status": "SERVING"}, {"status": "NOT_SERVING"},
                       {"_gripmock": {"error": "over", "code": "ABORTED"}}]}));
        let req = Request::new(msg(m.input(), json!({"service": "x"})));
        let (headers, trailers, replies) = split(block_on(s.server_streaming(&m, req)).unwrap());
        assert_eq!(headers["x-a"], "1");
        assert_eq!(trailers["x-t"], "2");
        assert_eq!(block_on(statuses(replies)), [1, 2, -1]);
        // The call is kept once it ends: its stub, its replies, its status.
        let seen = s.inner().history.list(|_| true);
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0]["stubId"], stub.id.to_string());
        assert_eq!(seen[0]["responses"].as_array().unwrap().len(), 2);
        assert_eq!(seen[0]["code"], Code::Aborted as i32);

        let (failing, _, m) = watch_stub(
            json!({"stream": [{"_gripmock": {"error": "down", "code": "UNAVAILABLE"}}]}),
        );
        let req = Request::new(msg(m.input(), json!({})));
        let e = block_on(failing.server_streaming(&m, req)).err().unwrap();
        assert_eq!((e.code(), e.message()), (Code::Unavailable, "down"));
        assert_eq!(
            failing
                .inner()
                .history
                .count(|c| c.code == Code::Unavailable),
            1
        );
    }

    #[test]
    fn an_inputs_stub_answers_each_bidi_message_with_its_element() {
        let pool = pool();
        let m = method(
            &pool,
            "grpc.reflection.v1.ServerReflection",
            "ServerReflectionInfo",
        );
        let s = stubs(
            &pool,
            json!([{"service": "grpc.reflection.v1.ServerReflection",
                    "method": "ServerReflectionInfo",
                    "inputs": [{"equals": {"host": "a"}}, {"equals": {"host": "b"}}],
                    "output": {"headers": {"x-bidi": "yes"}, "stream": [
                        {"valid_host": "a"}, {"valid_host": "b"}, {"valid_host": "tail"}]}}]),
        );
        let stub = s.current().all[0].clone();
        let hosts = |index| shown(steps(&stub, &m, None, index).unwrap(), "valid_host");
        let names = |v: Vec<(u128, String)>| v.into_iter().map(|(_, h)| h).collect::<Vec<_>>();
        assert_eq!(names(hosts(Some(0))), ["a"]);
        // The script's last message gets the elements past the script too.
        assert_eq!(names(hosts(Some(1))), ["b", "tail"]);
        assert_eq!(names(hosts(None)), ["a", "b", "tail"]);

        let requests: DynamicStream = Box::pin(futures_util::stream::iter(
            ["a", "b"].map(|h| Ok(msg(m.input(), json!({ "host": h })))),
        ));
        let (headers, _, replies) =
            split(block_on(s.bidi_streaming(&m, Request::new(requests))).unwrap());
        assert_eq!(headers["x-bidi"], "yes");
        let got: Vec<String> = block_on(replies.collect::<Vec<_>>())
            .into_iter()
            .map(|r| {
                r.unwrap()
                    .get_field_by_name("valid_host")
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap()
            })
            .collect();
        assert_eq!(got, ["a", "b", "tail"]);
    }
}
