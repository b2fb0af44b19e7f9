//! The open-file limit: a server binary raises its soft limit to the hard one at start, as Go's
//! runtime does for every Go program (grpc-go servers get it for free), so the connections a
//! server takes are bounded by `ServerBuilder::max_connections`, not by a shell's default of
//! 1024. Programs that hold a connection (a relay: two) per client, such as the order study and
//! the link relay of `volley lab`, also raise the hard limit where they may (root, or
//! CAP_SYS_RESOURCE): 20,000 clients need more than many machines' hard limit.

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

/// Raises the soft limit on open files to the hard limit; the limit in force afterwards.
pub fn raise_open_files() -> Option<u64> {
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        limit.current = limit.maximum;
        if setrlimit(Resource::Nofile, limit).is_err() {
            return getrlimit(Resource::Nofile).current;
        }
    }
    limit.current
}

/// As [`raise_open_files`], first raising the hard limit to the kernel's per-process ceiling
/// (`fs.nr_open`, at most 2^20) where this process may; the limit in force afterwards.
pub fn raise_open_files_max() -> Option<u64> {
    let ceiling = std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(1 << 20)
        .min(1 << 20);
    let hard = getrlimit(Resource::Nofile).maximum;
    if hard.is_some_and(|h| h < ceiling) {
        let _ = setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(ceiling),
                maximum: Some(ceiling),
            },
        );
    }
    raise_open_files()
}

/// Descriptors a process keeps beside its connections (runtime, standard streams, pipes to its
/// children, files).
const HEADROOM: u64 = 256;

/// How many processes, each within the open-file limit (raised as [`raise_open_files_max`]
/// does), hold `connections` connections of `per_connection` descriptors each; at least one.
pub fn processes_for(connections: u64, per_connection: u64) -> u64 {
    processes_within(connections, per_connection, raise_open_files_max())
}

fn processes_within(connections: u64, per_connection: u64, limit: Option<u64>) -> u64 {
    let Some(limit) = limit else { return 1 };
    // The connections one process may hold beside its headroom (at least one).
    let room = (limit.saturating_sub(HEADROOM) / per_connection.max(1)).max(1);
    connections.div_ceil(room).max(1)
}

/// Whether this process may hold `connections` sockets, after raising its limit as
/// [`raise_open_files_max`] does; `Err((need, limit))` when it may not.
pub fn room_for(connections: u64) -> Result<(), (u64, u64)> {
    let need = connections + HEADROOM;
    match raise_open_files_max() {
        Some(limit) if limit < need => Err((need, limit)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn processes_are_as_few_as_the_limit_allows() {
        // Seed 004's server-to-server runs under this machine's 20,000: a relay holds two
        // descriptors per client.
        assert_eq!(processes_within(20_000, 2, Some(20_000)), 3);
        assert_eq!(processes_within(10_000, 2, Some(20_000)), 2);
        assert_eq!(processes_within(5_000, 2, Some(20_000)), 1);
        assert_eq!(processes_within(10_000, 1, Some(20_000)), 1);
        assert_eq!(processes_within(20_000, 1, Some(20_000)), 2);
        // No limit, or nothing to hold: one.
        assert_eq!(processes_within(1 << 30, 2, None), 1);
        assert_eq!(processes_within(0, 1, Some(1024)), 1);
        // A limit below the headroom still gives each process a connection.
        assert_eq!(processes_within(3, 1, Some(10)), 3);
    }
}
