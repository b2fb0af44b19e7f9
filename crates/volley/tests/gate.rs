//! `volley bench --threshold`: CI gates against a real `volley serve`. A slow server fails a
//! p99 gate with exit 99 and passes a looser one with 0; a paused server fails a corrected p99
//! gate that ghz-style service time would pass; a rate the generator cannot reach exits 98; a
//! bad threshold is refused in one line that names it.

use std::{process::Output, thread, time::Duration};

use serde_json::Value;
use volley_testkit::{Volley, fails_in_one_line, report_shape::assert_valid_report, volley};

const VOLLEY: Volley = volley!();

fn bench(addr: &str, flags: &[&str]) -> Output {
    let mut args = vec![
        "bench",
        "--insecure",
        "--call",
        "helloworld.Greeter.SayHello",
    ];
    args.extend_from_slice(flags);
    args.push(addr);
    VOLLEY.command(&args).output().expect("run volley bench")
}

fn verdicts(out: &Output) -> Value {
    let report: Value = serde_json::from_slice(&out.stdout).expect("an -O json report");
    assert_valid_report(&report);
    report["volley"]["verdicts"].clone()
}

#[test]
fn a_slow_server_fails_a_tight_p99_with_99_and_passes_a_loose_one_with_0() {
    let server = VOLLEY.serve(&["--delay", "20ms"]);
    let addr = server.addr().to_string();
    let junit = std::env::temp_dir().join(format!("volley-gate-{}.xml", std::process::id()));
    let junit_arg = junit.display().to_string();

    let out = bench(
        &addr,
        &[
            "-n",
            "100",
            "-c",
            "10",
            "--threshold",
            "p99<10ms",
            "--threshold",
            "errors<1%",
            "--junit",
            &junit_arg,
        ],
    );
    assert_eq!(out.status.code(), Some(99), "{out:?}");
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(
        summary.contains("Thresholds:\n  p99<10ms    FAILED   p99 = "),
        "{summary}"
    );
    assert!(
        summary.contains("  errors<1%   held     errors = 0.000 %"),
        "{summary}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("volley: threshold p99<10ms failed: p99 = "),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    let xml = std::fs::read_to_string(&junit).expect("the JUnit file");
    let _ = std::fs::remove_file(&junit);
    assert!(xml.contains(r#"<testsuite name="volley bench helloworld.Greeter.SayHello" tests="2" failures="1" errors="0">"#), "{xml}");
    assert!(
        xml.contains(r#"name="p99&lt;10ms"><failure message="p99 = "#),
        "{xml}"
    );

    let out = bench(
        &addr,
        &[
            "-n",
            "100",
            "-c",
            "10",
            "--threshold",
            "p99<100ms",
            "-O",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let v = verdicts(&out);
    assert_eq!(v["thresholds"][0]["held"], true, "{v}");
    let p99 = v["thresholds"][0]["observed"].as_f64().expect("observed");
    assert!((20e6..100e6).contains(&p99), "{v}");

    // The config file's `thresholds:` list; `--threshold` replaces it, as every flag does.
    let cfg = std::env::temp_dir().join(format!("volley-gate-{}.yaml", std::process::id()));
    std::fs::write(
        &cfg,
        "total: 20\nthresholds:\n  - count==20\n  - status.OK==20\n",
    )
    .unwrap();
    let cfg_arg = cfg.display().to_string();
    let out = bench(&addr, &["--config", &cfg_arg]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let out = bench(&addr, &["--config", &cfg_arg, "--threshold", "count>20"]);
    let _ = std::fs::remove_file(&cfg);
    assert_eq!(out.status.code(), Some(99), "{out:?}");

    // Without thresholds, no verdicts and no Thresholds block: the summary stays ghz's.
    let out = bench(&addr, &["-n", "20"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("Thresholds"));
}

#[test]
fn a_paused_server_fails_corrected_p99_while_ghz_style_service_time_would_pass() {
    let server = VOLLEY.serve(&[]);
    let addr = server.addr().to_string();
    let pid = server.pid();
    let pauser = thread::spawn(move || {
        thread::sleep(Duration::from_millis(800));
        let kill = |sig: &str| {
            std::process::Command::new("kill")
                .args([sig, &pid.to_string()])
                .status()
                .expect("run kill")
        };
        kill("-STOP");
        thread::sleep(Duration::from_millis(1000));
        kill("-CONT");
    });
    // One worker at 100 calls/s: the second the server is stopped, about a hundred calls are
    // due; one is in flight (a slow service time), the rest are sent late.
    let out = bench(
        &addr,
        &[
            "-c",
            "1",
            "-r",
            "100",
            "-z",
            "3s",
            "--threshold",
            "p99<100ms",
            "--threshold",
            "service.p99<100ms",
            "-O",
            "json",
        ],
    );
    pauser.join().expect("the pauser");
    assert_eq!(out.status.code(), Some(99), "{out:?}");
    let v = verdicts(&out);
    assert!(
        v.get("invalid").is_none(),
        "a stall the generator recovered from is judged: {v}"
    );
    assert_eq!(v["thresholds"][0]["held"], false, "corrected p99: {v}");
    assert_eq!(v["thresholds"][1]["held"], true, "service-time p99: {v}");
}

#[test]
fn a_rate_the_generator_cannot_reach_exits_98() {
    let server = VOLLEY.serve(&[]);
    let out = bench(
        &server.addr().to_string(),
        &[
            "-c",
            "1",
            "-r",
            "1000000",
            "-z",
            "1s",
            "--threshold",
            "p99<10s",
            "-O",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(98), "{out:?}");
    let v = verdicts(&out);
    assert!(
        v["invalid"]
            .as_str()
            .is_some_and(|s| s.contains("rate asked was not reached")),
        "{v}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("volley: the run cannot be judged: "),
        "{stderr}"
    );
}

#[test]
fn a_bad_threshold_is_refused_in_one_line_naming_it() {
    let line = fails_in_one_line(&mut VOLLEY.command(&[
        "bench",
        "--insecure",
        "--call",
        "helloworld.Greeter.SayHello",
        "-n",
        "1",
        "--threshold",
        "p99<10xs",
        "127.0.0.1:1",
    ]));
    assert_eq!(
        line,
        r#"volley: error: threshold "p99<10xs", column 5: unknown unit "xs" (use ns, us, ms, s or m)"#
    );
}

#[test]
fn abort_on_stops_a_failing_run_early_with_99() {
    let server = VOLLEY.serve(&[]);
    let out = VOLLEY
        .command(&[
            "bench",
            "--insecure",
            "--call",
            "grpc.testing.TestService.UnaryCall",
            "-d",
            r#"{"responseStatus":{"code":14,"message":"down"}}"#,
            "-n",
            "100000",
            "-c",
            "4",
            "--abort-on",
            "errors>50%",
            "-O",
            "json",
            &server.addr().to_string(),
        ])
        .output()
        .expect("run volley bench");
    assert_eq!(out.status.code(), Some(99), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).expect("an -O json report");
    assert_valid_report(&report);
    let count = report["count"].as_u64().expect("count");
    assert!((50..10_000).contains(&count), "stopped after {count} calls");
    assert_eq!(report["endReason"], "cancel");
    assert!(
        report["volley"]["aborted"]
            .as_str()
            .is_some_and(|s| s.starts_with("errors>50% ("))
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("volley: aborted: errors>50% ("), "{stderr}");

    // Only what can be judged as the run goes.
    let line = fails_in_one_line(&mut VOLLEY.command(&[
        "bench",
        "--insecure",
        "--call",
        "helloworld.Greeter.SayHello",
        "-n",
        "1",
        "--abort-on",
        "p99>1s",
        "127.0.0.1:1",
    ]));
    assert!(
        line.contains("--abort-on \"p99>1s\": give errors or status.CODE as a share"),
        "{line}"
    );
}
