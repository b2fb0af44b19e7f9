//! What a service config says about calls: each method's timeout and retry or hedging policy
//! (gRFC A6), the status codes they name, and the retry throttle channels share.

use std::{
    sync::atomic::{AtomicU32, Ordering},
    time::Duration,
};

use volley_wire::Code;

/// What the config says about the calls of one method.
#[derive(Debug, Clone, PartialEq)]
pub struct MethodConfig {
    /// The deadline of calls that set none.
    pub timeout: Option<Duration>,
    /// How failed calls are tried again, if at all.
    pub policy: Option<CallPolicy>,
}

/// A method's retry or hedging policy (a method has at most one).
#[derive(Debug, Clone, PartialEq)]
pub enum CallPolicy {
    /// Try again after a failure with a retryable code, with exponential backoff.
    Retry(RetryPolicy),
    /// Send more attempts while the first is outstanding; the first good answer wins.
    Hedge(HedgingPolicy),
}

/// gRFC A6's `retryPolicy`.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (2 to 5; more is read as 5, as gRPC does).
    pub max_attempts: u32,
    /// The first backoff's upper bound.
    pub initial_backoff: Duration,
    /// No backoff's upper bound exceeds this.
    pub max_backoff: Duration,
    /// Each backoff's upper bound is the last one's times this.
    pub backoff_multiplier: f64,
    /// Codes a call is tried again after.
    pub retryable: Codes,
}

/// gRFC A6's `hedgingPolicy`.
#[derive(Debug, Clone, PartialEq)]
pub struct HedgingPolicy {
    /// Attempts in all, the first included (2 to 5; more is read as 5).
    pub max_attempts: u32,
    /// Time between attempts (0: all at once).
    pub delay: Duration,
    /// Codes that do not end the call: another attempt is sent at once instead.
    pub non_fatal: Codes,
}

/// A set of status codes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Codes(u32);

impl Codes {
    /// Whether `code` is in the set.
    pub fn contains(self, code: Code) -> bool {
        self.0 & (1 << code as u32) != 0
    }

    pub(super) fn insert(&mut self, code: Code) {
        self.0 |= 1 << code as u32;
    }
}

/// gRFC A6's retry throttling: a token count that failures spend and successes refill; retries
/// and hedges are sent only while it is above half its maximum. Counts are in thousandths.
#[derive(Debug)]
pub struct Throttle {
    max: u32,
    ratio: u32,
    tokens: AtomicU32,
}

impl Throttle {
    pub(super) fn new(max_tokens: f64, token_ratio: f64) -> Throttle {
        let max = (max_tokens * 1000.0).round() as u32;
        Throttle {
            max,
            ratio: (token_ratio * 1000.0).round() as u32,
            tokens: AtomicU32::new(max),
        }
    }

    /// Whether another attempt may be sent now.
    pub fn allows(&self) -> bool {
        self.tokens.load(Ordering::Relaxed) > self.max / 2
    }

    /// An attempt failed with a retryable (or, hedging, non-fatal) code: one token spent.
    pub fn failed(&self) {
        let _ = self
            .tokens
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                Some(t.saturating_sub(1000))
            });
    }

    /// A call succeeded: `tokenRatio` tokens back, up to the maximum.
    pub fn succeeded(&self) {
        let (max, ratio) = (self.max, self.ratio);
        let _ = self
            .tokens
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                (t < max).then(|| (t + ratio).min(max))
            });
    }

    /// The token count now (for tests and reports).
    pub fn tokens(&self) -> f64 {
        f64::from(self.tokens.load(Ordering::Relaxed)) / 1000.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_throttle_stops_retries_below_half_and_refills_by_the_ratio() {
        let t = Throttle::new(4.0, 0.5);
        t.failed(); // 3 > 2
        assert!(t.allows());
        t.failed(); // 2, not above half
        assert!(!t.allows());
        t.succeeded(); // 2.5
        assert!(t.allows());
        for _ in 0..10 {
            t.succeeded();
        }
        assert_eq!(t.tokens(), 4.0);
        for _ in 0..10 {
            t.failed();
        }
        assert_eq!(t.tokens(), 0.0);
    }
}
