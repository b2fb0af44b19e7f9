//! A mock for [`MockServer`](super::MockServer), in wiremock's shape:
//! `Mock::given(method("pkg.Service/Method")).and(request(..)).respond_with(reply(..))`, how many
//! calls it expects (`expect`) and takes (`up_to_n_times`), its priority and its scenario.

use std::{
    fmt,
    ops::{Range, RangeFrom, RangeInclusive, RangeToInclusive},
    panic::Location,
    sync::Arc,
};

use http::HeaderMap;
use prost_reflect::DynamicMessage;
use serde_json::Value;

use super::{
    received::{ReceivedCall, decode_as, to_json},
    respond::Respond,
};
use crate::model::Scenario;

/// Decides whether a call is one a mock answers. Implement it for a matcher of your own.
pub trait Match: Send + Sync + 'static {
    /// Whether `call` (its metadata and the messages it sent; for a bidi stream, the one
    /// message being answered) is one this matcher accepts.
    fn matches(&self, call: &ReceivedCall) -> bool;
}

impl<F: Fn(&ReceivedCall) -> bool + Send + Sync + 'static> Match for F {
    fn matches(&self, call: &ReceivedCall) -> bool {
        self(call)
    }
}

/// The method a mock answers, `package.Service/Method` (a leading `/` is taken too): the first
/// thing [`Mock::given`] takes.
#[derive(Clone, Debug)]
pub struct MethodMatcher {
    pub(crate) service: String,
    pub(crate) method: String,
}

/// The method a mock answers: `method("helloworld.Greeter/SayHello")` (with volley-build's
/// generated code, `method(&format!("{}/SayHello", greeter_server::SERVICE_NAME))`).
pub fn method(full: &str) -> MethodMatcher {
    let full = full.trim_start_matches('/');
    let (service, method) = full.rsplit_once('/').unwrap_or(("", full));
    MethodMatcher {
        service: service.to_owned(),
        method: method.to_owned(),
    }
}

/// Calls whose every request message, decoded as `T` (the method's input type, a prost
/// message), makes `f` true: `request(|r: &HelloRequest| r.name == "x")`.
pub fn request<T, F>(f: F) -> impl Match
where
    T: prost::Message + Default + 'static,
    F: Fn(&T) -> bool + Send + Sync + 'static,
{
    move |call: &ReceivedCall| {
        !call.messages.is_empty()
            && call
                .messages
                .iter()
                .all(|m| decode_as::<T>(m).is_some_and(|t| f(&t)))
    }
}

/// Calls whose every request message, in proto3's JSON form, holds each key of `partial` with
/// the value given there (objects compared key by key, the rest equal): GripMock's
/// `input.contains`, wiremock's `body_partial_json`.
pub fn request_json(partial: Value) -> impl Match {
    move |call: &ReceivedCall| {
        !call.messages.is_empty() && call.messages.iter().all(|m| holds(&to_json(m), &partial))
    }
}

/// Calls that bear metadata `name` with `value` (one of its values).
pub fn header(name: &str, value: &str) -> impl Match {
    let (name, value) = (name.to_ascii_lowercase(), value.to_owned());
    move |call: &ReceivedCall| {
        call.metadata
            .get_all(name.as_str())
            .iter()
            .any(|v| v.as_bytes() == value.as_bytes())
    }
}

fn holds(actual: &Value, partial: &Value) -> bool {
    match (actual, partial) {
        (Value::Object(a), Value::Object(p)) => {
            p.iter().all(|(k, v)| a.get(k).is_some_and(|x| holds(x, v)))
        }
        _ => actual == partial,
    }
}

/// How many calls a mock expects ([`Mock::expect`]): a number, or a range of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Times {
    min: u64,
    max: Option<u64>,
}

impl Times {
    pub(crate) fn contains(&self, n: u64) -> bool {
        n >= self.min && self.max.is_none_or(|m| n <= m)
    }
}

impl fmt::Display for Times {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let calls = |n: u64| if n == 1 { "call" } else { "calls" };
        match self.max {
            Some(m) if m == self.min => write!(f, "exactly {m} {}", calls(m)),
            Some(m) => write!(f, "between {} and {m} calls", self.min),
            None => write!(f, "at least {} {}", self.min, calls(self.min)),
        }
    }
}

impl From<u64> for Times {
    fn from(n: u64) -> Times {
        Times {
            min: n,
            max: Some(n),
        }
    }
}

impl From<Range<u64>> for Times {
    fn from(r: Range<u64>) -> Times {
        Times {
            min: r.start,
            max: Some(r.end.saturating_sub(1)),
        }
    }
}

impl From<RangeInclusive<u64>> for Times {
    fn from(r: RangeInclusive<u64>) -> Times {
        Times {
            min: *r.start(),
            max: Some(*r.end()),
        }
    }
}

impl From<RangeFrom<u64>> for Times {
    fn from(r: RangeFrom<u64>) -> Times {
        Times {
            min: r.start,
            max: None,
        }
    }
}

impl From<RangeToInclusive<u64>> for Times {
    fn from(r: RangeToInclusive<u64>) -> Times {
        Times {
            min: 0,
            max: Some(r.end),
        }
    }
}

/// A mock being built: the method, then more matchers ([`and`](Self::and)), then the answer
/// ([`respond_with`](Self::respond_with)).
pub struct MockBuilder {
    method: MethodMatcher,
    matchers: Vec<Arc<dyn Match>>,
    at: &'static Location<'static>,
}

impl MockBuilder {
    /// Another condition; a call must meet them all.
    #[must_use]
    pub fn and(mut self, matcher: impl Match) -> MockBuilder {
        self.matchers.push(Arc::new(matcher));
        self
    }

    /// What the mock answers.
    pub fn respond_with(self, respond: Respond) -> Mock {
        Mock {
            method: self.method,
            matchers: self.matchers,
            respond,
            expect: None,
            up_to: None,
            priority: 5,
            name: None,
            scenario: None,
            at: self.at,
        }
    }
}

/// One mock: which calls it answers and how. Mount it on a [`MockServer`](super::MockServer).
pub struct Mock {
    pub(crate) method: MethodMatcher,
    pub(crate) matchers: Vec<Arc<dyn Match>>,
    pub(crate) respond: Respond,
    pub(crate) expect: Option<Times>,
    pub(crate) up_to: Option<u64>,
    pub(crate) priority: u8,
    pub(crate) name: Option<String>,
    pub(crate) scenario: Option<Scenario>,
    /// Where `Mock::given` was written, for the messages.
    pub(crate) at: &'static Location<'static>,
}

impl Mock {
    /// A mock of `method`'s calls.
    #[track_caller]
    pub fn given(method: MethodMatcher) -> MockBuilder {
        MockBuilder {
            method,
            matchers: Vec::new(),
            at: Location::caller(),
        }
    }

    /// The calls this mock must have answered when the server is dropped (or
    /// [`verify`](super::MockServer::verify)ed): `expect(1)`, `expect(1..=3)`, `expect(2..)`.
    #[must_use]
    pub fn expect(mut self, times: impl Into<Times>) -> Mock {
        self.expect = Some(times.into());
        self
    }

    /// Answers `n` calls at most; later calls go to the next mock that matches.
    #[must_use]
    pub fn up_to_n_times(mut self, n: u64) -> Mock {
        self.up_to = Some(n);
        self
    }

    /// 1 is tried first, 255 last (5 unless set); mocks of one priority in the order mounted.
    #[must_use]
    pub fn with_priority(mut self, p: u8) -> Mock {
        self.priority = p;
        self
    }

    /// The name the mock has in messages.
    #[must_use]
    pub fn named(mut self, name: impl Into<String>) -> Mock {
        self.name = Some(name.into());
        self
    }

    /// Puts the mock in scenario `name` (WireMock's `inScenario`): with
    /// [`when_scenario_state_is`](Self::when_scenario_state_is) it answers only in that state,
    /// with [`will_set_state_to`](Self::will_set_state_to) it moves the scenario on.
    #[must_use]
    pub fn in_scenario(mut self, name: impl Into<String>) -> Mock {
        self.scenario = Some(Scenario {
            name: name.into(),
            required: None,
            new: None,
        });
        self
    }

    /// Answers only while its scenario is in `state` (`"Started"` at first).
    #[must_use]
    pub fn when_scenario_state_is(mut self, state: impl Into<String>) -> Mock {
        self.scenario_mut().required = Some(state.into());
        self
    }

    /// Moves its scenario to `state` when it answers.
    #[must_use]
    pub fn will_set_state_to(mut self, state: impl Into<String>) -> Mock {
        self.scenario_mut().new = Some(state.into());
        self
    }

    #[track_caller]
    fn scenario_mut(&mut self) -> &mut Scenario {
        self.scenario
            .as_mut()
            .expect("call in_scenario(name) before a scenario's state")
    }

    /// The mock's name in messages: its own, or `method` and where it was written.
    pub(crate) fn shown(&self, n: usize) -> String {
        let what = match &self.name {
            Some(name) => format!("mock {name:?}"),
            None => format!("mock #{n}"),
        };
        format!(
            "{what} of {}/{} (written at {}:{})",
            self.method.service,
            self.method.method,
            self.at.file(),
            self.at.line()
        )
    }

    /// Whether `call` meets every matcher.
    pub(crate) fn matches(&self, call: &ReceivedCall) -> bool {
        self.matchers.iter().all(|m| m.matches(call))
    }
}

/// A call's request messages decoded for matching (one for a bidi stream's message).
pub(crate) fn view(
    method: &str,
    metadata: &HeaderMap,
    messages: Vec<DynamicMessage>,
) -> ReceivedCall {
    ReceivedCall {
        method: method.to_owned(),
        metadata: metadata.clone(),
        messages,
    }
}
