//! The link's own timer: one thread sleeping until the earliest deadline and waking its task,
//! within about 0.1 ms (tokio's timers have millisecond ticks and fired 1-2 ms late here: a 5 ms
//! link measured 11.3 ms per round trip).

use std::{
    cmp::Reverse,
    collections::BinaryHeap,
    future::Future,
    sync::{Condvar, Mutex, OnceLock},
    task::{Poll, Waker},
    time::Instant,
};

/// Deadlines waited for by the timer thread, earliest first.
struct Timers {
    due: Mutex<BinaryHeap<Reverse<Due>>>,
    wake: Condvar,
}

/// A task to wake at a time.
struct Due(Instant, Waker);

impl PartialEq for Due {
    fn eq(&self, other: &Due) -> bool {
        self.0 == other.0
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Due) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Due {
    fn cmp(&self, other: &Due) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

/// The timer thread, started on first use; it lives as long as the process.
fn timers() -> &'static Timers {
    static TIMERS: OnceLock<&'static Timers> = OnceLock::new();
    TIMERS.get_or_init(|| {
        let t: &'static Timers = Box::leak(Box::new(Timers {
            due: Mutex::new(BinaryHeap::new()),
            wake: Condvar::new(),
        }));
        let _ = std::thread::Builder::new()
            .name("volley-link-timer".into())
            .spawn(move || {
                let mut due = t.due.lock().unwrap_or_else(|p| p.into_inner());
                loop {
                    let now = Instant::now();
                    match due.peek() {
                        None => due = t.wake.wait(due).unwrap_or_else(|p| p.into_inner()),
                        Some(Reverse(d)) if d.0 <= now => {
                            if let Some(Reverse(d)) = due.pop() {
                                d.1.wake();
                            }
                        }
                        Some(Reverse(d)) => {
                            let wait = d.0 - now;
                            due = t
                                .wake
                                .wait_timeout(due, wait)
                                .map(|(g, _)| g)
                                .unwrap_or_else(|p| p.into_inner().0);
                        }
                    }
                }
            });
        t
    })
}

/// Completes at `deadline`, give or take the timer thread's wake-up (about 0.1 ms).
pub(super) fn at(deadline: Instant) -> impl Future<Output = ()> {
    std::future::poll_fn(move |cx| {
        if Instant::now() >= deadline {
            return Poll::Ready(());
        }
        let t = timers();
        let mut due = t.due.lock().unwrap_or_else(|p| p.into_inner());
        let earliest = due.peek().is_none_or(|Reverse(d)| deadline < d.0);
        due.push(Reverse(Due(deadline, cx.waker().clone())));
        drop(due);
        if earliest {
            t.wake.notify_one();
        }
        Poll::Pending
    })
}
