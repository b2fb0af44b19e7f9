//! When an arrival-rate scenario starts its iterations: the rate as a piecewise-linear
//! function of time (`constant-arrival-rate`, or `ramping-arrival-rate`'s stages), iteration k
//! at the time its integral reaches k.

/// The start times of an arrival-rate scenario: iteration `k` starts when the rate's integral
/// from the scenario's start reaches `k` (so a constant rate starts at 0, 1/r, 2/r, ...),
/// each time worked out from the start, so no rounding error builds up.
pub(crate) struct ArrivalClock {
    /// The next iteration's number.
    pub(crate) k: u64,
    /// The rate, piecewise linear: `(from, to, rate at from, rate at to)` in seconds and
    /// iterations per second.
    pub(crate) segments: Vec<(f64, f64, f64, f64)>,
}

impl ArrivalClock {
    pub(crate) fn constant(per_sec: f64, end: f64) -> ArrivalClock {
        ArrivalClock {
            k: 0,
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
        ArrivalClock { k: 0, segments }.starting()
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
        let t = self.time_of(self.k as f64)?;
        self.k += 1;
        Some(t)
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
}
