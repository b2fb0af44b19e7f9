//! One log line when the upstream goes away and one when it is back, however many calls
//! fail in between: a gateway in front of a down server must not write a line per call.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use volley_wire::{Code, Status};

/// Whether the upstream is down now, and how many calls it failed since.
#[derive(Debug, Default)]
pub struct Outage {
    down: AtomicBool,
    failed: AtomicU64,
}

/// A status that says the upstream cannot serve: the client's own for a dial or connection
/// failure, or an upstream that answers UNAVAILABLE itself (draining, overloaded); both are an
/// outage to whoever runs the gateway.
fn unreachable(st: &Status) -> bool {
    st.code() == Code::Unavailable
}

impl Outage {
    /// Notes a call's outcome against the upstream `target`. Returns the line to log, if this
    /// outcome starts or ends an outage.
    pub fn note(&self, target: &str, outcome: Result<(), &Status>) -> Option<String> {
        match outcome {
            Err(st) if unreachable(st) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                if self.down.swap(true, Ordering::AcqRel) {
                    return None;
                }
                Some(format!(
                    "upstream {target} is unavailable ({}); its calls answer UNAVAILABLE \
                     (HTTP 503) until it is back",
                    st.message()
                ))
            }
            _ => {
                // Most calls find it up: one load, no write.
                if !self.down.load(Ordering::Acquire) || !self.down.swap(false, Ordering::AcqRel) {
                    return None;
                }
                let n = self.failed.swap(0, Ordering::Relaxed);
                Some(format!(
                    "upstream {target} is back ({n} call(s) answered UNAVAILABLE while it was away)"
                ))
            }
        }
    }

    /// Whether the last outcome found the upstream away.
    pub fn is_down(&self) -> bool {
        self.down.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_outage_and_one_when_it_ends() {
        let o = Outage::default();
        let gone = Status::unavailable("connection refused");
        assert!(o.note("b:1", Ok(())).is_none());
        let first = o
            .note("b:1", Err(&gone))
            .expect("the outage's first call logs");
        assert!(
            first.contains("b:1") && first.contains("connection refused"),
            "{first}"
        );
        for _ in 0..1000 {
            assert!(o.note("b:1", Err(&gone)).is_none());
        }
        assert!(o.is_down());
        // Another status (the upstream answered) ends it.
        let back = o
            .note("b:1", Err(&Status::not_found("no")))
            .expect("the end logs");
        assert!(back.contains("1001 call(s)"), "{back}");
        assert!(o.note("b:1", Ok(())).is_none());
        assert!(
            o.note("b:1", Err(&gone)).is_some(),
            "a new outage logs again"
        );
    }
}
