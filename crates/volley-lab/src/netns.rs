//! Two network namespaces on this host joined by a veth pair, with `tc netem` delay on both ends:
//! "server to server" on one machine. Built with `ip` and `tc` (iproute2); needs root or
//! CAP_NET_ADMIN. Everything it creates is named after this process (`vly<pid>a`, `vly<pid>b`)
//! and removed when the [`Netns`] is dropped, on SIGINT/SIGTERM (a watcher thread), and, for
//! leftovers of a process that was killed outright, by the next run.

use std::{
    process::{Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use anyhow::{Result, bail};

/// Processes started inside the namespaces; a signal stops them before the namespaces go (a
/// process keeps a deleted namespace alive).
static CHILDREN: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

/// Registers a process running inside one of the namespaces.
pub fn track(pid: u32) {
    CHILDREN.lock().unwrap().push(pid);
}

/// The reason given when the kernel cannot delay packets.
pub const NO_NETEM: &str = "tc netem is not available in this kernel (no sch_netem)";

/// The server side's address.
pub const SERVER_IP: &str = "10.201.0.1";
/// The client side's address.
pub const CLIENT_IP: &str = "10.201.0.2";

/// The two namespaces; removed on drop.
pub struct Netns {
    /// The server's namespace.
    pub server: String,
    /// The clients' namespace.
    pub client: String,
    /// The delay each way still to be added by a `volley lab link` relay in the clients' namespace,
    /// when the kernel has no netem to add it on the veth pair.
    pub link_delay: Option<Duration>,
    cleaned: Arc<AtomicBool>,
}

fn run(args: &[&str]) -> Result<()> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| anyhow::anyhow!("cannot run {}: {e}", args[0]))?;
    if !out.status.success() {
        bail!(
            "`{}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Why namespaces cannot be made here, if they cannot (not root, no iproute2, no netem).
pub fn unavailable() -> Option<String> {
    // /proc/self/status carries the effective capabilities.
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let cap_eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    const CAP_NET_ADMIN: u64 = 1 << 12;
    if cap_eff & CAP_NET_ADMIN == 0 {
        return Some("network namespaces need root or CAP_NET_ADMIN".into());
    }
    for tool in ["ip", "tc"] {
        let found = Command::new(tool)
            .arg("-V")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok();
        if !found {
            return Some(format!("`{tool}` (iproute2) is not installed"));
        }
    }
    None
}

fn remove(name: &str) {
    let _ = Command::new("ip")
        .args(["netns", "del", name])
        .stderr(Stdio::null())
        .status();
}

/// Removes namespaces left by volley processes that no longer exist.
fn remove_stale() {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
        return;
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        let Some(pid) = name
            .strip_prefix("vly")
            .and_then(|r| r.strip_suffix(['a', 'b']))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            remove(name);
        }
    }
}

impl Netns {
    /// Creates both namespaces, the veth pair between them and a netem `delay` on each end (so a
    /// round trip gains twice `delay`); without netem, leaves the delay to a `volley lab link` relay
    /// ([`Netns::link_delay`]).
    /// A signal (`signals`) stops the processes started inside and removes the namespaces.
    pub fn create(delay: Duration, signals: crate::Signals) -> Result<Netns> {
        if let Some(why) = unavailable() {
            bail!("{why}");
        }
        remove_stale();
        let pid = std::process::id();
        let mut ns = Netns {
            server: format!("vly{pid}a"),
            client: format!("vly{pid}b"),
            link_delay: None,
            cleaned: Arc::new(AtomicBool::new(false)),
        };
        ns.watch_signals(signals);
        let (a, b) = (ns.server.clone(), ns.client.clone());
        let (a, b) = (a.as_str(), b.as_str());
        run(&["ip", "netns", "add", a])?;
        run(&["ip", "netns", "add", b])?;
        run(&[
            "ip", "link", "add", a, "netns", a, "type", "veth", "peer", "name", b, "netns", b,
        ])?;
        for (n, dev, ip) in [(a, a, SERVER_IP), (b, b, CLIENT_IP)] {
            run(&[
                "ip",
                "-n",
                n,
                "addr",
                "add",
                &format!("{ip}/24"),
                "dev",
                dev,
            ])?;
            run(&["ip", "-n", n, "link", "set", dev, "up"])?;
            run(&["ip", "-n", n, "link", "set", "lo", "up"])?;
            if !delay.is_zero() && ns.link_delay.is_none() {
                let d = format!("{}us", delay.as_micros());
                if let Err(e) = run(&[
                    "ip", "netns", "exec", n, "tc", "qdisc", "add", "dev", dev, "root", "netem",
                    "delay", &d,
                ]) {
                    if !e.to_string().contains("qdisc kind is unknown") {
                        return Err(e);
                    }
                    tracing::info!(
                        "{NO_NETEM}: delaying by {delay:?} each way with volley lab link"
                    );
                    ns.link_delay = Some(delay);
                }
            }
        }
        Ok(ns)
    }

    /// `cmd` run inside namespace `ns`.
    pub fn exec(ns: &str, program: &std::path::Path) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns]).arg(program);
        c
    }

    fn watch_signals(&self, signals: crate::Signals) {
        let (a, b, cleaned) = (
            self.server.clone(),
            self.client.clone(),
            self.cleaned.clone(),
        );
        std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            let which = rt.block_on(signals());
            for pid in CHILDREN.lock().unwrap().iter() {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
            }
            std::thread::sleep(Duration::from_millis(50));
            if !cleaned.swap(true, Ordering::SeqCst) {
                remove(&a);
                remove(&b);
            }
            eprintln!("volley: {which}: removed network namespaces {a} and {b}");
            std::process::exit(130);
        });
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if !self.cleaned.swap(true, Ordering::SeqCst) {
            remove(&self.server);
            remove(&self.client);
        }
    }
}

/// True when a namespace of that name exists.
pub fn exists(name: &str) -> bool {
    Command::new("ip")
        .args(["netns", "list"])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l.split_whitespace().next() == Some(name))
        })
        .unwrap_or(false)
}
