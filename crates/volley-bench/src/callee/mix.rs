//! A mix of calls (`--call A:80 --call B:20`, a scenario's `mix:`): several targets on one
//! connection pool, call number `k` sent to the entry a weighted hash of `k` picks. The hash
//! depends on `k` alone, so shards and reruns agree on every call's method and the per-method
//! counts of a run are known before it starts ([`MixTarget::predicted_counts`]).

use super::Target;

/// One entry of a mix: a gRPC method or an HTTP request, and its weight.
pub struct MixEntry {
    /// The name the report and thresholds use (`api.Users.Get`, `GET http://.../`).
    pub name: String,
    /// Relative weight (> 0).
    pub weight: u64,
    /// What it calls: [`Target::Grpc`] or [`Target::Http`] over HTTP/2.
    pub target: Target,
}

/// Several targets, picked per call by a weighted hash of the call number.
pub struct MixTarget {
    entries: Vec<MixEntry>,
    /// `upto[e]`: the sum of the weights of entries `0..=e`.
    upto: Vec<u64>,
}

impl MixTarget {
    /// A mix of `entries`; `None` when there are none or their weights sum to zero.
    pub fn new(entries: Vec<MixEntry>) -> Option<MixTarget> {
        let upto: Vec<u64> = entries
            .iter()
            .scan(0u64, |sum, e| {
                *sum += e.weight;
                Some(*sum)
            })
            .collect();
        (upto.last().copied().unwrap_or(0) > 0).then_some(MixTarget { entries, upto })
    }

    /// The entries, in the order given.
    pub fn entries(&self) -> &[MixEntry] {
        &self.entries
    }

    /// The entry call number `k` goes to.
    #[inline]
    pub fn pick(&self, k: u64) -> usize {
        pick(&self.upto, k)
    }

    /// How many of calls `0..n` each entry gets (what a run of `-n n` records per method).
    pub fn predicted_counts(&self, n: u64) -> Vec<u64> {
        let mut counts = vec![0; self.entries.len()];
        for k in 0..n {
            counts[self.pick(k)] += 1;
        }
        counts
    }
}

/// The entry of a cumulative weight table (`upto`, non-decreasing, last > 0) that call `k` goes
/// to: splitmix64 of `k`, reduced to the total weight, looked up in the table. A linear scan: a
/// mix has a handful of entries, and the scan is cheaper than a binary search at that size.
#[inline]
pub fn pick(upto: &[u64], k: u64) -> usize {
    let total = upto[upto.len() - 1];
    let x = ((u128::from(splitmix64(k)) * u128::from(total)) >> 64) as u64;
    upto.iter().position(|u| x < *u).unwrap_or(upto.len() - 1)
}

/// splitmix64's output function: a bijection of `u64` whose bits look independent of its input's.
#[inline]
pub fn splitmix64(k: u64) -> u64 {
    let mut z = k.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_follow_the_weights() {
        let upto = [80, 95, 99, 100];
        let mut counts = [0u64; 4];
        for k in 0..1_000_000 {
            counts[pick(&upto, k)] += 1;
        }
        let shares: Vec<f64> = counts.iter().map(|c| *c as f64 / 1e4).collect();
        for (got, want) in shares.iter().zip([80.0, 15.0, 4.0, 1.0]) {
            assert!((got - want).abs() < 0.2, "{shares:?}");
        }
    }

    #[test]
    fn a_zero_weight_is_never_picked() {
        let upto = [3, 3, 5];
        assert!((0..10_000).all(|k| pick(&upto, k) != 1));
    }

    #[test]
    fn picks_depend_on_the_call_number_alone() {
        let upto = [1, 2];
        let a: Vec<usize> = (0..64).map(|k| pick(&upto, k)).collect();
        let b: Vec<usize> = (0..64).map(|k| pick(&upto, k)).collect();
        assert_eq!(a, b);
        // Neighbouring call numbers do not go to the same entry in long runs.
        assert!(a.windows(4).any(|w| w.iter().any(|x| *x != w[0])));
    }
}
