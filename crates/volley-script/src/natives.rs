//! The natives a VU's JavaScript calls: `__k6` (what the built-in modules in `js/` stand on:
//! checks, sleep, groups, gRPC clients and streams, metrics, shared arrays, `k6/execution`),
//! and the globals k6 gives every script (`__ENV`, `__VU`, `__ITER`, `open`).

use std::{rc::Rc, sync::atomic::Ordering, time::Duration};

use base64::Engine as _;
use rquickjs::{Ctx, Exception, Function, Object, Value, prelude::Opt};

use crate::{
    grpc, http,
    metrics::{Kind, id},
    state::VuState,
};

/// k6's base64 alphabets: `std`, `rawstd` (no padding), `url`, `rawurl`.
fn alphabet_of(ctx: &Ctx<'_>, name: &str) -> rquickjs::Result<base64::engine::GeneralPurpose> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    match name {
        "std" | "" => Ok(STANDARD),
        "rawstd" => Ok(STANDARD_NO_PAD),
        "url" => Ok(URL_SAFE),
        "rawurl" => Ok(URL_SAFE_NO_PAD),
        other => Err(throw(
            ctx,
            format!("unsupported base64 encoding {other:?}: std, rawstd, url or rawurl"),
        )),
    }
}

fn throw(ctx: &Ctx<'_>, msg: impl AsRef<str>) -> rquickjs::Error {
    Exception::throw_message(ctx, msg.as_ref())
}

/// Puts `__k6` (the natives the built-in modules call), `__ENV`, `__VU`, `__ITER` and `open`
/// on the global object.
pub(crate) fn install<'js>(ctx: &Ctx<'js>, st: &Rc<VuState>) -> rquickjs::Result<()> {
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
        s.sink.borrow_mut().check(&s.group.borrow(), &name, ok);
        let v = f64::from(u8::from(ok));
        match tags.0.and_then(|t| t.into_object()) {
            // Tags (the check's and the call's) are made only when a sub-metric may want them.
            Some(o) => {
                let mut list: Vec<(String, String)> = vec![("check".into(), name)];
                for (k, v) in o.props::<String, rquickjs::Coerced<String>>().flatten() {
                    list.push((k, v.0));
                }
                let pairs: Vec<(&str, &str)> =
                    list.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                s.record_tagged(id::CHECKS, Kind::Rate, v, &pairs);
            }
            None => s.record_tagged(id::CHECKS, Kind::Rate, v, &[("check", &name)]),
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
    native!("grpcClient", move || grpc::new_client(&*s));
    let s = st.clone();
    native!("grpcLoad", move |ctx: Ctx<'_>,
                              c: u32,
                              paths: String,
                              files: String|
          -> rquickjs::Result<String> {
        grpc::load(&*s, c, &paths, &files).map_err(|e| throw(&ctx, e))
    });
    let s = st.clone();
    native!("grpcLoadProtoset", move |ctx: Ctx<'_>,
                                      c: u32,
                                      path: String|
          -> rquickjs::Result<String> {
        grpc::load_protoset(&*s, c, &path).map_err(|e| throw(&ctx, e))
    });
    let s = st.clone();
    native!("grpcConnect", move |ctx: Ctx<'_>,
                                 c: u32,
                                 addr: String,
                                 params: String|
          -> rquickjs::Result<bool> {
        grpc::connect(&*s, c, &addr, &params).map_err(|e| throw(&ctx, e))
    });
    let s = st.clone();
    native!("grpcInvoke", move |ctx: Ctx<'_>,
                                c: u32,
                                method: String,
                                body: String,
                                params: String|
          -> rquickjs::Result<String> {
        grpc::invoke(&*s, c, &method, &body, &params).map_err(|e| throw(&ctx, e))
    });
    let s = st.clone();
    native!("grpcAsyncInvoke", move |ctx: Ctx<'_>,
                                     c: u32,
                                     method: String,
                                     body: String,
                                     params: String|
          -> rquickjs::Result<u32> {
        grpc::async_invoke(&*s, c, &method, &body, &params).map_err(|e| throw(&ctx, e))
    });
    let s = st.clone();
    native!("grpcHealth", move |ctx: Ctx<'_>,
                                c: u32,
                                service: String|
          -> rquickjs::Result<String> {
        grpc::health(&*s, c, &service).map_err(|e| throw(&ctx, e))
    });
    let s = st.clone();
    native!("grpcClose", move |c: u32| grpc::close(&*s, c));
    let s = st.clone();
    native!("streamOpen", move |ctx: Ctx<'_>,
                                c: u32,
                                method: String,
                                params: String|
          -> rquickjs::Result<u32> {
        grpc::stream_open(&*s, c, &method, &params).map_err(|e| throw(&ctx, e))
    });
    let s = st.clone();
    native!("streamWrite", move |ctx: Ctx<'_>,
                                 id: u32,
                                 body: String|
          -> rquickjs::Result<()> {
        grpc::stream_write(&*s, id, &body).map_err(|e| throw(&ctx, e))
    });
    let s = st.clone();
    native!("streamEnd", move |id: u32| grpc::stream_end(&*s, id));
    let s = st.clone();
    native!("httpRequest", move |ctx: Ctx<'_>,
                                 method: String,
                                 url: String,
                                 body: String,
                                 params: String|
          -> rquickjs::Result<String> {
        if s.in_init.get() {
            return Err(throw(
                &ctx,
                "making HTTP requests in the init context is not supported",
            ));
        }
        let p = http::params(&params).map_err(|e| throw(&ctx, e))?;
        let insecure = s.shared.insecure_tls.load(Ordering::Relaxed);
        // The pool leaves its cell while the request runs (no borrow across the await).
        let mut pool = std::mem::take(&mut *s.http.borrow_mut());
        let started = std::time::Instant::now();
        let reply = s.block(http::send(&mut pool, &method, &url, body, &p, insecure));
        *s.http.borrow_mut() = pool;
        let Some(reply) = reply else {
            return Err(throw(&ctx, "interrupted"));
        };
        let took = started.elapsed();
        let status = reply.status.to_string();
        let mut tags: Vec<(&str, &str)> = vec![
            ("method", &method),
            ("url", &url),
            ("name", &url),
            ("status", &status),
        ];
        tags.extend(p.tags.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let failed = f64::from(u8::from(reply.failed_request()));
        s.record_tagged(id::HTTP_REQS, Kind::Counter, 1.0, &tags);
        s.record_tagged(
            id::HTTP_REQ_DURATION,
            Kind::Trend,
            took.as_secs_f64() * 1000.0,
            &tags,
        );
        s.record_tagged(id::HTTP_REQ_FAILED, Kind::Rate, failed, &tags);
        s.record(id::DATA_SENT, Kind::Counter, reply.sent as f64);
        s.record(id::DATA_RECEIVED, Kind::Counter, reply.body.len() as f64);
        if let Some((e, _)) = &reply.error {
            s.shared.log.line(
                "warning",
                &format!("Request Failed error=\"{method} {url}: {e}\""),
                &[],
            );
        }
        Ok(reply.to_json(took))
    });
    native!("b64encode", move |ctx: Ctx<'js>,
                               input: String,
                               alphabet: String|
          -> rquickjs::Result<String> {
        Ok(alphabet_of(&ctx, &alphabet)?.encode(input))
    });
    native!("b64encodeBytes", move |ctx: Ctx<'js>,
                                    input: Vec<u8>,
                                    alphabet: String|
          -> rquickjs::Result<String> {
        Ok(alphabet_of(&ctx, &alphabet)?.encode(input))
    });
    native!("b64decode", move |ctx: Ctx<'js>,
                               input: String,
                               alphabet: String,
                               text: bool|
          -> rquickjs::Result<Value<'js>> {
        let engine = alphabet_of(&ctx, &alphabet)?;
        // The raw alphabets take no padding; k6 (Go) reads one given anyway.
        let input = if alphabet.starts_with("raw") {
            input.trim_end_matches('=')
        } else {
            &input
        };
        let data = engine
            .decode(input)
            .map_err(|e| throw(&ctx, format!("b64decode: {e}")))?;
        if text {
            Ok(
                rquickjs::String::from_str(ctx.clone(), &String::from_utf8_lossy(&data))?
                    .into_value(),
            )
        } else {
            Ok(rquickjs::ArrayBuffer::new(ctx.clone(), data)?.into_value())
        }
    });
    let s = st.clone();
    native!("timerStart", move |ms: f64| -> u32 {
        let (id, events) = s.streams.borrow_mut().open_one();
        let wait = Duration::from_secs_f64((ms.max(0.0)) / 1000.0);
        s.spawn(async move {
            tokio::time::sleep(wait).await;
            let _ = events.send(grpc::Event {
                id,
                kind: "timer",
                payload: None,
                call: None,
            });
        });
        id
    });
    let s = st.clone();
    native!("timerClear", move |id: u32| s
        .streams
        .borrow_mut()
        .clear(id));
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
        let Some(kind) = s.shared.registry.kind(metric) else {
            return Err(throw(&ctx, "no such metric"));
        };
        if !value.is_finite() {
            let name = s
                .shared
                .registry
                .defs()
                .get(metric)
                .map(|d| d.name.clone())
                .unwrap_or_default();
            return Err(throw(
                &ctx,
                format!("'{value}' is an invalid value for metric '{name}'"),
            ));
        }
        s.sink.borrow_mut().add(metric, kind, value);
        let subs = s.subs.borrow().iter().any(|x| x.metric == metric);
        if subs || s.shared.out.get().is_some() {
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
            if subs {
                s.record_subs(metric, kind, value, &pairs);
            }
            s.emit(metric, value, &pairs);
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
