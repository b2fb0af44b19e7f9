//! The report contract without ghz installed: volley's reports of a known run, in every format,
//! against ghz 0.120.0's reports of the same command (`tests/fixtures/ghz-0.120.0`, recorded with
//! `ghz --insecure --proto proto/api/users.proto --call api.Users.Get -d '{"id":228}' -c2 -n6
//! --name 'My Run' --tags '{"env":"ci"}' -O FORMAT 127.0.0.1:45463`). The options block is
//! resolved from those flags; the figures come from six recorded calls. Live comparisons with ghz
//! itself run in `crates/volley/tests/bench.rs`.

use std::{path::PathBuf, time::Duration};

use clap::Parser;
use serde_json::{Map, Value};
use volley_bench::{
    Format, Outcome, Plan, Report, ReportOptions,
    plan::{BenchArgs, options::MAX_DETAILS, resolve},
    recorder::Recorder,
    report::format::write,
};
use volley_testkit::report_shape::{FORMATS, assert_same_layout, assert_valid_report};

#[derive(Parser)]
#[command(version, disable_version_flag = true)]
struct Cmd {
    #[command(flatten)]
    bench: BenchArgs,
}

/// The fixture's host, as ghz echoed it.
const HOST: &str = "127.0.0.1:45463";

fn fixture_plan(name: bool) -> Plan {
    let mut argv = vec![
        "bench",
        "--insecure",
        "--proto",
        "proto/api/users.proto",
        "--call",
        "api.Users.Get",
        "-d",
        r#"{"id":228}"#,
        "-c2",
        "-n6",
        // ghz echoes its GOMAXPROCS; the fixtures were recorded on two cores.
        "--cpus",
        "2",
        "--tags",
        r#"{"env":"ci"}"#,
        HOST,
    ];
    if name {
        argv.extend(["--name", "My Run"]);
    }
    resolve(&Cmd::parse_from(argv).bench, &Map::new()).expect("the fixture's flags resolve")
}

/// Six successful calls spread over 9 ms, as in the fixtures' run.
fn report(plan: &Plan) -> Report {
    let mut rec = Recorder::new(false, 0, MAX_DETAILS);
    let start = 1_795_306_597_000_000_000i64;
    for (i, us) in [150u64, 1_800, 2_700, 3_100, 3_900, 4_400]
        .into_iter()
        .enumerate()
    {
        let wall = start + i as i64 * 1_000_000;
        rec.record(i as u64, wall, us * 1000, us * 1000, Ok(()));
        rec.note_done(0, 12);
    }
    let outcome = Outcome::recorded(rec, Duration::from_millis(9), start);
    Report::new(
        outcome,
        ReportOptions::from_plan(plan, HOST),
        plan.tags.clone(),
    )
}

fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/ghz-0.120.0")
        .join(format!("{name}.out"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn written(report: &Report, format: &str) -> String {
    let format = Format::parse(format).unwrap();
    let mut out = Vec::new();
    write(&mut out, format, report).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn every_format_has_ghz_layout() {
    let named = report(&fixture_plan(true));
    for format in FORMATS {
        assert_same_layout(format, &fixture(format), &written(&named, format));
    }
    let unnamed = report(&fixture_plan(false));
    assert_same_layout(
        "summary",
        &fixture("summary-noname"),
        &written(&unnamed, "summary"),
    );
}

#[test]
fn the_options_block_echoes_the_flags_as_ghz_does() {
    let report = report(&fixture_plan(true));
    let v: Value = serde_json::from_str(&written(&report, "json")).unwrap();
    let g: Value = serde_json::from_str(&fixture("json")).unwrap();
    assert_eq!(v["options"], g["options"]);
    assert_eq!(v["tags"], g["tags"]);
    assert_eq!(v["name"], g["name"]);
}

#[test]
fn the_schema_describes_ghz_reports_and_ours() {
    for name in ["json", "pretty"] {
        let ghz: Value = serde_json::from_str(&fixture(name)).unwrap();
        assert_valid_report(&ghz);
    }
    let ours: Value = serde_json::from_str(&written(&report(&fixture_plan(true)), "json")).unwrap();
    assert_valid_report(&ours);
    assert!(ours["volley"]["latencyTail"].is_array());
}

#[test]
fn the_schema_refuses_what_is_not_a_report() {
    let mut ours: Value =
        serde_json::from_str(&written(&report(&fixture_plan(true)), "json")).unwrap();
    ours["endReason"] = "finished".into();
    let refused = std::panic::catch_unwind(|| assert_valid_report(&ours));
    assert!(refused.is_err(), "an unknown endReason passed the schema");
}

#[test]
fn the_layout_check_catches_a_changed_report() {
    let report = report(&fixture_plan(true));
    let cases = [
        ("summary", "Requests/sec", "Requests per second"),
        ("csv", "duration (ms)", "duration"),
        ("json", "\"endReason\"", "\"end\""),
        ("prometheus", "ghz_run_count", "volley_run_count"),
    ];
    for (format, from, to) in cases {
        let changed = written(&report, format).replacen(from, to, 1);
        let caught = std::panic::catch_unwind(|| {
            assert_same_layout(format, &fixture(format), &changed);
        });
        assert!(caught.is_err(), "{format}: {from:?} -> {to:?} passed");
    }
}
