//! Retries and hedging by a service config's policy (gRFC A6), for any attempt future: the
//! load engine's unary calls ([`Channel::unary`](crate::Channel::unary)) and typed unary calls
//! ([`Grpc::unary`](crate::Grpc::unary)) both run their attempts through `retry` or `hedge`.
//!
//! An attempt that failed after the server's response headers arrived is *committed* and is
//! never sent again; one refused before (a trailers-only answer, an HTTP error, a connection
//! lost before the headers) is retried when its code is retryable, after a random backoff up to
//! `initialBackoff × backoffMultiplierⁿ` (at most `maxBackoff`), or after the server's
//! `grpc-retry-pushback-ms`; a negative or malformed pushback ends the call. Hedging sends a new
//! attempt every `hedgingDelay` (at once after a non-fatal failure) while none has answered;
//! the first OK or fatal answer wins and the others are cancelled. The throttle, when set, is
//! spent by failures and refilled by successes; no retry or hedge is sent while it is at half
//! or below.

use std::{pin::pin, time::Duration};

use futures_util::{StreamExt, stream::FuturesUnordered};
use tokio::time::Instant;
use volley_wire::{Status, names::GRPC_RETRY_PUSHBACK_MS};

use crate::service_config::{HedgingPolicy, RetryPolicy, Throttle};

/// A failed attempt, as the drivers need to see it.
pub(crate) trait Failed {
    /// Its status.
    fn status(&self) -> &Status;
    /// Whether the server's response headers had arrived before it failed.
    fn committed(&self) -> bool;
    /// Ends the attempt (`retrying`: another attempt follows) and gives its status.
    fn finish(self, retrying: bool) -> Status;
}

impl Failed for crate::attempt::Failure {
    fn status(&self) -> &Status {
        &self.status
    }
    fn committed(&self) -> bool {
        self.committed
    }
    fn finish(self, _retrying: bool) -> Status {
        self.status
    }
}

/// What the server's `grpc-retry-pushback-ms` says.
#[derive(Debug, PartialEq, Eq)]
enum Pushback {
    /// No pushback: the policy's own backoff.
    None,
    /// Wait this long.
    After(Duration),
    /// Do not try again.
    Stop,
}

fn pushback(status: &Status) -> Pushback {
    let Some(v) = status.metadata().get(GRPC_RETRY_PUSHBACK_MS) else {
        return Pushback::None;
    };
    match v.to_str().ok().and_then(|s| s.trim().parse::<i64>().ok()) {
        Some(ms) if ms >= 0 => Pushback::After(Duration::from_millis(ms as u64)),
        _ => Pushback::Stop,
    }
}

/// Runs `attempt(1)`, `attempt(2)`, ... by `policy` until one succeeds or the policy, the
/// throttle or the deadline says stop; the last failure's status is the call's.
pub(crate) async fn retry<T, E: Failed, F, Fut>(
    policy: &RetryPolicy,
    throttle: Option<&Throttle>,
    deadline: Option<Instant>,
    mut attempt: F,
) -> Result<T, Status>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let mut bound = policy.initial_backoff;
    let mut n = 1;
    loop {
        let failed = match attempt(n).await {
            Ok(t) => {
                if let Some(t) = throttle {
                    t.succeeded();
                }
                return Ok(t);
            }
            Err(e) => e,
        };
        let status = failed.status();
        let retryable = !failed.committed() && policy.retryable.contains(status.code());
        if let Some(t) = throttle.filter(|_| retryable) {
            t.failed();
        }
        let wait = match pushback(status) {
            _ if !retryable || n >= policy.max_attempts => None,
            _ if throttle.is_some_and(|t| !t.allows()) => None,
            Pushback::Stop => None,
            Pushback::After(d) => {
                bound = policy.initial_backoff;
                Some(d)
            }
            Pushback::None => {
                let wait = bound.mul_f64(fastrand::f64());
                bound = bound
                    .mul_f64(policy.backoff_multiplier)
                    .min(policy.max_backoff);
                Some(wait)
            }
        };
        // A wait past the deadline would only end in DEADLINE_EXCEEDED; the failure says more.
        let wait = wait.filter(|w| deadline.is_none_or(|d| Instant::now() + *w < d));
        let Some(wait) = wait else {
            return Err(failed.finish(false));
        };
        drop(failed.finish(true));
        tokio::time::sleep(wait).await;
        n += 1;
    }
}

/// Runs `attempt(1)` and, every `policy.delay` while none has answered, the next one, up to
/// the policy's attempts; the first success or fatal failure is the call's (the others are
/// dropped, which cancels their streams). When every attempt failed, the last failure is.
pub(crate) async fn hedge<T, E: Failed, F, Fut>(
    policy: &HedgingPolicy,
    throttle: Option<&Throttle>,
    mut attempt: F,
) -> Result<T, Status>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let mut running = FuturesUnordered::new();
    running.push(attempt(1));
    let mut sent = 1;
    let mut hedging = true;
    let mut last = None;
    let mut timer = pin!(tokio::time::sleep(policy.delay));
    loop {
        let more = hedging && sent < policy.max_attempts;
        if running.is_empty() && !more {
            return Err(last.unwrap_or_else(|| Status::internal("no attempt was made")));
        }
        tokio::select! {
            biased;
            Some(done) = running.next(), if !running.is_empty() => match done {
                Ok(t) => {
                    if let Some(t) = throttle {
                        t.succeeded();
                    }
                    return Ok(t);
                }
                Err(e) => {
                    if !policy.non_fatal.contains(e.status().code()) {
                        return Err(e.finish(false));
                    }
                    if let Some(t) = throttle {
                        t.failed();
                    }
                    match pushback(e.status()) {
                        Pushback::Stop => hedging = false,
                        Pushback::After(d) => timer.as_mut().reset(Instant::now() + d),
                        Pushback::None => timer.as_mut().reset(Instant::now()),
                    }
                    last = Some(e.finish(false));
                }
            },
            () = timer.as_mut(), if more => {
                if throttle.is_some_and(|t| !t.allows()) {
                    hedging = false;
                    continue;
                }
                sent += 1;
                running.push(attempt(sent));
                timer.as_mut().reset(Instant::now() + policy.delay);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::{
        cell::{Cell, RefCell},
        time::Duration,
    };

    use volley_wire::Code;

    use super::*;
    use crate::service_config::{CallPolicy, ServiceConfig};

    struct Fail(Status, bool, &'static RefCell<Vec<bool>>);

    impl Failed for Fail {
        fn status(&self) -> &Status {
            &self.0
        }
        fn committed(&self) -> bool {
            self.1
        }
        fn finish(self, retrying: bool) -> Status {
            self.2.borrow_mut().push(retrying);
            self.0
        }
    }

    fn leak() -> &'static RefCell<Vec<bool>> {
        Box::leak(Box::new(RefCell::new(Vec::new())))
    }

    fn policies(json: &str) -> ServiceConfig {
        ServiceConfig::parse(json).unwrap()
    }

    const RETRY: &str = r#"{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 4,
        "initialBackoff": "0.001s", "maxBackoff": "0.002s", "backoffMultiplier": 2,
        "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#;

    fn retry_policy(c: &ServiceConfig) -> &RetryPolicy {
        match &c.method("/a/b").unwrap().policy {
            Some(CallPolicy::Retry(r)) => r,
            _ => panic!(),
        }
    }

    fn unavailable(pushback: Option<&'static str>) -> Status {
        let mut s = Status::unavailable("down");
        if let Some(p) = pushback {
            s.metadata_mut()
                .insert(GRPC_RETRY_PUSHBACK_MS, http::HeaderValue::from_static(p));
        }
        s
    }

    #[tokio::test]
    async fn retries_a_retryable_code_up_to_max_attempts_then_gives_the_last_status() {
        let c = policies(RETRY);
        let ends = leak();
        let tries = Cell::new(0);
        let r: Result<(), Status> = retry(retry_policy(&c), None, None, |n| {
            tries.set(n);
            async move { Err(Fail(unavailable(None), false, ends)) }
        })
        .await;
        assert_eq!(r.unwrap_err().code(), Code::Unavailable);
        assert_eq!(tries.get(), 4);
        assert_eq!(*ends.borrow(), [true, true, true, false]);
    }

    #[tokio::test]
    async fn does_not_retry_another_code_a_committed_attempt_or_a_negative_pushback() {
        let c = policies(RETRY);
        for fail in [
            Fail(Status::internal("no"), false, leak()),
            Fail(unavailable(None), true, leak()),
            Fail(unavailable(Some("-1")), false, leak()),
            Fail(unavailable(Some("soon")), false, leak()),
        ] {
            let tries = Cell::new(0);
            let mut fail = Some(fail);
            let _: Result<(), _> = retry(retry_policy(&c), None, None, |n| {
                tries.set(n);
                let f = fail.take();
                async move { Err(f.expect("one attempt only")) }
            })
            .await;
            assert_eq!(tries.get(), 1);
        }
    }

    #[tokio::test]
    async fn waits_as_long_as_the_pushback_says() {
        let c = policies(RETRY);
        let ends = leak();
        let started = Instant::now();
        let r = retry(retry_policy(&c), None, None, |n| async move {
            if n == 1 {
                Err(Fail(unavailable(Some("150")), false, ends))
            } else {
                Ok(n)
            }
        })
        .await;
        assert_eq!(r.unwrap(), 2);
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(150), "{waited:?}");
    }

    #[tokio::test]
    async fn the_throttle_stops_retrying_and_the_deadline_stops_waiting() {
        let c = policies(&format!(
            r#"{}, "retryThrottling": {{"maxTokens": 2, "tokenRatio": 1}}}}"#,
            RETRY.strip_suffix('}').unwrap()
        ));
        let throttle = c.throttle().unwrap();
        let tries = Cell::new(0);
        let _: Result<(), _> = retry(retry_policy(&c), Some(throttle), None, |n| {
            tries.set(n);
            async { Err(Fail(unavailable(None), false, leak())) }
        })
        .await;
        // 2 tokens: the first failure leaves 1, not above half; no retry.
        assert_eq!(tries.get(), 1);

        let c = policies(RETRY);
        let deadline = Some(Instant::now() + Duration::from_millis(50));
        let tries = Cell::new(0);
        let _: Result<(), _> = retry(retry_policy(&c), None, deadline, |n| {
            tries.set(n);
            async { Err(Fail(unavailable(Some("100")), false, leak())) }
        })
        .await;
        assert_eq!(
            tries.get(),
            1,
            "a 100 ms pushback does not fit a 50 ms deadline"
        );
    }

    const HEDGE: &str = r#"{"methodConfig": [{"name": [{}], "hedgingPolicy": {"maxAttempts": 3,
        "hedgingDelay": "0.05s", "nonFatalStatusCodes": ["UNAVAILABLE"]}}]}"#;

    fn hedging_policy(c: &ServiceConfig) -> &HedgingPolicy {
        match &c.method("/a/b").unwrap().policy {
            Some(CallPolicy::Hedge(h)) => h,
            _ => panic!(),
        }
    }

    #[tokio::test]
    async fn a_hedge_answers_when_the_first_attempt_is_slow() {
        let c = policies(HEDGE);
        let started = Instant::now();
        let r: Result<u32, Status> = hedge(hedging_policy(&c), None, |n| async move {
            let slow = if n == 1 { 1000 } else { 10 };
            tokio::time::sleep(Duration::from_millis(slow)).await;
            Ok::<_, Fail>(n)
        })
        .await;
        assert_eq!(r.unwrap(), 2);
        let took = started.elapsed();
        assert!(took < Duration::from_millis(500), "{took:?}");
    }

    #[tokio::test]
    async fn a_non_fatal_failure_sends_the_next_hedge_at_once_and_a_fatal_one_ends_the_call() {
        let c = policies(HEDGE);
        let started = Instant::now();
        let r: Result<u32, Status> = hedge(hedging_policy(&c), None, |n| async move {
            match n {
                1 | 2 => Err(Fail(unavailable(None), false, leak())),
                n => Ok(n),
            }
        })
        .await;
        assert_eq!(r.unwrap(), 3);
        assert!(started.elapsed() < Duration::from_millis(40));

        let tries = Cell::new(0);
        let r: Result<u32, Status> = hedge(hedging_policy(&c), None, |n| {
            tries.set(n);
            async { Err(Fail(Status::internal("fatal"), false, leak())) }
        })
        .await;
        assert_eq!(r.unwrap_err().code(), Code::Internal);
        assert_eq!(tries.get(), 1);

        let r: Result<u32, Status> = hedge(hedging_policy(&c), None, |_| async {
            Err(Fail(unavailable(None), false, leak()))
        })
        .await;
        assert_eq!(r.unwrap_err().code(), Code::Unavailable, "all three failed");
    }
}
