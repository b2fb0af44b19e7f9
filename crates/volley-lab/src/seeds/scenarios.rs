//! The scenarios, one per seed: the seed's command, rerun with `volley bench`, `volley lab
//! gateway` or `volley lab orders`, and the seed's published figure beside each case.

use anyhow::Result;

use super::{
    row::{Ctx, Row, Scenario},
    runs::{bench_row, s, steady},
};

pub(super) fn all() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "users",
            seed: "seed 000: api.Users Get and List under ghz",
            targetable: true,
            run: users,
        },
        Scenario {
            name: "http-vs-grpc",
            seed: "seed 001: HTTP vs gRPC on one server",
            targetable: false,
            run: http_vs_grpc,
        },
        Scenario {
            name: "gateway",
            seed: "seed 002: gateway connection strategies",
            targetable: false,
            run: gateway,
        },
        Scenario {
            name: "greeter",
            seed: "seed 003: helloworld.Greeter under ghz",
            targetable: true,
            run: greeter,
        },
        Scenario {
            name: "orders",
            seed: "seed 004: orders, unary vs stream, TLS, namespaces",
            targetable: true,
            run: super::orders::orders,
        },
    ]
}

/// The server to load: `--target`, or a fresh `volley serve` kept alive by the returned guard.
fn server(ctx: &Ctx, extra: &[&str]) -> Result<(String, Option<crate::child::Child>)> {
    match &ctx.target {
        Some(t) => Ok((t.clone(), None)),
        None => {
            let c = ctx.serve(extra)?;
            Ok((c.addr.clone(), Some(c)))
        }
    }
}

fn users(ctx: &Ctx) -> Result<Vec<Row>> {
    let (addr, _guard) = server(ctx, &[])?;
    // Seed 000's requests/s for Get and List at each (c, n).
    let cases: [(u64, u64, f64, f64); 3] = [
        (100, 1000, 23466.69, 11374.92),
        (250, 10000, 27808.01, 13325.76),
        (500, 10000, 28125.46, 13197.18),
    ];
    let mut rows = Vec::new();
    for (c, n, seed_get, seed_list) in cases {
        let n = if ctx.quick { n / 10 } else { n };
        for (method, data, seed) in [
            ("api.Users.Get", r#"{"id":228}"#, seed_get),
            ("api.Users.List", "{}", seed_list),
        ] {
            rows.push(steady(ctx, || {
                let r = ctx.volley_json(&s(&[
                    "bench",
                    "--insecure",
                    "--call",
                    method,
                    "-d",
                    data,
                    "-c",
                    &c.to_string(),
                    "-n",
                    &n.to_string(),
                    "-O",
                    "json",
                    &addr,
                ]))?;
                Ok(bench_row(
                    "users",
                    format!("{method} c={c} n={n}"),
                    Some(seed),
                    &r,
                ))
            })?);
        }
    }
    Ok(rows)
}

fn http_vs_grpc(ctx: &Ctx) -> Result<Vec<Row>> {
    let guard = ctx.serve(&[])?;
    let z = if ctx.quick { "1s" } else { "10s" };
    let http = ctx.volley_json(&s(&[
        "bench",
        "-c",
        "100",
        "-z",
        z,
        "-O",
        "json",
        &format!("http://{}/", guard.addr),
    ]))?;
    let grpc = ctx.volley_json(&s(&[
        "bench",
        "--insecure",
        "--call",
        "grpc.hi/sayHello",
        "-d",
        r#"{"name":"volley"}"#,
        "-z",
        z,
        "-c",
        "100",
        "--connections",
        "6",
        "-O",
        "json",
        &guard.addr,
    ]))?;
    Ok(vec![
        bench_row(
            "http-vs-grpc",
            format!("HTTP GET / c=100 {z}"),
            Some(86323.13),
            &http,
        ),
        bench_row(
            "http-vs-grpc",
            format!("gRPC grpc.hi/sayHello c=100 connections=6 {z}"),
            Some(25995.00),
            &grpc,
        ),
    ])
}

fn gateway(ctx: &Ctx) -> Result<Vec<Row>> {
    let z = if ctx.quick { "1s" } else { "10s" };
    // Seed 002's requests/s: (strategy, backend delay) -> figure. Its "pool with expansion"
    // sits beside our `expanding`.
    let seed = |strategy: &str, delay: &str| match (strategy, delay) {
        ("per-request", "0") => Some(3542.31),
        ("per-request", _) => Some(946.72),
        ("single", "0") => Some(71134.55),
        ("single", _) => Some(978.32),
        ("expanding", "0") => Some(8372.39),
        ("expanding", _) => Some(977.39),
        _ => None,
    };
    let mut rows = Vec::new();
    for delay in ["0", "200ms"] {
        let backend = ctx.serve(&["--threads", "1", "--delay", delay])?;
        for strategy in ["per-request", "single", "expanding"] {
            let mut cmd = std::process::Command::new(&ctx.exe);
            cmd.args([
                "lab",
                "gateway",
                "--backend",
                &backend.addr,
                "--strategy",
                strategy,
                "--addr",
                "127.0.0.1:0",
                "--threads",
                "1",
            ]);
            let gw = crate::child::Child::start(cmd)?;
            let r = ctx.volley_json(&s(&[
                "bench",
                "-c",
                "200",
                "-z",
                z,
                "-O",
                "json",
                &format!("http://{}/performance", gw.addr),
            ]))?;
            rows.push(bench_row(
                "gateway",
                format!("{strategy}, backend delay {delay}, c=200 {z}"),
                seed(strategy, delay),
                &r,
            ));
        }
    }
    Ok(rows)
}

fn greeter(ctx: &Ctx) -> Result<Vec<Row>> {
    let (addr, _guard) = server(ctx, &[])?;
    let n = if ctx.quick { "1000" } else { "10000" };
    let row = steady(ctx, || greeter_once(ctx, &addr, n))?;
    Ok(vec![row])
}

fn greeter_once(ctx: &Ctx, addr: &str, n: &str) -> Result<Row> {
    let r = ctx.volley_json(&s(&[
        "bench",
        "--insecure",
        "--call",
        "helloworld.Greeter/SayHello",
        "-d",
        r#"{"name": "grpcity"}"#,
        "-n",
        n,
        "-c",
        "100",
        "-O",
        "json",
        addr,
    ]))?;
    // Seed 003: gRPCity 4942.17 requests/s (grpc-js: 3936.49).
    Ok(bench_row(
        "greeter",
        format!("helloworld.Greeter/SayHello n={n} c=100"),
        Some(4942.17),
        &r,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_scenario_per_seed_in_the_seeds_order() {
        let all = all();
        let names: Vec<&str> = all.iter().map(|s| s.name).collect();
        // The names `--only` takes, as its help lists them.
        assert_eq!(
            names,
            ["users", "http-vs-grpc", "gateway", "greeter", "orders"]
        );
        for (i, s) in all.iter().enumerate() {
            assert!(s.seed.starts_with(&format!("seed 00{i}: ")), "{}", s.seed);
        }
        // Only the scenarios on the seed protos run against another server.
        let targetable: Vec<&str> = all
            .iter()
            .filter(|s| s.targetable)
            .map(|s| s.name)
            .collect();
        assert_eq!(targetable, ["users", "greeter", "orders"]);
    }
}
