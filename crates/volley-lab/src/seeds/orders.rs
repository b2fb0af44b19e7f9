//! Seed 004's order study in the lab: every run the seed printed (unary on one host, server to
//! server, bidi streams), rerun with `volley lab orders`, the seed's elapsed seconds and orders/s
//! beside ours.

use anyhow::Result;
use serde_json::Value;

use super::{
    row::{Ctx, Row},
    runs::{s, steady},
};

/// Where seed 004's clients ran: beside the server, or on another server (here: in another
/// network namespace, with a datacenter's delay).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    Localhost,
    ServerToServer,
}

/// A row of seed 004's tables: its command's --no-of-clients and --count, and the elapsed
/// seconds it printed.
struct SeedRun {
    mode: &'static str,
    place: Place,
    tls: bool,
    clients: u64,
    /// Orders in all (the seed's --count), or each client's with `each`.
    orders: u64,
    each: bool,
    seed_elapsed_s: Option<f64>,
    seed_rate: Option<f64>,
}

const fn unary(place: Place, clients: u64, orders: u64, seed_elapsed_s: f64) -> SeedRun {
    SeedRun {
        mode: "unary",
        place,
        tls: false,
        clients,
        orders,
        each: false,
        seed_elapsed_s: Some(seed_elapsed_s),
        seed_rate: Some(orders as f64 / seed_elapsed_s),
    }
}

/// Seed 004's runs, as it printed them, and two TLS runs of ours (the seed made certificates
/// but printed no TLS figure).
const SEED_004: [SeedRun; 13] = [
    unary(Place::Localhost, 1000, 1000, 0.2859),
    unary(Place::Localhost, 1000, 10_000, 2.7039),
    unary(Place::Localhost, 1000, 100_000, 27.5429),
    unary(Place::Localhost, 10_000, 100_000, 27.7686),
    unary(Place::ServerToServer, 1000, 1000, 1.4660),
    unary(Place::ServerToServer, 1000, 10_000, 17.7699),
    unary(Place::ServerToServer, 1000, 100_000, 166.9796),
    unary(Place::ServerToServer, 5000, 10_000, 14.2598),
    unary(Place::ServerToServer, 10_000, 10_000, 17.6165),
    unary(Place::ServerToServer, 20_000, 10_000, 17.2865),
    // 10,000 clients of 1000 orders each; it printed every client's 1000 in about 0.63 s, one
    // after another.
    SeedRun {
        mode: "stream",
        place: Place::Localhost,
        tls: false,
        clients: 10_000,
        orders: 1000,
        each: true,
        seed_elapsed_s: None,
        seed_rate: Some(1000.0 / 0.63),
    },
    SeedRun {
        mode: "unary",
        place: Place::Localhost,
        tls: true,
        clients: 1000,
        orders: 100_000,
        each: false,
        seed_elapsed_s: None,
        seed_rate: None,
    },
    SeedRun {
        mode: "stream",
        place: Place::Localhost,
        tls: true,
        clients: 1000,
        orders: 1000,
        each: true,
        seed_elapsed_s: None,
        seed_rate: None,
    },
];

/// The server-to-server delay: 250 us each way, a round trip of 0.5 ms (a datacenter's).
const SERVER_TO_SERVER_DELAY: &str = "250us";

pub(super) fn orders(ctx: &Ctx) -> Result<Vec<Row>> {
    // Server to server: clients and server in two network namespaces, the delay added by netem,
    // or by `volley lab link` where the kernel has no netem.
    let no_namespaces = match &ctx.target {
        Some(_) => Some("needs volley's own server".to_owned()),
        None => crate::netns::unavailable(),
    };
    let mut rows = Vec::new();
    for run in &SEED_004 {
        if run.tls && ctx.target.is_some() {
            continue;
        }
        // --quick: a tenth of the clients and of the orders.
        let scale = if ctx.quick { 10 } else { 1 };
        let clients = (run.clients / scale).max(10);
        let orders = run.orders / scale;
        let total = if run.each { clients * orders } else { orders };
        let mut case = format!(
            "{}, {clients} clients x {orders} orders{}{}",
            run.mode,
            if run.each { " each" } else { "" },
            if run.tls { ", TLS" } else { "" },
        );
        if run.place == Place::ServerToServer {
            case += ", server to server";
        }
        let mut notes = Vec::new();
        if run.mode == "stream" && run.seed_rate.is_some() {
            notes.push("the seed: 0.63 s per client's 1000");
        }
        if ctx.quick {
            notes.push("quick: the seed's counts / 10");
        }
        let seed = |row: Row| Row {
            case: if notes.is_empty() {
                row.case
            } else {
                format!("{} ({})", row.case, notes.join("; "))
            },
            seed: run.seed_rate,
            seed_elapsed_s: if ctx.quick { None } else { run.seed_elapsed_s },
            ..row
        };
        if let Some(why) = not_runnable(run.place, no_namespaces.as_deref()) {
            rows.push(seed(Row {
                scenario: "orders".into(),
                case,
                unit: "orders/s".into(),
                not_run: Some(why),
                ..Row::default()
            }));
            continue;
        }
        let row = steady(ctx, || {
            let mut a = s(&[
                "lab",
                "orders",
                "--json",
                "--mode",
                run.mode,
                "--clients",
                &clients.to_string(),
                "--count",
                &total.to_string(),
            ]);
            if let Some(t) = &ctx.target {
                a.extend(s(&["--addr", t]));
            }
            if run.tls {
                a.push("--tls".into());
            }
            if run.place == Place::ServerToServer {
                a.extend(s(&["--netns", SERVER_TO_SERVER_DELAY]));
            }
            let r = ctx.volley_json(&a)?;
            Ok(orders_row(case.clone(), &r))
        })?;
        rows.push(seed(row));
    }
    Ok(rows)
}

/// Why a run cannot be made here, if it cannot: server to server without namespaces. (More
/// clients than one process's open-file limit allows run in groups of processes.)
fn not_runnable(place: Place, no_namespaces: Option<&str>) -> Option<String> {
    no_namespaces
        .filter(|_| place == Place::ServerToServer)
        .map(|why| format!("server to server: {why}"))
}

/// A `volley lab orders --json` report as a row.
fn orders_row(mut case: String, r: &Value) -> Row {
    if let Some(by) = r["delayBy"].as_str() {
        case += &format!(
            ", two namespaces, {} us each way by {by}",
            r["netemDelayUs"].as_u64().unwrap_or(0)
        );
    }
    if let Some(n) = r["processes"].as_u64().filter(|&n| n > 1) {
        case += &format!(", in {n} process groups (the open-file limit)");
    }
    let ms = |k: &str| r["roundTripUs"][k].as_f64().unwrap_or(0.0) / 1000.0;
    Row {
        scenario: "orders".into(),
        case,
        unit: "orders/s".into(),
        ours: r["ordersPerSecond"].as_f64().unwrap_or(0.0),
        calls: r["orders"].as_u64().unwrap_or(0),
        p50_ms: ms("p50"),
        p99_ms: ms("p99"),
        percentiles: vec![(50.0, ms("p50")), (90.0, ms("p90")), (99.0, ms("p99"))],
        elapsed_s: r["elapsedSeconds"].as_f64().unwrap_or(0.0),
        runs: 1,
        ..Row::default()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_orders_report_becomes_a_row_naming_the_delay_and_what_added_it() {
        let r = json!({
            "orders": 10000, "ordersPerSecond": 40000.0, "elapsedSeconds": 0.25,
            "roundTripUs": {"p50": 500.0, "p90": 900.0, "p99": 1500.0},
            "netemDelayUs": 250, "delayBy": "volley lab link"
        });
        let row = orders_row("unary, 10 clients x 100 orders".into(), &r);
        assert_eq!(
            row.case,
            "unary, 10 clients x 100 orders, two namespaces, 250 us each way by volley lab link"
        );
        assert_eq!(
            (row.unit.as_str(), row.ours, row.calls),
            ("orders/s", 40000.0, 10000)
        );
        assert_eq!((row.p50_ms, row.p99_ms, row.elapsed_s), (0.5, 1.5, 0.25));
        assert_eq!(row.percentiles, [(50.0, 0.5), (90.0, 0.9), (99.0, 1.5)]);
        // On one host there is no delay to name.
        let local = orders_row("stream".into(), &json!({"orders": 1}));
        assert_eq!(local.case, "stream");
        // A run split over processes says so; one process says nothing.
        let split = orders_row("unary".into(), &json!({"orders": 1, "processes": 3}));
        assert_eq!(
            split.case,
            "unary, in 3 process groups (the open-file limit)"
        );
        let whole = orders_row("unary".into(), &json!({"orders": 1, "processes": 1}));
        assert_eq!(whole.case, "unary");
    }

    #[test]
    fn server_to_server_runs_need_namespaces() {
        assert_eq!(not_runnable(Place::Localhost, Some("no root")), None);
        assert_eq!(not_runnable(Place::ServerToServer, None), None);
        assert_eq!(
            not_runnable(Place::ServerToServer, Some("no root")).as_deref(),
            Some("server to server: no root")
        );
    }
}
