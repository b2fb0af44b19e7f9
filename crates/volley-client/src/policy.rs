//! How a call picks among several addresses: gRPC's load-balancing policy names, as a channel
//! ([`Channel::balanced`](crate::Channel::balanced)) and a service config's
//! `loadBalancingConfig` both name them.

use std::str::FromStr;

/// How a call picks among several addresses (gRPC's load-balancing policy names).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Policy {
    /// The first address that can be reached takes every call (`pick_first`, gRPC's default).
    #[default]
    PickFirst,
    /// Each call takes the next address in turn (`round_robin`).
    RoundRobin,
}

/// A policy name that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown load-balancing policy {0:?}: expected pick_first or round_robin")]
pub struct PolicyError(pub String);

impl FromStr for Policy {
    type Err = PolicyError;
    fn from_str(s: &str) -> Result<Policy, PolicyError> {
        match s.to_ascii_lowercase().replace('-', "_").as_str() {
            "pick_first" => Ok(Policy::PickFirst),
            "round_robin" => Ok(Policy::RoundRobin),
            _ => Err(PolicyError(s.to_owned())),
        }
    }
}

impl std::fmt::Display for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Policy::PickFirst => "pick_first",
            Policy::RoundRobin => "round_robin",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_parse_as_grpc_names_them() {
        assert_eq!("round_robin".parse(), Ok(Policy::RoundRobin));
        assert_eq!("pick_first".parse(), Ok(Policy::PickFirst));
        assert_eq!("round-robin".parse(), Ok(Policy::RoundRobin));
        assert!(
            "grpclb"
                .parse::<Policy>()
                .unwrap_err()
                .to_string()
                .contains("expected pick_first or round_robin")
        );
    }
}
