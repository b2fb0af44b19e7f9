//! `volley lab --quick`: every scenario runs with non-zero figures and no failed call, the three
//! reports are written, and the HTML report renders in headless Chromium (no console errors, a
//! screenshot that is not a blank page); bad input fails fast with one line.

use std::{
    process::Command,
    time::{Duration, Instant},
};

use serde_json::Value;
use volley_testkit::{Volley, fails_in_one_line, tool, volley};

const VOLLEY: Volley = volley!();

fn one_line_error(args: &[&str]) -> String {
    fails_in_one_line(Command::new(VOLLEY.bin()).args(args))
}

#[test]
fn the_quick_lab_runs_every_scenario_and_writes_readable_reports() {
    let out = std::env::temp_dir().join(format!("volley-lab-{}", std::process::id()));
    let run = Command::new(VOLLEY.bin())
        .args(["lab", "--quick", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let rows = results["rows"].as_array().unwrap();
    for scenario in ["users", "http-vs-grpc", "gateway", "greeter", "orders"] {
        assert!(
            rows.iter().any(|r| r["scenario"] == scenario),
            "{scenario} missing: {results}"
        );
    }
    for r in rows {
        assert!(r["ours"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["calls"].as_u64().unwrap() > 0, "{r}");
        assert_eq!(r["errors"], 0, "{r}");
    }
    // Server-to-server rows (where namespaces can be made) say the delay they ran with.
    let s2s: Vec<&str> = rows
        .iter()
        .filter_map(|r| r["case"].as_str())
        .filter(|c| c.contains("two namespaces"))
        .collect();
    assert!(s2s.is_empty() || s2s.len() == 4, "{s2s:?}");
    for case in s2s {
        assert!(
            case.contains("two namespaces, 250 us each way by "),
            "{case}"
        );
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## gateway (seed 002"), "{md}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<svg") && !html.contains("<script") && !html.contains("http://cdn"));

    // Headless Chromium: the page renders without console errors, and the screenshot has
    // content (a blank 1200 x 2400 page compresses to a few kilobytes; charts do not).
    let shot = out.join("shot.png");
    let chrome = Command::new(tool("chromium"))
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--window-size=1200,2400",
        ])
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", out.join("report.html").display()))
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&chrome.stderr);
    assert!(chrome.status.success(), "{log}");
    assert!(
        !log.contains("CONSOLE") && !log.contains("Uncaught"),
        "console messages: {log}"
    );
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    assert!(
        png.len() > 50_000,
        "the screenshot looks blank ({} bytes)",
        png.len()
    );
    let _ = std::fs::remove_dir_all(out);
}

#[test]
fn bad_input_fails_fast_in_one_line() {
    let err = one_line_error(&["lab", "--only", "bogus", "--out", "/tmp/volley-lab-unused"]);
    assert!(
        err.contains("unknown scenario \"bogus\": the scenarios are users, http-vs-grpc, gateway, greeter, orders"),
        "{err}"
    );

    let t = Instant::now();
    let err = one_line_error(&[
        "lab",
        "--target",
        "127.0.0.1:1",
        "--out",
        "/tmp/volley-lab-unused",
    ]);
    assert!(
        err.contains("--target 127.0.0.1:1: cannot connect: Connection refused"),
        "{err}"
    );
    assert!(t.elapsed() < Duration::from_secs(5));

    let t = Instant::now();
    let err = one_line_error(&["lab", "--out", "/proc/volley-lab"]);
    assert!(
        err.contains("--out /proc/volley-lab: cannot create the directory"),
        "{err}"
    );
    assert!(t.elapsed() < Duration::from_secs(2), "it ran load first");
}

#[test]
fn target_runs_the_proto_scenarios_against_another_server() {
    let p = VOLLEY.serve(&[]);
    let out = std::env::temp_dir().join(format!("volley-lab-target-{}", std::process::id()));
    let addr = p.addr().to_string();
    let run = Command::new(VOLLEY.bin())
        .args([
            "lab", "--quick", "--only", "greeter", "--only", "gateway", "--target", &addr,
        ])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(results["target"], addr.as_str());
    let rows = results["rows"].as_array().unwrap();
    assert!(rows.iter().all(|r| r["scenario"] == "greeter"), "{results}");
    assert!(rows[0]["ours"].as_f64().unwrap() > 0.0);
    assert_eq!(results["notRun"][0]["scenario"], "gateway");
    let _ = std::fs::remove_dir_all(out);
}
