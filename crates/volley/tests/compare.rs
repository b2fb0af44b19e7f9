//! `volley report compare` against real runs of `volley serve`.

use serde_json::Value;
use volley_testkit::{Volley, volley};

const VOLLEY: Volley = volley!();

/// A server 15 ms slower (`--delay 20ms` against `--delay 5ms`) is flagged by `--fail-if
/// 'p99>+50%'` (exit 99); two runs against the same server are not. The base server has a delay
/// too: with none, its p99 is a fraction of a millisecond, which this shared machine's noise
/// could move by half from one run to the next. The gap is wide because a loaded CI machine
/// once lifted the 5 ms server's p99 to 8.6 ms, and a 10 ms server's only to 12.3 (+43 %). Runs of 4 s, so
/// that each has whole seconds to show its own noise. Alone in its test binary: a test running
/// beside it would load one run and not the other, which is drift between runs, and no run can
/// see that in itself.
#[test]
fn compare_flags_a_slower_server_and_not_the_same_one() {
    let dir = std::env::temp_dir().join(format!("volley-compare-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |server: &volley_testkit::VolleyProcess, name: &str| {
        let out = VOLLEY
            .command(&[
                "bench",
                "--insecure",
                "--call",
                "helloworld.Greeter.SayHello",
                "-z",
                "4s",
                "-c",
                "10",
                "-O",
                "json",
                &server.addr().to_string(),
            ])
            .output()
            .expect("run volley bench");
        assert!(out.status.success(), "{out:?}");
        let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert!(
            report["volley"]["results"]["perSecond"]
                .as_array()
                .is_some_and(|s| s.len() >= 3),
            "whole seconds' figures: {}",
            report["volley"]["results"]
        );
        let path = dir.join(name);
        std::fs::write(&path, &out.stdout).unwrap();
        path.display().to_string()
    };
    let same_server = VOLLEY.serve(&["--delay", "5ms"]);
    let slow = VOLLEY.serve(&["--delay", "20ms"]);
    let (a, b) = (run(&same_server, "a.json"), run(&same_server, "b.json"));
    let c = run(&slow, "c.json");
    let compare = |base: &str, new: &str, format: &str| {
        VOLLEY
            .command(&[
                "report",
                "compare",
                base,
                new,
                "-O",
                format,
                "--fail-if",
                "p99>+50%",
            ])
            .output()
            .expect("run volley report compare")
    };
    let same = compare(&a, &b, "summary");
    assert_eq!(same.status.code(), Some(0), "{same:?}");
    let table = String::from_utf8_lossy(&same.stdout);
    assert!(table.starts_with("metric   base"), "{table}");
    let slower = compare(&a, &c, "md");
    assert_eq!(slower.status.code(), Some(99), "{slower:?}");
    let md = String::from_utf8_lossy(&slower.stdout);
    assert!(md.starts_with("| metric | base | new | change | |"), "{md}");
    let p99 = md
        .lines()
        .find(|l| l.starts_with("| p99 |"))
        .expect("a p99 row");
    assert!(p99.ends_with("| beyond noise |"), "{md}");
    let stderr = String::from_utf8_lossy(&slower.stderr);
    assert!(
        stderr.starts_with("volley: p99>+50% failed: p99 changed +"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
