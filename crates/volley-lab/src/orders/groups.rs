//! Runs larger than one process's open-file limit (seed 004's 10,000 and 20,000 clients across
//! namespaces, where a relay holds two descriptors per client): the clients split into groups,
//! each a child `volley lab orders` (with, when volley starts the server, a server and a relay of
//! its own). Every child dials, then waits for one agreed instant, so the groups send their first
//! orders together; their reports merge exactly, histograms included.

use std::{
    path::Path,
    process::{Command, Stdio},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use anyhow::{Result, anyhow, bail};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use volley_bench::results::{decode, encode};

use super::{OrdersArgs, OrdersReport, Quantiles};

/// One group's part of the run: its clients and its orders.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Share {
    /// Clients (connections) of this group.
    pub clients: usize,
    /// Orders in all of this group (its children's `--count`).
    pub count: u64,
}

/// `clients` and `count` split over `groups`, as evenly as they go; every group has at least one
/// client and one order (so fewer groups when there are fewer of either).
pub(super) fn split(clients: usize, count: u64, groups: usize) -> Vec<Share> {
    let n = groups.clamp(1, clients.max(1)).min(count.max(1) as usize);
    (0..n)
        .map(|i| Share {
            clients: clients / n + usize::from(i < clients % n),
            count: count / n as u64 + u64::from((i as u64) < count % n as u64),
        })
        .collect()
}

/// How many groups a run takes: as few as the open-file limit allows at `per_client` descriptors
/// per client in the busiest process, and at least `--processes`. A group's child never splits
/// again.
pub(super) fn groups_for(args: &OrdersArgs, per_client: u64) -> usize {
    if args.start_at.is_some() {
        return 1;
    }
    let needed = volley_server::fds::processes_for(args.clients as u64, per_client);
    (needed as usize).max(args.processes.unwrap_or(1))
}

/// A group's histograms, for the merge (HdrHistogram's V2 form in base64, as shard results carry
/// them).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrderHistograms {
    /// Client-to-server time, nanoseconds.
    pub client_to_server: String,
    /// Round trip per order, nanoseconds.
    pub round_trip: String,
}

impl OrderHistograms {
    /// The two histograms, encoded.
    pub(super) fn of(client_to_server: &Histogram<u64>, round_trip: &Histogram<u64>) -> Self {
        OrderHistograms {
            client_to_server: encode(client_to_server),
            round_trip: encode(round_trip),
        }
    }
}

/// The wait before the agreed start: time for every child to start and dial its clients
/// (measured here: two groups of 5,000 relayed clients dialled at once in 2.8 s, 0.55 ms a
/// client; 1 ms a client leaves room). A group that is late fails the run and says so.
fn start_margin(largest_group: usize) -> Duration {
    Duration::from_secs(2) + Duration::from_millis(1) * largest_group as u32
}

/// Runs each share's clients as a child `volley lab orders` against its address (inside the
/// clients' namespace `ns`, when given), every child starting at one instant after all have
/// dialled; their merged report. A single share starts at once and its report is the run's.
pub(super) fn run_children(
    exe: &Path,
    ns: Option<&str>,
    args: &OrdersArgs,
    shares: &[Share],
    addrs: &[&str],
) -> Result<OrdersReport> {
    let largest = shares.iter().map(|s| s.clients).max().unwrap_or(1);
    let start = SystemTime::now() + start_margin(largest);
    let start_ms = (shares.len() > 1)
        .then(|| {
            start
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
        })
        .transpose()?;
    let mut children = Vec::with_capacity(shares.len());
    for (share, addr) in shares.iter().zip(addrs) {
        let mut child_args = args.clone_for_child(addr);
        child_args.clients = share.clients;
        child_args.count = share.count;
        child_args.start_at = start_ms;
        let mut c = match ns {
            Some(ns) => crate::netns::Netns::exec(ns, exe),
            None => Command::new(exe),
        };
        c.args(child_args.to_argv())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = c
            .spawn()
            .map_err(|e| anyhow!("cannot start a client group: {e}"))?;
        crate::netns::track(child.id());
        children.push(child);
    }
    let n = children.len();
    let mut reports = Vec::with_capacity(n);
    let mut failed = None;
    for (i, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output()?;
        if !out.status.success() {
            let said = String::from_utf8_lossy(&out.stderr);
            let why = if n == 1 {
                said.trim().to_owned()
            } else {
                let last = said.lines().last().unwrap_or("").trim();
                format!("client group {} of {n}: {last}", i + 1)
            };
            failed.get_or_insert(why);
            continue;
        }
        reports.push(
            serde_json::from_slice::<OrdersReport>(&out.stdout)
                .map_err(|e| anyhow!("cannot read the clients' report (group {}): {e}", i + 1))?,
        );
    }
    if let Some(f) = failed {
        bail!("the clients failed: {f}");
    }
    if n == 1 {
        return Ok(reports.remove(0));
    }
    merge(reports)
}

/// The groups' reports as one run: counts added, histograms merged, the elapsed time the longest
/// group's (every group started at the same instant), client CPU added.
pub(super) fn merge(reports: Vec<OrdersReport>) -> Result<OrdersReport> {
    let Some(first) = reports.first() else {
        bail!("no client group reported");
    };
    let (mode, tls) = (first.mode.clone(), first.tls);
    let mut client_to_server = Histogram::<u64>::new(3)?;
    let mut round_trip = Histogram::<u64>::new(3)?;
    let (mut clients, mut orders, mut cpu_us) = (0, 0, 0.0);
    let (mut elapsed, mut connect) = (0.0f64, 0.0f64);
    for (i, r) in reports.iter().enumerate() {
        let h = r
            .histograms
            .as_ref()
            .ok_or_else(|| anyhow!("client group {} sent no histograms", i + 1))?;
        decode(&h.client_to_server, "clientToServer", &mut client_to_server)?;
        decode(&h.round_trip, "roundTrip", &mut round_trip)?;
        clients += r.clients;
        orders += r.orders;
        cpu_us += r.client_cpu_us_per_order * r.orders as f64;
        elapsed = elapsed.max(r.elapsed_seconds);
        connect = connect.max(r.connect_seconds);
    }
    Ok(OrdersReport {
        mode,
        clients,
        orders,
        tls,
        processes: reports.len(),
        connect_seconds: connect,
        elapsed_seconds: elapsed,
        orders_per_second: orders as f64 / elapsed,
        client_to_server_us: Quantiles::of(&client_to_server),
        round_trip_us: Quantiles::of(&round_trip),
        client_cpu_us_per_order: cpu_us / orders.max(1) as f64,
        server_cpu_us_per_order: None,
        netem_delay_us: None,
        delay_by: None,
        histograms: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_and_orders_split_evenly_and_no_group_is_empty() {
        let s = split(20_000, 10_000, 3);
        assert_eq!(
            s,
            [
                Share {
                    clients: 6667,
                    count: 3334
                },
                Share {
                    clients: 6667,
                    count: 3333
                },
                Share {
                    clients: 6666,
                    count: 3333
                },
            ]
        );
        assert_eq!(s.iter().map(|s| s.clients).sum::<usize>(), 20_000);
        assert_eq!(s.iter().map(|s| s.count).sum::<u64>(), 10_000);
        // Fewer clients or orders than groups: fewer groups.
        assert_eq!(split(2, 100, 5).len(), 2);
        assert_eq!(split(100, 2, 5).len(), 2);
        assert_eq!(
            split(7, 7, 1),
            [Share {
                clients: 7,
                count: 7
            }]
        );
    }

    fn report(clients: usize, orders: u64, elapsed: f64, rt_ns: &[u64]) -> OrdersReport {
        let mut rt = Histogram::<u64>::new(3).unwrap();
        let mut cs = Histogram::<u64>::new(3).unwrap();
        for &ns in rt_ns {
            rt.record(ns).unwrap();
            cs.record(ns / 2).unwrap();
        }
        OrdersReport {
            mode: "unary".into(),
            clients,
            orders,
            tls: false,
            processes: 1,
            connect_seconds: elapsed / 10.0,
            elapsed_seconds: elapsed,
            orders_per_second: orders as f64 / elapsed,
            client_to_server_us: Quantiles::of(&cs),
            round_trip_us: Quantiles::of(&rt),
            client_cpu_us_per_order: 2.0,
            server_cpu_us_per_order: None,
            netem_delay_us: None,
            delay_by: None,
            histograms: Some(OrderHistograms::of(&cs, &rt)),
        }
    }

    #[test]
    fn groups_merge_from_their_histograms_not_their_quantiles() {
        // One group all fast, one all slow: the merged median is the slow one's, which no
        // average of the two medians would give.
        let fast = report(10, 40, 1.0, &[100; 40]);
        let slow = report(10, 60, 2.0, &[2_000; 60]);
        let m = merge(vec![fast, slow]).unwrap();
        assert_eq!((m.clients, m.orders, m.processes), (20, 100, 2));
        assert_eq!(m.elapsed_seconds, 2.0);
        assert_eq!(m.orders_per_second, 50.0);
        assert_eq!(m.connect_seconds, 0.2);
        assert_eq!(m.round_trip_us.p50, 2.0);
        assert_eq!(m.round_trip_us.max, 2.0);
        assert_eq!(m.client_to_server_us.p50, 1.0);
        assert_eq!(m.client_cpu_us_per_order, 2.0);
        assert!(m.histograms.is_none());
        // A group without histograms cannot be merged exactly: said, not guessed.
        let mut bare = report(1, 1, 1.0, &[5]);
        bare.histograms = None;
        let e = merge(vec![report(1, 1, 1.0, &[5]), bare]).unwrap_err();
        assert_eq!(e.to_string(), "client group 2 sent no histograms");
        assert_eq!(
            merge(vec![]).unwrap_err().to_string(),
            "no client group reported"
        );
    }
}
