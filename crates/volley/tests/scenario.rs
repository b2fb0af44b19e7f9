//! Scenarios against a real `volley serve`: a weighted mix of methods (per-method counts equal
//! what the hash predicts, in one run and in two shards merged), thresholds on one method,
//! arrival-rate stages followed second by second, and a 100 MB NDJSON data file streamed with
//! the generator's memory flat.

use std::{
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::Value;
use volley_bench::callee::mix::pick;
use volley_testkit::{Volley, json_report, volley};

const VOLLEY: Volley = volley!();

const MIX: [(&str, u64); 3] = [
    ("api.Users.Get", 80),
    ("api.Users.List", 15),
    ("helloworld.Greeter/SayHello", 5),
];

fn mix_args() -> Vec<String> {
    MIX.iter()
        .flat_map(|(m, w)| ["--call".to_owned(), format!("{m}:{w}")])
        .collect()
}

/// What the hash sends to each method of [`MIX`] among calls `0..n`.
fn predicted(n: u64) -> Vec<u64> {
    let upto: Vec<u64> = MIX
        .iter()
        .scan(0, |s, (_, w)| {
            *s += w;
            Some(*s)
        })
        .collect();
    let mut counts = vec![0; MIX.len()];
    for k in 0..n {
        counts[pick(&upto, k)] += 1;
    }
    counts
}

fn method_counts(report: &Value) -> Vec<u64> {
    report["methods"]
        .as_array()
        .expect("methods in the report")
        .iter()
        .map(|m| m["count"].as_u64().expect("a count"))
        .collect()
}

/// A fresh folder of this test process.
fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("volley-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn bench(args: &[&str], extra: &[String]) -> std::process::Output {
    let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    a.extend_from_slice(extra);
    let refs: Vec<&str> = a.iter().map(String::as_str).collect();
    VOLLEY.command(&refs).output().expect("run volley bench")
}

#[test]
fn per_method_counts_equal_the_hash_in_one_run_and_in_shards_merged() {
    let server = VOLLEY.serve(&[]);
    let addr = server.addr().to_string();
    let n = 4000;
    let want = predicted(n);
    let whole = json_report(&bench(
        &[
            "bench",
            "--insecure",
            "-n",
            "4000",
            "-c",
            "20",
            "-O",
            "json",
            &addr,
        ],
        &mix_args(),
    ));
    assert_eq!(method_counts(&whole), want);
    assert_eq!(whole["count"], n);
    assert_eq!(whole["statusCodeDistribution"]["OK"], n, "{whole}");
    let names: Vec<&str> = whole["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["call"].as_str().unwrap())
        .collect();
    assert_eq!(names, MIX.map(|(m, _)| m));
    // Each method's block is ghz-shaped: its own percentiles and statuses.
    for m in whole["methods"].as_array().unwrap() {
        assert!(
            m["latencyDistribution"]
                .as_array()
                .is_some_and(|l| l.len() == 7)
        );
        assert_eq!(m["statusCodeDistribution"]["OK"], m["count"]);
    }

    let dir = temp_dir("scenario");
    let mut files = Vec::new();
    for shard in ["0/2", "1/2"] {
        let out = bench(
            &[
                "bench",
                "--insecure",
                "-n",
                "4000",
                "-c",
                "20",
                "-O",
                "json",
                "--shard",
                shard,
                &addr,
            ],
            &mix_args(),
        );
        let report = json_report(&out);
        assert!(report["count"].as_u64().unwrap() < n);
        let f = dir.join(format!("shard{}.json", &shard[..1]));
        std::fs::write(&f, &out.stdout).unwrap();
        files.push(f.display().to_string());
    }
    let merged = VOLLEY
        .command(&["report", "merge", "-O", "json", &files[0], &files[1]])
        .output()
        .unwrap();
    let merged = json_report(&merged);
    assert_eq!(method_counts(&merged), want, "{merged}");
    assert_eq!(merged["count"], n);

    // A threshold on one method judges that method: List's p99 cannot be under a nanosecond.
    let out = bench(
        &[
            "bench",
            "--insecure",
            "-n",
            "400",
            "-c",
            "10",
            "--threshold",
            "p99{call=api.Users.List}<1ns",
            "--threshold",
            "errors{call=api.Users.Get}<1%",
            &addr,
        ],
        &mix_args(),
    );
    assert_eq!(out.status.code(), Some(99), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("Summary of api.Users.List (weight 15 of 100,"),
        "{stdout}"
    );
    assert!(stdout.contains("Summary of all calls:"), "{stdout}");
    assert!(
        stdout.contains("errors{call=api.Users.Get}<1%   held"),
        "{stdout}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "volley: threshold p99{call=api.Users.List}<1ns failed: p99{call=api.Users.List} = "
        ),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// 0 -> 1000 calls/s over 2 s, 1000/s for 3 s, down to 0 over 2 s: the calls finished in each
/// second are the area under that line (250, 750, 1000, 1000, 1000, 750, 250), within 5 %.
#[test]
fn stages_set_the_rate_second_by_second() {
    let server = VOLLEY.serve(&[]);
    let dir = temp_dir("stages");
    let scenario = dir.join("ramp.yaml");
    std::fs::write(
        &scenario,
        format!(
            "target: {}\ninsecure: true\nconcurrency: 50\ncall: api.Users.Get\nstages: [{{to: 1000, over: 2s}}, {{hold: 3s}}, {{to: 0, over: 2s}}]\n",
            server.addr()
        ),
    )
    .unwrap();
    let report = json_report(
        &VOLLEY
            .command(&[
                "bench",
                "--scenario",
                scenario.to_str().unwrap(),
                "-O",
                "json",
            ])
            .output()
            .unwrap(),
    );
    assert_eq!(report["count"], 5000, "{}", report["volley"]["timeline"]);
    let timeline: Vec<f64> = report["volley"]["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    let want = [250.0, 750.0, 1000.0, 1000.0, 1000.0, 750.0, 250.0];
    assert!(timeline.len() >= 7, "{timeline:?}");
    for (s, (got, want)) in timeline.iter().zip(want).enumerate() {
        assert!(
            (got - want).abs() <= want * 0.05,
            "second {s}: {got} calls, the stages ask {want} ({timeline:?})"
        );
    }
    assert_eq!(
        report["options"]["stages"],
        serde_json::json!(["2s:1000", "3s:1000", "2s:0"])
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A 100 MB NDJSON file (1 KiB lines) is checked line by line and then read per call, with the
/// generator's peak memory (VmHWM) under 64 MB.
#[test]
fn a_100_mb_data_file_streams_with_the_generator_under_64_mb() {
    let server = VOLLEY.serve(&[]);
    let dir = temp_dir("ndjson");
    let path = dir.join("names.ndjson");
    {
        use std::io::Write;
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        let pad = "x".repeat(1000);
        for k in 0..100_000 {
            writeln!(f, "{{\"name\": \"{k:08}{pad}\"}}").unwrap();
        }
    }
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size > 100_000_000, "{size}");
    // The report goes to a file: a pipe nobody reads until the end would stall the run.
    let report_path = dir.join("report.json");
    let mut child = Command::new(VOLLEY.bin())
        .args([
            "bench",
            "--insecure",
            "--call",
            "helloworld.Greeter.SayHello",
            "-D",
            path.to_str().unwrap(),
            "-n",
            "20000",
            "-c",
            "20",
            "-O",
            "pretty",
            "-o",
            report_path.to_str().unwrap(),
            &server.addr().to_string(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut peak_kib = 0;
    let limit = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < limit, "the run did not end in 120 s");
        if let Some(hwm) = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("VmHWM:"))
                    .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            })
        {
            peak_kib = peak_kib.max(hwm);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&std::fs::read(&report_path).unwrap()).unwrap();
    assert_eq!(report["statusCodeDistribution"]["OK"], 20000, "{report}");
    assert!(peak_kib > 0, "VmHWM was read");
    assert!(
        peak_kib < 64 * 1024,
        "the generator peaked at {} MB with a {} MB data file",
        peak_kib / 1024,
        size / 1_000_000
    );
    eprintln!(
        "peak {} MB with a {} MB file",
        peak_kib / 1024,
        size / 1_000_000
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Under a rate, latency is measured from each call's intended send time. tokio's timer wakes at
/// the first millisecond tick at or after a deadline, so a worker that slept until the intended
/// time sent 0-2 ms late, and that lateness (the timer's, not the server's) was in every
/// percentile: p50 1.07 ms where the service time's was 0.07. Workers now wake before the time
/// and a call sent early is timed from its actual send: at a rate the generator keeps easily,
/// the two medians agree.
#[test]
fn paced_sends_are_not_late_by_the_timers_rounding() {
    let server = VOLLEY.serve(&[]);
    let report = json_report(
        &VOLLEY
            .command(&[
                "bench",
                "--insecure",
                "--call",
                "api.Users.Get",
                "--rps",
                "200",
                "-n",
                "600",
                "-O",
                "json",
                &server.addr().to_string(),
            ])
            .output()
            .unwrap(),
    );
    let latency_p50 = volley_testkit::latency_ms(&report, 50);
    let service_p50 = report["volley"]["serviceTimeDistribution"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["percentage"] == 50.0)
        .unwrap()["latency"]
        .as_f64()
        .unwrap()
        / 1e6;
    assert!(
        latency_p50 - service_p50 < 0.4,
        "p50 {latency_p50:.3} ms from the intended send, {service_p50:.3} ms from the actual one"
    );
}
