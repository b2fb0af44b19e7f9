//! A virtual user: one QuickJS runtime with the script's modules, running as a coroutine on a
//! worker thread (`sched`): k6's API is synchronous (`invoke` returns the reply), so a call, a
//! stream's event or a `sleep` suspends the VU until its worker's runtime has the answer.
//! After each iteration the VU runs its event loop until its streams have ended, as k6 waits
//! for them.

use std::{
    collections::BTreeMap,
    rc::Rc,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use rquickjs::{
    CatchResultExt, CaughtError, Context, Function, Module, Object, Persistent, Promise, Runtime,
    Value,
};
use tokio::sync::watch;

use crate::{
    metrics::{Kind, id},
    modules::Modules,
    natives,
    shared::Shared,
    state::{ScenarioInfo, VuState},
};

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
    /// Makes VU `vu` and runs the script's init code in it: on a worker (see `sched`), or,
    /// with `own_runtime`, on the calling thread with a runtime of its own.
    pub(crate) fn new(shared: Arc<Shared>, vu: u64, own_runtime: bool) -> Result<Vu, InitError> {
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
        let tokio = match own_runtime {
            false => None,
            true => Some(
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| InitError(format!("cannot start VU {vu}'s runtime: {e}")))?,
            ),
        };
        let st = Rc::new(VuState::new(shared.clone(), vu, tokio));
        let script = shared.script.to_string_lossy().into_owned();
        let exports = ctx.with(|ctx| -> Result<Persistent<Object<'static>>, InitError> {
            natives::install(&ctx, &st)
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

    /// [`Vu::call_json`] cut short after `limit` (k6's `setupTimeout` and `teardownTimeout`):
    /// the JavaScript engine is interrupted and a blocked call cut; `Err(None)` when time ran out.
    pub(crate) fn call_json_within(
        &mut self,
        name: &str,
        arg: Option<&str>,
        limit: Duration,
    ) -> Result<Option<String>, Option<String>> {
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let (stop_tx, stop_rx) = watch::channel(false);
        *self.st.stop.borrow_mut() = Some(stop_rx);
        let flag = self.interrupt.clone();
        let timed_out = Arc::new(AtomicBool::new(false));
        let late = timed_out.clone();
        let watcher = std::thread::spawn(move || {
            if done_rx.recv_timeout(limit) == Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
                late.store(true, Ordering::Relaxed);
                flag.store(true, Ordering::Relaxed);
                let _ = stop_tx.send(true);
            }
        });
        let r = self.call_json(name, arg);
        drop(done_tx);
        let _ = watcher.join();
        *self.st.stop.borrow_mut() = None;
        self.interrupt.store(false, Ordering::Relaxed);
        if timed_out.load(Ordering::Relaxed) {
            return Err(None);
        }
        r.map_err(Some)
    }

    /// Calls an exported lifecycle function (`setup`, `teardown`, `handleSummary`) with
    /// `arg` (JSON text), returning its result as JSON text.
    pub(crate) fn call_json(
        &mut self,
        name: &str,
        arg: Option<&str>,
    ) -> Result<Option<String>, String> {
        // The value, or the promise an async function returned (settled after the event loop).
        let called = self.ctx.with(
            |ctx| -> Result<
                Result<Persistent<Value<'static>>, Persistent<Promise<'static>>>,
                String,
            > {
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
                let v: Value = f.call((arg,)).catch(&ctx).map_err(caught)?;
                Ok(match v.as_promise() {
                    Some(p) => Err(Persistent::save(&ctx, p.clone())),
                    None => Ok(Persistent::save(&ctx, v)),
                })
            },
        )?;
        self.event_loop();
        self.ctx.with(|ctx| {
            let v: Value = match called {
                Ok(v) => v.restore(&ctx).map_err(|e| e.to_string())?,
                Err(p) => {
                    let p = p.restore(&ctx).map_err(|e| e.to_string())?;
                    match p.result::<Value>() {
                        Some(r) => r.catch(&ctx).map_err(caught)?,
                        None => {
                            return Err(format!("{name} returned a promise that never settled"));
                        }
                    }
                }
            };
            if v.is_undefined() {
                return Ok(None);
            }
            Ok(ctx
                .json_stringify(v)
                .catch(&ctx)
                .map_err(caught)?
                .and_then(|s| s.to_string().ok()))
        })
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
        let called = self.ctx.with(
            |ctx| -> Result<Option<Persistent<Promise<'static>>>, String> {
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
                Ok(v.into_promise().map(|p| Persistent::save(&ctx, p)))
            },
        );
        // Streams, asyncInvoke replies and promise jobs run to their end; an async function's
        // promise has settled by then unless it waits on nothing volley knows of.
        self.event_loop();
        let error = match called {
            Err(text) => Some(text),
            Ok(None) => None,
            Ok(Some(p)) => self.settled(p).err(),
        };
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

    /// An async function's outcome: `Err` with the rejection's text.
    fn settled(&self, p: Persistent<Promise<'static>>) -> Result<(), String> {
        self.ctx.with(|ctx| {
            let p = p.restore(&ctx).map_err(|e| e.to_string())?;
            match p.result::<Value>() {
                Some(r) => r.map(|_| ()).catch(&ctx).map_err(caught),
                None => Ok(()),
            }
        })
    }

    /// Runs promise jobs and hands stream events and `asyncInvoke` replies to the script until
    /// none is awaited.
    fn event_loop(&mut self) {
        loop {
            drain_jobs(&self.rt);
            if self.st.streams.borrow().open == 0 {
                return;
            }
            let st = self.st.clone();
            // The receiver leaves the cell while it waits (no borrow across the await).
            let Some(mut rx) = st.streams.borrow_mut().rx.take() else {
                return;
            };
            let next = st.block(rx.recv());
            st.streams.borrow_mut().rx = Some(rx);
            let Some(Some(ev)) = next else {
                // Hard stop: the streams are dropped with the VU's runtime tasks.
                let mut s = self.st.streams.borrow_mut();
                s.open = 0;
                return;
            };
            if ev.kind == "timer" && self.st.streams.borrow_mut().cleared.remove(&ev.id) {
                continue;
            }
            match ev.kind {
                "timer" => self.st.streams.borrow_mut().ended(ev.id),
                "data" => self
                    .st
                    .record(id::GRPC_STREAMS_MSGS_RECEIVED, Kind::Counter, 1.0),
                "end" => self.st.streams.borrow_mut().ended(ev.id),
                "reply" | "fail" => {
                    if let Some(call) = &ev.call {
                        self.st.record_call(&call.finished());
                    }
                    self.st.streams.borrow_mut().ended(ev.id);
                }
                _ => {}
            }
            if ev.kind == "data" {
                let len = ev.payload.as_ref().map_or(0, String::len);
                self.st.record(id::DATA_RECEIVED, Kind::Counter, len as f64);
            }
            let r = self.ctx.with(|ctx| -> Result<(), String> {
                // Timers live in the prelude; streams and replies in k6/net/grpc.
                let handler = if ev.kind == "timer" {
                    "__k6_timer"
                } else {
                    "__k6_stream_event"
                };
                let f: Function = ctx.globals().get(handler).catch(&ctx).map_err(caught)?;
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
