//! Watching a run as it goes, against a real `volley serve`: `--live` lines that add up to the
//! report (their histograms merged give the report's count), a `--prometheus-listen` scrape at
//! the end, read by the Prometheus project's parser, equal to the report's counts, and the
//! `--tui` view under tmux: it shows the rate and percentiles, updates, and `q` ends the run
//! with its report; the `--dashboard` page watched in headless Chromium while the run goes, its
//! figures at the end equal to the report's, and the `--dashboard-export` file read offline.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::TcpStream,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use base64::{Engine, engine::general_purpose::STANDARD};
use hdrhistogram::{Histogram, serialization::Deserializer};
use serde_json::Value;
use volley_testkit::{Exposition, Volley, prometheus_samples, sample, tool, volley};

const VOLLEY: Volley = volley!();

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("volley-live-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn live_lines_add_up_to_the_report_and_their_histograms_merge_to_its_count() {
    let server = VOLLEY.serve(&[]);
    let dir = temp_dir("ndjson");
    let lines = dir.join("live.ndjson");
    let report = dir.join("report.json");
    let out = VOLLEY
        .command(&[
            "bench",
            "--insecure",
            "--call",
            "api.Users.Get:3",
            "--call",
            "api.Users.List:1",
            "--stage",
            "1s:400",
            "--stage",
            "2s:400",
            "--live",
            lines.to_str().unwrap(),
            "--live-histograms",
            "--live-interval",
            "250ms",
            "-O",
            "json",
            "-o",
            report.to_str().unwrap(),
            &server.addr().to_string(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let report: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let ticks: Vec<Value> = std::fs::read_to_string(&lines)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    assert!(
        ticks.len() >= 10,
        "about 12 ticks of 250 ms: {}",
        ticks.len()
    );
    assert_eq!(
        ticks.iter().filter(|t| t["last"] == true).count(),
        1,
        "one last tick"
    );
    assert_eq!(ticks.last().unwrap()["last"], true);
    let sum = |f: &dyn Fn(&Value) -> u64| ticks.iter().map(f).sum::<u64>();
    // 200 calls in the ramp to 400/s over 1 s, 800 in the 2 s hold.
    assert_eq!(sum(&|t| t["calls"].as_u64().unwrap()), 1000);
    assert_eq!(report["count"], 1000);
    for (k, m) in report["methods"].as_array().unwrap().iter().enumerate() {
        assert_eq!(
            sum(&|t| t["methods"][k]["calls"].as_u64().unwrap()),
            m["count"].as_u64().unwrap(),
            "{}",
            m["call"]
        );
    }
    let mut merged = Histogram::<u64>::new(3).unwrap();
    for t in &ticks {
        let text = t["histogram"].as_str().expect("--live-histograms");
        if text.is_empty() {
            continue;
        }
        let bytes = STANDARD.decode(text).unwrap();
        let h: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .unwrap();
        merged.add(&h).unwrap();
    }
    assert_eq!(
        merged.len(),
        report["statusCodeDistribution"]["OK"].as_u64().unwrap()
    );
    // The stages' 400 calls/s are asked, and reached, in the hold.
    let held: Vec<&Value> = ticks
        .iter()
        .filter(|t| (1.3..2.8).contains(&t["elapsed"].as_f64().unwrap()))
        .collect();
    assert!(!held.is_empty());
    for t in held {
        assert_eq!(t["intendedRate"], 400.0, "{t}");
        let rate = t["rate"].as_f64().unwrap();
        assert!((rate - 400.0).abs() <= 60.0, "{t}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn http_get(addr: &str, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    body.to_owned()
}

/// Starts `cmd` (stdout dropped, stderr piped) and reads the first line it writes on stderr
/// (where `volley bench` says where it serves); the rest of stderr is drained.
fn spawn_for_its_first_line(cmd: &mut Command) -> (std::process::Child, String) {
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    // The rest read as it comes: a closed pipe would end the process at its next line.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    (child, line.trim().to_owned())
}

#[test]
fn a_prometheus_scrape_at_the_end_equals_the_report() {
    let server = VOLLEY.serve(&[]);
    let dir = temp_dir("prometheus");
    let report = dir.join("report.json");
    let mut cmd = Command::new(VOLLEY.bin());
    cmd.args([
        "bench",
        "--insecure",
        "--call",
        "api.Users.Get:80",
        "--call",
        "api.Users.List:20",
        "-n",
        "3000",
        "-c",
        "20",
        "--prometheus-listen",
        "127.0.0.1:0",
        "--linger",
        "30s",
        "-O",
        "json",
        "-o",
        report.to_str().unwrap(),
        &server.addr().to_string(),
    ]);
    let (mut child, line) = spawn_for_its_first_line(&mut cmd);
    let addr = line
        .strip_prefix("volley: metrics on http://")
        .and_then(|l| l.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("the address line: {line:?}"))
        .to_owned();
    // Scraped until the run says it is over, as a Prometheus server would see it.
    let limit = Instant::now() + Duration::from_secs(60);
    let samples = loop {
        assert!(Instant::now() < limit, "the run did not end");
        let samples = prometheus_samples(&http_get(&addr, "/metrics"), Exposition::Text);
        if sample(&samples, "volley_bench_running", &[]) == Some(0.0) {
            break samples;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    // The report is written before the linger.
    let report: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(report["count"], 3000);
    for m in report["methods"].as_array().unwrap() {
        let call = m["call"].as_str().unwrap();
        for (code, n) in m["statusCodeDistribution"].as_object().unwrap() {
            assert_eq!(
                sample(
                    &samples,
                    "volley_bench_calls_total",
                    &[("method", call), ("code", code)]
                ),
                n.as_f64(),
                "{call} {code}"
            );
        }
        let ok = m["statusCodeDistribution"]["OK"].as_f64();
        assert_eq!(
            sample(
                &samples,
                "volley_bench_latency_seconds_count",
                &[("method", call)]
            ),
            ok
        );
        assert_eq!(
            sample(
                &samples,
                "volley_bench_latency_seconds_bucket",
                &[("method", call), ("le", "+Inf")]
            ),
            ok
        );
    }
    let total: f64 = samples
        .iter()
        .filter(|s| s["name"] == "volley_bench_calls_total")
        .map(|s| s["value"].as_f64().unwrap())
        .sum();
    assert_eq!(total, 3000.0);
    assert_eq!(sample(&samples, "volley_bench_in_flight", &[]), Some(0.0));
    let _ = std::fs::remove_dir_all(&dir);
}

struct Tmux {
    socket: String,
}

impl Tmux {
    fn run(&self, args: &[&str]) -> String {
        let out = Command::new(tool("tmux"))
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("run tmux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "bench"])
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.run(&["kill-server"]);
    }
}

#[test]
fn the_tui_shows_the_run_updates_and_q_ends_it_with_its_report() {
    let server = VOLLEY.serve(&[]);
    let dir = temp_dir("tui");
    let report = dir.join("report.json");
    let tmux = Tmux {
        socket: format!("volley-tui-{}", std::process::id()),
    };
    let command = format!(
        "{} bench --insecure --call api.Users.Get:3 --call api.Users.List:1 --rps 300 -z 60s --tui -O json -o {} {}",
        VOLLEY.bin().display(),
        report.display(),
        server.addr()
    );
    tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "bench",
        "-x",
        "140",
        "-y",
        "40",
        &command,
    ]);
    let limit = Instant::now() + Duration::from_secs(30);
    let first = loop {
        let s = tmux.screen();
        // tmux may capture a frame half drawn (ratatui writes it in pieces, top to bottom): wait
        // for its last line, the key help, and a per-method row (the title names the methods too).
        if s.contains("rate")
            && s.contains("p99")
            && s.matches("api.Users.List").count() >= 2
            && s.contains("q: stop the run (the report is still written)")
        {
            break s;
        }
        assert!(Instant::now() < limit, "the view never drew a tick:\n{s}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(first.contains("300/s asked"), "{first}");
    assert!(first.contains("q: stop the run"), "{first}");
    std::thread::sleep(Duration::from_millis(2500));
    let later = tmux.screen();
    assert_ne!(first, later, "the view did not update");
    tmux.run(&["send-keys", "-t", "bench", "q"]);
    let limit = Instant::now() + Duration::from_secs(20);
    let report: Value = loop {
        if let Some(r) = std::fs::read(&report)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
        {
            break r;
        }
        assert!(
            Instant::now() < limit,
            "no report after q:\n{}",
            tmux.screen()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(report["endReason"], "cancel");
    let count = report["count"].as_u64().unwrap();
    assert!(count > 300 && count < 300 * 30, "{count} calls before q");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_dashboard_in_chromium_shows_the_run_live_and_ends_equal_to_the_report() {
    let browser = volley_testkit::workspace().join("examples/browser");
    assert!(
        browser.join("node_modules/puppeteer-core").is_dir(),
        "examples/browser is not installed: run scripts/install-test-tools"
    );
    let server = VOLLEY.serve(&[]);
    let dir = temp_dir("dashboard");
    let report = dir.join("report.json");
    let exported = dir.join("dashboard.html");
    let mut cmd = Command::new(VOLLEY.bin());
    cmd.args([
        "bench",
        "--insecure",
        "--call",
        "api.Users.Get:3",
        "--call",
        "api.Users.List:1",
        "--rps",
        "400",
        "-z",
        "4s",
        "--live-interval",
        "500ms",
        "--dashboard=127.0.0.1:0",
        "--dashboard-export",
        exported.to_str().unwrap(),
        "--linger",
        "60s",
        "-O",
        "json",
        "-o",
        report.to_str().unwrap(),
        &server.addr().to_string(),
    ]);
    let (mut child, line) = spawn_for_its_first_line(&mut cmd);
    let url = line
        .strip_prefix("volley: dashboard on ")
        .unwrap_or_else(|| panic!("the address line: {line:?}"))
        .to_owned();
    let shots = std::env::var("VOLLEY_UI_SHOTS").unwrap_or_else(|_| dir.display().to_string());
    let out = Command::new(tool("node"))
        .args([
            "test/dashboard.mjs",
            &url,
            exported.to_str().unwrap(),
            &shots,
        ])
        .current_dir(&browser)
        .output()
        .unwrap();
    // The report is written before the linger.
    let report: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let seen: Value = serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"));
    let count = report["count"].as_u64().unwrap();
    assert!(count > 1000, "{report}");
    // Read while it ran: some calls, not all of them.
    let running = seen["running"]["calls"].as_u64().unwrap();
    assert!(running > 0 && running < count, "{seen}");
    assert_eq!(seen["running"]["state"], "running", "{seen}");
    // At the end, and in the exported file: the report's figures (the last tick carries the
    // calls of the last interval, so the ticks add up to the report exactly).
    for view in ["finished", "exported"] {
        let v = &seen[view];
        assert_eq!(v["state"], "finished", "{view}: {seen}");
        assert_eq!(v["calls"].as_u64(), Some(count), "{view}: {seen}");
        assert_eq!(
            v["statuses"], report["statusCodeDistribution"],
            "{view}: {seen}"
        );
        for m in report["methods"].as_array().unwrap() {
            let call = m["call"].as_str().unwrap();
            assert_eq!(v["methods"][call], m["count"], "{view} {call}: {seen}");
        }
        // Four charts, each line with a point per tick (4 s at 500 ms: 8 or 9).
        let lines = v["lines"].as_array().unwrap();
        assert!(lines.len() >= 4, "{view}: {seen}");
        assert!(
            lines.iter().all(|n| n.as_u64().unwrap() >= 8),
            "{view}: {seen}"
        );
    }
    assert_eq!(
        seen["exported"]["requests"],
        serde_json::json!([]),
        "{seen}"
    );
    assert_eq!(seen["report"]["status"], 200, "{seen}");
    assert_eq!(seen["report"]["html"], true, "{seen}");
    assert!(
        seen["report"]["disposition"]
            .as_str()
            .is_some_and(|d| d.starts_with("attachment")),
        "{seen}"
    );
    assert_eq!(seen["logged"], serde_json::json!([]), "{seen}");
}
