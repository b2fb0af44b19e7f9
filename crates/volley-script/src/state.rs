//! What a VU's natives share with it: where its calls wait (its worker, see `sched`), clients and
//! streams, the metrics it records (with sub-metric tags matched here), its group and
//! scenario, and the stop that cuts a blocked call short. It is the gRPC module's [`Host`].

use std::{
    cell::{Cell, RefCell},
    collections::BTreeMap,
    future::Future,
    rc::Rc,
    sync::Arc,
    time::{Duration, Instant},
};

use tokio::sync::watch;

use crate::{
    grpc::{self, Finished, Host},
    http,
    metrics::{Kind, Sink, SubDef, id},
    sched,
    shared::Shared,
};

/// How often a VU hands what it recorded to the run's totals.
const FLUSH_EVERY: Duration = Duration::from_millis(500);

/// The scenario a VU is running now, for `k6/execution` and sample tags.
#[derive(Clone, Debug, Default)]
pub(crate) struct ScenarioInfo {
    pub name: String,
    pub executor: &'static str,
    pub tags: BTreeMap<String, String>,
    pub started: Option<Instant>,
    /// Iterations of this VU in the scenario.
    pub iter: u64,
    /// Iterations of all the scenario's VUs, for `exec.scenario.iterationInTest`.
    pub scenario_iters: Arc<std::sync::atomic::AtomicU64>,
    /// This iteration's number in the scenario.
    pub scenario_iter: u64,
}

/// What the natives share with the VU.
pub(crate) struct VuState {
    pub shared: Arc<Shared>,
    /// `__VU`: 1 and up; 0 for the VU that runs setup and teardown.
    pub vu: u64,
    /// A runtime of its own for a VU outside the workers (the one that runs `setup` and
    /// `teardown`); `None` for a VU on a worker, which waits on its worker's runtime.
    pub tokio: Option<tokio::runtime::Runtime>,
    pub in_init: Cell<bool>,
    pub clients: RefCell<Vec<grpc::Client>>,
    pub streams: RefCell<grpc::Streams>,
    /// `k6/http`'s connections.
    pub http: RefCell<http::Pool>,
    /// What the VUs of this thread have recorded since their last merge: one sink per worker,
    /// shared by its VUs (they never run at once), so a run keeps a histogram per core, not
    /// per VU.
    pub sink: Rc<RefCell<Sink>>,
    pub(crate) group: RefCell<String>,
    pub(crate) subs: RefCell<Arc<Vec<SubDef>>>,
    pub(crate) stop: RefCell<Option<watch::Receiver<bool>>>,
    pub scenario: RefCell<ScenarioInfo>,
    /// Iterations of this VU in the whole run.
    pub iter_total: Cell<u64>,
    /// When this thread's sink was last merged into the run's totals.
    pub(crate) last_flush: Rc<Cell<Instant>>,
}

thread_local! {
    /// The sink of this thread's VUs, and when it was last merged.
    static SINK: (Rc<RefCell<Sink>>, Rc<Cell<Instant>>) =
        (Rc::new(RefCell::new(Sink::default())), Rc::new(Cell::new(Instant::now())));
}

impl VuState {
    /// Runs `f` to its end (on the VU's worker, or its own runtime); `None` when the
    /// scenario's hard stop came first.
    pub(crate) fn block<F: Future>(&self, f: F) -> Option<F::Output> {
        let stop = self.stop.borrow().clone();
        let waited = async move {
            match stop {
                None => Some(f.await),
                Some(mut rx) => tokio::select! {
                    biased;
                    r = f => Some(r),
                    () = async move {
                        if rx.wait_for(|s| *s).await.is_err() {
                            std::future::pending::<()>().await;
                        }
                    } => None,
                },
            }
        };
        match &self.tokio {
            Some(rt) => rt.block_on(waited),
            None => sched::block_on(waited),
        }
    }

    /// Starts a task beside the VU (a stream's), on the runtime its waits use.
    pub(crate) fn spawn<F: Future<Output = ()> + Send + 'static>(&self, f: F) {
        match &self.tokio {
            Some(rt) => drop(rt.spawn(f)),
            None => drop(tokio::spawn(f)),
        }
    }

    /// Records `v` on metric `metric`.
    pub(crate) fn record(&self, metric: usize, kind: Kind, v: f64) {
        self.sink.borrow_mut().add(metric, kind, v);
        if self.subs.borrow().iter().any(|s| s.metric == metric) {
            self.record_subs(metric, kind, v, &[]);
        }
        self.emit(metric, v, &[]);
    }

    /// `--out json`: the sample, with the VU's tags (its scenario's, `group`, `scenario`) and
    /// `tags` over them.
    pub(crate) fn emit(&self, metric: usize, v: f64, tags: &[(&str, &str)]) {
        let Some(out) = self.shared.out.get() else {
            return;
        };
        let group = self.group.borrow();
        let scenario = self.scenario.borrow();
        let own = scenario
            .tags
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .chain([
                ("group", group.as_str()),
                ("scenario", scenario.name.as_str()),
            ]);
        out.point(
            &self.shared.registry,
            metric,
            v,
            own.chain(tags.iter().copied()),
        );
    }

    /// Records `v` on the sub-metrics of `metric` whose tags `tags` (with the VU's own) match.
    pub(crate) fn record_subs(&self, metric: usize, kind: Kind, v: f64, tags: &[(&str, &str)]) {
        let subs = self.subs.borrow();
        let group = self.group.borrow();
        let scenario = self.scenario.borrow();
        let mut sink = self.sink.borrow_mut();
        for (i, s) in subs.iter().enumerate().filter(|(_, s)| s.metric == metric) {
            let ok = s.tags.iter().all(|(k, want)| {
                let have = tags
                    .iter()
                    .rev()
                    .find(|(t, _)| t == k)
                    .map(|(_, v)| *v)
                    .or(scenario.tags.get(k).map(String::as_str))
                    .or(match k.as_str() {
                        "group" => Some(group.as_str()),
                        "scenario" => Some(scenario.name.as_str()),
                        _ => None,
                    });
                have == Some(want.as_str())
            });
            if ok {
                sink.add_sub(i, kind, v);
            }
        }
    }

    /// Records `v` on metric `metric`, and on its sub-metrics that `tags` (with the VU's own)
    /// match.
    pub(crate) fn record_tagged(&self, metric: usize, kind: Kind, v: f64, tags: &[(&str, &str)]) {
        self.sink.borrow_mut().add(metric, kind, v);
        if self.subs.borrow().iter().any(|s| s.metric == metric) {
            self.record_subs(metric, kind, v, tags);
        }
        self.emit(metric, v, tags);
    }

    /// Records a finished unary call: `grpc_req_duration` with k6's tags, bytes both ways.
    pub(crate) fn record_call(&self, c: &Finished<'_>) {
        let ms = c.took.as_secs_f64() * 1000.0;
        if let Some(r) = self.shared.reports.get() {
            r.record(
                (c.took, c.code, c.message, c.received),
                self.shared.started.elapsed().as_secs(),
            );
        }
        {
            let mut sink = self.sink.borrow_mut();
            sink.add(id::GRPC_REQ_DURATION, Kind::Trend, ms);
            sink.add(id::DATA_SENT, Kind::Counter, c.sent as f64);
            sink.add(id::DATA_RECEIVED, Kind::Counter, c.received as f64);
        }
        let out = self.shared.out.get().is_some();
        if out
            || self
                .subs
                .borrow()
                .iter()
                .any(|s| s.metric == id::GRPC_REQ_DURATION)
        {
            let path = c.path;
            let (service, method) = path
                .trim_start_matches('/')
                .split_once('/')
                .unwrap_or((path, ""));
            let url = format!("{}{path}", c.addr);
            let status = c.code.to_string();
            let mut tags: Vec<(&str, &str)> = vec![
                ("url", &url),
                ("service", service),
                ("method", method),
                ("name", path),
                ("status", &status),
            ];
            tags.extend(c.tags.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            self.record_subs(id::GRPC_REQ_DURATION, Kind::Trend, ms, &tags);
            if out {
                self.emit(id::GRPC_REQ_DURATION, ms, &tags);
                let user: Vec<(&str, &str)> = c
                    .tags
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                self.emit(id::DATA_SENT, c.sent as f64, &user);
                self.emit(id::DATA_RECEIVED, c.received as f64, &user);
            }
        }
    }

    /// A file holding `pem`, in the run's private folder (made 0700 on first use).
    pub(crate) fn pem_file(&self, pem: &str) -> Result<String, String> {
        use std::hash::{Hash, Hasher};
        let dir = self.shared.tls_dir.get_or_init(|| {
            let d = std::env::temp_dir().join(format!("volley-run-{}", std::process::id()));
            let _ = std::fs::create_dir_all(&d);
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let _ = std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700));
            }
            d
        });
        let mut h = std::collections::hash_map::DefaultHasher::new();
        pem.hash(&mut h);
        let path = dir.join(format!("{:016x}.pem", h.finish()));
        if !path.exists() {
            std::fs::write(&path, pem)
                .map_err(|e| format!("cannot keep a TLS PEM in {}: {e}", dir.display()))?;
        }
        Ok(path.to_string_lossy().into_owned())
    }

    /// Hands what was recorded to the run's totals when it is time (or `now`).
    pub(crate) fn flush(&self, now: bool) {
        if now || self.last_flush.get().elapsed() >= FLUSH_EVERY {
            self.shared.merge(&mut self.sink.borrow_mut());
            if let Some(out) = self.shared.out.get() {
                out.flush_thread();
            }
            self.last_flush.set(Instant::now());
        }
    }
}

impl VuState {
    /// VU `vu`'s state, before its init code runs.
    pub(crate) fn new(
        shared: Arc<Shared>,
        vu: u64,
        tokio: Option<tokio::runtime::Runtime>,
    ) -> VuState {
        let subs = shared
            .subs
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        VuState {
            subs: RefCell::new(subs),
            shared,
            vu,
            tokio,
            in_init: Cell::new(true),
            clients: RefCell::new(Vec::new()),
            streams: RefCell::new(grpc::Streams::default()),
            http: RefCell::new(http::Pool::default()),
            sink: SINK.with(|s| s.0.clone()),
            group: RefCell::new(String::new()),
            stop: RefCell::new(None),
            scenario: RefCell::new(ScenarioInfo::default()),
            iter_total: Cell::new(0),
            last_flush: SINK.with(|s| s.1.clone()),
        }
    }
}

impl Host for VuState {
    fn shared(&self) -> &Shared {
        &self.shared
    }

    fn in_init(&self) -> bool {
        self.in_init.get()
    }

    fn spawn<F: Future<Output = ()> + Send + 'static>(&self, f: F) {
        VuState::spawn(self, f);
    }

    fn clients(&self) -> &RefCell<Vec<grpc::Client>> {
        &self.clients
    }

    fn streams(&self) -> &RefCell<grpc::Streams> {
        &self.streams
    }

    fn block<F: Future>(&self, f: F) -> Option<F::Output> {
        VuState::block(self, f)
    }

    fn record(&self, metric: usize, kind: Kind, v: f64) {
        VuState::record(self, metric, kind, v);
    }

    fn record_call(&self, call: &Finished<'_>) {
        VuState::record_call(self, call);
    }

    fn pem_file(&self, pem: &str) -> Result<String, String> {
        VuState::pem_file(self, pem)
    }
}
