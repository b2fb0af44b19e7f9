//! What goes wrong on the link, on purpose: chunks held back as TCP holds a lost segment until it
//! is sent again (late, never cut), chunks that never arrive (the stream goes on without their
//! bytes, as past a broken middlebox: the peers' framing breaks), connections reset, and
//! partitions during which nothing passes. Each connection draws from a
//! generator of its own, seeded, so a run's faults do not depend on another's.

use std::time::{Duration, Instant};

/// Linux's minimum retransmission timeout (`TCP_RTO_MIN`, 200 ms): how late a lost segment
/// arrives on a link whose round trip is well under it.
pub const RETRANSMIT_AFTER: Duration = Duration::from_millis(200);

/// Chunks each direction of a connection carries before `--reset` or `--drop` may draw (the
/// handshakes).
pub(super) const HANDSHAKE_CHUNKS: u32 = 4;

/// A window of time, from the link's start, during which nothing passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partition {
    /// When it starts, from the link's start.
    pub at: Duration,
    /// How long it lasts.
    pub lasts: Duration,
}

/// The faults a link injects; the default injects none.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Faults {
    /// The chance that a chunk is lost and sent again, arriving [`RETRANSMIT_AFTER`] late (0
    /// to 1): TCP's loss, which delays a byte stream and cuts nothing.
    pub retransmit: f64,
    /// The chance, per chunk after a connection's first few, that the chunk never arrives: its
    /// bytes are gone from the stream, which goes on without them (0 to 1).
    pub drop: f64,
    /// The chance, per chunk after a connection's first few, that the connection is reset (both
    /// sides get a TCP RST).
    pub reset: f64,
    /// Windows during which the link passes nothing: bytes wait, new connections are not
    /// relayed until the window ends (as a blackholed route, not a refusal).
    pub partitions: Vec<Partition>,
}

impl Faults {
    /// True when no fault is set.
    pub fn none(&self) -> bool {
        self.retransmit == 0.0
            && self.drop == 0.0
            && self.reset == 0.0
            && self.partitions.is_empty()
    }

    /// When a chunk due at `due` may pass: `due`, or the end of the partition it falls in.
    pub fn passes_at(&self, start: Instant, due: Instant) -> Instant {
        let mut t = due;
        // Partitions may follow one another: move past each the time falls in.
        loop {
            let Some(end) = self.partitions.iter().find_map(|p| {
                let (from, to) = (start + p.at, start + p.at + p.lasts);
                (t >= from && t < to).then_some(to)
            }) else {
                return t;
            };
            t = end;
        }
    }

    /// One line for the log: what is injected.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.retransmit > 0.0 {
            parts.push(format!(
                "{}% of chunks lost and sent again",
                self.retransmit * 100.0
            ));
        }
        if self.drop > 0.0 {
            parts.push(format!("{}% of chunks dropped for good", self.drop * 100.0));
        }
        if self.reset > 0.0 {
            parts.push(format!(
                "{}% of chunks reset their connection",
                self.reset * 100.0
            ));
        }
        for p in &self.partitions {
            parts.push(format!("partitioned for {:?} at {:?}", p.lasts, p.at));
        }
        if parts.is_empty() {
            "no faults".into()
        } else {
            parts.join(", ")
        }
    }
}

/// A connection's draws (fastrand's generator: no cryptographic need).
pub(super) struct Draws(fastrand::Rng);

impl Draws {
    /// A generator from `seed`.
    pub(super) fn new(seed: u64) -> Draws {
        Draws(fastrand::Rng::with_seed(seed))
    }

    /// `delay` plus a uniform draw from `-jitter..=jitter`, never below zero.
    pub(super) fn delay(&mut self, delay: Duration, jitter: Duration) -> Duration {
        if jitter.is_zero() {
            return delay;
        }
        let offset = self.0.u64(0..=jitter.as_nanos() as u64 * 2);
        (delay + Duration::from_nanos(offset)).saturating_sub(jitter)
    }

    /// True with chance `p` (0 to 1).
    pub(super) fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.0.f64() < p
    }
}

/// Parses a chance as `1%`, `0.5%` or `0.01`.
pub fn parse_chance(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, scale) = match t.strip_suffix('%') {
        Some(n) => (n, 100.0),
        None => (t, 1.0),
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{s:?}: expected a percentage such as 1% or 0.5%"))?;
    let p = v / scale;
    if !(0.0..=1.0).contains(&p) {
        return Err(format!("{s:?}: a chance is between 0% and 100%"));
    }
    Ok(p)
}

/// Parses a partition as `LASTS@AT`: `2s@5s` is two seconds without a byte, from five seconds
/// after the link starts.
pub fn parse_partition(s: &str) -> Result<Partition, String> {
    let (lasts, at) = s
        .split_once('@')
        .ok_or_else(|| format!("{s:?}: expected LASTS@AT, as in 2s@5s (2 s long, 5 s in)"))?;
    let d =
        |x: &str| volley_bench::plan::units::parse_duration(x).map_err(|e| format!("{s:?}: {e}"));
    let p = Partition {
        at: d(at)?,
        lasts: d(lasts)?,
    };
    if p.lasts.is_zero() {
        return Err(format!("{s:?}: a partition lasts longer than 0"));
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chances_and_partitions_read_as_written() {
        assert_eq!(parse_chance("1%"), Ok(0.01));
        assert_eq!(parse_chance("0.5%"), Ok(0.005));
        assert_eq!(parse_chance("0.25"), Ok(0.25));
        assert!(
            parse_chance("lots")
                .unwrap_err()
                .contains("expected a percentage")
        );
        assert!(
            parse_chance("150%")
                .unwrap_err()
                .contains("between 0% and 100%")
        );
        assert_eq!(
            parse_partition("2s@5s"),
            Ok(Partition {
                at: Duration::from_secs(5),
                lasts: Duration::from_secs(2)
            })
        );
        assert!(
            parse_partition("2s")
                .unwrap_err()
                .contains("expected LASTS@AT")
        );
        assert!(
            parse_partition("0s@1s")
                .unwrap_err()
                .contains("longer than 0")
        );
        assert!(parse_partition("soon@1s").is_err());
    }

    #[test]
    fn a_chunk_in_a_partition_waits_for_its_end_and_partitions_chain() {
        let s = Duration::from_secs;
        let f = Faults {
            partitions: vec![
                Partition {
                    at: s(5),
                    lasts: s(2),
                },
                Partition {
                    at: s(7),
                    lasts: s(1),
                },
            ],
            ..Faults::default()
        };
        let start = Instant::now();
        assert_eq!(f.passes_at(start, start + s(1)), start + s(1));
        assert_eq!(f.passes_at(start, start + s(5)), start + s(8));
        assert_eq!(f.passes_at(start, start + s(6)), start + s(8));
        assert_eq!(f.passes_at(start, start + s(8)), start + s(8));
        assert!(
            f.describe().contains("partitioned for 2s at 5s"),
            "{}",
            f.describe()
        );
    }

    #[test]
    fn draws_keep_their_bounds_and_rates() {
        let mut j = Draws::new(7);
        let (d, w) = (Duration::from_millis(5), Duration::from_millis(1));
        let draws: Vec<Duration> = (0..10_000).map(|_| j.delay(d, w)).collect();
        assert!(draws.iter().all(|x| *x >= d - w && *x <= d + w));
        let low = draws.iter().filter(|x| **x < d).count();
        assert!((4_000..6_000).contains(&low), "about half below: {low}");
        let hits = (0..100_000).filter(|_| j.chance(0.01)).count();
        assert!((800..1_200).contains(&hits), "about 1%: {hits}");
        assert!(!(0..1000).any(|_| j.chance(0.0)));
    }
}
