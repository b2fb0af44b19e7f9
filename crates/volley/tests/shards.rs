//! A Kubernetes Indexed Job emulated on loopback: N `volley bench --shard auto/N` processes, each
//! told its index by `JOB_COMPLETION_INDEX`, load one `volley serve` together (`--start-at`), and
//! their output, concatenated as `kubectl logs` prints it, goes into `volley report merge -`.

use std::process::{Command, Output, Stdio};

use serde_json::Value;
use volley_testkit::{
    Volley, fails_in_one_line, output_with_stdin, report_shape::assert_valid_report, volley,
};

const VOLLEY: Volley = volley!();

/// Runs shard `index` of `count` of a 300-call plan; its -O json report.
fn shard(addr: &str, index: &str, count: u64, extra: &[&str]) -> Command {
    let shard = format!("auto/{count}");
    let mut c = VOLLEY.command(&[
        "bench",
        "--insecure",
        "--call",
        "helloworld.Greeter.SayHello",
        "-c",
        "6",
        "--shard",
        &shard,
        "-O",
        "json",
    ]);
    c.args(extra).arg(addr).env("JOB_COMPLETION_INDEX", index);
    c
}

fn merge(stdin: &[u8], flags: &[&str]) -> Output {
    let mut args = vec!["report", "merge", "-"];
    args.extend_from_slice(flags);
    output_with_stdin(&mut VOLLEY.command(&args), stdin)
}

fn p50(report: &Value) -> u64 {
    report["latencyDistribution"][2]["latency"]
        .as_u64()
        .expect("p50")
}

#[test]
fn three_shards_merge_into_exactly_the_plan() {
    let server = VOLLEY.serve(&[]);
    let addr = server.addr().to_string();
    // Started together: every shard dials, then waits for the same instant.
    let children: Vec<_> = (0..3)
        .map(|i| {
            shard(
                &addr,
                &i.to_string(),
                3,
                &["-n", "300", "--start-at", "+2s"],
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run a shard")
        })
        .collect();
    let outputs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().expect("a shard"))
        .collect();
    let mut logs = Vec::new();
    let mut p50s = Vec::new();
    for (i, out) in outputs.iter().enumerate() {
        assert!(out.status.success(), "shard {i}: {out:?}");
        let report: Value = serde_json::from_slice(&out.stdout).expect("a shard's JSON");
        assert_valid_report(&report);
        assert_eq!(
            report["count"], 100,
            "shard {i} makes the calls numbered {i} mod 3"
        );
        assert_eq!(
            report["volley"]["results"]["shard"],
            serde_json::json!({"index": i, "count": 3})
        );
        p50s.push(p50(&report));
        // As `kubectl logs` prints pods: results with a log line between them.
        logs.extend_from_slice(&out.stdout);
        logs.extend_from_slice(b"volley: note: a log line from the pod\n");
    }
    let out = merge(&logs, &["-O", "json", "--threshold", "count==300"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let merged: Value = serde_json::from_slice(&out.stdout).expect("the merged JSON");
    assert_valid_report(&merged);
    assert_eq!(merged["count"], 300);
    assert_eq!(merged["statusCodeDistribution"]["OK"], 300);
    // The merged median is the median of every call: between the shards' own medians.
    let m = p50(&merged);
    let (lo, hi) = (*p50s.iter().min().unwrap(), *p50s.iter().max().unwrap());
    assert!(
        lo <= m && m <= hi,
        "merged p50 {m} outside the shards' {lo}..{hi}"
    );

    // A shard given twice and one missing: the merge says so and exits 98.
    let mut twice = outputs[0].stdout.clone();
    twice.extend_from_slice(&outputs[0].stdout);
    twice.extend_from_slice(&outputs[1].stdout);
    let out = merge(&twice, &[]);
    assert_eq!(out.status.code(), Some(98), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("shard 0 of 3 appears 2 times"), "{stderr}");
    assert!(stderr.contains("shard 2 of 3 is missing"), "{stderr}");

    // Results of another plan are refused, naming the option that differs.
    let other = shard(&addr, "2", 3, &["-n", "200"])
        .output()
        .expect("another plan");
    let mut mixed = outputs[0].stdout.clone();
    mixed.extend_from_slice(&outputs[1].stdout);
    mixed.extend_from_slice(&other.stdout);
    let out = merge(&mixed, &[]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("are not results of the same plan: options.total is 300 in stdin (result 1), 200 in stdin (result 3)"),
        "{stderr}"
    );

    // A truncated result names the input and where it stops.
    let cut = &outputs[0].stdout[..outputs[0].stdout.len() / 2];
    let out = merge(cut, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("volley: error: stdin: truncated JSON at line 1, column "),
        "{stderr}"
    );
}

#[test]
fn a_shard_ready_after_its_start_time_sends_nothing_and_exits_98() {
    let server = VOLLEY.serve(&[]);
    let out = shard(
        &server.addr().to_string(),
        "0",
        2,
        &["-n", "10", "--start-at", "2001-01-01T00:00:00Z"],
    )
    .output()
    .expect("run a shard");
    assert_eq!(out.status.code(), Some(98), "{out:?}");
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("volley: --start-at: the start time had passed by "),
        "{stderr}"
    );
}

#[test]
fn bad_shards_are_refused_in_one_line() {
    let cases = [
        (
            vec!["--shard", "3/3"],
            "--shard \"3/3\": the index 3 is not below the count 3",
        ),
        (
            vec!["--shard", "0/8"],
            "--shard 0/8: each shard runs the workers numbered I mod N, so -c (6) must be at least N (8)",
        ),
        (
            vec!["--start-at", "soon"],
            "--start-at \"soon\": expected an RFC 3339 time",
        ),
    ];
    for (flags, want) in cases {
        let mut c = VOLLEY.command(&[
            "bench",
            "--insecure",
            "--call",
            "helloworld.Greeter.SayHello",
            "-c",
            "6",
            "-n",
            "6",
        ]);
        c.args(&flags)
            .arg("127.0.0.1:1")
            .env_remove("JOB_COMPLETION_INDEX");
        let line = fails_in_one_line(&mut c);
        assert!(line.contains(want), "{flags:?}: {line}");
    }
}
