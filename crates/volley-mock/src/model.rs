//! A stub once checked against its method: matchers typed by the input's fields, the output as
//! messages (or templates) of the output type, the status, headers, trailers and delay ready to
//! send. `check` makes these, `matcher` and `answer` read them.

use std::{
    sync::atomic::{AtomicU32, AtomicU64},
    time::Duration,
};

use http::HeaderName;
use prost_reflect::{DynamicMessage, FieldDescriptor, MapKey, MethodDescriptor, Value};
use regex::Regex;
use volley_server::Code;

use crate::template::{Shape, Template};

/// Where a stub came from (GripMock's `source`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A stub file.
    File,
    /// The admin API (or an effect).
    Rest,
    /// Recorded from an upstream.
    Proxy,
}

impl Origin {
    /// GripMock's name for it: `file`, `rest`, `proxy`.
    pub fn name(self) -> &'static str {
        match self {
            Origin::File => "file",
            Origin::Rest => "rest",
            Origin::Proxy => "proxy",
        }
    }
}

/// One checked stub.
pub(crate) struct Stub {
    pub id: uuid::Uuid,
    pub origin: Origin,
    /// `file.yaml stub #2` (or `admin stub #1`), for messages.
    pub source: String,
    pub method: MethodDescriptor,
    pub priority: i64,
    pub headers: Option<HeaderMatcher>,
    pub input: Input,
    pub output: Output,
    /// `options.times` (0: unlimited).
    pub times: u32,
    pub effects: Vec<Effect>,
    pub session: Option<String>,
    /// WireMock's scenario keys: the state the stub needs, the state it moves to.
    pub scenario: Option<Scenario>,
    /// The stub as written, with its id (the admin API lists it).
    pub raw: serde_json::Value,
    /// Whether a template anywhere in the output or effects reads the call.
    pub templated: bool,
    /// Matcher keys declared (the ranking's third key).
    pub fields: u32,
    /// Calls this stub answered (GripMock's `used`, `verify`).
    pub matched: AtomicU64,
    /// Matches counted against `times` with no session.
    pub uses: AtomicU32,
}

/// A stub's place in a scenario (`scenarioName`): it matches only while the scenario is in
/// `required` (any state when `None`), and moves it to `new` when it answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Scenario {
    pub name: String,
    pub required: Option<String>,
    pub new: Option<String>,
}

/// How a stub picks requests.
pub(crate) enum Input {
    /// No `input`: any request.
    Any,
    /// `input`: one matcher (a client stream matches when any message does).
    One(InputMatcher),
    /// `inputs`: one matcher per message of a stream (one alone: every message).
    Each(Vec<InputMatcher>),
}

/// `equals AND contains AND matches AND glob AND (anyOf[0] OR anyOf[1] ...)`.
#[derive(Default)]
pub(crate) struct InputMatcher {
    pub equals: Vec<(FieldDescriptor, Expect)>,
    pub contains: Vec<(FieldDescriptor, Expect)>,
    pub matches: Vec<(FieldDescriptor, Pattern)>,
    pub glob: Vec<(FieldDescriptor, Pattern)>,
    pub any_of: Vec<InputMatcher>,
    /// `ignoreArrayOrder`: lists in `equals` compare as multisets.
    pub ignore_order: bool,
    /// The block as written, for the NOT_FOUND message.
    pub shown: Vec<(&'static str, serde_json::Value)>,
}

/// The value a field must have (`equals`) or hold (`contains`), typed by the field.
#[derive(Debug)]
pub(crate) enum Expect {
    Scalar(Value),
    /// JSON `null`: the field is not set.
    Unset,
    Message(Vec<(FieldDescriptor, Expect)>),
    List(Vec<Expect>),
    Map(Vec<(MapKey, Expect)>),
    /// A well-known type in its JSON form (`Any` with `@type`, `Struct`, a Timestamp string):
    /// compared with the field's JSON.
    Json(serde_json::Value),
}

/// What a field must match (`matches`: regular expressions; `glob`: Go's path.Match).
#[derive(Debug)]
pub(crate) enum Pattern {
    Regex(Regex),
    Glob(String),
    Message(Vec<(FieldDescriptor, Pattern)>),
    List(Vec<Pattern>),
    Map(Vec<(MapKey, Pattern)>),
}

/// The `headers` block: the same four matchers over request metadata (lowercase names).
#[derive(Default)]
pub(crate) struct HeaderMatcher {
    pub equals: Vec<(HeaderName, String)>,
    pub contains: Vec<(HeaderName, String)>,
    pub matches: Vec<(HeaderName, Regex)>,
    pub glob: Vec<(HeaderName, String)>,
    pub any_of: Vec<HeaderMatcher>,
}

/// What a stub answers.
pub(crate) struct Output {
    /// `data`: one message.
    pub data: Option<Reply>,
    /// `stream`: the messages in order, each with its own error marker.
    pub stream: Option<Vec<Item>>,
    /// The status: `None` is OK.
    pub status: Option<(Code, Text)>,
    /// `details`: packed into `grpc-status-details-bin` with an error.
    pub details: Vec<prost_types::Any>,
    pub headers: Vec<Meta>,
    pub trailers: Vec<Meta>,
    pub delay: Delay,
}

/// One output header or trailer.
pub(crate) struct Meta {
    pub name: HeaderName,
    pub value: Text,
    /// GripMock's form: `;` separates several values in the rendered text.
    pub split: bool,
}

/// One reply message.
pub(crate) enum Reply {
    Fixed(DynamicMessage),
    /// With `{{...}}` in its strings: rendered, then decoded.
    Templated(Shape),
}

/// One element of `output.stream`: a message, or GripMock's `_gripmock` marker (a delay for
/// this element, or a status that ends the stream here).
pub(crate) struct Item {
    pub reply: Option<Reply>,
    pub delay: Option<Delay>,
    pub status: Option<(Code, Text, Vec<prost_types::Any>)>,
}

/// A string that may be a template.
pub(crate) enum Text {
    Fixed(String),
    Templated(Box<Template>),
}

/// `delay`: fixed, or a template rendering a Go duration.
pub(crate) enum Delay {
    None,
    Fixed(Duration),
    Templated(Box<Template>),
}

/// `effects`: stubs added or removed when this one matches.
pub(crate) enum Effect {
    /// The stub's JSON (templates rendered per call).
    Upsert(Shape),
    Delete(Text),
}
