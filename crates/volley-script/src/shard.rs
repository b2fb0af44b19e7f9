//! `--shard I/N` for a script (`auto/N` takes I from a Kubernetes Indexed Job's
//! `JOB_COMPLETION_INDEX`, as `volley bench --shard` does): one process's part of a run split
//! over N hosts with no coordinator. Each scenario's VUs and iterations are split so the shards'
//! parts add up to the whole (shard I takes `floor(q(I+1)/N) - floor(qI/N)` of a count q); an
//! arrival rate keeps the whole plan's start times and shard I makes the starts numbered I mod
//! N, so the shards together start exactly the plan's iterations at its times. The shards'
//! `--report json=FILE` results carry the shard, and `volley report merge` sums them exactly.

use volley_bench::plan::shard::Shard;

use crate::options::{Executor, Scenario};

/// Shard `s`'s part of a count `q`.
fn part(q: u64, s: Shard) -> u64 {
    let cut = |k: u64| (u128::from(q) * u128::from(k) / u128::from(s.count)) as u64;
    cut(s.index + 1) - cut(s.index)
}

/// At least one VU for a shard that has work, its part otherwise.
fn vus_for(vus: u64, work: u64, s: Shard) -> u64 {
    let v = part(vus, s);
    if work > 0 { v.max(1) } else { v }
}

/// Shard `s`'s part of every scenario.
pub(crate) fn apply(scenarios: &mut [Scenario], s: Shard) {
    for sc in scenarios {
        match &mut sc.executor {
            Executor::SharedIterations {
                vus, iterations, ..
            } => {
                *iterations = part(*iterations, s);
                *vus = vus_for(*vus, *iterations, s).min(*iterations);
            }
            Executor::PerVuIterations { vus, .. } | Executor::ConstantVus { vus, .. } => {
                *vus = part(*vus, s);
            }
            Executor::RampingVus {
                start_vus, stages, ..
            } => {
                *start_vus = part(*start_vus, s);
                for st in stages {
                    st.target = part(st.target.max(0.0) as u64, s) as f64;
                }
            }
            Executor::ConstantArrivalRate {
                pre_allocated,
                max_vus,
                ..
            }
            | Executor::RampingArrivalRate {
                pre_allocated,
                max_vus,
                ..
            } => {
                // VUs for a 1/N share of the starts: the whole plan's, divided up (rounded up,
                // so a shard never has fewer than the plan's share).
                *pre_allocated = pre_allocated.div_ceil(s.count).max(1);
                *max_vus = max_vus.div_ceil(s.count).max(*pre_allocated);
                sc.stripe = Some(s);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shards_parts_add_up_to_the_whole() {
        for (q, n) in [(7u64, 3u64), (10, 4), (1, 5), (0, 2), (1000, 7)] {
            let parts: Vec<u64> = (0..n)
                .map(|i| part(q, Shard { index: i, count: n }))
                .collect();
            assert_eq!(parts.iter().sum::<u64>(), q, "{q} over {n}: {parts:?}");
            assert!(
                parts.iter().max().unwrap() - parts.iter().min().unwrap() <= 1,
                "{parts:?}"
            );
        }
    }
}
