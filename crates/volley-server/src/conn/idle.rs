//! What a connection's calls tell it: how many the client reset before their reply (the
//! rapid-reset guard, `Calm` in `conn::h2`), and, with an idle limit, how many are open and
//! since when none has been, so an idle connection is sent GOAWAY after the limit, as grpc-go's
//! `MaxConnectionIdle` does. The counts cost nothing unless an idle limit is set.
//!
//! The GOAWAY is graceful, and h2 ends a gracefully closed connection only once the client has
//! acknowledged the PING sent with it; a client that never does (one dribbling a header block,
//! one that never reads) would keep the connection for ever. So the limit has a second step:
//! a connection still open the server's grace period after its idle GOAWAY is closed, as
//! grpc-go sends its final GOAWAY when the PING goes unanswered.

use std::{
    pin::Pin,
    sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering},
    task::{Context, Poll, ready},
    time::Duration,
};

use tokio::time::{Instant, Sleep};

/// Shared by a connection and its calls.
pub(super) struct Activity {
    /// Calls the client reset before their reply.
    pub(super) early_resets: AtomicU32,
    idle: Option<Open>,
}

/// Calls open now, and when the last one ended.
struct Open {
    epoch: Instant,
    calls: AtomicUsize,
    /// Milliseconds since `epoch` when the last call ended (0: the connection's start).
    idle_since_ms: AtomicU64,
}

impl Activity {
    /// Counts; open calls too when `track_idle`.
    pub(super) fn new(track_idle: bool) -> Activity {
        Activity {
            early_resets: AtomicU32::new(0),
            idle: track_idle.then(|| Open {
                epoch: Instant::now(),
                calls: AtomicUsize::new(0),
                idle_since_ms: AtomicU64::new(0),
            }),
        }
    }

    /// A call started.
    pub(super) fn started(&self) {
        if let Some(o) = &self.idle {
            o.calls.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// A call ended.
    pub(super) fn ended(&self) {
        if let Some(o) = &self.idle
            && o.calls.fetch_sub(1, Ordering::AcqRel) == 1
        {
            let ms = o.epoch.elapsed().as_millis() as u64;
            o.idle_since_ms.store(ms, Ordering::Release);
        }
    }

    /// How long the connection has had no call open; `None` while one is.
    fn idle_for(&self) -> Option<Duration> {
        let o = self.idle.as_ref()?;
        if o.calls.load(Ordering::Acquire) > 0 {
            return None;
        }
        let since = Duration::from_millis(o.idle_since_ms.load(Ordering::Acquire));
        Some(o.epoch.elapsed().saturating_sub(since))
    }
}

/// The idle limit's timer.
pub(super) struct IdleLimit {
    limit: Duration,
    /// How long after the idle GOAWAY the connection may stay open.
    grace: Duration,
    timer: Pin<Box<Sleep>>,
    step: Step,
}

/// Where an idle limit is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// Watching for the limit.
    Watching,
    /// Idle for the limit: send GOAWAY (gracefully).
    GoAway,
    /// Still open the grace period after the GOAWAY: close it.
    Close,
}

impl IdleLimit {
    pub(super) fn new(limit: Duration, grace: Duration) -> IdleLimit {
        IdleLimit {
            limit,
            grace,
            timer: Box::pin(tokio::time::sleep(limit)),
            step: Step::Watching,
        }
    }

    /// Ready with [`Step::GoAway`] (once) when the connection has been idle for the limit, then
    /// with [`Step::Close`] (once) when the grace period after it has passed.
    pub(super) fn poll(&mut self, cx: &mut Context<'_>, activity: &Activity) -> Poll<Step> {
        match self.step {
            Step::Watching => {}
            Step::GoAway => {
                ready!(self.timer.as_mut().poll(cx));
                self.step = Step::Close;
                return Poll::Ready(Step::Close);
            }
            Step::Close => return Poll::Pending,
        }
        while self.timer.as_mut().poll(cx).is_ready() {
            let next = match activity.idle_for() {
                None => self.limit,
                Some(idle) if idle >= self.limit => {
                    self.step = Step::GoAway;
                    self.timer.as_mut().reset(Instant::now() + self.grace);
                    // Registers the grace timer's wake-up.
                    let _ = self.timer.as_mut().poll(cx);
                    return Poll::Ready(Step::GoAway);
                }
                Some(idle) => self.limit - idle,
            };
            self.timer.as_mut().reset(Instant::now() + next);
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn fires_after_the_limit_of_no_calls_and_not_while_one_is_open() {
        let a = Activity::new(true);
        let mut idle = IdleLimit::new(Duration::from_secs(1), Duration::from_secs(2));
        let fired = |idle: &mut IdleLimit, a: &Activity| {
            let waker = futures_util::task::noop_waker();
            match idle.poll(&mut Context::from_waker(&waker), a) {
                Poll::Ready(step) => Some(step),
                Poll::Pending => None,
            }
        };
        a.started();
        tokio::time::advance(Duration::from_millis(1500)).await;
        assert_eq!(fired(&mut idle, &a), None, "a call is open");
        a.ended();
        tokio::time::advance(Duration::from_millis(900)).await;
        assert_eq!(fired(&mut idle, &a), None, "idle 0.9 s");
        tokio::time::advance(Duration::from_millis(200)).await;
        assert_eq!(fired(&mut idle, &a), Some(Step::GoAway), "idle 1.1 s");
        assert_eq!(fired(&mut idle, &a), None, "once");
        // Still open 2 s (the grace) after the GOAWAY: closed.
        tokio::time::advance(Duration::from_millis(1900)).await;
        assert_eq!(fired(&mut idle, &a), None, "1.9 s after the GOAWAY");
        tokio::time::advance(Duration::from_millis(200)).await;
        assert_eq!(fired(&mut idle, &a), Some(Step::Close), "2.1 s after");
        assert_eq!(fired(&mut idle, &a), None, "once");
    }
}
