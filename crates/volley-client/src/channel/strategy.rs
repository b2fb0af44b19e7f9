//! How a channel spreads calls over connections ([`Strategy`]), as `--strategy` names it.

use std::{str::FromStr, time::Duration};

/// How a channel spreads calls over connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Dial, call, close: every call pays for a connection (to measure that cost).
    PerRequest,
    /// One HTTP/2 connection, multiplexed.
    Single,
    /// `n` connections, each multiplexed; a call goes to the one with the fewest calls in flight.
    Pool(usize),
    /// Starts with one connection and opens another (up to `max`) when the least-loaded one has
    /// as many calls in flight as the peer's MAX_CONCURRENT_STREAMS; extra connections idle for
    /// [`IDLE_CLOSE`] are closed.
    Expanding {
        /// The most connections it opens.
        max: usize,
    },
}

/// The default maximum for `expanding`.
pub const DEFAULT_EXPANDING_MAX: usize = 8;
/// Extra `expanding` connections with no call for this long are closed.
pub const IDLE_CLOSE: Duration = Duration::from_secs(30);

/// Why a `--strategy` value cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StrategyError {
    /// `pool:N` or `expanding:MAX` with something other than a count of at least 1.
    #[error("strategy {strategy:?}: {count:?} is not a connection count >= 1")]
    BadCount {
        /// The whole value.
        strategy: String,
        /// The count part.
        count: String,
    },
    /// No such strategy.
    #[error("unknown strategy {0:?}: use per-request, single, pool[:N] or expanding[:MAX]")]
    Unknown(String),
}

impl Strategy {
    /// Parses `per-request`, `single`, `pool[:N]` (or `pool(N)`), `expanding[:MAX]`; a bare
    /// `pool` has `default_pool` connections.
    pub fn parse(s: &str, default_pool: usize) -> Result<Strategy, StrategyError> {
        let s = s.trim();
        let (name, arg) = match s.split_once([':', '(']) {
            Some((n, a)) => (n, Some(a.trim_end_matches(')'))),
            None => (s, None),
        };
        let count = |default: usize| -> Result<usize, StrategyError> {
            match arg {
                None => Ok(default.max(1)),
                Some(a) => a.parse::<usize>().ok().filter(|n| *n >= 1).ok_or_else(|| {
                    StrategyError::BadCount {
                        strategy: s.to_owned(),
                        count: a.to_owned(),
                    }
                }),
            }
        };
        match name {
            "per-request" if arg.is_none() => Ok(Strategy::PerRequest),
            "single" if arg.is_none() => Ok(Strategy::Single),
            "pool" => Ok(Strategy::Pool(count(default_pool)?)),
            "expanding" => Ok(Strategy::Expanding {
                max: count(DEFAULT_EXPANDING_MAX)?,
            }),
            _ => Err(StrategyError::Unknown(s.to_owned())),
        }
    }

    /// The most connections this strategy keeps open at once (per-request: unbounded, so 0).
    pub fn max_connections(self) -> usize {
        match self {
            Strategy::PerRequest => 0,
            Strategy::Single => 1,
            Strategy::Pool(n) => n,
            Strategy::Expanding { max } => max,
        }
    }
}

impl FromStr for Strategy {
    type Err = StrategyError;
    fn from_str(s: &str) -> Result<Self, StrategyError> {
        Strategy::parse(s, 1)
    }
}

impl std::fmt::Display for Strategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Strategy::PerRequest => f.write_str("per-request"),
            Strategy::Single => f.write_str("single"),
            Strategy::Pool(n) => write!(f, "pool:{n}"),
            Strategy::Expanding { max } => write!(f, "expanding:{max}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategies_parse_and_print() {
        assert_eq!(Strategy::parse("per-request", 4), Ok(Strategy::PerRequest));
        assert_eq!(Strategy::parse("single", 4), Ok(Strategy::Single));
        assert_eq!(Strategy::parse("pool", 4), Ok(Strategy::Pool(4)));
        assert_eq!(Strategy::parse("pool:3", 4), Ok(Strategy::Pool(3)));
        assert_eq!(Strategy::parse("pool(5)", 4), Ok(Strategy::Pool(5)));
        assert_eq!(
            Strategy::parse("expanding", 4),
            Ok(Strategy::Expanding {
                max: DEFAULT_EXPANDING_MAX
            })
        );
        assert_eq!(
            Strategy::parse("expanding:2", 4),
            Ok(Strategy::Expanding { max: 2 })
        );
        for bad in ["bogus", "pool:0", "pool:x", "single:2", ""] {
            let e = Strategy::parse(bad, 4).unwrap_err();
            assert!(e.to_string().contains("strategy"), "{bad}: {e}");
        }
        for s in ["per-request", "single", "pool:3", "expanding:2"] {
            assert_eq!(Strategy::parse(s, 1).unwrap().to_string(), s);
        }
    }
}
