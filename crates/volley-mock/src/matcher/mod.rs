//! Which stubs a request matches: the input matchers over the decoded message, the headers
//! matchers over the request metadata, and GripMock's ranking among the stubs that match (with
//! an index over each method's stubs, so a thousand stubs cost about what one does).

mod glob;
pub(crate) mod rank;
pub(crate) mod value;

use std::borrow::Cow;

use http::HeaderMap;
use prost_reflect::{DynamicMessage, FieldDescriptor};

use crate::model::{HeaderMatcher, InputMatcher};

impl InputMatcher {
    /// `equals AND contains AND matches AND glob AND (anyOf[0] OR ...)`; empty blocks pass.
    pub(crate) fn matches(&self, msg: &DynamicMessage) -> bool {
        self.equals
            .iter()
            .all(|(fd, e)| value::equals(e, &msg.get_field(fd), self.ignore_order))
            && self
                .contains
                .iter()
                .all(|(fd, e)| value::contains(e, &msg.get_field(fd)))
            && self
                .matches
                .iter()
                .chain(&self.glob)
                .all(|(fd, p)| value::field_pattern(p, msg, fd))
            && (self.any_of.is_empty() || self.any_of.iter().any(|m| m.matches(msg)))
    }

    /// Each condition `msg` does not meet, as the mock's page shows it: `{"field", "rule",
    /// "want" (as the stub wrote it), "got" (the request's value, from `got`: the request with
    /// every field by its .proto name)}`; an `anyOf` none of whose members holds is one entry
    /// without a field.
    pub(crate) fn misses(
        &self,
        msg: &DynamicMessage,
        got: &serde_json::Value,
    ) -> Vec<serde_json::Value> {
        let miss = |rule: &str, fd: &FieldDescriptor| {
            let want = self
                .shown
                .iter()
                .find(|(n, _)| *n == rule)
                .and_then(|(_, b)| b.get(fd.name()).or_else(|| b.get(fd.json_name())))
                .cloned()
                .unwrap_or_default();
            serde_json::json!({
                "field": fd.name(),
                "rule": rule,
                "want": want,
                "got": got.get(fd.name()).cloned().unwrap_or_default(),
            })
        };
        let mut out = Vec::new();
        for (fd, e) in &self.equals {
            if !value::equals(e, &msg.get_field(fd), self.ignore_order) {
                out.push(miss("equals", fd));
            }
        }
        for (fd, e) in &self.contains {
            if !value::contains(e, &msg.get_field(fd)) {
                out.push(miss("contains", fd));
            }
        }
        for (rule, list) in [("matches", &self.matches), ("glob", &self.glob)] {
            for (fd, p) in list {
                if !value::field_pattern(p, msg, fd) {
                    out.push(miss(rule, fd));
                }
            }
        }
        if !self.any_of.is_empty() && !self.any_of.iter().any(|m| m.matches(msg)) {
            out.push(serde_json::json!({"rule": "anyOf", "want": "one of its members"}));
        }
        out
    }

    fn keys(&self) -> impl Iterator<Item = &FieldDescriptor> {
        self.equals
            .iter()
            .map(|(f, _)| f)
            .chain(self.contains.iter().map(|(f, _)| f))
            .chain(self.matches.iter().map(|(f, _)| f))
            .chain(self.glob.iter().map(|(f, _)| f))
    }

    /// GripMock's specificity: declared keys whose request value is set and not the default.
    pub(crate) fn specificity(&self, msg: &DynamicMessage) -> u32 {
        self.keys().filter(|fd| msg.has_field(fd)).count() as u32
            + self
                .any_of
                .iter()
                .filter(|m| m.matches(msg))
                .map(|m| m.specificity(msg))
                .max()
                .unwrap_or(0)
    }

    /// How many of its conditions `msg` meets (for the NOT_FOUND message's closest stub).
    pub(crate) fn hits(&self, msg: &DynamicMessage) -> u32 {
        let n = self
            .equals
            .iter()
            .filter(|(fd, e)| value::equals(e, &msg.get_field(fd), self.ignore_order))
            .count()
            + self
                .contains
                .iter()
                .filter(|(fd, e)| value::contains(e, &msg.get_field(fd)))
                .count()
            + self
                .matches
                .iter()
                .chain(&self.glob)
                .filter(|(fd, p)| value::field_pattern(p, msg, fd))
                .count();
        n as u32 + u32::from(self.any_of.iter().any(|m| m.matches(msg)))
    }
}

/// A request header's value, several values joined with `;` as GripMock joins them.
pub(crate) fn header<'h>(headers: &'h HeaderMap, name: &http::HeaderName) -> Option<Cow<'h, str>> {
    let mut values = headers.get_all(name).iter();
    let first = values.next()?.to_str().ok()?;
    let rest: Vec<&str> = values.filter_map(|v| v.to_str().ok()).collect();
    if rest.is_empty() {
        return Some(Cow::Borrowed(first));
    }
    Some(Cow::Owned(
        std::iter::once(first)
            .chain(rest)
            .collect::<Vec<_>>()
            .join(";"),
    ))
}

impl HeaderMatcher {
    /// The same four matchers and `anyOf`, over header values as text.
    pub(crate) fn matches(&self, headers: &HeaderMap) -> bool {
        let eq = |(k, v): &(http::HeaderName, String)| header(headers, k).is_some_and(|h| h == *v);
        self.equals.iter().all(eq)
            && self.contains.iter().all(eq)
            && self
                .matches
                .iter()
                .all(|(k, re)| header(headers, k).is_some_and(|h| re.is_match(&h)))
            && self
                .glob
                .iter()
                .all(|(k, g)| header(headers, k).is_some_and(|h| glob::matches(g, &h)))
            && (self.any_of.is_empty() || self.any_of.iter().any(|m| m.matches(headers)))
    }

    /// How many of its keys the request carries (its part of the specificity).
    pub(crate) fn specificity(&self, headers: &HeaderMap) -> u32 {
        self.equals
            .iter()
            .chain(&self.contains)
            .chain(&self.glob)
            .map(|(k, _)| k)
            .chain(self.matches.iter().map(|(k, _)| k))
            .filter(|k| headers.contains_key(*k))
            .count() as u32
    }
}
