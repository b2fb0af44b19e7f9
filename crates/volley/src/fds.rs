//! The open-file limit: `volley serve` raises its soft limit to the hard one at start, as Go's
//! runtime does for every Go program (grpc-go servers get it for free), so the connections a
//! server takes are bounded by `--max-connections`, not by a shell's default of 1024.

use rustix::process::{Resource, getrlimit, setrlimit};

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
