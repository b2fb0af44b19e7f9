//! Runs the real `volley` binary as a child, learns its address from its log, and cleans up.

use std::{
    io::{BufRead, BufReader},
    net::SocketAddr,
    path::Path,
    process::{Child, Command, ExitStatus, Stdio},
    sync::{Arc, Mutex, mpsc},
    time::{Duration, Instant},
};

/// A running `volley` process; killed on drop.
pub struct VolleyProcess {
    child: Child,
    /// What it said it listens on: `127.0.0.1:PORT`, or `unix:/path`.
    target: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl VolleyProcess {
    /// Starts `bin` with `args` and waits (up to 30 s) for its "listening on ADDR" log line.
    pub fn start(bin: &Path, args: &[&str]) -> VolleyProcess {
        let mut cmd = Command::new(bin);
        cmd.args(args);
        VolleyProcess::from_command(cmd)
    }

    /// Starts `cmd` (a `volley` command line, with its own working directory or environment)
    /// and waits (up to 30 s) for its "listening on ADDR" log line.
    pub fn from_command(mut cmd: Command) -> VolleyProcess {
        // The log at info (the address line is an info event), unless the command sets its own.
        let own_filter = cmd
            .get_envs()
            .any(|(k, _)| k == "VOLLEY_LOG" || k == "RUST_LOG");
        if !own_filter {
            cmd.env("VOLLEY_LOG", "info");
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn volley");
        let stderr = child.stderr.take().expect("stderr piped");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                // Logged before the address is reported, so a caller that saw the address also
                // sees the line in `log()`.
                let addr = line.split("listening on ").nth(1).map(|rest| {
                    rest.split_whitespace()
                        .next()
                        .unwrap_or_default()
                        .to_owned()
                });
                sink.lock().unwrap().push(line);
                if let Some(addr) = addr {
                    let _ = tx.send(addr);
                }
            }
        });
        let target = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(a) => a,
            other => {
                let _ = child.kill();
                panic!(
                    "volley did not start ({other:?}); log:\n{}",
                    log.lock().unwrap().join("\n")
                )
            }
        };
        VolleyProcess { child, target, log }
    }

    /// The TCP address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.target
            .parse()
            .unwrap_or_else(|_| panic!("volley listens on {}, not on TCP", self.target))
    }

    /// What it listens on, as its log line says: `127.0.0.1:PORT` or `unix:/path`.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends a signal by name (`TERM`, `INT`, `KILL`).
    pub fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .args([format!("-{sig}"), self.pid().to_string()])
            .status()
            .expect("run kill")
            .success();
        assert!(ok, "kill -{sig} failed");
    }

    /// Waits for the process to exit, up to `limit`.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let start = Instant::now();
        while start.elapsed() < limit {
            if let Some(s) = self.child.try_wait().expect("try_wait") {
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// The log lines so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }
}

/// Resident memory of a process (VmRSS), in KiB.
pub fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .expect("the process is alive")
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS in /proc/PID/status")
}

/// Runs a command with `input` on its standard input; its output, whatever its exit status.
pub fn output_with_stdin(cmd: &mut Command, input: &[u8]) -> std::process::Output {
    use std::io::Write;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run {cmd:?}: {e}"));
    // A command that exits without reading all of it closes the pipe: that is its answer.
    let _ = child.stdin.take().expect("piped stdin").write_all(input);
    child.wait_with_output().expect("wait for the command")
}

/// Runs a command with no stdin; panics with its output unless it exits 0; returns its stdout.
pub fn ok_stdout(cmd: &mut Command) -> String {
    let out = cmd.stdin(Stdio::null()).output().expect("run command");
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

impl Drop for VolleyProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs a command that must fail; asserts it printed exactly one line on stderr and returns it.
pub fn fails_in_one_line(cmd: &mut Command) -> String {
    let out = cmd.stdin(Stdio::null()).output().expect("run command");
    assert!(!out.status.success(), "{cmd:?} succeeded");
    let err = String::from_utf8_lossy(&out.stderr).trim().to_owned();
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

/// The JSON report a `volley bench -O json` (or ghz) run printed; panics with its stderr unless
/// it exited 0.
pub fn json_report(out: &std::process::Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("a JSON report")
}

/// A latency percentile of a ghz-shaped JSON report (`latencyDistribution`), in milliseconds.
pub fn latency_ms(report: &serde_json::Value, percentage: u64) -> f64 {
    report["latencyDistribution"]
        .as_array()
        .expect("latencyDistribution")
        .iter()
        .find(|p| p["percentage"] == percentage)
        .unwrap_or_else(|| panic!("no p{percentage} in the report"))["latency"]
        .as_f64()
        .expect("a latency in nanoseconds")
        / 1e6
}
