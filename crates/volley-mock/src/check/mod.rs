//! Each stub checked against the served descriptors when it is loaded: the service and method
//! exist, the matchers name fields of the input type and their values fit them, the output fits
//! the output type, the templates parse. What is wrong is one line naming the stub.

pub(crate) mod expect;
pub(crate) mod output;

use std::sync::atomic::{AtomicU32, AtomicU64};

use http::HeaderName;
use prost_reflect::{DescriptorPool, MessageDescriptor, MethodDescriptor};
use serde_json::{Map, Value};

use crate::{
    format::{RawMatcher, RawStub},
    model::{Effect, HeaderMatcher, Input, InputMatcher, Origin, Scenario, Stub},
    template::{Shape, is_templated},
};

/// The methods a stub names: the service by its full name, or by its short name (every served
/// service of that name that has the method, as GripMock keys a short-named stub by the name
/// alone), the method as written or with its first letter's case changed (GripMock v1's
/// `sayHello` is `SayHello`).
pub(crate) fn find_methods(
    pools: &[DescriptorPool],
    service: &str,
    method: &str,
) -> Result<Vec<MethodDescriptor>, String> {
    let mut services: Vec<_> = pools.iter().flat_map(|p| p.services()).collect();
    services.sort_by(|a, b| a.full_name().cmp(b.full_name()));
    services.dedup_by(|a, b| a.full_name() == b.full_name());
    let full: Vec<_> = services
        .iter()
        .filter(|s| s.full_name() == service)
        .collect();
    let named: Vec<_> = if full.is_empty() {
        services.iter().filter(|s| s.name() == service).collect()
    } else {
        full
    };
    if named.is_empty() {
        return Err(format!("no service {service:?} is served"));
    }
    let found: Vec<MethodDescriptor> = named.iter().filter_map(|s| method_of(s, method)).collect();
    match (found.is_empty(), named.as_slice()) {
        (false, _) => Ok(found),
        (true, [one]) => Err(format!(
            "service {} has no method {method:?}",
            one.full_name()
        )),
        (true, many) => {
            let names: Vec<&str> = many.iter().map(|s| s.full_name()).collect();
            Err(format!(
                "no service named {service:?} ({}) has a method {method:?}",
                names.join(", ")
            ))
        }
    }
}

/// The one method a call names (the admin API's `/find`): the first of [`find_methods`].
pub(crate) fn find_method(
    pools: &[DescriptorPool],
    service: &str,
    method: &str,
) -> Result<MethodDescriptor, String> {
    find_methods(pools, service, method).map(|mut m| m.swap_remove(0))
}

fn method_of(s: &prost_reflect::ServiceDescriptor, method: &str) -> Option<MethodDescriptor> {
    s.methods().find(|m| m.name() == method).or_else(|| {
        s.methods().find(|m| {
            let (a, b) = (m.name(), method);
            a.len() == b.len()
                && a.get(..1)
                    .zip(b.get(..1))
                    .is_some_and(|(x, y)| x.eq_ignore_ascii_case(y))
                && a.get(1..) == b.get(1..)
        })
    })
}

fn input_matcher(
    desc: &MessageDescriptor,
    raw: &RawMatcher,
    at: &str,
) -> Result<InputMatcher, String> {
    use expect::{expects, glob_leaf, patterns, regex_leaf};
    let mut m = InputMatcher {
        ignore_order: raw.ignore_array_order || raw.equals_unordered.is_some(),
        ..InputMatcher::default()
    };
    let empty = Map::new();
    let mut equals = raw.equals.clone().unwrap_or_default();
    equals.extend(raw.equals_unordered.clone().unwrap_or_default());
    m.equals = expects(desc, &equals, &format!("{at}.equals"))?;
    m.contains = expects(
        desc,
        raw.contains.as_ref().unwrap_or(&empty),
        &format!("{at}.contains"),
    )?;
    m.matches = patterns(
        desc,
        raw.matches.as_ref().unwrap_or(&empty),
        &format!("{at}.matches"),
        regex_leaf,
    )?;
    m.glob = patterns(
        desc,
        raw.glob.as_ref().unwrap_or(&empty),
        &format!("{at}.glob"),
        glob_leaf,
    )?;
    for (i, alt) in raw.any_of.iter().flatten().enumerate() {
        m.any_of
            .push(input_matcher(desc, alt, &format!("{at}.anyOf[{i}]"))?);
    }
    for (name, block) in [
        ("equals", Some(&equals)),
        ("contains", raw.contains.as_ref()),
        ("matches", raw.matches.as_ref()),
    ] {
        if let Some(b) = block.filter(|b| !b.is_empty()) {
            m.shown.push((name, Value::Object(b.clone())));
        }
    }
    if let Some(alts) = raw.any_of.as_ref().filter(|a| !a.is_empty()) {
        m.shown
            .push(("anyOf", serde_json::to_value(alts).unwrap_or_default()));
    }
    Ok(m)
}

fn header_matcher(raw: &RawMatcher, at: &str) -> Result<HeaderMatcher, String> {
    let name = |k: &str| {
        HeaderName::from_bytes(k.to_ascii_lowercase().as_bytes())
            .map_err(|_| format!("{at}: {k:?} is not a header name"))
    };
    let pairs = |m: &Option<Map<String, Value>>| -> Result<Vec<(HeaderName, String)>, String> {
        m.iter()
            .flatten()
            .map(|(k, v)| {
                let text = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                Ok((name(k)?, text))
            })
            .collect()
    };
    let mut h = HeaderMatcher {
        equals: pairs(&raw.equals)?,
        contains: pairs(&raw.contains)?,
        glob: pairs(&raw.glob)?,
        ..HeaderMatcher::default()
    };
    for (k, re) in pairs(&raw.matches)? {
        h.matches.push((
            k,
            regex::Regex::new(&re)
                .map_err(|e| format!("{at}.matches: {re:?} is not a regex: {e}"))?,
        ));
    }
    for (i, alt) in raw.any_of.iter().flatten().enumerate() {
        h.any_of
            .push(header_matcher(alt, &format!("{at}.anyOf[{i}]"))?);
    }
    Ok(h)
}

/// How many matcher keys a block declares (the ranking's tie-breaker).
fn declared(m: &InputMatcher) -> u32 {
    (m.equals.len() + m.contains.len() + m.matches.len() + m.glob.len()) as u32
        + m.any_of.iter().map(declared).sum::<u32>()
}

/// The stub `raw` (written as `value`) checked against `pools`: one stub per method it names
/// (more than one only when a short service name is served by several packages; the first
/// keeps `id`, the others get ids made from it and their service's full name).
pub(crate) fn check(
    value: &Value,
    raw: RawStub,
    pools: &[DescriptorPool],
    source: String,
    origin: Origin,
    id: uuid::Uuid,
) -> Result<Vec<Stub>, String> {
    if raw.service.is_empty() {
        return Err("service name is missing".into());
    }
    if raw.method.is_empty() {
        return Err("method name is missing".into());
    }
    let methods = find_methods(pools, &raw.service, &raw.method)?;
    if let [one] = methods.as_slice() {
        return Ok(vec![check_one(
            value,
            &raw,
            one.clone(),
            source,
            origin,
            id,
        )?]);
    }
    // A short name several packages serve: the stub answers each service it fits (GripMock
    // matches it by name alone, so one whose fields a service lacks never matches there).
    let mut out = Vec::with_capacity(methods.len());
    let mut first_error = None;
    for method in methods {
        let id = match out.len() {
            0 => id,
            _ => uuid::Uuid::new_v5(&id, method.parent_service().full_name().as_bytes()),
        };
        let name = method.parent_service().full_name().to_owned();
        match check_one(value, &raw, method, source.clone(), origin, id) {
            Ok(stub) => out.push(stub),
            Err(e) => {
                tracing::debug!("{source}: does not fit {name}: {e}");
                first_error.get_or_insert(format!("{name}: {e}"));
            }
        }
    }
    match (out.is_empty(), first_error) {
        (true, Some(e)) => Err(format!("fits no service named {:?}: {e}", raw.service)),
        _ => Ok(out),
    }
}

fn check_one(
    value: &Value,
    raw: &RawStub,
    method: MethodDescriptor,
    source: String,
    origin: Origin,
    id: uuid::Uuid,
) -> Result<Stub, String> {
    let input_desc = method.input();
    let input = match (&raw.input, &raw.inputs) {
        (Some(i), Some(_)) if !i.is_empty() => {
            return Err("must have either 'input' or 'inputs', but not both".into());
        }
        (_, Some(list)) if !list.is_empty() => Input::Each(
            list.iter()
                .enumerate()
                .map(|(i, m)| input_matcher(&input_desc, m, &format!("inputs[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
        (Some(i), _) if !i.is_empty() => Input::One(input_matcher(&input_desc, i, "input")?),
        _ => Input::Any,
    };
    // GripMock v1's `input.headers` is the stub's header matcher.
    let mut headers = raw.headers.clone();
    if let Some(h) = raw.input.as_ref().and_then(|i| i.headers.clone()) {
        let block = headers.get_or_insert_with(RawMatcher::default);
        block.equals.get_or_insert_with(Map::new).extend(h);
    }
    let headers = headers
        .filter(|h| !h.is_empty())
        .map(|h| header_matcher(&h, "headers"))
        .transpose()?;
    let output = output::output(&method.output(), &raw.output)?;
    let times = u32::try_from(raw.options.as_ref().map_or(0, |o| o.times))
        .map_err(|_| "options.times must be >= 0 (0 = unlimited matches)".to_owned())?;
    let scenario = scenario(raw)?;
    let mut effects = Vec::new();
    for (i, e) in raw.effects.iter().enumerate() {
        effects.push(match (e.action.as_str(), &e.stub, &e.id) {
            ("upsert", Some(s), _) => Effect::Upsert(
                Shape::parse(s).map_err(|e| format!("effects[{i}].stub: template {e}"))?,
            ),
            ("delete", _, Some(id)) => {
                Effect::Delete(output::text(id, &format!("effects[{i}].id"))?)
            }
            _ => {
                return Err(format!(
                    "effects[{i}]: upsert requires 'stub', delete requires 'id'"
                ));
            }
        });
    }
    let fields = match &input {
        Input::Any => 0,
        Input::One(m) => declared(m),
        Input::Each(list) => list.iter().map(declared).sum(),
    } + headers.as_ref().map_or(0, |h| {
        (h.equals.len() + h.contains.len() + h.matches.len() + h.glob.len()) as u32
    });
    let templated =
        is_templated(&serde_json::to_value(&raw.output).unwrap_or_default()) || !effects.is_empty();
    let mut shown = value.clone();
    if let Some(m) = shown.as_object_mut() {
        m.insert("id".into(), id.to_string().into());
        m.remove("source");
        m.remove("used");
        m.remove("_meta");
    }
    Ok(Stub {
        id,
        origin,
        source,
        method,
        priority: raw.priority,
        headers,
        input,
        output,
        times,
        effects,
        session: raw.session.clone().filter(|s| !s.is_empty()),
        scenario,
        raw: shown,
        templated,
        fields,
        matched: AtomicU64::new(0),
        uses: AtomicU32::new(0),
    })
}

/// The scenario keys: a name with a required state, a new state, or both; a state without a
/// name is refused.
fn scenario(raw: &RawStub) -> Result<Option<Scenario>, String> {
    let given = |s: &Option<String>| s.clone().filter(|s| !s.is_empty());
    let (required, new) = (
        given(&raw.required_scenario_state),
        given(&raw.new_scenario_state),
    );
    match given(&raw.scenario_name) {
        Some(name) => Ok(Some(Scenario {
            name,
            required,
            new,
        })),
        None if required.is_some() || new.is_some() => Err(
            "requiredScenarioState and newScenarioState need scenarioName (the scenario whose \
             state they read and set)"
                .into(),
        ),
        None => Ok(None),
    }
}
