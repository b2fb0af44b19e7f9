//! Picking the stub for a call: the method's stubs (from its index when it has one) filtered by
//! session, `times`, headers and input, the best by GripMock's ranking; for a client stream by
//! all its messages, for a bidi stream message by message. A call none matches gets NOT_FOUND
//! naming the closest stub.

use std::{cmp::Reverse, sync::Arc};

use http::HeaderMap;
use prost_reflect::{DynamicMessage, MethodDescriptor};
use volley_server::Status;

use crate::{
    matcher::rank::{Candidates, Rank},
    model::{Input, Stub},
    notfound,
    stubs::{MethodStubs, Stubs, Table},
};

/// The outcome of a pick.
pub(crate) enum Picked {
    /// The stub, and which of its matches this is (1-based, per session).
    Stub(Arc<Stub>, u32),
    /// The method has no stubs at all.
    NoStubs,
    NotFound(Status),
}

/// What a call brings besides its messages.
pub(crate) struct Call<'a> {
    pub method: &'a MethodDescriptor,
    pub headers: &'a HeaderMap,
    pub session: &'a str,
    /// Whether the match counts (a call), or not (the admin API's search).
    pub count: bool,
}

/// How a candidate stub matched: (specificity, message rank), or `None`.
type Test<'t> = dyn Fn(&Stub) -> Option<(u32, u32)> + 't;

/// The stubs of `method`: its own, or (GripMock's fallback) those of a method of the same name
/// and input type on another service.
fn of<'t>(table: &'t Table, method: &MethodDescriptor) -> Option<&'t MethodStubs> {
    table.methods.get(method.full_name()).or_else(|| {
        table.methods.values().find(|ms| {
            ms.stubs.first().is_some_and(|s| {
                s.method.name() == method.name() && s.method.input() == method.input()
            })
        })
    })
}

impl Stubs {
    fn select(
        &self,
        ms: &MethodStubs,
        call: &Call<'_>,
        candidates: impl Iterator<Item = usize>,
        test: &Test<'_>,
    ) -> Option<Arc<Stub>> {
        let mut best: Option<(Rank, &Arc<Stub>)> = None;
        for i in candidates {
            let s = &ms.stubs[i];
            if !Stubs::visible(s, call.session)
                || !self.available(s, call.session)
                || !self.in_state(s, call.session)
            {
                continue;
            }
            let header_spec = match &s.headers {
                Some(h) if !h.matches(call.headers) => continue,
                Some(h) => h.specificity(call.headers),
                None => 0,
            };
            let Some((spec, message)) = test(s) else {
                continue;
            };
            let rank = Rank {
                specificity: spec + header_spec,
                priority: s.priority,
                message,
                fields: s.fields,
                order: Reverse(i),
            };
            if best.as_ref().is_none_or(|(r, _)| rank > *r) {
                best = Some((rank, s));
            }
        }
        best.map(|(_, s)| s.clone())
    }

    /// The best stub, its match counted (again when another call took its last one first).
    /// `candidates` makes the positions to look at, afresh for each try.
    fn pick_with<I: Iterator<Item = usize>>(
        &self,
        ms: &MethodStubs,
        call: &Call<'_>,
        candidates: impl Fn() -> I,
        test: &Test<'_>,
    ) -> Option<(Arc<Stub>, u32)> {
        for _ in 0..16 {
            let s = self.select(ms, call, candidates(), test)?;
            if !call.count {
                let n = self.used(&s, call.session) + 1;
                return Some((s, n));
            }
            if !self.advance(&s, call.session) {
                continue;
            }
            if let Some(n) = self.take(&s, call.session) {
                return Some((s, n));
            }
        }
        None
    }

    /// The stub nearest to a call of `method` (`pkg.Service.Method`) that no stub matched, for
    /// the mock's page: its id and each of its conditions the call's last message does not
    /// meet (`InputMatcher::misses`). `None` when the method has no stub `session` sees.
    pub(crate) fn nearest(
        &self,
        method: &str,
        session: &str,
        msg: Option<&DynamicMessage>,
    ) -> Option<(uuid::Uuid, Vec<serde_json::Value>)> {
        let table = self.current();
        let ms = table.methods.get(method)?;
        let (_, stub) = self.closest(ms, session, msg)?;
        let got = msg.map(notfound::request_map).unwrap_or_default();
        let misses = match (&stub.input, msg) {
            (Input::One(m), Some(r)) => m.misses(r, &got),
            (Input::Each(list), Some(r)) => list
                .iter()
                .map(|m| m.misses(r, &got))
                .min_by_key(Vec::len)
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        Some((stub.id, misses))
    }

    /// The closest stub to `msg`: the visible one meeting the most conditions, and how many.
    fn closest<'t>(
        &self,
        ms: &'t MethodStubs,
        session: &str,
        msg: Option<&DynamicMessage>,
    ) -> Option<(u32, &'t Stub)> {
        let mut best: Option<(u32, &Stub)> = None;
        for s in &ms.stubs {
            if !Stubs::visible(s, session) || !self.available(s, session) {
                continue;
            }
            let hits = match (&s.input, msg) {
                (Input::One(m), Some(r)) => m.hits(r),
                (Input::Each(list), Some(r)) => list.iter().map(|m| m.hits(r)).max().unwrap_or(0),
                _ => 0,
            };
            if best.is_none_or(|(h, _)| hits > h) {
                best = Some((hits, s));
            }
        }
        best
    }

    fn not_found(
        &self,
        ms: &MethodStubs,
        call: &Call<'_>,
        requests: &[&DynamicMessage],
        stream: bool,
    ) -> Status {
        let closest = self.closest(ms, call.session, requests.last().copied());
        let text = if self.inner().options.gripmock_text {
            // GripMock names a stub only when it is similar: one condition met at least.
            let similar = closest.filter(|(h, _)| *h > 0).map(|(_, s)| s);
            notfound::gripmock(call.method, call.headers, requests, stream, similar)
        } else {
            notfound::volley(
                call.method,
                requests.last().copied(),
                closest.map(|(_, s)| s),
            )
        };
        Status::not_found(text)
    }

    /// The stub for one request (unary and server-streaming calls).
    pub(crate) fn pick_one(&self, call: &Call<'_>, msg: &DynamicMessage) -> Picked {
        let table = self.current();
        let Some(ms) = of(&table, call.method) else {
            return Picked::NoStubs;
        };
        // The index's bucket and the stubs it does not cover, or every stub: no list made.
        let candidates = || match &ms.index {
            Some(ix) => Candidates::Indexed(ix.candidates(msg)),
            None => Candidates::All(0..ms.stubs.len()),
        };
        let test = |s: &Stub| match &s.input {
            Input::Any => Some((0, 0)),
            Input::One(m) => m.matches(msg).then(|| (m.specificity(msg), 0)),
            Input::Each(list) => list
                .iter()
                .all(|m| m.matches(msg))
                .then(|| (list.iter().map(|m| m.specificity(msg)).sum(), 0)),
        };
        match self.pick_with(ms, call, candidates, &test) {
            Some((s, n)) => Picked::Stub(s, n),
            None => Picked::NotFound(self.not_found(ms, call, &[msg], false)),
        }
    }

    /// The stub for a client stream's messages: `input` when any message matches it (the later
    /// the better), `inputs` when each message matches its element (one element: every message).
    pub(crate) fn pick_all(&self, call: &Call<'_>, msgs: &[DynamicMessage]) -> Picked {
        let table = self.current();
        let Some(ms) = of(&table, call.method) else {
            return Picked::NoStubs;
        };
        let candidates = || 0..ms.stubs.len();
        let test = |s: &Stub| match &s.input {
            Input::Any => Some((0, msgs.len() as u32)),
            Input::One(m) => msgs
                .iter()
                .enumerate()
                .rev()
                .find(|(_, r)| m.matches(r))
                .map(|(i, r)| (m.specificity(r), i as u32 + 1)),
            Input::Each(list) if list.len() == 1 => {
                msgs.iter().all(|r| list[0].matches(r)).then(|| {
                    (
                        msgs.iter()
                            .map(|r| list[0].specificity(r))
                            .max()
                            .unwrap_or(0),
                        msgs.len() as u32,
                    )
                })
            }
            Input::Each(list) => (list.len() == msgs.len()
                && list.iter().zip(msgs).all(|(m, r)| m.matches(r)))
            .then(|| {
                (
                    list.iter().zip(msgs).map(|(m, r)| m.specificity(r)).sum(),
                    msgs.len() as u32,
                )
            }),
        };
        match self.pick_with(ms, call, candidates, &test) {
            Some((s, n)) => Picked::Stub(s, n),
            None => {
                let refs: Vec<&DynamicMessage> = msgs.iter().collect();
                Picked::NotFound(self.not_found(ms, call, &refs, true))
            }
        }
    }

    /// The stub for message `i` of a bidi stream. `alive` holds the `inputs` stubs that matched
    /// every message so far (`None` before the first).
    pub(crate) fn pick_bidi(
        &self,
        call: &Call<'_>,
        msg: &DynamicMessage,
        i: usize,
        alive: &mut Option<Vec<uuid::Uuid>>,
    ) -> Picked {
        let table = self.current();
        let Some(ms) = of(&table, call.method) else {
            return Picked::NoStubs;
        };
        let still = |s: &Stub| alive.as_ref().is_none_or(|ids| ids.contains(&s.id));
        let test = |s: &Stub| match &s.input {
            Input::Any => Some((0, 0)),
            Input::One(m) => m.matches(msg).then(|| (m.specificity(msg), 0)),
            Input::Each(list) => (still(s) && list.get(i).is_some_and(|m| m.matches(msg)))
                .then(|| (list[i].specificity(msg), 0)),
        };
        let picked = self.pick_with(ms, call, || 0..ms.stubs.len(), &test);
        let scripted: Vec<&Arc<Stub>> = ms
            .stubs
            .iter()
            .filter(|s| matches!(s.input, Input::Each(_)) && still(s))
            .collect();
        let next: Vec<uuid::Uuid> = scripted
            .iter()
            .filter(|s| test(s).is_some())
            .map(|s| s.id)
            .collect();
        let over = scripted
            .iter()
            .find(|s| matches!(&s.input, Input::Each(l) if l.len() <= i));
        *alive = Some(next);
        match picked {
            Some((s, n)) => Picked::Stub(s, n),
            None => match over {
                Some(s) => {
                    let n = match &s.input {
                        Input::Each(l) => l.len(),
                        _ => 0,
                    };
                    Picked::NotFound(Status::not_found(format!(
                        "stub {} scripts {n} message(s) for {}/{}, but the client sent message #{}; \
                         declare another inputs/output.stream pair or stop sending",
                        s.id,
                        call.method.parent_service().full_name(),
                        call.method.name(),
                        i + 1
                    )))
                }
                None => Picked::NotFound(self.not_found(ms, call, &[msg], false)),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use prost_reflect::{DynamicMessage, Value};
    use serde_json::json;

    use super::*;
    use crate::{model::Origin, stubs::Options};

    /// Stubs for `grpc.health.v1.Health/Check` (a pool every build has), from JSON.
    fn stubs(list: serde_json::Value) -> (Stubs, MethodDescriptor) {
        let pool = crate::health::pool();
        let stubs =
            Stubs::load_with(&[], std::slice::from_ref(&pool), Options::gripmock()).unwrap();
        let values = list.as_array().unwrap().clone();
        stubs.upsert(&values, Origin::Rest, None).unwrap();
        let method = pool
            .get_service_by_name("grpc.health.v1.Health")
            .and_then(|s| s.methods().find(|m| m.name() == "Check"))
            .unwrap();
        (stubs, method)
    }

    fn request(method: &MethodDescriptor, service: &str) -> DynamicMessage {
        let mut m = DynamicMessage::new(method.input());
        m.set_field_by_name("service", Value::String(service.into()));
        m
    }

    fn answer(stubs: &Stubs, method: &MethodDescriptor, service: &str, session: &str) -> String {
        let headers = HeaderMap::new();
        let call = Call {
            method,
            headers: &headers,
            session,
            count: true,
        };
        match stubs.pick_one(&call, &request(method, service)) {
            Picked::Stub(s, _) => s.raw["output"]["data"]["status"]
                .as_str()
                .unwrap_or("?")
                .to_owned(),
            Picked::NoStubs => "no stubs".into(),
            Picked::NotFound(_) => "not found".into(),
        }
    }

    fn stub(input: serde_json::Value, status: &str, extra: serde_json::Value) -> serde_json::Value {
        let mut s = json!({"service": "grpc.health.v1.Health", "method": "Check", "input": input,
                           "output": {"data": {"status": status}}});
        for (k, v) in extra.as_object().unwrap() {
            s[k] = v.clone();
        }
        s
    }

    #[test]
    fn specificity_then_priority_then_order() {
        let (s, m) = stubs(json!([
            stub(
                json!({"matches": {"service": "^a"}}),
                "NOT_SERVING",
                json!({"priority": 100})
            ),
            stub(json!({"equals": {"service": "ab"}}), "SERVING", json!({})),
            stub(json!({}), "UNKNOWN", json!({})),
            stub(
                json!({"equals": {"service": "x"}}),
                "SERVICE_UNKNOWN",
                json!({"priority": 1})
            ),
            stub(
                json!({"equals": {"service": "x"}}),
                "SERVING",
                json!({"priority": 2})
            ),
        ]));
        // The same specificity: priority decides.
        assert_eq!(answer(&s, &m, "ab", ""), "NOT_SERVING");
        assert_eq!(answer(&s, &m, "x", ""), "SERVING");
        // A catch-all ranks below any stub the request sets a key of.
        assert_eq!(answer(&s, &m, "zzz", ""), "UNKNOWN");
    }

    #[test]
    fn times_and_sessions_count_apart() {
        let (s, m) = stubs(json!([
            stub(
                json!({"equals": {"service": "t"}}),
                "NOT_SERVING",
                json!({"priority": 5, "options": {"times": 1}})
            ),
            stub(json!({"equals": {"service": "t"}}), "SERVING", json!({})),
            stub(
                json!({"equals": {"service": "s"}}),
                "SERVING",
                json!({"session": "one"})
            ),
        ]));
        assert_eq!(answer(&s, &m, "t", ""), "NOT_SERVING");
        assert_eq!(answer(&s, &m, "t", ""), "SERVING");
        // Another session has its own count.
        assert_eq!(answer(&s, &m, "t", "two"), "NOT_SERVING");
        assert_eq!(answer(&s, &m, "s", ""), "not found");
        assert_eq!(answer(&s, &m, "s", "one"), "SERVING");
    }

    #[test]
    fn an_index_over_many_stubs_answers_as_a_scan_would() {
        let mut list: Vec<serde_json::Value> = (0..50)
            .map(|i| {
                stub(
                    json!({"equals": {"service": format!("svc-{i}")}}),
                    "SERVING",
                    json!({}),
                )
            })
            .collect();
        list.push(stub(
            json!({"matches": {"service": "^svc-4"}}),
            "NOT_SERVING",
            json!({"priority": 9}),
        ));
        let (s, m) = stubs(json!(list));
        let table = s.current();
        assert!(table.methods.values().next().unwrap().index.is_some());
        // svc-40: its equals stub and the matches stub tie on specificity; priority wins.
        assert_eq!(answer(&s, &m, "svc-40", ""), "NOT_SERVING");
        assert_eq!(answer(&s, &m, "svc-7", ""), "SERVING");
        assert_eq!(answer(&s, &m, "svc-99", ""), "not found");
    }
}
