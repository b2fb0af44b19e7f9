//! `volley lab orders` without `--addr`: its own `volley serve` process (TLS with a certificate made
//! for the run; in a network namespace, the clients in another, with `--netns`), whose CPU time
//! joins the report.

use std::process::{Command, Stdio};

use anyhow::{Result, anyhow, bail};

use super::{OrdersArgs, OrdersReport, measure};

/// Starts `volley serve` (in the server namespace with --netns), runs the clients (in the client
/// namespace with --netns, as a child `volley lab orders`), stops the server, removes the namespaces.
pub(super) fn with_own_server(args: &OrdersArgs, signals: crate::Signals) -> Result<OrdersReport> {
    let exe = std::env::current_exe()?;
    let ns = args
        .netns
        .map(|d| crate::netns::Netns::create(d, signals))
        .transpose()?;
    let host = if ns.is_some() {
        crate::netns::SERVER_IP
    } else {
        "127.0.0.1"
    };
    let tls_dir = std::env::temp_dir().join(format!("volley-orders-tls-{}", std::process::id()));
    let mut server = match &ns {
        Some(n) => crate::netns::Netns::exec(&n.server, &exe),
        None => Command::new(&exe),
    };
    server.args(["serve", "--addr", &format!("{host}:0"), "--threads"]);
    server.arg(args.server_threads.to_string());
    if args.tls {
        server
            .args(["--tls-self-signed", "--tls-dir"])
            .arg(&tls_dir);
    }
    let mut server = crate::child::Child::start(server)?;
    // Without netem, a relay in the clients' namespace adds the delay on the way to the server.
    let mut link = match ns.as_ref().and_then(|n| n.link_delay.map(|d| (n, d))) {
        Some((n, delay)) => {
            let mut c = crate::netns::Netns::exec(&n.client, &exe);
            c.args([
                "lab",
                "link",
                "--listen",
                "127.0.0.1:0",
                "--to",
                &server.addr,
            ])
            .args(["--delay", &format!("{}us", delay.as_micros())]);
            match crate::child::Child::start(c) {
                Ok(l) => Some(l),
                Err(e) => {
                    server.stop();
                    return Err(e);
                }
            }
        }
        None => None,
    };
    let result = (|| {
        let to = link.as_ref().map_or(&server.addr, |l| &l.addr);
        let mut client_args = args.clone_for_child(to);
        if args.tls {
            client_args.cacert = Some(tls_dir.join("ca.pem"));
            client_args.server_name = Some("localhost".into());
        }
        let mut report = match &ns {
            None => measure(&server.addr, &client_args, args.mode == "stream")?,
            Some(n) => {
                let mut c = crate::netns::Netns::exec(&n.client, &exe);
                c.args(client_args.to_argv())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped());
                let child = c.spawn()?;
                crate::netns::track(child.id());
                let out = child.wait_with_output()?;
                if !out.status.success() {
                    bail!(
                        "the clients failed: {}",
                        String::from_utf8_lossy(&out.stderr).trim()
                    );
                }
                serde_json::from_slice::<OrdersReport>(&out.stdout)
                    .map_err(|e| anyhow!("cannot read the clients' report: {e}"))?
            }
        };
        let cpu = server.cpu();
        report.server_cpu_us_per_order =
            Some(cpu.as_secs_f64() * 1e6 / report.orders.max(1) as f64);
        report.netem_delay_us = args.netns.map(|d| d.as_micros() as u64);
        report.delay_by = match (&ns, &link) {
            (Some(_), Some(_)) => Some("volley lab link".into()),
            (Some(_), None) if args.netns.is_some_and(|d| !d.is_zero()) => Some("netem".into()),
            _ => None,
        };
        Ok(report)
    })();
    if let Some(l) = link.as_mut() {
        l.stop();
    }
    server.stop();
    let _ = std::fs::remove_dir_all(&tls_dir);
    drop(ns);
    result
}

impl OrdersArgs {
    /// The same run, against `addr`, printing JSON (for the child in the client namespace).
    fn clone_for_child(&self, addr: &str) -> OrdersArgs {
        OrdersArgs {
            addr: Some(addr.to_owned()),
            tls: false,
            netns: None,
            json: true,
            cacert: self.cacert.clone(),
            server_name: self.server_name.clone(),
            mode: self.mode.clone(),
            clients: self.clients,
            count: self.count,
            window: self.window,
            cpus: self.cpus,
            server_threads: self.server_threads,
        }
    }

    fn to_argv(&self) -> Vec<String> {
        let mut v: Vec<String> = vec!["lab".into(), "orders".into(), "--json".into()];
        let mut kv = |k: &str, val: String| {
            v.push(k.into());
            v.push(val);
        };
        kv("--addr", self.addr.clone().unwrap_or_default());
        kv("--mode", self.mode.clone());
        kv("--clients", self.clients.to_string());
        kv("--count", self.count.to_string());
        kv("--window", self.window.to_string());
        if let Some(c) = &self.cacert {
            kv("--cacert", c.display().to_string());
        }
        if let Some(n) = &self.server_name {
            kv("--server-name", n.clone());
        }
        if let Some(c) = self.cpus {
            kv("--cpus", c.to_string());
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use std::{path::PathBuf, time::Duration};

    use super::super::tests::parse;

    #[test]
    fn the_child_s_argv_parses_back_to_the_same_run_against_the_given_address() {
        let args = parse(&[
            "--tls",
            "--netns",
            "1ms",
            "--server-threads",
            "3",
            "--mode",
            "unary",
            "--clients",
            "3",
            "--count",
            "30",
            "--window",
            "4",
            "--cacert",
            "/tmp/ca.pem",
            "--server-name",
            "localhost",
            "--cpus",
            "2",
        ]);
        assert_eq!(args.netns, Some(Duration::from_millis(1)));
        let child = args.clone_for_child("10.0.0.1:5000");
        let argv = child.to_argv();
        assert_eq!(argv[..3], ["lab", "orders", "--json"]);
        let back = parse(&argv[2..]);
        assert_eq!(back.addr.as_deref(), Some("10.0.0.1:5000"));
        assert!(back.json && !back.tls && back.netns.is_none());
        assert_eq!(back.mode, "unary");
        assert_eq!((back.clients, back.count, back.window), (3, 30, 4));
        assert_eq!(back.cacert, Some(PathBuf::from("/tmp/ca.pem")));
        assert_eq!(back.server_name.as_deref(), Some("localhost"));
        assert_eq!(back.cpus, Some(2));
        // Without the optional flags, none is passed.
        let bare = parse::<&str>(&[]).clone_for_child("h:1").to_argv();
        assert!(
            !bare
                .iter()
                .any(|a| ["--cacert", "--server-name", "--cpus"].contains(&a.as_str())),
            "{bare:?}"
        );
    }
}
