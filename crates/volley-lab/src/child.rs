//! Child `volley` processes (a server, a gateway) started by `volley lab orders` and `volley lab`:
//! started, their address read from the "listening on ADDR" log line, stopped with SIGTERM.

use std::{
    io::{BufRead, BufReader},
    process::{Command, Stdio},
    time::Duration,
};

use anyhow::{Result, anyhow, bail};

/// A running child that logged where it listens; stopped (SIGTERM, then waited for) on drop.
pub struct Child {
    child: std::process::Child,
    /// Where it listens.
    pub addr: String,
}

impl Child {
    /// Starts `cmd` and waits up to 30 s for its "listening on ADDR" line.
    pub fn start(mut cmd: Command) -> Result<Child> {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| anyhow!("cannot start volley: {e}"))?;
        let stderr = child.stderr.take().expect("piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            let mut last = String::new();
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("listening on ").nth(1)
                    && let Some(tx) = tx.take()
                {
                    let addr = rest.split_whitespace().next().unwrap_or("").to_owned();
                    let _ = tx.send(Ok(addr));
                }
                last = line;
            }
            if let Some(tx) = tx.take() {
                let _ = tx.send(Err(last));
            }
        });
        crate::netns::track(child.id());
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(Ok(addr)) => Ok(Child { child, addr }),
            Ok(Err(last)) => {
                let _ = child.wait();
                bail!("volley exited before listening: {last}")
            }
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                bail!("volley did not start within 30 s")
            }
        }
    }

    /// Its CPU time so far (user + system).
    pub fn cpu(&self) -> Duration {
        volley_bench::cpu_time(&format!("/proc/{}/stat", self.child.id()))
    }

    /// Stops it (SIGTERM) and waits.
    pub fn stop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.stop();
        }
    }
}
