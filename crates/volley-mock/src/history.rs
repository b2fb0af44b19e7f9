//! The calls a mock has answered (GripMock's history): method, session, the stub that answered,
//! the messages both ways, the status and how long it took. Kept within a byte budget, oldest
//! dropped first; messages stay decoded until the admin API asks for them as JSON.

use std::{
    collections::VecDeque,
    sync::Mutex,
    time::{Duration, SystemTime},
};

use prost::Message;
use prost_reflect::{DynamicMessage, SerializeOptions};
use serde_json::{Value, json};
use volley_server::Code;

/// One call.
pub(crate) struct Call {
    pub service: String,
    pub method: String,
    pub session: String,
    pub stub: Option<uuid::Uuid>,
    pub at: SystemTime,
    pub requests: Vec<DynamicMessage>,
    pub responses: Vec<DynamicMessage>,
    pub code: Code,
    pub error: String,
    pub elapsed: Duration,
}

impl Call {
    /// What the call holds in memory, for the byte budget: a decoded message costs far more than
    /// its encoding (each field a boxed value in a map, each nested message its own), so the
    /// estimate counts fields, not encoded bytes. Measured against the mock's RSS under load
    /// (docs/benchmarks-history.md, "The mock: stubs, records and their cost"): the encoded
    /// length alone undercounted about ninefold, and a 64 MiB history grew the process past
    /// 600 MiB.
    fn size(&self) -> usize {
        fn message(m: &DynamicMessage) -> usize {
            let fields: usize = m
                .fields()
                .map(|(_, v)| match v {
                    prost_reflect::Value::Message(inner) => 96 + message(inner),
                    prost_reflect::Value::List(l) => 96 + 64 * l.len(),
                    prost_reflect::Value::Map(m) => 96 + 128 * m.len(),
                    _ => 96,
                })
                .sum();
            std::mem::size_of::<DynamicMessage>() + 64 + fields + 2 * m.encoded_len()
        }
        let m: usize = self
            .requests
            .iter()
            .chain(&self.responses)
            .map(message)
            .sum();
        m + self.service.len() + self.method.len() + self.session.len() + self.error.len() + 512
    }

    /// As GripMock's `GET /api/history` shows it.
    pub(crate) fn json(&self) -> Value {
        let opts = SerializeOptions::new().use_proto_field_name(true);
        let msgs = |list: &[DynamicMessage]| -> Vec<Value> {
            list.iter()
                .map(|m| {
                    m.serialize_with_options(serde_json::value::Serializer, &opts)
                        .unwrap_or(Value::Null)
                })
                .collect()
        };
        let mut v = json!({
            "service": self.service,
            "method": self.method,
            "timestamp": crate::template::rfc3339_of(self.at),
            "requests": msgs(&self.requests),
            "responses": msgs(&self.responses),
            "code": self.code as i32,
            "elapsedMs": self.elapsed.as_secs_f64() * 1e3,
        });
        if let Some(id) = self.stub {
            v["stubId"] = id.to_string().into();
        }
        if !self.session.is_empty() {
            v["session"] = self.session.clone().into();
        }
        if !self.error.is_empty() {
            v["error"] = self.error.clone().into();
        }
        v
    }
}

/// The calls seen, newest last.
pub(crate) struct History {
    pub enabled: bool,
    limit: usize,
    calls: Mutex<(VecDeque<(usize, Call)>, usize)>,
}

impl History {
    /// A history holding up to `limit` bytes of calls (off when `enabled` is false).
    pub(crate) fn new(enabled: bool, limit: usize) -> History {
        History {
            enabled,
            limit,
            calls: Mutex::new((VecDeque::new(), 0)),
        }
    }

    pub(crate) fn record(&self, call: Call) {
        if !self.enabled {
            return;
        }
        let size = call.size();
        let mut g = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        g.1 += size;
        g.0.push_back((size, call));
        while g.1 > self.limit && g.0.len() > 1 {
            if let Some((s, _)) = g.0.pop_front() {
                g.1 -= s;
            }
        }
    }

    /// Each call's JSON that `keep` keeps, oldest first.
    #[cfg(test)]
    pub(crate) fn list(&self, keep: impl Fn(&Call) -> bool) -> Vec<Value> {
        self.page(keep, 0, usize::MAX, |_, _| {}).0
    }

    /// The calls `keep` keeps from the `offset`th, at most `limit`, each call's JSON with what
    /// `add` adds to it; and how many `keep` keeps in all. Only the page is turned into JSON, so
    /// a page of a long history costs what the page does.
    pub(crate) fn page(
        &self,
        keep: impl Fn(&Call) -> bool,
        offset: usize,
        limit: usize,
        add: impl Fn(&Call, &mut Value),
    ) -> (Vec<Value>, usize) {
        let g = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        let total = g.0.iter().filter(|(_, c)| keep(c)).count();
        let page =
            g.0.iter()
                .filter(|(_, c)| keep(c))
                .skip(offset)
                .take(limit)
                .map(|(_, c)| {
                    let mut v = c.json();
                    add(c, &mut v);
                    v
                })
                .collect();
        (page, total)
    }

    /// How many calls `keep` keeps.
    pub(crate) fn count(&self, keep: impl Fn(&Call) -> bool) -> usize {
        let g = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        g.0.iter().filter(|(_, c)| keep(c)).count()
    }

    /// Forgets the calls of `session` (every call when `None`); how many.
    pub(crate) fn clear(&self, session: Option<&str>) -> usize {
        let mut g = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        let before = g.0.len();
        g.0.retain(|(_, c)| session.is_some_and(|s| c.session != s));
        g.1 = g.0.iter().map(|(s, _)| s).sum();
        before - g.0.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(method: &str) -> Call {
        Call {
            service: "s.S".into(),
            method: method.into(),
            session: String::new(),
            stub: None,
            at: SystemTime::UNIX_EPOCH,
            requests: Vec::new(),
            responses: Vec::new(),
            code: Code::Ok,
            error: String::new(),
            elapsed: Duration::from_millis(2),
        }
    }

    #[test]
    fn oldest_dropped_past_the_budget() {
        // Each empty call is estimated at a little over 512 bytes: two fit in 1,100, three do not.
        let h = History::new(true, 1100);
        for m in ["A", "B", "C"] {
            h.record(call(m));
        }
        let left = h.list(|_| true);
        assert_eq!(left.len(), 2);
        assert_eq!(left[0]["method"], "B");
        assert_eq!(h.count(|c| c.method == "C"), 1);
        assert_eq!(h.clear(None), 2);
        let off = History::new(false, 300);
        off.record(call("A"));
        assert_eq!(off.count(|_| true), 0);
    }
}
