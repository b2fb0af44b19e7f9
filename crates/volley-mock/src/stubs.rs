//! The stubs in force, shared by the calls and the admin API: the files' stubs and those added
//! over the API (or by effects, or recorded), indexed by method, swapped whole when they change
//! so a call reads one consistent table without a lock held.

use std::{
    collections::{HashMap, HashSet},
    path::PathBuf,
    sync::{
        Arc, Mutex, RwLock,
        atomic::{AtomicBool, Ordering},
    },
};

use prost_reflect::DescriptorPool;
use serde_json::Value;

use crate::{
    MockError,
    check::check,
    defaults::Defaults,
    format::{RawStub, raw, refused, unknown_keys},
    history::History,
    load::read_files,
    matcher::rank::Index,
    model::{Origin, Stub},
};

/// How a table of stubs behaves where `volley serve` and GripMock differ.
#[derive(Clone)]
pub struct Options {
    /// Methods without stubs answer default messages (`volley serve`), or NOT_FOUND (`None`,
    /// GripMock).
    pub defaults: Option<Defaults>,
    /// Refuse keys volley does not take; otherwise each is one warning line and skipped.
    pub strict: bool,
    /// NOT_FOUND in GripMock's words (`volley mock`), or volley's one line.
    pub gripmock_text: bool,
    /// Keep the calls seen (GripMock's history, `verify`), up to this many bytes; 0: off.
    pub history: usize,
}

impl Options {
    /// `volley serve` and `volley bench`: default messages, unknown keys refused.
    pub fn serve(defaults: Defaults) -> Options {
        Options {
            defaults: Some(defaults),
            strict: true,
            gripmock_text: false,
            history: 0,
        }
    }

    /// `volley mock`: as GripMock, NOT_FOUND for methods without stubs, unknown keys skipped,
    /// the history kept (64 MiB, GripMock's default).
    pub fn gripmock() -> Options {
        Options {
            defaults: None,
            strict: false,
            gripmock_text: true,
            history: 64 << 20,
        }
    }
}

/// One method's stubs, in load order, with their index.
pub(crate) struct MethodStubs {
    pub stubs: Vec<Arc<Stub>>,
    pub index: Option<Index>,
}

/// The stubs in force.
#[derive(Default)]
pub(crate) struct Table {
    /// Every stub, files' first, in load order.
    pub all: Vec<Arc<Stub>>,
    /// By the method's full name (`package.Service.Method`).
    pub methods: HashMap<String, MethodStubs>,
}

impl Table {
    fn build(all: Vec<Arc<Stub>>) -> Table {
        let mut grouped: HashMap<String, Vec<Arc<Stub>>> = HashMap::new();
        for s in &all {
            grouped
                .entry(s.method.full_name().to_owned())
                .or_default()
                .push(s.clone());
        }
        let methods = grouped
            .into_iter()
            .map(|(k, stubs)| {
                let index = Index::build(&stubs);
                (k, MethodStubs { stubs, index })
            })
            .collect();
        Table { all, methods }
    }
}

pub(crate) struct Inner {
    table: RwLock<Arc<Table>>,
    /// The files' stubs, as last read.
    files: Mutex<Vec<Arc<Stub>>>,
    /// Stubs added over the API, by effects or by recording: kept across reloads.
    api: Mutex<Vec<Arc<Stub>>>,
    /// Files' stubs deleted over the API (until the files are read again).
    deleted: Mutex<HashSet<uuid::Uuid>>,
    pub pools: Vec<DescriptorPool>,
    pub paths: Vec<PathBuf>,
    pub options: Options,
    /// Matches per (stub, session), for `options.times` in sessions.
    pub sessions: Mutex<HashMap<(uuid::Uuid, String), u32>>,
    pub history: History,
    pub ready: AtomicBool,
    /// The scenarios' states.
    pub scenarios: crate::scenario::States,
}

/// Answers from stubs (and default messages for methods that have none, under `volley
/// serve`). Cheap to clone.
#[derive(Clone)]
pub struct Stubs(pub(crate) Arc<Inner>);

impl Stubs {
    /// Loads and checks every stub under `paths` against the services in `pools`.
    pub fn load(
        paths: &[PathBuf],
        pools: &[DescriptorPool],
        defaults: Defaults,
    ) -> Result<Stubs, MockError> {
        Stubs::load_with(paths, pools, Options::serve(defaults))
    }

    /// Loads and checks every stub under `paths` against the services in `pools`, behaving as
    /// `options` say.
    pub fn load_with(
        paths: &[PathBuf],
        pools: &[DescriptorPool],
        options: Options,
    ) -> Result<Stubs, MockError> {
        let files = read_files(paths, pools, options.strict)?;
        crate::scenario::check_states(&files).map_err(MockError::Stub)?;
        let inner = Inner {
            table: RwLock::new(Arc::new(Table::build(files.clone()))),
            files: Mutex::new(files),
            api: Mutex::new(Vec::new()),
            deleted: Mutex::new(HashSet::new()),
            pools: pools.to_vec(),
            paths: paths.to_vec(),
            history: History::new(options.history > 0, options.history),
            options,
            sessions: Mutex::new(HashMap::new()),
            ready: AtomicBool::new(true),
            scenarios: Default::default(),
        };
        Ok(Stubs(Arc::new(inner)))
    }

    pub(crate) fn inner(&self) -> &Inner {
        &self.0
    }

    pub(crate) fn current(&self) -> Arc<Table> {
        match self.0.table.read() {
            Ok(t) => t.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Rebuilds the table from the files' and the API's stubs (an API stub replaces a file's
    /// of the same id).
    fn rebuild(&self) {
        let files = lock(&self.0.files).clone();
        let api = lock(&self.0.api).clone();
        let deleted = lock(&self.0.deleted).clone();
        let ids: HashSet<uuid::Uuid> = api.iter().map(|s| s.id).collect();
        let all: Vec<Arc<Stub>> = files
            .into_iter()
            .filter(|s| !ids.contains(&s.id) && !deleted.contains(&s.id))
            .chain(api)
            .collect();
        let table = Arc::new(Table::build(all));
        match self.0.table.write() {
            Ok(mut t) => *t = table,
            Err(poisoned) => *poisoned.into_inner() = table,
        }
    }

    /// Replaces the files' stubs (a reload); the API's stay.
    pub(crate) fn set_files(&self, files: Vec<Arc<Stub>>) {
        *lock(&self.0.files) = files;
        lock(&self.0.deleted).clear();
        self.rebuild();
    }

    /// How many stubs are in force.
    pub fn len(&self) -> usize {
        self.current().all.len()
    }

    /// Whether none are.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The stubs in `values` checked (none stored); the first one's problem.
    pub(crate) fn checked(
        &self,
        values: &[Value],
        origin: Origin,
        session: Option<&str>,
    ) -> Result<Vec<Arc<Stub>>, String> {
        let mut made = Vec::new();
        for (i, v) in values.iter().enumerate() {
            let source = format!("{} stub #{}", origin.name(), i + 1);
            let fail = |e: String| format!("stub #{}: {e}", i + 1);
            for key in unknown_keys(v, self.0.options.strict) {
                if self.0.options.strict {
                    return Err(fail(refused(&key)));
                }
            }
            let mut r: RawStub = raw(v).map_err(fail)?;
            let mut v = v.clone();
            if let Some(s) = session {
                r.session = Some(s.to_owned());
                v["session"] = s.into();
            }
            let id = match &r.id {
                Some(id) => uuid::Uuid::parse_str(id)
                    .map_err(|_| fail(format!("id {id:?} is not a UUID")))?,
                None => uuid::Uuid::new_v4(),
            };
            made.extend(
                check(&v, r, &self.0.pools, source, origin, id)
                    .map_err(fail)?
                    .into_iter()
                    .map(Arc::new),
            );
        }
        Ok(made)
    }

    /// Checks and adds the stubs in `values` (GripMock's upsert: a stub with the id of one in
    /// force replaces it); their ids, or the first one's problem.
    pub(crate) fn upsert(
        &self,
        values: &[Value],
        origin: Origin,
        session: Option<&str>,
    ) -> Result<Vec<uuid::Uuid>, String> {
        let made = self.checked(values, origin, session)?;
        let ids: Vec<uuid::Uuid> = made.iter().map(|s| s.id).collect();
        let after: Vec<Arc<Stub>> = (self.current().all.iter())
            .filter(|s| !ids.contains(&s.id))
            .chain(&made)
            .cloned()
            .collect();
        crate::scenario::check_states(&after)?;
        {
            let mut api = lock(&self.0.api);
            for s in made {
                match api.iter_mut().find(|x| x.id == s.id) {
                    Some(slot) => *slot = s,
                    None => api.push(s),
                }
            }
        }
        self.rebuild();
        Ok(ids)
    }

    /// Deletes the stubs with `ids` (the API's, or the files' until they are read again); how
    /// many there were.
    pub(crate) fn delete(&self, ids: &[uuid::Uuid]) -> usize {
        let table = self.current();
        let n = table.all.iter().filter(|s| ids.contains(&s.id)).count();
        lock(&self.0.api).retain(|s| !ids.contains(&s.id));
        lock(&self.0.deleted).extend(ids.iter().copied());
        self.rebuild();
        n
    }

    /// Drops the stubs added over the API (of `session` only, when given); the files' stay.
    /// How many were dropped.
    pub(crate) fn clear_api(&self, session: Option<&str>) -> usize {
        let mut api = lock(&self.0.api);
        let before = api.len();
        api.retain(|s| session.is_some_and(|x| s.session.as_deref() != Some(x)));
        let n = before - api.len();
        drop(api);
        self.rebuild();
        n
    }

    /// The stub with `id`.
    pub(crate) fn get(&self, id: uuid::Uuid) -> Option<Arc<Stub>> {
        self.current().all.iter().find(|s| s.id == id).cloned()
    }

    /// Marks the server ready (GripMock's readiness probe).
    pub fn set_ready(&self, ready: bool) {
        self.0.ready.store(ready, Ordering::Relaxed);
    }

    /// Whether a stub of `session` (or a global one) is visible to a call of `session`.
    pub(crate) fn visible(stub: &Stub, session: &str) -> bool {
        stub.session.as_deref().is_none_or(|s| s == session)
    }

    /// How many times `stub` has matched in `session`.
    pub(crate) fn used(&self, stub: &Stub, session: &str) -> u32 {
        if session.is_empty() {
            return stub.uses.load(Ordering::Relaxed);
        }
        lock(&self.0.sessions)
            .get(&(stub.id, session.to_owned()))
            .copied()
            .unwrap_or(0)
    }

    /// Whether `stub` may still match in `session` (`options.times`).
    pub(crate) fn available(&self, stub: &Stub, session: &str) -> bool {
        stub.times == 0 || self.used(stub, session) < stub.times
    }

    /// Counts a match of `stub` in `session`: the attempt's number (1-based), or `None` when
    /// another call took the last one first.
    pub(crate) fn take(&self, stub: &Stub, session: &str) -> Option<u32> {
        stub.matched.fetch_add(1, Ordering::Relaxed);
        if session.is_empty() {
            let mut n = stub.uses.load(Ordering::Relaxed);
            loop {
                if stub.times > 0 && n >= stub.times {
                    stub.matched.fetch_sub(1, Ordering::Relaxed);
                    return None;
                }
                match stub
                    .uses
                    .compare_exchange_weak(n, n + 1, Ordering::AcqRel, Ordering::Relaxed)
                {
                    Ok(_) => return Some(n + 1),
                    Err(now) => n = now,
                }
            }
        }
        let mut map = lock(&self.0.sessions);
        let n = map.entry((stub.id, session.to_owned())).or_insert(0);
        if stub.times > 0 && *n >= stub.times {
            stub.matched.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        *n += 1;
        Some(*n)
    }
}

/// Scenarios (`scenario`): the states the stubs read and move.
impl Stubs {
    /// Whether `stub`'s scenario is in the state it requires, for a call of `session`.
    pub(crate) fn in_state(&self, stub: &Stub, session: &str) -> bool {
        (stub.scenario.as_ref()).is_none_or(|sc| self.0.scenarios.allows(sc, session))
    }

    /// Moves `stub`'s scenario to its new state, if it still is in the state the stub requires
    /// (false: another call moved it first, pick again).
    pub(crate) fn advance(&self, stub: &Stub, session: &str) -> bool {
        (stub.scenario.as_ref()).is_none_or(|sc| self.0.scenarios.advance(sc, session))
    }

    /// Every scenario back to `Started` (of `session` only, when given).
    pub fn reset_scenarios(&self, session: Option<&str>) {
        self.0.scenarios.reset(session);
    }

    /// Sets scenario `name` to `state` (in `session`; "" is no session). Refused, naming the
    /// states it has, when no stub names the scenario or the state is not one of its own.
    pub fn set_scenario(&self, name: &str, state: &str, session: &str) -> Result<(), String> {
        self.0
            .scenarios
            .set(&self.current().all, name, state, session)
    }

    /// The current state of scenario `name` in `session` (`Started` unless moved).
    pub fn scenario_state(&self, name: &str, session: &str) -> String {
        self.0.scenarios.state(name, session)
    }

    /// The scenarios of the stubs in force, with their states (the admin API's list).
    pub(crate) fn scenarios_json(&self) -> Value {
        self.0.scenarios.json(&self.current().all)
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn health() -> Stubs {
        let pool = crate::health::pool();
        Stubs::load_with(&[], &[pool], Options::gripmock()).unwrap()
    }

    fn stub(id: &str, status: &str) -> Value {
        json!({"id": id, "service": "grpc.health.v1.Health", "method": "Check",
               "output": {"data": {"status": status}}})
    }

    #[test]
    fn upsert_replaces_by_id_and_delete_removes() {
        let s = health();
        let a = "aaaaaaaa-0000-0000-0000-000000000001";
        let ids = s.upsert(&[stub(a, "SERVING")], Origin::Rest, None).unwrap();
        assert_eq!(ids[0].to_string(), a);
        s.upsert(&[stub(a, "NOT_SERVING")], Origin::Rest, None)
            .unwrap();
        assert_eq!(s.len(), 1);
        let id = uuid::Uuid::parse_str(a).unwrap();
        assert_eq!(
            s.get(id).unwrap().raw["output"]["data"]["status"],
            "NOT_SERVING"
        );
        assert_eq!(s.delete(&[id]), 1);
        assert!(s.is_empty());
    }

    #[test]
    fn a_stub_that_does_not_fit_is_refused_whole() {
        let s = health();
        let bad = json!({"service": "grpc.health.v1.Health", "method": "Nope", "output": {}});
        let e = s
            .upsert(
                &[stub("aaaaaaaa-0000-0000-0000-000000000002", "SERVING"), bad],
                Origin::Rest,
                None,
            )
            .unwrap_err();
        assert!(
            e.starts_with("stub #2: service grpc.health.v1.Health has no method"),
            "{e}"
        );
        assert!(s.is_empty());
    }

    #[test]
    fn clearing_by_session_keeps_the_others() {
        let s = health();
        s.upsert(
            &[stub("aaaaaaaa-0000-0000-0000-000000000003", "SERVING")],
            Origin::Rest,
            Some("one"),
        )
        .unwrap();
        s.upsert(
            &[stub("aaaaaaaa-0000-0000-0000-000000000004", "SERVING")],
            Origin::Rest,
            None,
        )
        .unwrap();
        assert_eq!(s.clear_api(Some("one")), 1);
        assert_eq!(s.len(), 1);
        assert_eq!(s.clear_api(None), 1);
    }
}
