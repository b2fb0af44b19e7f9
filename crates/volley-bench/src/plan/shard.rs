//! `--shard I/N` (or `auto/N`, I from `JOB_COMPLETION_INDEX`, which a Kubernetes Indexed Job
//! sets) and `--start-at` (RFC 3339, or `+30s` from now): one process's part of a plan run on
//! many hosts, with no coordinator. Shard I makes the calls numbered I mod N and runs the workers
//! numbered I mod N, at the single-process plan's intended times, so the shards together run
//! exactly the plan. `--emit k8s-job` prints such a plan as a Kubernetes Indexed Job ([`Emit`]).

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::{PlanError, units::parse_duration};

/// Which shard of how many a run was (`--shard I/N`).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Shard {
    /// From 0.
    pub index: u64,
    /// How many shards the plan has.
    pub count: u64,
}

/// `--emit`: the plan printed for another system to run, instead of run here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Emit {
    /// `--emit k8s-job`: a Kubernetes Indexed Job, one pod per shard.
    K8sJob {
        /// `--image`: the container image, with `volley` as its entrypoint.
        image: String,
        /// CPUs each pod asks for (`--cpus`, 1 when not given).
        cpus: u64,
    },
}

/// The environment variable a Kubernetes Indexed Job sets to the pod's index.
pub const INDEX_VAR: &str = "JOB_COMPLETION_INDEX";

/// Parses `--shard`; `index_var` is `JOB_COMPLETION_INDEX`'s value, for `auto/N`.
pub fn parse_shard(text: &str, index_var: Option<&str>) -> Result<Shard, PlanError> {
    let bad = |why: &str| PlanError::new(format!("--shard {text:?}: {why}"));
    let (i, n) = text
        .split_once('/')
        .ok_or_else(|| bad("expected I/N or auto/N (shard I of N, from 0)"))?;
    let count: u64 = n
        .trim()
        .parse()
        .ok()
        .filter(|n| *n >= 1)
        .ok_or_else(|| bad("N must be a whole number of at least 1"))?;
    let index: u64 = if i.trim() == "auto" {
        let v = index_var.ok_or_else(|| {
            bad(&format!(
                "auto takes the index from {INDEX_VAR}, which is not set"
            ))
        })?;
        v.trim()
            .parse()
            .map_err(|_| bad(&format!("{INDEX_VAR}={v:?} is not a whole number")))?
    } else {
        i.trim()
            .parse()
            .map_err(|_| bad("I must be a whole number (or auto)"))?
    };
    if index >= count {
        return Err(bad(&format!(
            "the index {index} is not below the count {count}"
        )));
    }
    Ok(Shard { index, count })
}

/// The plan's number for the `k`-th call a process makes: `k`, or for shard I of N the `k`-th
/// number congruent to I mod N; `None` past the plan's `total`.
pub(crate) fn call_number(total: u64, shard: Option<Shard>, k: u64) -> Option<u64> {
    let i = match shard {
        None => k,
        Some(s) => k.checked_mul(s.count)?.checked_add(s.index)?,
    };
    (i < total).then_some(i)
}

/// Whether worker `w` of the plan runs in this process (all of them, unless sharded).
pub(crate) fn runs_worker(shard: Option<Shard>, w: usize) -> bool {
    shard.is_none_or(|s| w as u64 % s.count == s.index)
}

/// Parses `--start-at`: an RFC 3339 time, or `+DURATION` from `now`.
pub(crate) fn parse_start_at(text: &str, now: SystemTime) -> Result<SystemTime, PlanError> {
    let bad = || {
        PlanError::new(format!(
            "--start-at {text:?}: expected an RFC 3339 time (2026-11-23T22:40:00Z) or +DURATION (+30s)"
        ))
    };
    if let Some(d) = text.strip_prefix('+') {
        let d: Duration = parse_duration(d).map_err(|_| bad())?;
        return Ok(now + d);
    }
    let t = chrono::DateTime::parse_from_rfc3339(text.trim()).map_err(|_| bad())?;
    let nanos = t.timestamp_nanos_opt().ok_or_else(bad)?;
    let since = u64::try_from(nanos).map_err(|_| bad())?;
    Ok(SystemTime::UNIX_EPOCH + Duration::from_nanos(since))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_auto_reads_the_job_index() {
        assert_eq!(
            parse_shard("2/4", None).unwrap(),
            Shard { index: 2, count: 4 }
        );
        assert_eq!(
            parse_shard("auto/3", Some("1")).unwrap(),
            Shard { index: 1, count: 3 }
        );
        for (text, var, want) in [
            ("4/4", None, "the index 4 is not below the count 4"),
            ("1/0", None, "at least 1"),
            ("auto/3", None, "JOB_COMPLETION_INDEX, which is not set"),
            (
                "auto/3",
                Some("x"),
                "JOB_COMPLETION_INDEX=\"x\" is not a whole number",
            ),
            ("3", None, "expected I/N"),
        ] {
            let e = parse_shard(text, var).unwrap_err().to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn start_times_parse() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        assert_eq!(
            parse_start_at("+30s", now).unwrap(),
            now + Duration::from_secs(30)
        );
        assert_eq!(
            parse_start_at("1970-01-01T00:20:00Z", now).unwrap(),
            SystemTime::UNIX_EPOCH + Duration::from_secs(1_200)
        );
        assert!(parse_start_at("tomorrow", now).is_err());
    }

    /// For plans of many sizes and shard counts, the shards' call numbers are disjoint, cover the
    /// plan, and are the single process's numbers (so its intended send times, data rows and
    /// `{{.RequestNumber}}`); their workers likewise.
    #[test]
    fn shards_partition_the_plan_exactly() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..200 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let total = x % 5_000;
            let count = 1 + (x >> 20) % 16;
            let workers = (1 + (x >> 40) % 64) as usize;
            let mut seen = vec![0u8; total as usize];
            let mut worker_owner = vec![0u8; workers];
            for index in 0..count {
                let shard = Some(Shard { index, count });
                let mut k = 0;
                while let Some(i) = call_number(total, shard, k) {
                    assert_eq!(i % count, index);
                    seen[i as usize] += 1;
                    k += 1;
                }
                for (w, owner) in worker_owner.iter_mut().enumerate() {
                    if runs_worker(shard, w) {
                        *owner += 1;
                    }
                }
            }
            assert!(
                seen.iter().all(|n| *n == 1),
                "total {total}, {count} shards"
            );
            assert!(worker_owner.iter().all(|n| *n == 1));
        }
    }
}
