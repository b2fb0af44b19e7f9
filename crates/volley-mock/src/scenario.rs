//! Scenarios (WireMock's stateful behaviour, volley's extension to GripMock's stubs): each named
//! scenario has a state, `Started` at first and after a reset, per GripMock session; a stub with
//! `requiredScenarioState` matches only in that state, and one with `newScenarioState` moves the
//! scenario there when it answers. A state no stub can reach is refused when the stubs load.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    sync::{Arc, Mutex},
};

use serde_json::{Value, json};

use crate::model::{Scenario, Stub};

/// The state every scenario starts in (WireMock's `Scenario.STARTED`).
pub const STARTED: &str = "Started";

/// The scenarios' current states, by (session, scenario); absent is [`STARTED`].
#[derive(Default)]
pub(crate) struct States(Mutex<HashMap<(String, String), String>>);

impl States {
    fn get(&self, session: &str, name: &str) -> Option<String> {
        lock(&self.0)
            .get(&(session.to_owned(), name.to_owned()))
            .cloned()
    }

    /// Whether `sc`'s scenario is in the state it requires, in `session`.
    pub(crate) fn allows(&self, sc: &Scenario, session: &str) -> bool {
        let Some(required) = &sc.required else {
            return true;
        };
        self.get(session, &sc.name).as_deref().unwrap_or(STARTED) == required
    }

    /// Moves `sc`'s scenario to its new state if it still is in the state required (false:
    /// another call moved it first).
    pub(crate) fn advance(&self, sc: &Scenario, session: &str) -> bool {
        let mut map = lock(&self.0);
        let key = (session.to_owned(), sc.name.clone());
        let now = map.get(&key).map_or(STARTED, String::as_str);
        if sc.required.as_deref().is_some_and(|r| r != now) {
            return false;
        }
        if let Some(new) = &sc.new {
            map.insert(key, new.clone());
        }
        true
    }
}

/// The states each scenario of `stubs` can be in: `Started` and every `newScenarioState`.
fn reachable(stubs: &[Arc<Stub>]) -> BTreeMap<&str, BTreeSet<&str>> {
    let mut out: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for s in stubs {
        if let Some(sc) = &s.scenario {
            let states = out.entry(&sc.name).or_default();
            states.insert(STARTED);
            states.extend(sc.new.as_deref());
        }
    }
    out
}

/// Refuses a stub that requires a state its scenario never reaches (no stub moves it there and
/// it is not `Started`): such a stub could never answer.
pub(crate) fn check_states(stubs: &[Arc<Stub>]) -> Result<(), String> {
    let states = reachable(stubs);
    for s in stubs {
        let Some(sc) = &s.scenario else { continue };
        let Some(required) = sc.required.as_deref() else {
            continue;
        };
        let known = &states[sc.name.as_str()];
        if !known.contains(required) {
            let list: Vec<String> = known.iter().map(|k| format!("{k:?}")).collect();
            return Err(format!(
                "{}: requiredScenarioState {required:?} of scenario {:?} is never reached (no \
                 stub's newScenarioState sets it); its states are {}",
                s.source,
                sc.name,
                list.join(", ")
            ));
        }
    }
    Ok(())
}

impl States {
    /// Every scenario back to `Started` (of `session` only, when given).
    pub(crate) fn reset(&self, session: Option<&str>) {
        lock(&self.0).retain(|(s, _), _| session.is_some_and(|x| s != x));
    }

    /// Sets scenario `name` to `state` in `session`; refused, naming the states it has, when
    /// none of `stubs` names the scenario or the state is not one of its own.
    pub(crate) fn set(
        &self,
        stubs: &[Arc<Stub>],
        name: &str,
        state: &str,
        session: &str,
    ) -> Result<(), String> {
        let states = reachable(stubs);
        let Some(known) = states.get(name) else {
            return Err(format!("no stub is in scenario {name:?}"));
        };
        if !known.contains(state) {
            let list: Vec<String> = known.iter().map(|k| format!("{k:?}")).collect();
            return Err(format!(
                "scenario {name:?} has no state {state:?}; its states are {}",
                list.join(", ")
            ));
        }
        let key = (session.to_owned(), name.to_owned());
        let mut map = lock(&self.0);
        match state {
            STARTED => map.remove(&key),
            _ => map.insert(key, state.to_owned()),
        };
        Ok(())
    }

    /// The current state of scenario `name` in `session`.
    pub(crate) fn state(&self, name: &str, session: &str) -> String {
        self.get(session, name)
            .unwrap_or_else(|| STARTED.to_owned())
    }

    /// The scenarios of `stubs`, as WireMock's `GET /__admin/scenarios` lists them: name,
    /// current state (no session) and possible states.
    pub(crate) fn json(&self, stubs: &[Arc<Stub>]) -> Value {
        let list: Vec<Value> = reachable(stubs)
            .into_iter()
            .map(|(name, states)| {
                json!({"id": name, "name": name, "state": self.state(name, ""),
                       "possibleStates": states.into_iter().collect::<Vec<_>>()})
            })
            .collect();
        json!({ "scenarios": list })
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::{
        pick::{Call, Picked},
        stubs::Stubs,
        testkit::{check, msg, pool, stubs, stubs_with},
    };

    fn todo(extra: &[(&str, &str)], service: &str, status: &str) -> serde_json::Value {
        let mut s = json!({"service": "grpc.health.v1.Health", "method": "Check",
                           "scenarioName": "To do list",
                           "input": {"equals": {"service": service}},
                           "output": {"data": {"status": status}}});
        for (k, v) in extra {
            s[*k] = (*v).into();
        }
        s
    }

    fn answer(s: &Stubs, service: &str, session: &str) -> String {
        let pool = pool();
        let m = check(&pool);
        let headers = http::HeaderMap::new();
        let call = Call {
            method: &m,
            headers: &headers,
            session,
            count: true,
        };
        match s.pick_one(&call, &msg(m.input(), json!({ "service": service }))) {
            Picked::Stub(st, _) => st.raw["output"]["data"]["status"]
                .as_str()
                .unwrap_or("UNKNOWN")
                .to_owned(),
            _ => "none".into(),
        }
    }

    /// WireMock's to-do list example: a GET in `Started`, a POST that moves the scenario, the
    /// GET's other answer in the new state; a reset starts over; sessions keep their own state.
    #[test]
    fn wiremock_s_to_do_list_in_stub_language() {
        let p = pool();
        let s = stubs(
            &p,
            json!([
                todo(&[("requiredScenarioState", "Started")], "get", "SERVING"),
                todo(
                    &[
                        ("requiredScenarioState", "Started"),
                        ("newScenarioState", "Cancel newspaper item added")
                    ],
                    "post",
                    "UNKNOWN"
                ),
                todo(
                    &[("requiredScenarioState", "Cancel newspaper item added")],
                    "get",
                    "NOT_SERVING"
                ),
            ]),
        );
        assert_eq!(answer(&s, "get", ""), "SERVING");
        assert_eq!(answer(&s, "get", ""), "SERVING");
        assert_eq!(answer(&s, "post", ""), "UNKNOWN");
        assert_eq!(
            s.scenario_state("To do list", ""),
            "Cancel newspaper item added"
        );
        assert_eq!(answer(&s, "get", ""), "NOT_SERVING");
        // The POST requires Started: no longer matches.
        assert_eq!(answer(&s, "post", ""), "none");
        // A session's scenario is its own.
        assert_eq!(answer(&s, "get", "other"), "SERVING");
        s.reset_scenarios(None);
        assert_eq!(answer(&s, "get", ""), "SERVING");
        s.set_scenario("To do list", "Cancel newspaper item added", "")
            .unwrap();
        assert_eq!(answer(&s, "get", ""), "NOT_SERVING");
        assert_eq!(
            s.set_scenario("To do list", "Gone", "").unwrap_err(),
            "scenario \"To do list\" has no state \"Gone\"; its states are \
             \"Cancel newspaper item added\", \"Started\""
        );
        assert!(s.set_scenario("Other", "Started", "").is_err());
        let listed = s.scenarios_json();
        assert_eq!(listed["scenarios"][0]["name"], "To do list");
        assert_eq!(
            listed["scenarios"][0]["state"],
            "Cancel newspaper item added"
        );
    }

    #[test]
    fn a_state_no_stub_reaches_is_refused_and_strict_refuses_the_keys() {
        let p = pool();
        let s = stubs(&p, json!([]));
        let e = s
            .upsert(
                &[todo(&[("requiredScenarioState", "Paid")], "get", "SERVING")],
                crate::model::Origin::Rest,
                None,
            )
            .unwrap_err();
        assert_eq!(
            e,
            "rest stub #1: requiredScenarioState \"Paid\" of scenario \"To do list\" is never \
             reached (no stub's newScenarioState sets it); its states are \"Started\""
        );
        assert!(s.is_empty());
        let e = s
            .upsert(
                &[
                    json!({"service": "grpc.health.v1.Health", "method": "Check",
                         "newScenarioState": "x", "output": {"data": {}}}),
                ],
                crate::model::Origin::Rest,
                None,
            )
            .unwrap_err();
        assert!(e.contains("need scenarioName"), "{e}");
        let strict = stubs_with(
            &p,
            crate::stubs::Options {
                strict: true,
                ..crate::stubs::Options::gripmock()
            },
            json!([]),
        );
        let e = strict
            .upsert(
                &[todo(&[], "get", "SERVING")],
                crate::model::Origin::Rest,
                None,
            )
            .unwrap_err();
        assert!(e.contains("\"scenarioName\" is volley's extension"), "{e}");
    }
}
