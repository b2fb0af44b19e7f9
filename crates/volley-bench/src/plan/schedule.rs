//! Load shapes: the request rate over time (`--rps` / `--load-schedule`) and the worker count over
//! time (`-c` / `--concurrency-schedule`), each `const`, `step` or `line` as ghz defines them.

use std::time::Duration;

/// The three shapes ghz knows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Shape {
    /// A constant value.
    #[default]
    Const,
    /// `start`, then `+step` every `step_duration`, until `end` or `max_duration`, then hold.
    Step,
    /// Linear from `start` with slope `step` per second (a step shape with one-second steps).
    Line,
}

impl Shape {
    /// Parses `const`, `step` or `line`.
    pub fn parse(s: &str) -> Result<Shape, String> {
        match s {
            "const" => Ok(Shape::Const),
            "step" => Ok(Shape::Step),
            "line" => Ok(Shape::Line),
            _ => Err(format!(
                "invalid schedule {s:?}: expected const, step or line"
            )),
        }
    }

    /// The ghz spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Shape::Const => "const",
            Shape::Step => "step",
            Shape::Line => "line",
        }
    }
}

/// A value that changes in steps over time: `value(t)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Ramp {
    /// The shape.
    pub shape: Shape,
    /// The constant value (const) or the start value.
    pub start: f64,
    /// Optional end value (0 = none).
    pub end: f64,
    /// Step size (or slope per second for `line`); may be negative.
    pub step: f64,
    /// Step length (`line` uses one second).
    pub step_duration: Duration,
    /// Stop adjusting after this long (zero = no cap), then hold.
    pub max_duration: Duration,
}

impl Ramp {
    /// A constant ramp.
    pub fn constant(v: f64) -> Ramp {
        Ramp {
            shape: Shape::Const,
            start: v,
            end: 0.0,
            step: 0.0,
            step_duration: Duration::ZERO,
            max_duration: Duration::ZERO,
        }
    }

    fn step_len(&self) -> Duration {
        match self.shape {
            Shape::Line => Duration::from_secs(1),
            _ => self.step_duration,
        }
    }

    /// Checks ghz's rules: `step`/`line` need start != end (when end is set), a non-zero step, and
    /// `step` a step duration.
    pub fn validate(&self, what: &str) -> Result<(), String> {
        if self.shape == Shape::Const {
            return Ok(());
        }
        if self.step == 0.0 {
            return Err(format!(
                "{what}-step must not be zero for a {} schedule",
                self.shape.as_str()
            ));
        }
        if self.end != 0.0 && self.start == self.end {
            return Err(format!(
                "{what}-start and {what}-end must differ for a {} schedule",
                self.shape.as_str()
            ));
        }
        if self.end != 0.0 && (self.end - self.start).signum() != self.step.signum() {
            return Err(format!("{what}-step moves away from {what}-end"));
        }
        if self.shape == Shape::Step && self.step_duration.is_zero() {
            return Err(format!(
                "{what}-step-duration is required for a step schedule"
            ));
        }
        Ok(())
    }

    /// How many steps have been taken by `t` (capped by end and max duration).
    fn steps_at(&self, t: Duration) -> u64 {
        let len = self.step_len();
        if self.shape == Shape::Const || len.is_zero() {
            return 0;
        }
        let t = if self.max_duration.is_zero() {
            t
        } else {
            t.min(self.max_duration)
        };
        let mut n = (t.as_nanos() / len.as_nanos()) as u64;
        if self.end != 0.0 {
            let to_end = ((self.end - self.start) / self.step).ceil().max(0.0) as u64;
            n = n.min(to_end);
        }
        n
    }

    /// The value at time `t` since the start.
    pub fn value_at(&self, t: Duration) -> f64 {
        let v = self.start + self.step * self.steps_at(t) as f64;
        let v = if self.end != 0.0 {
            if self.step > 0.0 {
                v.min(self.end)
            } else {
                v.max(self.end)
            }
        } else {
            v
        };
        v.max(0.0)
    }
}

/// Converts a rate ramp or stages into intended send times: `time_of(k)` is when tick `k` is due.
#[derive(Clone, Debug)]
pub enum Pacer {
    /// ghz's `--rps` and `--load-*`.
    Ramp(Ramp),
    /// k6's stages (`--stage`).
    Stages(super::stages::Stages),
}

impl Pacer {
    /// A pacer for a rate ramp (requests per second).
    pub fn new(ramp: Ramp) -> Pacer {
        Pacer::Ramp(ramp)
    }

    /// The rate asked for at `t` since the start, calls per second.
    pub fn rate_at(&self, t: Duration) -> f64 {
        match self {
            Pacer::Ramp(r) => r.value_at(t),
            Pacer::Stages(s) => s.rate_at(t),
        }
    }

    /// The intended time of tick `k` (0-based) since the start; `None` when the rate falls to zero
    /// for good before tick `k` is due.
    pub fn time_of(&self, k: u64) -> Option<Duration> {
        let r = match self {
            Pacer::Ramp(r) => r,
            Pacer::Stages(s) => return s.time_of(k),
        };
        let k = k as f64;
        if r.shape == Shape::Const {
            return (r.start > 0.0).then(|| Duration::from_secs_f64(k / r.start));
        }
        // Walk the piecewise-constant segments: each step lasts `len` at a fixed rate.
        let len = r.step_len().as_secs_f64();
        let mut t = 0.0;
        let mut done = 0.0;
        for _ in 0..1_000_000u32 {
            let rate = r.value_at(Duration::from_secs_f64(t));
            if rate <= 0.0 && r.step <= 0.0 {
                return None;
            }
            let holds = r.steps_at(Duration::from_secs_f64(t + len))
                == r.steps_at(Duration::from_secs_f64(t));
            if holds {
                // The rate no longer changes: the rest is linear.
                return (rate > 0.0).then(|| Duration::from_secs_f64(t + (k - done) / rate));
            }
            let in_segment = rate * len;
            if done + in_segment > k {
                return Some(Duration::from_secs_f64(t + (k - done) / rate));
            }
            done += in_segment;
            t += len;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp(shape: Shape, start: f64, end: f64, step: f64, step_ms: u64, max_ms: u64) -> Ramp {
        Ramp {
            shape,
            start,
            end,
            step,
            step_duration: Duration::from_millis(step_ms),
            max_duration: Duration::from_millis(max_ms),
        }
    }

    #[test]
    fn step_values() {
        let r = ramp(Shape::Step, 10.0, 30.0, 5.0, 1000, 0);
        assert_eq!(r.value_at(Duration::ZERO), 10.0);
        assert_eq!(r.value_at(Duration::from_millis(1500)), 15.0);
        assert_eq!(r.value_at(Duration::from_secs(10)), 30.0);
        let capped = ramp(Shape::Step, 10.0, 0.0, 5.0, 1000, 2000);
        assert_eq!(capped.value_at(Duration::from_secs(100)), 20.0);
        let down = ramp(Shape::Line, 10.0, 2.0, -3.0, 0, 0);
        assert_eq!(down.value_at(Duration::from_secs(1)), 7.0);
        assert_eq!(down.value_at(Duration::from_secs(9)), 2.0);
    }

    #[test]
    fn validation() {
        assert!(
            ramp(Shape::Step, 1.0, 1.0, 1.0, 1000, 0)
                .validate("load")
                .is_err()
        );
        assert!(
            ramp(Shape::Step, 1.0, 5.0, 0.0, 1000, 0)
                .validate("load")
                .is_err()
        );
        assert!(
            ramp(Shape::Step, 1.0, 5.0, 1.0, 0, 0)
                .validate("load")
                .is_err()
        );
        assert!(
            ramp(Shape::Line, 1.0, 5.0, 1.0, 0, 0)
                .validate("load")
                .is_ok()
        );
        assert!(
            ramp(Shape::Line, 5.0, 1.0, 1.0, 0, 0)
                .validate("load")
                .is_err()
        );
    }

    #[test]
    fn const_pacing() {
        let p = Pacer::new(Ramp::constant(100.0));
        assert_eq!(p.time_of(0), Some(Duration::ZERO));
        assert_eq!(p.time_of(50), Some(Duration::from_millis(500)));
    }

    #[test]
    fn step_pacing_follows_the_segments() {
        // 10/s for 1 s, then 20/s for good (end 20).
        let p = Pacer::new(ramp(Shape::Step, 10.0, 20.0, 10.0, 1000, 0));
        assert_eq!(p.time_of(5), Some(Duration::from_millis(500)));
        assert_eq!(p.time_of(10), Some(Duration::from_millis(1000)));
        assert_eq!(p.time_of(20), Some(Duration::from_millis(1500)));
        // Monotonic.
        let times: Vec<_> = (0..200).map(|k| p.time_of(k).unwrap()).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
        // A rate that falls to zero ends the ticks.
        let p = Pacer::new(ramp(Shape::Line, 2.0, 0.0, -1.0, 0, 0));
        assert!(p.time_of(2).is_some());
        assert!(p.time_of(100).is_none());
    }
}
