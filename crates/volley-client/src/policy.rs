//! How a call picks among several addresses: gRPC's load-balancing policy names, as a channel
//! ([`Channel::balanced`](crate::Channel::balanced)) and a service config's
//! `loadBalancingConfig` both name them.

use std::{net::SocketAddr, str::FromStr, time::Duration};

use volley_wire::Status;

use crate::connection::unavailable;

/// A name is resolved again after every address failed at most this often (the channel's
/// balancer and the fast path's).
pub(crate) const RERESOLVE_MIN: Duration = Duration::from_secs(1);

/// Otherwise resolutions of a name are this far apart: the channel's balancer resolves it this
/// often, the fast path at most this often after a lost connection (gRPC's DNS resolver waits
/// at least 30 s between resolutions).
pub(crate) const REFRESH: Duration = Duration::from_secs(30);

/// The addresses `host_port` resolves to, by the system's resolver (for the channel's balancer
/// and the fast path's); Unavailable, saying so, when it cannot be resolved.
pub(crate) async fn lookup(host_port: &str) -> Result<Vec<SocketAddr>, Status> {
    match tokio::net::lookup_host(host_port).await {
        Ok(addrs) => Ok(addrs.collect()),
        Err(e) => Err(unavailable(format!("cannot resolve {host_port}: {e}"))),
    }
}

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
