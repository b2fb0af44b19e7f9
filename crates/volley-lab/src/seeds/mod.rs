//! `volley lab`: reruns the seeds' experiments against volley's own server (or `--target`) and
//! lays our figures beside the published ones. Each scenario drives child `volley` processes
//! (`serve`, `lab gateway`, `bench -O json`, `lab orders --json`) so that every figure comes from
//! the same code a user runs by hand; `report` writes report.md, report.html and results.json.

mod cells;
mod charts;
mod machine;
mod orders;
mod report;
mod row;
mod runs;
mod scenarios;
mod takeaway;

/// `volley lab`'s flags (every seed experiment rerun).
#[derive(Debug, Args)]
pub struct LabArgs {
    /// Run only this scenario (repeatable): users, http-vs-grpc, gateway, greeter, orders.
    #[arg(long, value_name = "NAME")]
    pub only: Vec<String>,

    /// Small counts and short runs (for CI and a first look).
    #[arg(long)]
    pub quick: bool,

    /// Where the reports go.
    #[arg(long, default_value = "volley-lab")]
    pub out: PathBuf,

    /// Load this server (HOST:PORT, plaintext) instead of volley's own, for the scenarios on the
    /// seed protos (users, greeter, orders).
    #[arg(long, value_name = "HOST:PORT")]
    pub target: Option<String>,
}

use std::{
    io::Write,
    path::{Path, PathBuf},
};

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;

pub use row::{Ctx, Row, Scenario};

/// Every scenario, in the seeds' order.
pub fn scenarios() -> Vec<Scenario> {
    scenarios::all()
}

/// Runs the lab.
pub fn run(args: LabArgs) -> Result<()> {
    let all = scenarios();
    let names: Vec<&str> = all.iter().map(|s| s.name).collect();
    for n in &args.only {
        if !names.contains(&n.as_str()) {
            bail!(
                "unknown scenario {n:?}: the scenarios are {}",
                names.join(", ")
            );
        }
    }
    let out = args.out.clone();
    prepare_out(&out)?;
    if let Some(t) = &args.target {
        reachable(t)?;
    }
    let ctx = Ctx {
        exe: std::env::current_exe()?,
        quick: args.quick,
        target: args.target.clone(),
        machine: machine::Machine::this(),
    };
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for s in all
        .iter()
        .filter(|s| args.only.is_empty() || args.only.iter().any(|o| o == s.name))
    {
        if ctx.target.is_some() && !s.targetable {
            skipped.push((s.name, "needs volley's own server".to_owned()));
            continue;
        }
        eprint!("volley lab: {} ({}) ... ", s.name, s.seed);
        let _ = std::io::stderr().flush();
        let t = std::time::Instant::now();
        match (s.run)(&ctx) {
            Ok(r) => {
                eprintln!("{} case(s), {:.1} s", r.len(), t.elapsed().as_secs_f64());
                rows.extend(r);
            }
            Err(e) => {
                eprintln!("failed: {e:#}");
                skipped.push((s.name, format!("failed: {e:#}")));
            }
        }
    }
    report::write_all(&out, &rows, &skipped, &ctx)?;
    print!("{}", report::summary(&rows, &skipped));
    eprintln!(
        "volley lab: reports in {} (report.md, report.html, results.json)",
        out.display()
    );
    if skipped.iter().any(|(_, why)| why.starts_with("failed")) {
        bail!("a scenario failed (see above)");
    }
    Ok(())
}

/// Creates `--out` and proves it writable before any load runs.
fn prepare_out(out: &Path) -> Result<()> {
    std::fs::create_dir_all(out)
        .with_context(|| format!("--out {}: cannot create the directory", out.display()))?;
    let probe = out.join(".volley-lab-probe");
    std::fs::write(&probe, b"")
        .with_context(|| format!("--out {}: cannot write there", out.display()))?;
    let _ = std::fs::remove_file(probe);
    Ok(())
}

/// Fails fast when `--target` does not accept connections.
fn reachable(target: &str) -> Result<()> {
    use std::net::ToSocketAddrs;
    let addrs: Vec<_> = target
        .to_socket_addrs()
        .with_context(|| format!("--target {target}: cannot resolve"))?
        .collect();
    let mut last = None;
    for a in addrs {
        match std::net::TcpStream::connect_timeout(&a, std::time::Duration::from_secs(3)) {
            Ok(_) => return Ok(()),
            Err(e) => last = Some(e),
        }
    }
    Err(anyhow!(
        "--target {target}: cannot connect: {}",
        last.map_or_else(|| "no address".to_owned(), |e| e.to_string())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What scenarios share, for tests: nothing is run with it.
    pub(super) fn ctx(quick: bool, target: Option<&str>) -> Ctx {
        Ctx {
            exe: "volley".into(),
            quick,
            target: target.map(str::to_owned),
            machine: machine::Machine {
                cpu: "Test CPU".into(),
                cores: 2,
            },
        }
    }

    #[test]
    fn an_unknown_scenario_is_refused_before_anything_is_made() {
        let out = std::env::temp_dir().join(format!("volley-lab-only-{}", std::process::id()));
        let e = run(LabArgs {
            only: vec!["users".into(), "nope".into()],
            quick: true,
            out: out.clone(),
            target: None,
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown scenario \"nope\": the scenarios are users, http-vs-grpc, gateway, \
             greeter, orders"
        );
        assert!(!out.exists());
    }

    #[test]
    fn the_output_folder_is_made_and_proved_writable() {
        let base = std::env::temp_dir().join(format!("volley-lab-out-{}", std::process::id()));
        let out = base.join("a/b");
        prepare_out(&out).unwrap();
        assert!(out.is_dir());
        // The probe is gone again.
        assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0);
        // A file where the folder should be.
        std::fs::write(base.join("file"), "").unwrap();
        let e = prepare_out(&base.join("file")).unwrap_err();
        assert!(
            e.to_string().ends_with("cannot create the directory"),
            "{e}"
        );
        std::fs::remove_dir_all(base).unwrap();
    }

    #[test]
    fn a_target_must_accept_connections() {
        let open = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = open.local_addr().unwrap().to_string();
        reachable(&addr).unwrap();
        drop(open);
        let e = reachable(&addr).unwrap_err();
        assert!(
            e.to_string()
                .starts_with(&format!("--target {addr}: cannot connect: ")),
            "{e}"
        );
        let e = reachable("no port here").unwrap_err();
        assert_eq!(e.to_string(), "--target no port here: cannot resolve");
    }
}
