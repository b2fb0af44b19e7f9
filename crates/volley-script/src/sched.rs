//! VUs as coroutines on a few worker threads (one per core), as k6 runs its VUs as goroutines.
//!
//! k6's API is synchronous: `client.invoke` returns the reply, `sleep` blocks. A VU per OS
//! thread pays a context switch and a cold cache per call (measured: 57-73 us of CPU per
//! scripted call, BENCHMARKS.md "volley run against volley bench and ghz"). Here each VU runs on
//! a stack of its own (a stackful coroutine from the `generator` crate: QuickJS's C frames
//! stay on it while the VU waits) and a wait is a switch back to its worker, whose single
//! tokio runtime drives every connection and timer of its VUs. A VU's future is polled on its
//! own stack with a waker that queues the VU on its worker; the worker resumes queued VUs, then
//! parks in the runtime until a waker fires. Written here, not taken from a crate, because no
//! executor runs synchronous JavaScript on coroutines over tokio.
//!
//! A VU must run to its end: a coroutine dropped while suspended would unwind through
//! QuickJS's C frames. VUs end by returning (a scenario's hard stop makes every wait return at
//! once), and the workers are only shut down once no VU is left.

use std::{
    cell::RefCell,
    collections::VecDeque,
    future::Future,
    panic::AssertUnwindSafe,
    pin::pin,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    task::{Context, Poll, Wake, Waker},
    thread::JoinHandle,
};

use generator::{Generator, Gn};
use tokio::sync::{Notify, mpsc};

/// A VU's body, started on a worker as a coroutine of its own.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// The stack of each VU, in words (2 MiB on 64-bit): address space, touched only as used.
const STACK_WORDS: usize = 256 * 1024;

thread_local! {
    /// The waker of the VU its worker is running now.
    static CURRENT: RefCell<Option<Waker>> = const { RefCell::new(None) };
}

/// Runs `f` to its end from inside a VU: polled on the VU's stack, the VU suspended while it
/// is pending. Only valid in a VU started by [`Workers::spawn`].
pub(crate) fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    loop {
        let waker = CURRENT
            .with(|c| c.borrow().clone())
            .expect("block_on runs inside a VU");
        if let Poll::Ready(v) = f.as_mut().poll(&mut Context::from_waker(&waker)) {
            return v;
        }
        // The free function is the crate's way to yield from deep in the coroutine's stack
        // (here under QuickJS's frames), where its scoped handle cannot be passed.
        #[allow(deprecated)]
        generator::yield_with(());
    }
}

/// Queues a VU on its worker when its future can make progress.
struct VuWaker {
    id: usize,
    queued: AtomicBool,
    ready: Arc<Mutex<VecDeque<usize>>>,
    notify: Arc<Notify>,
}

impl Wake for VuWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !self.queued.swap(true, Ordering::AcqRel) {
            self.ready
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push_back(self.id);
            self.notify.notify_one();
        }
    }
}

/// The worker threads.
pub(crate) struct Workers {
    senders: Vec<mpsc::UnboundedSender<Job>>,
    handles: Vec<JoinHandle<()>>,
    next: AtomicUsize,
}

impl Workers {
    /// `n` workers (at least one), each a thread with a current-thread tokio runtime.
    pub(crate) fn new(n: usize) -> std::io::Result<Workers> {
        let mut senders = Vec::new();
        let mut handles = Vec::new();
        for i in 0..n.max(1) {
            let (tx, rx) = mpsc::unbounded_channel();
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            handles.push(
                std::thread::Builder::new()
                    .name(format!("vu worker {i}"))
                    .spawn(move || rt.block_on(worker(rx)))?,
            );
            senders.push(tx);
        }
        Ok(Workers {
            senders,
            handles,
            next: AtomicUsize::new(0),
        })
    }

    /// Starts a VU on the next worker (round robin).
    pub(crate) fn spawn(&self, job: Job) {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.senders.len();
        // A worker only ends once its sender is dropped, in `join`.
        let _ = self.senders[i].send(job);
    }

    /// Waits for every VU to end, then for the workers.
    pub(crate) fn join(self) {
        drop(self.senders);
        for h in self.handles {
            let _ = h.join();
        }
    }
}

/// A VU on its worker: its coroutine and waker.
struct Slot {
    coroutine: Generator<'static, (), ()>,
    waker: Arc<VuWaker>,
}

/// A worker: starts the VUs it is sent, resumes those whose wakers fired, and parks in the
/// runtime (driving connections and timers) when none is ready.
async fn worker(mut jobs: mpsc::UnboundedReceiver<Job>) {
    let ready = Arc::new(Mutex::new(VecDeque::new()));
    let notify = Arc::new(Notify::new());
    let mut slots: Vec<Option<Slot>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut alive = 0usize;
    let mut open = true;
    loop {
        while let Ok(job) = jobs.try_recv() {
            start(job, &mut slots, &mut free, &ready, &notify);
            alive += 1;
        }
        loop {
            let next = ready.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
            let Some(id) = next else { break };
            let Some(slot) = slots.get_mut(id).and_then(Option::as_mut) else {
                continue;
            };
            slot.waker.queued.store(false, Ordering::Release);
            CURRENT.with(|c| *c.borrow_mut() = Some(Waker::from(slot.waker.clone())));
            slot.coroutine.raw_send(None);
            CURRENT.with(|c| *c.borrow_mut() = None);
            if slot.coroutine.is_done() {
                slots[id] = None;
                free.push(id);
                alive -= 1;
            }
        }
        if !open && alive == 0 {
            return;
        }
        tokio::select! {
            () = notify.notified() => {}
            job = jobs.recv(), if open => match job {
                Some(job) => {
                    start(job, &mut slots, &mut free, &ready, &notify);
                    alive += 1;
                }
                None => open = false,
            },
        }
    }
}

fn start(
    job: Job,
    slots: &mut Vec<Option<Slot>>,
    free: &mut Vec<usize>,
    ready: &Arc<Mutex<VecDeque<usize>>>,
    notify: &Arc<Notify>,
) {
    let id = free.pop().unwrap_or_else(|| {
        slots.push(None);
        slots.len() - 1
    });
    // A VU that panics (a bug) ends alone, said once, instead of taking its worker with it.
    let body = move || {
        if let Err(e) = std::panic::catch_unwind(AssertUnwindSafe(job)) {
            let why = e
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| e.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            eprintln!("volley run: a VU failed: {why}");
        }
    };
    let waker = Arc::new(VuWaker {
        id,
        queued: AtomicBool::new(true),
        ready: ready.clone(),
        notify: notify.clone(),
    });
    slots[id] = Some(Slot {
        coroutine: Gn::<()>::new_opt(STACK_WORDS, body),
        waker,
    });
    ready
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push_back(id);
}

#[cfg(test)]
mod tests {
    use std::{sync::atomic::AtomicU64, time::Duration};

    use super::*;

    #[test]
    fn many_vus_wait_on_one_worker_at_once() {
        let workers = Workers::new(1).unwrap();
        let done = Arc::new(AtomicU64::new(0));
        let started = std::time::Instant::now();
        for _ in 0..100 {
            let done = done.clone();
            workers.spawn(Box::new(move || {
                for _ in 0..3 {
                    block_on(tokio::time::sleep(Duration::from_millis(20)));
                }
                done.fetch_add(1, Ordering::Relaxed);
            }));
        }
        workers.join();
        assert_eq!(done.load(Ordering::Relaxed), 100);
        // 100 VUs sleeping 3 x 20 ms each on one thread: together, not one after another
        // (which would take 6 s); 2 s leaves room for a loaded machine.
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
    }
}
