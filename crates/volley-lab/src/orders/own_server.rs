//! `volley lab orders` without `--addr`: its own `volley serve` process (TLS with a certificate made
//! for the run; in a network namespace, the clients in another, with `--netns`), whose CPU time
//! joins the report. A run split into groups (`groups`) starts a server, and a relay, per group.

use std::process::Command;

use anyhow::Result;

use super::{OrdersArgs, OrdersReport, groups, measure};
use crate::{child::Child, netns::Netns};

/// Starts `volley serve` (in the server namespace with --netns), runs the clients (in the client
/// namespace with --netns, as a child `volley lab orders`), stops the server, removes the namespaces.
/// When the clients need more than one process, each group gets a server (and relay) of its own.
pub(super) fn with_own_server(args: &OrdersArgs, signals: crate::Signals) -> Result<OrdersReport> {
    let exe = std::env::current_exe()?;
    let ns = args.netns.map(|d| Netns::create(d, signals)).transpose()?;
    let host = if ns.is_some() {
        crate::netns::SERVER_IP
    } else {
        "127.0.0.1"
    };
    // Without netem, a relay in the clients' namespace adds the delay on the way to the server:
    // two descriptors per client there.
    let relay = ns.as_ref().and_then(|n| n.link_delay.map(|d| (n, d)));
    let shares = groups::split(
        args.clients,
        args.count,
        groups::groups_for(args, if relay.is_some() { 2 } else { 1 }),
    );
    let tls_dir = std::env::temp_dir().join(format!("volley-orders-tls-{}", std::process::id()));
    // One certificate for every group's server, made here.
    let tls = args
        .tls
        .then(|| volley_server::tls::generate_self_signed(&tls_dir))
        .transpose()?;
    // Children stop (SIGTERM) when dropped, so an error below leaves none running.
    let mut servers = Vec::with_capacity(shares.len());
    let mut links = Vec::new();
    for _ in &shares {
        let mut server = match &ns {
            Some(n) => Netns::exec(&n.server, &exe),
            None => Command::new(&exe),
        };
        server.args(["serve", "--addr", &format!("{host}:0"), "--threads"]);
        server.arg(args.server_threads.to_string());
        if let Some(files) = &tls {
            server
                .arg("--tls-cert")
                .arg(&files.cert)
                .arg("--tls-key")
                .arg(&files.key);
        }
        let server = Child::start(server)?;
        if let Some((n, delay)) = relay {
            let mut c = Netns::exec(&n.client, &exe);
            c.args([
                "lab",
                "link",
                "--listen",
                "127.0.0.1:0",
                "--to",
                &server.addr,
            ])
            .args(["--delay", &format!("{}us", delay.as_micros())]);
            links.push(Child::start(c)?);
        }
        servers.push(server);
    }
    let result = (|| {
        let to: Vec<&str> = if links.is_empty() { &servers } else { &links }
            .iter()
            .map(|c| c.addr.as_str())
            .collect();
        let mut client_args = args.clone_for_child(to[0]);
        if let Some(files) = &tls {
            client_args.cacert = Some(files.ca.clone());
            client_args.server_name = Some("localhost".into());
        }
        let mut report = match &ns {
            None if shares.len() == 1 => measure(to[0], &client_args, args.mode == "stream")?,
            None => groups::run_children(&exe, None, &client_args, &shares, &to)?,
            Some(n) => groups::run_children(&exe, Some(&n.client), &client_args, &shares, &to)?,
        };
        let cpu: std::time::Duration = servers.iter().map(Child::cpu).sum();
        report.server_cpu_us_per_order =
            Some(cpu.as_secs_f64() * 1e6 / report.orders.max(1) as f64);
        report.netem_delay_us = args.netns.map(|d| d.as_micros() as u64);
        report.delay_by = match (&ns, links.is_empty()) {
            (Some(_), false) => Some("volley lab link".into()),
            (Some(_), true) if args.netns.is_some_and(|d| !d.is_zero()) => Some("netem".into()),
            _ => None,
        };
        Ok(report)
    })();
    for c in links.iter_mut().chain(servers.iter_mut()) {
        c.stop();
    }
    let _ = std::fs::remove_dir_all(&tls_dir);
    drop(ns);
    result
}

impl OrdersArgs {
    /// The same run, against `addr`, printing JSON (for the child in the client namespace).
    pub(super) fn clone_for_child(&self, addr: &str) -> OrdersArgs {
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
            processes: None,
            start_at: self.start_at,
        }
    }

    pub(super) fn to_argv(&self) -> Vec<String> {
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
        if let Some(ms) = self.start_at {
            kv("--start-at", ms.to_string());
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
        // A group's child carries the agreed start; a child never splits again.
        let mut group = args.clone_for_child("h:1");
        group.start_at = Some(1_700_000_000_000);
        let back = parse(&group.to_argv()[2..]);
        assert_eq!(back.start_at, Some(1_700_000_000_000));
        assert_eq!(back.processes, None);
        // Without the optional flags, none is passed.
        let bare = parse::<&str>(&[]).clone_for_child("h:1").to_argv();
        assert!(
            !bare.iter().any(
                |a| ["--cacert", "--server-name", "--cpus", "--start-at"].contains(&a.as_str())
            ),
            "{bare:?}"
        );
    }
}
