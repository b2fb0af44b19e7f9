//! One engine thread: a current-thread runtime, the connections its workers use dialled on it
//! (the fast path's, this thread's share of the channel's, or HTTP/1.1 and custom calls' own),
//! the wait for the start, its workers, and its recorders handed back at the end.

use std::{
    cell::RefCell,
    rc::Rc,
    sync::{Arc, Barrier, atomic::AtomicU64, atomic::Ordering},
};

use tokio::task::LocalSet;
use volley_client::{Channel, Connection, Strategy, load::http1::Http1Connection};

use super::{
    error::BenchError,
    fast_path,
    shared::{Shared, method_recorder},
    worker::{ThreadCtx, worker},
};
use crate::{
    call::Conn, callee::Target, clock::thread_cpu_time, plan::RunOptions, recorder::Recorder,
};

/// Which thread this is, and its connections (HTTP/1.1) and workers.
pub(super) struct Place {
    pub(super) t: usize,
    pub(super) threads: usize,
    pub(super) my_conns: Vec<usize>,
    pub(super) my_workers: Vec<usize>,
}

/// The thread's body: dial, wait at `connected` and `go`, run the workers, return the thread's
/// recorder and its mix entries' (`None` when the run stopped before it started).
pub(super) fn thread_main(
    opts: &RunOptions,
    target: &Arc<Target>,
    shared: &Arc<Shared>,
    place: &Place,
    progress: Option<Arc<AtomicU64>>,
    barriers: (&Barrier, &Barrier),
) -> Option<(Recorder, Vec<Recorder>)> {
    let (connected, go) = barriers;
    let my_workers = &place.my_workers;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let local = LocalSet::new();
    let h1 = target.has_own_connections();
    let dialled = local.block_on(&rt, dial(opts, target, shared, place));
    connected.wait();
    go.wait();
    if shared.stopped() {
        return None;
    }
    let cpu_start = thread_cpu_time();
    let (start, start_unix_nano) = *shared.start.get().expect("start set before go");
    let ctx = Rc::new(ThreadCtx {
        t: place.t,
        opts: opts.clone(),
        target: target.clone(),
        shared: shared.clone(),
        recorder: RefCell::new(Recorder::new(
            opts.count_errors,
            opts.skip_first,
            opts.details_cap,
        )),
        methods: RefCell::new(
            target
                .methods()
                .iter()
                .map(|_| method_recorder(opts))
                .collect(),
        ),
        pacer: opts.pace.pacer(),
        progress,
        start,
        start_unix_nano,
    });
    local.block_on(&rt, async {
        let mut tasks = Vec::new();
        for &w in my_workers.iter() {
            let conn_idx = w % opts.connections.max(1);
            // HTTP/2: the thread's one channel; HTTP/1.1: the worker's own connection.
            let conn = match dialled.first() {
                Some((_, Conn::Fast(_))) => dialled[w / place.threads % dialled.len()].1.clone(),
                _ => dialled
                    .iter()
                    .find(|(c, _)| !h1 || *c == conn_idx)
                    .map(|(_, conn)| conn.clone())
                    .expect("worker's connection dialled on its thread"),
            };
            tasks.push(tokio::task::spawn_local(worker(
                ctx.clone(),
                w,
                conn_idx,
                conn,
            )));
        }
        for t in tasks {
            let _ = t.await;
        }
    });
    let busy = thread_cpu_time().saturating_sub(cpu_start);
    shared
        .busy_ns
        .fetch_add(busy.as_nanos() as u64, Ordering::Relaxed);
    drop(dialled);
    Rc::try_unwrap(ctx)
        .ok()
        .map(|c| (c.recorder.into_inner(), c.methods.into_inner()))
}

/// The thread's connections, each with its number: the fast path's, else this thread's
/// channel (HTTP/2), else its workers' own connections (HTTP/1.1, custom calls). A failure is
/// recorded in `shared` and stops the run.
async fn dial(
    opts: &RunOptions,
    target: &Target,
    shared: &Shared,
    place: &Place,
) -> Vec<(usize, Conn)> {
    // Unary gRPC calls take the fast path when nothing they need is the h2-crate path's
    // alone; if its connections cannot be made, the channel dials and says why.
    if fast_path::why_not(opts, target).is_none() {
        let strategy = thread_share(opts, place.t, place.threads);
        match fast_path::dial(target, strategy, opts.lb).await {
            Ok(out) => return out,
            // A server that accepted and said nothing for the whole connect timeout: the
            // channel would only wait as long again (the run then ends after twice the
            // --connect-timeout the user asked for), so its failure is the run's.
            Err((e, true)) => {
                shared.fail(BenchError::Connect(e.message().to_owned()));
                return Vec::new();
            }
            Err((_, false)) => shared.fast_dial_failed.store(true, Ordering::Relaxed),
        }
    }
    let mut out = Vec::new();
    if !target.has_own_connections() {
        let mut channel = Channel::balanced(
            target.endpoint().clone(),
            thread_share(opts, place.t, place.threads),
            opts.lb,
        );
        if let Some(config) = &opts.service_config {
            channel = channel.with_service_config(config.clone());
        }
        match channel.warm().await {
            Ok(()) => out.push((0, Conn::H2(channel))),
            Err(e) => shared.fail(BenchError::Connect(e.message().to_owned())),
        }
        return out;
    }
    for &c in place.my_conns.iter() {
        let conn = match target {
            Target::Custom(_) => Connection::connect(target.endpoint())
                .await
                .map(Conn::Own)
                .map_err(|e| e.to_string()),
            _ => Http1Connection::connect(target.endpoint())
                .await
                .map(|c| Conn::H1(Rc::new(c)))
                .map_err(|e| e.to_string()),
        };
        match conn {
            Ok(conn) => out.push((c, conn)),
            Err(e) => {
                shared.fail(BenchError::Connect(e));
                break;
            }
        }
    }
    out
}

/// Thread `t`'s part of the strategy: pools and expanding maxima split evenly over the threads.
pub(super) fn thread_share(opts: &RunOptions, t: usize, threads: usize) -> Strategy {
    let share = |n: usize| (n / threads + usize::from(t < n % threads)).max(1);
    match opts.strategy {
        Strategy::Pool(n) => Strategy::Pool(share(n)),
        Strategy::Expanding { max } => Strategy::Expanding { max: share(max) },
        s => s,
    }
}
