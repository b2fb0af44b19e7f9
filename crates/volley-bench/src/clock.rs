//! CPU time from `/proc`: a process's or a thread's user plus system time, which the engine
//! reads for the generator's busy share and the live ticks for their CPU gauge.

use std::time::Duration;

/// CPU time (user + system) from a `/proc/.../stat` file: a process (`/proc/PID/stat`,
/// `/proc/self/stat`) or a thread (`/proc/thread-self/stat`); zero when it cannot be read.
pub fn cpu_time(stat: &str) -> Duration {
    std::fs::read_to_string(stat)
        .ok()
        .and_then(|s| {
            let f: Vec<&str> = s.rsplit_once(')')?.1.split_whitespace().collect();
            let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
            Some(Duration::from_millis(ticks * 10))
        })
        .unwrap_or_default()
}

/// This thread's CPU time (user + system).
pub(crate) fn thread_cpu_time() -> Duration {
    cpu_time("/proc/thread-self/stat")
}

/// This process's CPU time (user + system).
pub(crate) fn process_cpu_time() -> Duration {
    cpu_time("/proc/self/stat")
}
