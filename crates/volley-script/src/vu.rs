//! A virtual user: one QuickJS runtime with the script's modules, on the thread that runs its
//! iterations, and a current-thread tokio runtime of its own that its calls block on (k6's API
//! is synchronous: `invoke` returns the reply). Calls, streams and `sleep` drive that runtime,
//! so no other thread is woken per call. After each iteration the VU runs its event loop until
//! its streams have ended, as k6 waits for them.

use std::{
    cell::{Cell, RefCell},
    collections::BTreeMap,
    future::Future,
    rc::Rc,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use rquickjs::{
    CatchResultExt, CaughtError, Context, Ctx, Exception, Function, Module, Object, Persistent,
    Runtime, Value, prelude::Opt,
};
use tokio::sync::watch;

use crate::{
    grpc,
    metrics::{Kind, Sink, SubDef, id},
    modules::Modules,
    shared::Shared,
};

/// How often a VU hands what it recorded to the run's totals.
const FLUSH_EVERY: Duration = Duration::from_millis(250);

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
    pub tokio: tokio::runtime::Runtime,
    pub in_init: Cell<bool>,
    pub clients: RefCell<Vec<grpc::Client>>,
    pub streams: RefCell<grpc::Streams>,
    pub sink: RefCell<Sink>,
    group: RefCell<String>,
    subs: RefCell<Arc<Vec<SubDef>>>,
    stop: RefCell<Option<watch::Receiver<bool>>>,
    pub scenario: RefCell<ScenarioInfo>,
    /// Iterations of this VU in the whole run.
    pub iter_total: Cell<u64>,
    last_flush: Cell<Instant>,
}

impl VuState {
    /// Runs `f` on the VU's runtime; `None` when the scenario's hard stop came first.
    pub(crate) fn block<F: Future>(&self, f: F) -> Option<F::Output> {
        let stop = self.stop.borrow().clone();
        match stop {
            None => Some(self.tokio.block_on(f)),
            Some(mut rx) => self.tokio.block_on(async move {
                tokio::select! {
                    biased;
                    r = f => Some(r),
                    () = async move {
                        if rx.wait_for(|s| *s).await.is_err() {
                            std::future::pending::<()>().await;
                        }
                    } => None,
                }
            }),
        }
    }

    /// Records `v` on metric `metric`.
    pub(crate) fn record(&self, metric: usize, kind: Kind, v: f64) {
        self.sink.borrow_mut().add(metric, kind, v);
        if self.subs.borrow().iter().any(|s| s.metric == metric) {
            self.record_subs(metric, kind, v, &[]);
        }
    }

    /// Records `v` on the sub-metrics of `metric` whose tags `tags` (with the VU's own) match.
    fn record_subs(&self, metric: usize, kind: Kind, v: f64, tags: &[(&str, &str)]) {
        let subs = self.subs.borrow().clone();
        let group = self.group.borrow().clone();
        let scenario = self.scenario.borrow().clone();
        let mut sink = self.sink.borrow_mut();
        for (i, s) in subs.iter().enumerate().filter(|(_, s)| s.metric == metric) {
            let ok = s.tags.iter().all(|(k, want)| {
                let have = tags
                    .iter()
                    .rev()
                    .find(|(t, _)| t == k)
                    .map(|(_, v)| *v)
                    .or_else(|| scenario.tags.get(k).map(String::as_str))
                    .or_else(|| match k.as_str() {
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

    /// Records a finished unary call: `grpc_req_duration` with k6's tags, bytes both ways.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn record_call(
        &self,
        addr: &str,
        path: &str,
        code: i32,
        took: Duration,
        sent: usize,
        received: usize,
        user_tags: &[(String, String)],
    ) {
        let ms = took.as_secs_f64() * 1000.0;
        {
            let mut sink = self.sink.borrow_mut();
            sink.add(id::GRPC_REQ_DURATION, Kind::Trend, ms);
            sink.add(id::DATA_SENT, Kind::Counter, sent as f64);
            sink.add(id::DATA_RECEIVED, Kind::Counter, received as f64);
        }
        if self
            .subs
            .borrow()
            .iter()
            .any(|s| s.metric == id::GRPC_REQ_DURATION)
        {
            let (service, method) = path
                .trim_start_matches('/')
                .split_once('/')
                .unwrap_or((path, ""));
            let url = format!("{addr}{path}");
            let status = code.to_string();
            let mut tags: Vec<(&str, &str)> = vec![
                ("url", &url),
                ("service", service),
                ("method", method),
                ("name", path),
                ("status", &status),
            ];
            tags.extend(user_tags.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            self.record_subs(id::GRPC_REQ_DURATION, Kind::Trend, ms, &tags);
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
            self.last_flush.set(Instant::now());
        }
    }
}

/// How an iteration ended.
#[derive(Debug, PartialEq)]
pub(crate) enum Outcome {
    Done,
    /// It threw; logged once per distinct text.
    Failed,
    /// Cut by the scenario's hard stop or the run's abort.
    Interrupted,
}

/// A VU: its runtime, context, module and state.
/// Fields drop in order: the script's values before the context, the context before the
/// runtime (QuickJS checks that a runtime it frees holds no object).
pub(crate) struct Vu {
    exports: Persistent<Object<'static>>,
    data: Option<Persistent<Value<'static>>>,
    ctx: Context,
    rt: Runtime,
    pub st: Rc<VuState>,
    interrupt: Arc<AtomicBool>,
}

/// Why a VU could not start: the script's error, for exit code 107.
#[derive(Debug)]
pub(crate) struct InitError(pub String);

impl Vu {
    /// Makes VU `vu` and runs the script's init code in it.
    pub(crate) fn new(shared: Arc<Shared>, vu: u64) -> Result<Vu, InitError> {
        let rt = Runtime::new()
            .map_err(|e| InitError(format!("cannot start the JavaScript runtime: {e}")))?;
        rt.set_max_stack_size(512 * 1024);
        rt.set_loader(
            Modules {
                shared: shared.clone(),
            },
            Modules {
                shared: shared.clone(),
            },
        );
        let interrupt = Arc::new(AtomicBool::new(false));
        let flag = interrupt.clone();
        rt.set_interrupt_handler(Some(Box::new(move || flag.load(Ordering::Relaxed))));
        let ctx = Context::full(&rt)
            .map_err(|e| InitError(format!("cannot make a JavaScript context: {e}")))?;
        let tokio = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| InitError(format!("cannot start VU {vu}'s runtime: {e}")))?;
        let st = Rc::new(VuState {
            subs: RefCell::new(
                shared
                    .subs
                    .read()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone(),
            ),
            shared: shared.clone(),
            vu,
            tokio,
            in_init: Cell::new(true),
            clients: RefCell::new(Vec::new()),
            streams: RefCell::new(grpc::Streams::default()),
            sink: RefCell::new(Sink::default()),
            group: RefCell::new(String::new()),
            stop: RefCell::new(None),
            scenario: RefCell::new(ScenarioInfo::default()),
            iter_total: Cell::new(0),
            last_flush: Cell::new(Instant::now()),
        });
        let script = shared.script.to_string_lossy().into_owned();
        let exports = ctx.with(|ctx| -> Result<Persistent<Object<'static>>, InitError> {
            install(&ctx, &st)
                .catch(&ctx)
                .map_err(|e| InitError(caught(e)))?;
            ctx.eval::<(), _>(include_str!("js/prelude.js"))
                .catch(&ctx)
                .map_err(|e| InitError(caught(e)))?;
            let src = shared
                .source(&shared.script)
                .map_err(|e| InitError(format!("cannot read {script}: {e}")))?;
            let module = Module::declare(ctx.clone(), script.as_str(), &*src)
                .catch(&ctx)
                .map_err(|e| InitError(caught(e)))?;
            let (module, promise) = module
                .eval()
                .catch(&ctx)
                .map_err(|e| InitError(caught(e)))?;
            promise
                .finish::<()>()
                .catch(&ctx)
                .map_err(|e| InitError(caught(e)))?;
            let ns = module
                .namespace()
                .catch(&ctx)
                .map_err(|e| InitError(caught(e)))?;
            Ok(Persistent::save(&ctx, ns))
        })?;
        st.in_init.set(false);
        Ok(Vu {
            exports,
            data: None,
            ctx,
            rt,
            st,
            interrupt,
        })
    }

    /// The script's `options` export as JSON text (`{}` without one).
    pub(crate) fn options_json(&self) -> Result<String, String> {
        self.ctx.with(|ctx| {
            let ns = self
                .exports
                .clone()
                .restore(&ctx)
                .map_err(|e| e.to_string())?;
            let v: Value = ns.get("options").map_err(|e| e.to_string())?;
            if v.is_undefined() || v.is_null() {
                return Ok("{}".to_owned());
            }
            Ok(ctx
                .json_stringify(v)
                .catch(&ctx)
                .map_err(caught)?
                .map(|s| s.to_string().unwrap_or_default())
                .unwrap_or_else(|| "{}".into()))
        })
    }

    /// Whether the script exports a function by this name.
    pub(crate) fn has_function(&self, name: &str) -> bool {
        self.ctx.with(|ctx| {
            self.exports
                .clone()
                .restore(&ctx)
                .ok()
                .and_then(|ns| ns.get::<_, Value>(name).ok())
                .is_some_and(|v| v.is_function())
        })
    }

    /// Calls an exported lifecycle function (`setup`, `teardown`, `handleSummary`) with
    /// `arg` (JSON text), returning its result as JSON text.
    pub(crate) fn call_json(
        &mut self,
        name: &str,
        arg: Option<&str>,
    ) -> Result<Option<String>, String> {
        let r = self.ctx.with(|ctx| -> Result<Option<String>, String> {
            let ns = self
                .exports
                .clone()
                .restore(&ctx)
                .map_err(|e| e.to_string())?;
            let f: Function = ns
                .get(name)
                .map_err(|e| format!("{name} is not a function: {e}"))?;
            let arg: Value = match arg {
                Some(text) => ctx.json_parse(text).catch(&ctx).map_err(caught)?,
                None => Value::new_undefined(ctx.clone()),
            };
            let mut v: Value = f.call((arg,)).catch(&ctx).map_err(caught)?;
            if let Some(p) = v.as_promise().cloned() {
                drain_jobs(&self.rt);
                v = p.finish::<Value>().catch(&ctx).map_err(caught)?;
            }
            if v.is_undefined() {
                return Ok(None);
            }
            Ok(ctx
                .json_stringify(v)
                .catch(&ctx)
                .map_err(caught)?
                .and_then(|s| s.to_string().ok()))
        });
        self.event_loop();
        r
    }

    /// Sets the scenario this VU runs now, its hard stop and `setup()`'s data.
    pub(crate) fn enter(
        &mut self,
        info: ScenarioInfo,
        stop: watch::Receiver<bool>,
        env: &BTreeMap<String, String>,
    ) {
        *self.st.scenario.borrow_mut() = info;
        *self.st.stop.borrow_mut() = Some(stop);
        *self.st.subs.borrow_mut() = self
            .st
            .shared
            .subs
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        self.ctx.with(|ctx| {
            if !env.is_empty()
                && let Ok(e) = ctx.globals().get::<_, Object>("__ENV")
            {
                for (k, v) in env {
                    let _ = e.set(k.as_str(), v.as_str());
                }
            }
            if self.data.is_none()
                && let Some(Some(text)) = self.st.shared.setup_data.get()
                && let Ok(v) = ctx.json_parse(text.as_str())
            {
                self.data = Some(Persistent::save(&ctx, v));
            }
        });
    }

    /// Runs one iteration of `exec`, then the event loop.
    pub(crate) fn iterate(&mut self, exec: &str) -> Outcome {
        let st = self.st.clone();
        let n = {
            let mut s = st.scenario.borrow_mut();
            let n = s.iter;
            s.iter += 1;
            s.scenario_iter = s.scenario_iters.fetch_add(1, Ordering::Relaxed);
            n
        };
        let started = Instant::now();
        let result = self.ctx.with(|ctx| -> Result<(), String> {
            let g = ctx.globals();
            let _ = g.set("__ITER", n);
            let ns = self
                .exports
                .clone()
                .restore(&ctx)
                .catch(&ctx)
                .map_err(caught)?;
            let f: Function = ns.get(exec).catch(&ctx).map_err(caught)?;
            let data: Value = match &self.data {
                Some(d) => d.clone().restore(&ctx).catch(&ctx).map_err(caught)?,
                None => Value::new_undefined(ctx.clone()),
            };
            let v: Value = f.call((data,)).catch(&ctx).map_err(caught)?;
            if let Some(p) = v.as_promise() {
                drain_jobs(&self.rt);
                p.clone().finish::<Value>().catch(&ctx).map_err(caught)?;
            }
            Ok(())
        });
        let error = result.err();
        self.event_loop();
        st.iter_total.set(st.iter_total.get() + 1);
        let interrupted = self.interrupt.load(Ordering::Relaxed)
            || st.stop.borrow().as_ref().is_some_and(|r| *r.borrow());
        let outcome = match error {
            _ if interrupted => Outcome::Interrupted,
            Some(text) => {
                let s = st.scenario.borrow();
                st.shared.log.exception(&text, s.executor, &s.name);
                Outcome::Failed
            }
            None => Outcome::Done,
        };
        if outcome != Outcome::Interrupted {
            st.record(id::ITERATIONS, Kind::Counter, 1.0);
            st.record(
                id::ITERATION_DURATION,
                Kind::Trend,
                started.elapsed().as_secs_f64() * 1000.0,
            );
        }
        *st.group.borrow_mut() = String::new();
        st.flush(false);
        outcome
    }

    /// Runs promise jobs and hands stream events to the script until no stream is open.
    fn event_loop(&mut self) {
        loop {
            drain_jobs(&self.rt);
            if self.st.streams.borrow().open == 0 {
                return;
            }
            let st = self.st.clone();
            let next = st.block(async { st.streams.borrow_mut().rx.recv().await });
            let Some(Some(ev)) = next else {
                // Hard stop: the streams are dropped with the VU's runtime tasks.
                let mut s = self.st.streams.borrow_mut();
                s.open = 0;
                return;
            };
            match ev.kind {
                "data" => self
                    .st
                    .record(id::GRPC_STREAMS_MSGS_RECEIVED, Kind::Counter, 1.0),
                "end" => self.st.streams.borrow_mut().ended(ev.id),
                _ => {}
            }
            if ev.kind == "data" {
                let len = ev.payload.as_ref().map_or(0, String::len);
                self.st.record(id::DATA_RECEIVED, Kind::Counter, len as f64);
            }
            let r = self.ctx.with(|ctx| -> Result<(), String> {
                let f: Function = ctx
                    .globals()
                    .get("__k6_stream_event")
                    .catch(&ctx)
                    .map_err(caught)?;
                f.call::<_, ()>((ev.id, ev.kind, ev.payload))
                    .catch(&ctx)
                    .map_err(caught)
            });
            if let Err(text) = r {
                let s = self.st.scenario.borrow();
                self.st.shared.log.exception(&text, s.executor, &s.name);
            }
        }
    }

    /// Cuts a running iteration short (the JavaScript engine's interrupt).
    pub(crate) fn interrupt_flag(&self) -> Arc<AtomicBool> {
        self.interrupt.clone()
    }
}

impl Drop for Vu {
    fn drop(&mut self) {
        self.st.flush(true);
    }
}

/// Runs pending promise jobs.
fn drain_jobs(rt: &Runtime) {
    while rt.is_job_pending() {
        if rt.execute_pending_job().is_err() {
            continue;
        }
    }
}

/// An exception as k6 logs it: the message, then its stack.
pub(crate) fn caught(e: CaughtError<'_>) -> String {
    match e {
        CaughtError::Exception(ex) => {
            let msg = ex.message().unwrap_or_default();
            let name = ex
                .as_object()
                .get::<_, Object>("constructor")
                .ok()
                .and_then(|c| c.get::<_, String>("name").ok())
                .unwrap_or_else(|| "Error".into());
            let stack = ex.stack().unwrap_or_default();
            let mut text = if msg.is_empty() {
                name
            } else {
                format!("{name}: {msg}")
            };
            for line in stack.lines().filter(|l| !l.trim().is_empty()) {
                text.push_str("\n\t");
                text.push_str(line.trim());
            }
            text
        }
        CaughtError::Value(v) => {
            if let Some(s) = v.as_string().and_then(|s| s.to_string().ok()) {
                s
            } else {
                v.get::<rquickjs::Coerced<String>>()
                    .map(|c| c.0)
                    .unwrap_or_else(|_| "exception".into())
            }
        }
        CaughtError::Error(e) => e.to_string(),
    }
}

fn throw(ctx: &Ctx<'_>, msg: impl AsRef<str>) -> rquickjs::Error {
    Exception::throw_message(ctx, msg.as_ref())
}

/// Puts `__k6` (the natives the built-in modules call), `__ENV`, `__VU`, `__ITER` and `open`
/// on the global object.
fn install<'js>(ctx: &Ctx<'js>, st: &Rc<VuState>) -> rquickjs::Result<()> {
    let g = ctx.globals();
    let env = Object::new(ctx.clone())?;
    for (k, v) in &st.shared.env {
        env.set(k.as_str(), v.as_str())?;
    }
    g.set("__ENV", env)?;
    g.set("__VU", st.vu)?;
    g.set("__ITER", 0)?;
    let n = Object::new(ctx.clone())?;
    macro_rules! native {
        ($name:literal, $f:expr) => {
            n.set($name, Function::new(ctx.clone(), $f)?.with_name($name)?)?;
        };
    }
    let s = st.clone();
    native!("log", move |level: String, text: String| s.shared.log.line(
        &level,
        &text,
        &[("source", "console")]
    ));
    let s = st.clone();
    native!("check", move |name: String,
                           ok: bool,
                           tags: Opt<Value<'_>>| {
        let group = s.group.borrow().clone();
        s.sink.borrow_mut().check(&group, &name, ok);
        let tagged = tags.0.and_then(|t| t.into_object());
        if tagged.is_some() || s.subs.borrow().iter().any(|x| x.metric == id::CHECKS) {
            let mut list: Vec<(String, String)> = vec![("check".into(), name.clone())];
            if let Some(o) = tagged {
                for (k, v) in o.props::<String, rquickjs::Coerced<String>>().flatten() {
                    list.push((k, v.0));
                }
            }
            let pairs: Vec<(&str, &str)> =
                list.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            s.sink
                .borrow_mut()
                .add(id::CHECKS, Kind::Rate, f64::from(u8::from(ok)));
            s.record_subs(id::CHECKS, Kind::Rate, f64::from(u8::from(ok)), &pairs);
        } else {
            s.sink
                .borrow_mut()
                .add(id::CHECKS, Kind::Rate, f64::from(u8::from(ok)));
        }
    });
    let s = st.clone();
    native!("sleep", move |ctx: Ctx<'_>,
                           secs: f64|
          -> rquickjs::Result<()> {
        if !secs.is_finite() || secs < 0.0 {
            return Err(throw(
                &ctx,
                format!("sleep: {secs} is not a number of seconds"),
            ));
        }
        if s.in_init.get() {
            return Err(throw(&ctx, "sleep can't be used in the init context"));
        }
        let d = Duration::from_secs_f64(secs);
        s.block(async move { tokio::time::sleep(d).await });
        Ok(())
    });
    let s = st.clone();
    native!("groupEnter", move |ctx: Ctx<'_>,
                                name: String|
          -> rquickjs::Result<()> {
        if name.contains("::") {
            return Err(throw(&ctx, "group and check names may not contain '::'"));
        }
        let mut g = s.group.borrow_mut();
        g.push_str("::");
        g.push_str(&name);
        s.sink.borrow_mut().note_group(&g);
        Ok(())
    });
    let s = st.clone();
    native!("groupExit", move |ms: f64| {
        let mut g = s.group.borrow_mut();
        let cut = g.rfind("::").unwrap_or(0);
        g.truncate(cut);
        drop(g);
        s.record(id::GROUP_DURATION, Kind::Trend, ms);
    });
    native!("randomSeed", |_seed: f64| {});
    let s = st.clone();
    native!("grpcClient", move || grpc::new_client(&s));
    let s = st.clone();
    native!("grpcLoad", move |ctx: Ctx<'_>,
                              c: u32,
                              paths: String,
                              files: String|
          -> rquickjs::Result<String> {
        grpc::load(&s, c, &paths, &files).map_err(|e| throw(&ctx, e))
    });
    let s = st.clone();
    native!("grpcLoadProtoset", move |ctx: Ctx<'_>,
                                      c: u32,
                                      path: String|
          -> rquickjs::Result<String> {
        grpc::load_protoset(&s, c, &path).map_err(|e| throw(&ctx, e))
    });
    let s = st.clone();
    native!("grpcConnect", move |ctx: Ctx<'_>,
                                 c: u32,
                                 addr: String,
                                 params: String|
          -> rquickjs::Result<bool> {
        grpc::connect(&s, c, &addr, &params).map_err(|e| throw(&ctx, e))
    });
    let s = st.clone();
    native!("grpcInvoke", move |ctx: Ctx<'_>,
                                c: u32,
                                method: String,
                                body: String,
                                params: String|
          -> rquickjs::Result<String> {
        grpc::invoke(&s, c, &method, &body, &params).map_err(|e| throw(&ctx, e))
    });
    let s = st.clone();
    native!("grpcHealth", move |ctx: Ctx<'_>,
                                c: u32,
                                service: String|
          -> rquickjs::Result<String> {
        grpc::health(&s, c, &service).map_err(|e| throw(&ctx, e))
    });
    let s = st.clone();
    native!("grpcClose", move |c: u32| grpc::close(&s, c));
    let s = st.clone();
    native!("streamOpen", move |ctx: Ctx<'_>,
                                c: u32,
                                method: String,
                                params: String|
          -> rquickjs::Result<u32> {
        grpc::stream_open(&s, c, &method, &params).map_err(|e| throw(&ctx, e))
    });
    let s = st.clone();
    native!("streamWrite", move |ctx: Ctx<'_>,
                                 id: u32,
                                 body: String|
          -> rquickjs::Result<()> {
        grpc::stream_write(&s, id, &body).map_err(|e| throw(&ctx, e))
    });
    let s = st.clone();
    native!("streamEnd", move |id: u32| grpc::stream_end(&s, id));
    let s = st.clone();
    native!("metricNew", move |ctx: Ctx<'_>,
                               name: String,
                               kind: String,
                               time: bool|
          -> rquickjs::Result<usize> {
        if !s.in_init.get() {
            return Err(throw(&ctx, "metrics must be declared in the init context"));
        }
        let kind = match kind.as_str() {
            "counter" => Kind::Counter,
            "gauge" => Kind::Gauge,
            "rate" => Kind::Rate,
            _ => Kind::Trend,
        };
        s.shared
            .registry
            .define(&name, kind, time)
            .map_err(|e| throw(&ctx, e))
    });
    let s = st.clone();
    native!("metricAdd", move |ctx: Ctx<'_>,
                               metric: usize,
                               value: f64,
                               tags: Opt<String>|
          -> rquickjs::Result<()> {
        if s.in_init.get() {
            return Err(throw(&ctx, "metrics can't be added to in the init context"));
        }
        let Some(def) = s.shared.registry.defs().into_iter().nth(metric) else {
            return Err(throw(&ctx, "no such metric"));
        };
        if !value.is_finite() {
            return Err(throw(
                &ctx,
                format!("'{value}' is an invalid value for metric '{}'", def.name),
            ));
        }
        s.sink.borrow_mut().add(metric, def.kind, value);
        if s.subs.borrow().iter().any(|x| x.metric == metric) {
            let tags: Vec<(String, String)> = tags
                .0
                .and_then(|t| {
                    serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&t).ok()
                })
                .map(|m| {
                    m.into_iter()
                        .map(|(k, v)| (k, v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
                        .collect()
                })
                .unwrap_or_default();
            let pairs: Vec<(&str, &str)> =
                tags.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            s.record_subs(metric, def.kind, value, &pairs);
        }
        Ok(())
    });
    let s = st.clone();
    native!("sharedGet", move |name: String| s
        .shared
        .shared_array(&name)
        .map(|t| t.to_string()));
    let s = st.clone();
    native!("sharedPut", move |name: String, text: String| s
        .shared
        .put_shared_array(&name, text)
        .to_string());
    let s = st.clone();
    native!(
        "execInfo",
        move |ctx: Ctx<'js>| -> rquickjs::Result<Object<'js>> {
            let o = Object::new(ctx.clone())?;
            let sc = s.scenario.borrow();
            let sh = &s.shared;
            o.set("vu", s.vu)?;
            o.set("iter", sc.iter.saturating_sub(1))?;
            o.set("iterInInstance", s.iter_total.get())?;
            o.set("scenario", sc.name.as_str())?;
            o.set("executor", sc.executor)?;
            o.set(
                "scenarioStart",
                sc.started.map_or(0.0, |t| {
                    sh.started.elapsed().as_secs_f64() * 1000.0 - t.elapsed().as_secs_f64() * 1000.0
                }),
            )?;
            o.set("progress", 0)?;
            o.set("scenarioIter", sc.scenario_iter)?;
            o.set("completed", sh.completed.load(Ordering::Relaxed))?;
            o.set("interrupted", sh.interrupted.load(Ordering::Relaxed))?;
            o.set("vusActive", sh.vus_active.load(Ordering::Relaxed))?;
            o.set("vusMax", sh.vus_max.load(Ordering::Relaxed))?;
            o.set("elapsed", sh.started.elapsed().as_secs_f64() * 1000.0)?;
            let tags = Object::new(ctx.clone())?;
            for (k, v) in &sc.tags {
                tags.set(k.as_str(), v.as_str())?;
            }
            tags.set("scenario", sc.name.as_str())?;
            o.set("tags", tags)?;
            Ok(o)
        }
    );
    let s = st.clone();
    native!("abort", move |ctx: Ctx<'_>,
                           reason: String|
          -> rquickjs::Result<()> {
        let why = if reason.is_empty() {
            "test aborted".to_owned()
        } else {
            format!("test aborted: {reason}")
        };
        s.shared.abort(why.clone());
        Err(throw(&ctx, why))
    });
    let s = st.clone();
    native!("optionsJson", move || s
        .shared
        .options_json
        .get()
        .cloned()
        .unwrap_or_else(|| "{}".into()));
    g.set("__k6", n)?;
    let s = st.clone();
    g.set(
        "open",
        Function::new(ctx.clone(), move |ctx: Ctx<'js>, path: String, mode: Opt<String>| -> rquickjs::Result<Value<'js>> {
            if !s.in_init.get() {
                return Err(throw(&ctx, "The \"open()\" function is only available in the init stage (i.e. the global scope), see https://grafana.com/docs/k6/latest/using-k6/test-lifecycle for more information"));
            }
            let p = s.shared.dir.join(path.strip_prefix("file://").unwrap_or(&path));
            let bytes = std::fs::read(&p).map_err(|e| throw(&ctx, format!("open {}: {e}", p.display())))?;
            if mode.0.as_deref() == Some("b") {
                Ok(rquickjs::ArrayBuffer::new(ctx.clone(), bytes)?.into_value())
            } else {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                Ok(rquickjs::String::from_str(ctx.clone(), &text)?.into_value())
            }
        })?
        .with_name("open")?,
    )?;
    Ok(())
}
