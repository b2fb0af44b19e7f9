//! Ping policing, as grpc-go's keepalive enforcement does it: a client that sends PINGs on a
//! connection with no call open, closer together than the minimum interval, earns a strike each
//! time; past two strikes the connection gets GOAWAY ENHANCE_YOUR_CALM. A client cannot keep a
//! connection (and the server's memory for it) busy with pings alone, and one whose keepalive
//! is merely eager learns why it was cut off.
//!
//! Pings while a call is open are not policed: grpc-go's clients send BDP pings as data
//! arrives, which grpc-go's server forgives after each of its writes; not policing them at all
//! is the simpler rule with the same effect. A new call clears the strikes.

use std::time::Duration;

use tokio::time::Instant;

/// Strikes allowed; the next one ends the connection (grpc-go's `maxPingStrikes`).
const MAX_STRIKES: u32 = 2;

pub(super) struct PingPolice {
    min_interval: Duration,
    /// PINGs counted so far (h2's count when last looked at).
    seen: u64,
    last: Option<Instant>,
    strikes: u32,
    done: bool,
}

impl PingPolice {
    pub(super) fn new(min_interval: Duration) -> PingPolice {
        PingPolice {
            min_interval,
            seen: 0,
            last: None,
            strikes: 0,
            done: false,
        }
    }

    /// A call started: strikes cleared.
    pub(super) fn call_started(&mut self) {
        self.strikes = 0;
    }

    /// Looks at the PINGs received so far (`received`, h2's count) with `calls_open` or not;
    /// true, once, when the client has earned its cut-off.
    pub(super) fn cut_off(&mut self, received: u64, calls_open: bool) -> bool {
        if received == self.seen || self.done {
            return false;
        }
        let now = Instant::now();
        let new = received - self.seen;
        self.seen = received;
        if calls_open {
            self.last = Some(now);
            return false;
        }
        for _ in 0..new {
            if self
                .last
                .is_some_and(|t| now.duration_since(t) < self.min_interval)
            {
                self.strikes += 1;
            }
            self.last = Some(now);
        }
        self.done = self.strikes > MAX_STRIKES;
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_fourth_quick_ping_without_calls_is_one_too_many() {
        let mut p = PingPolice::new(Duration::from_secs(300));
        let mut n = 0;
        let mut ping = |p: &mut PingPolice, open| {
            n += 1;
            p.cut_off(n, open)
        };
        assert!(!ping(&mut p, false), "the first is free");
        assert!(!ping(&mut p, false) && !ping(&mut p, false), "two strikes");
        p.call_started();
        assert!(
            !ping(&mut p, false) && !ping(&mut p, false),
            "cleared by a call"
        );
        assert!(!ping(&mut p, true), "a call is open: not policed");
        assert!(ping(&mut p, false), "three strikes");
        assert!(!ping(&mut p, false), "once");

        // Pings the interval apart are fine.
        let mut p = PingPolice::new(Duration::from_secs(1));
        for i in 1..10 {
            tokio::time::advance(Duration::from_millis(1100)).await;
            assert!(!p.cut_off(i, false));
        }
    }
}
