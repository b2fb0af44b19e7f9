//! The machine a lab ran on, as the report's header names it: the CPU model and the cores the
//! run could use.

use serde::Serialize;

/// The CPU and core count.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Machine {
    /// `model name` from /proc/cpuinfo (or the architecture where there is none).
    pub cpu: String,
    /// Cores this process may run on.
    pub cores: usize,
}

impl Machine {
    /// This machine.
    pub fn this() -> Machine {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|c| {
                c.lines()
                    .find_map(|l| l.strip_prefix("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.split_whitespace().collect::<Vec<_>>().join(" "))
            })
            .unwrap_or_else(|| std::env::consts::ARCH.to_owned());
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Machine { cpu, cores }
    }
}

impl std::fmt::Display for Machine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = if self.cores == 1 { "" } else { "s" };
        write!(f, "{}, {} core{s}", self.cpu, self.cores)
    }
}
