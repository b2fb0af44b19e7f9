//! When an arrival-rate scenario starts its iterations: the rate as a piecewise-linear
//! function of time (`constant-arrival-rate`, or `ramping-arrival-rate`'s stages), iteration k
//! at the time its integral reaches k; and which idle VU takes the next start.

use std::{
    sync::{Arc, Mutex, MutexGuard},
    time::Instant,
};

use tokio::sync::Notify;

/// The start times of an arrival-rate scenario: iteration `k` starts when the rate's integral
/// from the scenario's start reaches `k` (so a constant rate starts at 0, 1/r, 2/r, ...),
/// each time worked out from the start, so no rounding error builds up.
pub(crate) struct ArrivalClock {
    /// The next iteration's number.
    pub(crate) k: u64,
    /// `--shard I/N`: only the starts numbered I mod N (`(0, 1)`: all).
    pub(crate) stripe: (u64, u64),
    /// The rate, piecewise linear: `(from, to, rate at from, rate at to)` in seconds and
    /// iterations per second.
    pub(crate) segments: Vec<(f64, f64, f64, f64)>,
}

impl ArrivalClock {
    pub(crate) fn constant(per_sec: f64, end: f64) -> ArrivalClock {
        ArrivalClock {
            k: 0,
            stripe: (0, 1),
            segments: vec![(0.0, end, per_sec, per_sec)],
        }
        .starting()
    }

    pub(crate) fn ramping(start: f64, stages: &[(f64, f64)], per_unit: f64) -> ArrivalClock {
        let (mut at, mut from) = (0.0, start * per_unit);
        let mut segments = Vec::new();
        for (d, target) in stages {
            let to = target * per_unit;
            if *d > 0.0 {
                segments.push((at, at + d, from, to));
            }
            at += d;
            from = to;
        }
        ArrivalClock {
            k: 0,
            stripe: (0, 1),
            segments,
        }
        .starting()
    }

    /// Starting at rate zero, the first iteration waits for one iteration's worth of rate.
    fn starting(mut self) -> ArrivalClock {
        if self.segments.first().is_none_or(|s| s.2 <= 0.0) {
            self.k = 1;
        }
        self
    }

    /// When the rate's integral from 0 reaches `need`, if before the end.
    fn time_of(&self, mut need: f64) -> Option<f64> {
        if need == 0.0 {
            return self.segments.first().map(|s| s.0);
        }
        for &(s0, s1, r0, r1) in &self.segments {
            let area = (r0 + r1) / 2.0 * (s1 - s0);
            if area >= need {
                let slope = (r1 - r0) / (s1 - s0);
                let d = if slope.abs() < 1e-12 {
                    need / r0
                } else {
                    (-r0 + (r0 * r0 + 2.0 * slope * need).max(0.0).sqrt()) / slope
                };
                // Exactly at a segment's end, the next segment starts it (none: the end).
                if s0 + d < s1 {
                    return Some(s0 + d);
                }
            }
            need = (need - area).max(0.0);
        }
        None
    }

    /// The next start, as seconds from the scenario's start, or `None` past its end.
    pub(crate) fn take(&mut self) -> Option<f64> {
        let (i, n) = self.stripe;
        self.k += (i + n - self.k % n) % n;
        let t = self.time_of(self.k as f64)?;
        self.k += 1;
        Some(t)
    }

    /// Only the starts numbered `index` mod `count` from now on (`--shard`).
    pub(crate) fn striped(mut self, index: u64, count: u64) -> ArrivalClock {
        self.stripe = (index, count.max(1));
        self
    }
}

/// Which idle VU claims an arrival-rate scenario's next start: one VU at a time holds the
/// turn, and it passes to the VU that went idle last (a stack), so a rate that needs a few VUs
/// keeps running the same few, warm in the cache, rather than every pre-allocated VU in turn.
/// Measured (`scripts/bench-scripts`' rate script, 5,000/s): each VU claiming its own next
/// start cost about 100 us of CPU per iteration with 200 VUs allocated, against 34 us for a
/// closed loop over 10 VUs; the cache misses of a cold VU were the difference.
///
/// The turn is free only while every VU is in an iteration, so the starts that came due while
/// it was free are the ones no VU was free for: k6's dropped iterations.
#[derive(Default)]
pub(crate) struct Turn {
    state: Mutex<TurnState>,
}

#[derive(Default)]
struct TurnState {
    held: bool,
    /// When the turn was last freed.
    freed_at: Option<Instant>,
    /// The VUs waiting for it, the last to arrive on top.
    queue: Vec<Arc<Notify>>,
}

/// How a VU came to hold the turn.
#[derive(Debug, PartialEq)]
pub(crate) enum Taken {
    /// It was free: since this time (`None`: never held before), no VU was free.
    Free(Option<Instant>),
    /// The VU is queued: it holds the turn once notified, handed on by a VU that was idle.
    Queued,
}

impl Turn {
    fn lock(&self) -> MutexGuard<'_, TurnState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the turn if free, or queues `me`, to be notified when it is handed to it.
    pub(crate) fn take_or_queue(&self, me: &Arc<Notify>) -> Taken {
        let mut s = self.lock();
        if s.held {
            s.queue.push(me.clone());
            Taken::Queued
        } else {
            s.held = true;
            Taken::Free(s.freed_at)
        }
    }

    /// Hands the turn to the VU that queued last, or frees it.
    pub(crate) fn pass(&self) {
        let mut s = self.lock();
        match s.queue.pop() {
            Some(next) => next.notify_one(),
            None => {
                s.held = false;
                s.freed_at = Some(Instant::now());
            }
        }
    }

    /// `me` stops waiting (the scenario is stopping): out of the queue, or, if the turn was
    /// handed to it meanwhile, passed on.
    pub(crate) fn leave(&self, me: &Arc<Notify>) {
        let mut s = self.lock();
        if let Some(i) = s.queue.iter().position(|w| Arc::ptr_eq(w, me)) {
            s.queue.remove(i);
        } else {
            drop(s);
            self.pass();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_arrival_clock_spaces_starts_by_its_rate() {
        let mut c = ArrivalClock::constant(4.0, 1.0);
        let starts: Vec<f64> = std::iter::from_fn(|| c.take()).collect();
        assert_eq!(starts, vec![0.0, 0.25, 0.5, 0.75]);
        // From 0 to 10 per second over one second: the integral is 5, so starts at the times
        // it reaches 1, 2, 3 and 4 (t = sqrt(k / 5)); then 10 per second for a second: 10 more.
        let mut c = ArrivalClock::ramping(0.0, &[(1.0, 10.0), (1.0, 10.0)], 1.0);
        let starts: Vec<f64> = std::iter::from_fn(|| c.take()).collect();
        assert_eq!(starts.len(), 14, "{starts:?}");
        assert!((starts[0] - 0.2f64.sqrt()).abs() < 1e-9, "{starts:?}");
        assert!((starts[4] - 1.0).abs() < 1e-9, "{starts:?}");
        assert!(starts.windows(2).all(|w| w[1] > w[0]), "{starts:?}");
    }

    #[test]
    fn shards_of_an_arrival_clock_take_every_start_once() {
        let whole: Vec<f64> = {
            let mut c = ArrivalClock::ramping(0.0, &[(1.0, 10.0), (1.0, 10.0)], 1.0);
            std::iter::from_fn(|| c.take()).collect()
        };
        let mut all: Vec<f64> = (0..3)
            .flat_map(|i| {
                let mut c =
                    ArrivalClock::ramping(0.0, &[(1.0, 10.0), (1.0, 10.0)], 1.0).striped(i, 3);
                std::iter::from_fn(move || c.take()).collect::<Vec<_>>()
            })
            .collect();
        all.sort_by(f64::total_cmp);
        assert_eq!(all, whole);
    }

    #[test]
    fn the_turn_goes_to_the_vu_that_went_idle_last() {
        let turn = Turn::default();
        let (a, b, c) = (
            Arc::new(Notify::new()),
            Arc::new(Notify::new()),
            Arc::new(Notify::new()),
        );
        assert_eq!(turn.take_or_queue(&a), Taken::Free(None));
        assert_eq!(turn.take_or_queue(&b), Taken::Queued);
        assert_eq!(turn.take_or_queue(&c), Taken::Queued);
        let handed = |n: &Arc<Notify>| {
            let f = n.notified();
            tokio::pin!(f);
            f.as_mut().enable()
        };
        turn.pass();
        assert!(handed(&c), "the last to queue is handed the turn");
        assert!(!handed(&b));
        // c leaves while holding it: b is handed the turn; b passes it: free again.
        turn.leave(&c);
        assert!(handed(&b));
        turn.pass();
        let before = Instant::now();
        let Taken::Free(Some(freed)) = turn.take_or_queue(&a) else {
            panic!("the turn is free, and says since when");
        };
        assert!(freed <= before);
        assert_eq!(turn.take_or_queue(&b), Taken::Queued);
        turn.leave(&b);
        turn.pass();
        assert!(
            matches!(turn.take_or_queue(&c), Taken::Free(Some(_))),
            "b left the queue, so the turn was freed"
        );
    }
}
