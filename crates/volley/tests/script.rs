//! `volley run`: k6 scripts (tests/data/script, written from k6's documentation) run as `k6 run`
//! runs them, against grpc-go's route_guide example server (scripts/peers/route-guide, built by
//! scripts/install-test-tools) and `volley serve`, judged on stdout, stderr and the exit code as
//! k6's own CLI tests judge its examples: the banner's scenario line, `N complete and 0
//! interrupted iterations`, the summary's metric names, what the script logs, k6's exit codes.

use std::{
    net::{TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use volley_testkit::{Volley, tool, volley, workspace_file};

const VOLLEY: Volley = volley!();

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/script")
        .join(name)
}

/// grpc-go's route_guide server on a free port; killed on drop.
struct RouteGuide {
    child: Child,
    addr: String,
}

impl Drop for RouteGuide {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn route_guide() -> RouteGuide {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(tool("route-guide"))
        .args(["-port", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start route-guide");
    let addr = format!("127.0.0.1:{port}");
    let until = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(&addr).is_err() {
        assert!(
            Instant::now() < until,
            "route-guide did not listen on {addr}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    RouteGuide { child, addr }
}

/// A folder of its own holding `script` and `files` (as k6's tests put a script beside its
/// .proto); route_guide.proto is always there.
fn workdir(script: &str, files: &[&str]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "volley-run-{}-{}",
        script.trim_end_matches(".js"),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for f in std::iter::once(script).chain(files.iter().copied()) {
        std::fs::copy(data(f), dir.join(f)).unwrap();
    }
    std::fs::copy(
        workspace_file("scripts/peers/route-guide/route_guide.proto"),
        dir.join("route_guide.proto"),
    )
    .unwrap();
    dir
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
    dir: PathBuf,
}

/// `volley run ARGS SCRIPT` in the script's folder, with `GRPC_ADDR` set.
fn run(script: &str, files: &[&str], addr: &str, args: &[&str]) -> Ran {
    let dir = workdir(script, files);
    let out = VOLLEY
        .command(&["run"])
        .args(args)
        .arg(script)
        .current_dir(&dir)
        .env("GRPC_ADDR", addr)
        .output()
        .expect("run volley run");
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        dir,
    }
}

/// The JSON line a script's `handleSummary` printed among the run's output.
fn json_line(r: &Ran) -> Value {
    let line = r
        .stdout
        .lines()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("{}", r.stdout));
    serde_json::from_str(line).unwrap()
}

#[test]
fn a_unary_call_runs_and_prints_what_k6_prints() {
    let rg = route_guide();
    let r = run("unary.js", &[], &rg.addr, &["--no-usage-report"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    for want in [
        "execution: local",
        "output: -",
        "default: 1 iterations for each of 1 VUs (maxDuration: 10m0s, gracefulStop: 30s)",
        "1 complete and 0 interrupted iterations",
        "  █ THRESHOLDS \n",
        "✓ 'p(95)<5000' p(95)=",
        "      {method:GetFeature}\n      ✓ 'max<5000' max=",
        "  █ TOTAL RESULTS \n",
        "checks_succeeded...: 100.00% 2 out of 2",
        "✓ status is OK",
        "✓ int32 fields come back as numbers",
        "    GRPC\n    grpc_req_duration",
        "{ method:GetFeature }",
        "default ✓ [ 100% ] 1 VUs",
    ] {
        assert!(r.stdout.contains(want), "{want:?} not in:\n{}", r.stdout);
    }
    for absent in ["grpc_streams", "grpc_streams_msgs_received"] {
        assert!(!r.stdout.contains(absent), "{absent:?} in:\n{}", r.stdout);
    }
    // console.log goes to stderr as k6's logfmt line, the message in protojson.
    assert!(
        r.stderr.contains(r#"level=info msg="{\"name\":\"Berkshire Valley Management Area Trail, Jefferson, NJ, USA\",\"location\":{\"latitude\":409146138,\"longitude\":-746188906}}" source=console"#),
        "{}",
        r.stderr
    );
    // --log-output=stdout as k6's CLI tests run it: nothing on stderr.
    let r = run(
        "unary.js",
        &[],
        &rg.addr,
        &["-v", "--log-output=stdout", "--no-usage-report"],
    );
    assert_eq!((r.code, r.stderr.as_str()), (0, ""), "{}", r.stdout);
    assert!(
        r.stdout.contains("Berkshire Valley Management Area Trail"),
        "{}",
        r.stdout
    );
}

#[test]
fn each_kind_of_stream_runs_to_its_end() {
    let rg = route_guide();
    // Server streaming: grpc-go's example has 100 features in the rectangle.
    let r = run("server_stream.js", &[], &rg.addr, &["--log-output=stdout"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    for want in [
        "Found feature called",
        "All done: 100 features",
        "grpc_streams.................: 1 ",
        "grpc_streams_msgs_received...: 100 ",
        "grpc_streams_msgs_sent.......: 1 ",
        "1 complete and 0 interrupted iterations",
    ] {
        assert!(r.stdout.contains(want), "{want:?} not in:\n{}", r.stdout);
    }
    assert!(!r.stdout.contains("Stream Error:"), "{}", r.stdout);
    // Client streaming: three points, one summary back.
    let r = run("client_stream.js", &[], &rg.addr, &["--log-output=stdout"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    for want in [
        "Visiting point 407838351 -746143763",
        "Finished trip with 3 points",
        "Passed 3 features",
        "All done",
        "grpc_streams_msgs_sent.......: 3 ",
        "grpc_streams_msgs_received...: 1 ",
    ] {
        assert!(r.stdout.contains(want), "{want:?} not in:\n{}", r.stdout);
    }
    // Bidi: RouteChat answers each note with every note so far at its place (1 + 2 + 3).
    let r = run("bidi.js", &[], &rg.addr, &["--log-output=stdout"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.stdout.matches("Got message").count(), 6, "{}", r.stdout);
    assert!(
        r.stdout.contains("grpc_streams_msgs_received...: 6 "),
        "{}",
        r.stdout
    );
}

#[test]
fn timers_run_on_the_event_loop() {
    let rg = route_guide();
    let started = Instant::now();
    let r = run("timers.js", &[], &rg.addr, &["--log-output=stdout"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // RouteChat answers each note with every note at its place so far: 1, then (the second,
    // sent from the timeout) 2; the iteration waited for it.
    for want in [
        "chat ended with 3 notes back",
        "ticks 3",
        "1 complete and 0 interrupted iterations",
    ] {
        assert!(r.stdout.contains(want), "{want:?} not in:\n{}", r.stdout);
    }
    assert!(!r.stdout.contains("NEVER"), "{}", r.stdout);
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn crossed_thresholds_exit_99_and_say_which() {
    let rg = route_guide();
    let r = run(
        "thresholds_fail.js",
        &[],
        &rg.addr,
        &["--junit", "junit.xml"],
    );
    assert_eq!(r.code, 99, "{}{}", r.stdout, r.stderr);
    // --junit: a test case per threshold, as volley bench writes them.
    let junit = std::fs::read_to_string(r.dir.join("junit.xml")).unwrap();
    assert!(
        junit.contains(r#"<testsuite name="volley run" tests="3" failures="2" errors="0">"#),
        "{junit}"
    );
    assert!(
        junit.contains(r#"name="grpc_req_duration: avg&lt;0"><failure message="avg="#),
        "{junit}"
    );
    assert!(
        junit.contains(r#"name="grpc_req_duration: max&lt;60000"><system-out>max="#),
        "{junit}"
    );
    assert!(
        junit.contains(r#"name="checks: rate&gt;0.99"><failure message="rate=0.00%"/>"#),
        "{junit}"
    );
    for want in [
        "default: 3 iterations shared among 1 VUs",
        "    ✗ 'avg<0' avg=",
        "    ✓ 'max<60000' max=",
        "    ✗ 'rate>0.99' rate=0.00%",
        "    ✗ a point nobody named has no name\n      ↳  0% — ✓ 0 / ✗ 3\n",
        "3 complete and 0 interrupted iterations",
    ] {
        assert!(r.stdout.contains(want), "{want:?} not in:\n{}", r.stdout);
    }
    assert!(
        r.stderr.contains("level=error msg=\"thresholds on metrics 'checks, grpc_req_duration' have been crossed\""),
        "{}",
        r.stderr
    );
    // A threshold on a metric that does not exist is a bad option (104), before any call.
    let dir = workdir("unary.js", &[]);
    let script = std::fs::read_to_string(dir.join("unary.js"))
        .unwrap()
        .replace("checks: ['rate==1'],", "no_such_metric: ['count>1'],");
    std::fs::write(dir.join("unary.js"), script).unwrap();
    let out = VOLLEY
        .command(&["run", "unary.js"])
        .current_dir(&dir)
        .env("GRPC_ADDR", &rg.addr)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(104));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("no metric name \\\"no_such_metric\\\" found"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn setup_data_shared_arrays_groups_custom_metrics_and_handle_summary() {
    let server = VOLLEY.serve(&[]);
    let r = run(
        "lifecycle.js",
        &["users.json"],
        &server.addr().to_string(),
        &["--log-output=stdout"],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains(
            "SUMMARY users_fetched=6 named=1 checks=ok:6/0,int64 id comes back as a string:6/0\n"
        ),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("teardown saw user-"), "{}", r.stdout);
    // handleSummary replaced the text summary and wrote its file beside the script.
    assert!(!r.stdout.contains("TOTAL RESULTS"), "{}", r.stdout);
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(r.dir.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["metrics"]["users_fetched"]["type"], "counter");
    assert_eq!(summary["metrics"]["last_id"]["type"], "gauge");
    // A trend's values are the summary's trend stats (avg, min, med, max, p(90), p(95)).
    assert!(
        summary["metrics"]["rating_seen"]["values"]["p(95)"].is_f64(),
        "{summary}"
    );
    assert_eq!(summary["metrics"]["rating_seen"]["contains"], "default");
    assert_eq!(
        summary["metrics"]["rating_seen{who:ana}"]["thresholds"]["max>=0"]["ok"],
        true
    );
    assert_eq!(summary["metrics"]["group_duration"]["type"], "trend");
    assert_eq!(summary["metrics"]["iterations"]["values"]["count"], 6.0);
}

#[test]
fn every_executor_starts_what_it_should() {
    let r = run("executors.js", &[], "", &["--quiet"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let n = json_line(&r);
    let count = |k: &str| n[k].as_f64().unwrap_or(-1.0);
    assert_eq!(count("shared"), 7.0, "{n}");
    assert_eq!(count("pervu"), 6.0, "{n}");
    // 2 VUs sleeping 100 ms for 1 s: 20 at most, and a loaded machine still gets most.
    assert!((10.0..=22.0).contains(&count("constant")), "{n}");
    // 0 -> 2 VUs over 0.5 s, then 2 for 0.5 s: about 15 at 100 ms each.
    assert!((4.0..=16.0).contains(&count("ramping")), "{n}");
    // 50/s for 2 s: 100 starts, open-loop; none dropped with 4 idle VUs for empty iterations.
    assert_eq!(count("arrival") + count("dropped"), 100.0, "{n}");
    assert!(count("arrival") >= 95.0, "{n}");
    // 0 -> 40/s over 1 s, then 40/s for 1 s: 20 + 40 = 60 starts.
    assert!((57.0..=61.0).contains(&count("rampingArrival")), "{n}");
}

#[test]
fn an_arrival_rate_reuses_the_last_idle_vu_and_drops_the_starts_no_vu_was_free_for() {
    let r = run("arrival_turn.js", &[], "", &["--quiet"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let n = json_line(&r);
    let count = |k: &str| n[k].as_f64().unwrap_or(-1.0);
    // busy: 20 starts, one VU busy 200 ms in each iteration: about 5 run, the rest dropped
    // (idle's 50 starts all find a VU free, so every drop is busy's).
    assert_eq!(count("busy") + count("dropped"), 20.0, "{n}");
    assert!((3.0..=7.0).contains(&count("busy")), "{n}");
    assert_eq!(count("idle"), 50.0, "{n}");
    // idle: the turn goes to the VU that went idle last, so once every VU has queued (the
    // first few starts may each find a VU that was still starting), two VUs take the starts
    // by turns (one claims and waits for the next start while the other runs; 2 in five runs
    // of five here; a third if a loaded machine keeps one from queueing again within the 20 ms
    // between starts), not each of the ten in turn (10 of 10 when every VU claimed its own).
    let vus: Vec<&str> = r
        .stderr
        .lines()
        .filter_map(|l| l.split("idle iteration on VU ").nth(1))
        .map(|v| v.trim_end_matches(|c: char| !c.is_ascii_digit()))
        .collect();
    assert_eq!(vus.len(), 50, "{}", r.stderr);
    let mut last: Vec<&str> = vus[10..].to_vec();
    last.sort_unstable();
    last.dedup();
    assert!(
        last.len() <= 3,
        "VUs that ran idle's last 40 starts: {last:?}"
    );
}

#[test]
fn out_json_writes_every_sample_as_k6_does() {
    let rg = route_guide();
    let r = run(
        "out_json.js",
        &[],
        &rg.addr,
        &["--out", "json=samples.json"],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("output: json (samples.json)"),
        "{}",
        r.stdout
    );
    let text = std::fs::read_to_string(r.dir.join("samples.json")).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    // A metric's `Metric` line comes before its first point.
    let mut described = std::collections::HashSet::new();
    for l in &lines {
        let metric = l["metric"].as_str().unwrap().to_owned();
        match l["type"].as_str() {
            Some("Metric") => assert!(described.insert(metric), "described twice: {l}"),
            Some("Point") => assert!(
                described.contains(&metric),
                "a point before its metric: {l}"
            ),
            _ => panic!("{l}"),
        }
    }
    let points = |m: &str| -> Vec<&Value> {
        lines
            .iter()
            .filter(|l| l["type"] == "Point" && l["metric"] == m)
            .map(|l| &l["data"])
            .collect()
    };
    let described = |m: &str| {
        lines
            .iter()
            .find(|l| l["type"] == "Metric" && l["metric"] == m)
            .map(|l| l["data"].clone())
            .unwrap_or_else(|| panic!("no Metric line for {m}"))
    };
    let d = described("grpc_req_duration");
    assert_eq!(
        (&d["type"], &d["contains"], &d["thresholds"][0]),
        (&json!("trend"), &json!("time"), &json!("p(95)<5000")),
        "{d}"
    );
    // 2 VUs x 3 iterations: six calls, six checks, six counter samples, six iterations.
    let calls = points("grpc_req_duration");
    assert_eq!(calls.len(), 6, "{text}");
    for c in &calls {
        let t = &c["tags"];
        assert_eq!(t["name"], "/routeguide.RouteGuide/GetFeature", "{c}");
        assert_eq!(t["status"], "0", "{c}");
        assert_eq!(t["group"], "::lookups", "{c}");
        assert_eq!(t["scenario"], "lookups", "{c}");
        assert_eq!(t["team"], "maps", "{c}");
        assert!(c["value"].as_f64().unwrap() > 0.0, "{c}");
        assert!(c["time"].as_str().unwrap().ends_with('Z'), "{c}");
    }
    let checks = points("checks");
    assert_eq!(checks.len(), 6, "{text}");
    assert!(
        checks
            .iter()
            .all(|c| c["tags"]["check"] == "status is OK" && c["value"] == 1),
        "{checks:?}"
    );
    let seen = points("features_seen");
    assert_eq!(seen.len(), 6, "{text}");
    assert!(
        seen.iter()
            .all(|c| c["value"] == 3 && c["tags"]["kind"] == "point" && c["tags"]["group"] == ""),
        "{seen:?}"
    );
    assert_eq!(points("iterations").len(), 6, "{text}");
    assert_eq!(points("iteration_duration").len(), 6, "{text}");
    assert_eq!(described("data_sent")["contains"], "data");

    // An output volley does not write: one line naming it, k6's invalid-config code.
    let r = run("out_json.js", &[], &rg.addr, &["--out", "csv=samples.csv"]);
    assert_eq!(r.code, 104, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains(
            r#"--out csv=samples.csv: volley writes the output type json (json=FILE), not \"csv\""#
        ),
        "{}",
        r.stderr
    );
    assert!(!r.dir.join("samples.csv").exists());
}

#[test]
fn reports_are_volley_bench_s_and_merge_as_its_do() {
    let rg = route_guide();
    let r = run(
        "out_json.js",
        &[],
        &rg.addr,
        &[
            "--quiet",
            "--report",
            "json=results.json",
            "--report",
            "html=report.html",
            "--report",
            "summary=summary.txt",
        ],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(r.dir.join("results.json")).unwrap())
            .unwrap();
    // 2 VUs x 3 iterations, one call each.
    assert_eq!(results["count"], 6, "{results}");
    assert_eq!(results["statusCodeDistribution"]["OK"], 6, "{results}");
    assert_eq!(results["name"], "out_json.js", "{results}");
    assert!(results["fastest"].as_u64().unwrap() > 0, "{results}");
    assert_eq!(results["volley"]["results"]["count"], 6, "{results}");
    let html = std::fs::read_to_string(r.dir.join("report.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("out_json.js"));
    let summary = std::fs::read_to_string(r.dir.join("summary.txt")).unwrap();
    assert!(summary.contains("Count:\t6"), "{summary}");

    // `volley report merge` sums two runs' results exactly; `compare` reads them.
    let results = r.dir.join("results.json").display().to_string();
    let merged = VOLLEY
        .command(&["report", "merge", "-O", "json", &results, &results])
        .output()
        .unwrap();
    assert!(merged.status.success(), "{merged:?}");
    let merged: Value = serde_json::from_slice(&merged.stdout).unwrap();
    assert_eq!(merged["count"], 12, "{merged}");
    let compared = VOLLEY
        .command(&["report", "compare", &results, &results])
        .output()
        .unwrap();
    assert!(compared.status.success(), "{compared:?}");
    assert!(String::from_utf8_lossy(&compared.stdout).contains("p99"));

    // A format that lists calls one by one: refused in one line, k6's invalid-config code.
    let r = run("out_json.js", &[], &rg.addr, &["--report", "csv=calls.csv"]);
    assert_eq!(r.code, 104, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("the format is one of summary, json, pretty, html"),
        "{}",
        r.stderr
    );
}

#[test]
fn shards_of_a_script_add_up_to_the_whole_and_merge_exactly() {
    let rg = route_guide();
    let mut results = Vec::new();
    let mut iterations = Vec::new();
    for shard in ["0/2", "1/2"] {
        let r = run(
            "shard.js",
            &[],
            &rg.addr,
            &["--quiet", "--shard", shard, "--report", "json=results.json"],
        );
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        let n = json_line(&r);
        iterations.push(n["iterations"].as_f64().unwrap());
        // Each run makes its folder anew: keep its results out of it.
        let path = std::env::temp_dir().join(format!(
            "volley-shard-{}-{}.json",
            std::process::id(),
            &shard[..1]
        ));
        std::fs::copy(r.dir.join("results.json"), &path).unwrap();
        results.push(path.display().to_string());
    }
    // 7 shared iterations (3 and 4) and 20 arrival-rate starts (the even and the odd ones).
    assert_eq!(iterations, vec![13.0, 14.0], "{iterations:?}");
    let merged = VOLLEY
        .command(&["report", "merge", "-O", "json", &results[0], &results[1]])
        .output()
        .unwrap();
    assert!(merged.status.success(), "{merged:?}");
    assert!(
        !String::from_utf8_lossy(&merged.stderr).contains("shard"),
        "{}",
        String::from_utf8_lossy(&merged.stderr)
    );
    let merged: Value = serde_json::from_slice(&merged.stdout).unwrap();
    assert_eq!(merged["count"], 27, "{merged}");
    // One shard alone: the merge says which is missing.
    let one = VOLLEY
        .command(&["report", "merge", &results[0]])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&one.stderr).contains("shard 1 of 2 is missing"),
        "{one:?}"
    );
    for p in &results {
        let _ = std::fs::remove_file(p);
    }
}

#[test]
fn setup_and_teardown_stop_at_their_time_limits_with_k6_s_codes() {
    for (stuck, code, line) in [
        (
            "setup",
            100,
            "setup() execution timed out after 0.5 seconds",
        ),
        (
            "teardown",
            101,
            "teardown() execution timed out after 0.5 seconds",
        ),
    ] {
        let started = std::time::Instant::now();
        let r = run(
            "lifecycle_timeout.js",
            &[],
            "",
            &["--quiet", "-e", &format!("STUCK={stuck}")],
        );
        // The sleep would take 30 s and the loop forever: both are cut at 0.5 s.
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "{stuck}"
        );
        assert_eq!(r.code, code, "{stuck}: {}{}", r.stdout, r.stderr);
        assert!(r.stderr.contains(line), "{stuck}: {}", r.stderr);
        assert!(
            r.stderr.contains(&format!("via the {stuck}Timeout option")),
            "{}",
            r.stderr
        );
    }
}

/// Client sockets connected to `port` (this machine's TCP table, IPv4).
fn connections_to(port: u16) -> usize {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let remote = format!(":{port:04X}");
    table
        .lines()
        .skip(1)
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 3 && f[2].ends_with(&remote) && f[3] == "01"
        })
        .count()
}

#[test]
fn a_client_spreads_its_calls_over_the_connections_it_is_given() {
    let rg = route_guide();
    let port: u16 = rg.addr.rsplit(':').next().unwrap().parse().unwrap();
    for (params, want) in [
        (r#"{"plaintext":true}"#, 1),
        (r#"{"plaintext":true,"connections":3}"#, 3),
        (
            r#"{"plaintext":true,"lb":"round_robin","connections":2}"#,
            2,
        ),
    ] {
        let dir = workdir("pool.js", &[]);
        let child = VOLLEY
            .command(&["run", "--quiet", "pool.js"])
            .current_dir(&dir)
            .env("GRPC_ADDR", &rg.addr)
            .env("PARAMS", params)
            .env("HOLD", "3")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The calls take milliseconds; the VU then holds its connections for 3 s.
        let mut seen = 0;
        for _ in 0..100 {
            std::thread::sleep(std::time::Duration::from_millis(50));
            seen = connections_to(port);
            if seen >= want {
                break;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        seen = seen.max(connections_to(port));
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{params}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            stdout.contains("checks_succeeded...: 100.00% 6 out of 6"),
            "{stdout}"
        );
        assert_eq!(seen, want, "{params}: client connections to the server");
    }
    // A count volley does not take, and a policy it does not know: named in one line.
    for (params, want) in [
        (
            r#"{"plaintext":true,"connections":0}"#,
            "invalid connections value 0",
        ),
        (
            r#"{"plaintext":true,"lb":"least_request"}"#,
            "invalid lb value \\\"least_request\\\"",
        ),
    ] {
        let dir = workdir("pool.js", &[]);
        let out = VOLLEY
            .command(&["run", "--quiet", "pool.js"])
            .current_dir(&dir)
            .env("GRPC_ADDR", &rg.addr)
            .env("PARAMS", params)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{params}: {err}");
    }
}

/// `volley serve` answering chain.proto's login and items from chain_stubs.json.
fn chain_server() -> volley_testkit::VolleyProcess {
    VOLLEY.serve(&[
        "--no-builtin",
        "--proto",
        &data("chain.proto").display().to_string(),
        "--stubs",
        &data("chain_stubs.json").display().to_string(),
    ])
}

#[test]
fn chained_calls_log_in_then_use_the_token_at_an_arrival_rate() {
    let server = chain_server();
    let r = run(
        "login_chain.js",
        &["chain.proto"],
        &server.addr().to_string(),
        &[],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    for want in [
        "logins: 20.00 iterations/s for 2s (maxVUs: 2-4, gracefulStop: 30s)",
        "✓ the token opened the item",
        "✓ no token, no item",
        "40 complete and 0 interrupted iterations",
    ] {
        assert!(r.stdout.contains(want), "{want:?} not in:\n{}", r.stdout);
    }
}

#[test]
fn a_login_over_http_then_grpc_calls_with_its_token() {
    let server = chain_server();
    let r = run(
        "http_login.js",
        &["chain.proto"],
        &server.addr().to_string(),
        &[],
    );
    assert_eq!(r.code, 99, "{}{}", r.stdout, r.stderr);
    for want in [
        "✓ login answered 200",
        "✓ a JSON reply",
        "✓ the HTTP token opened the item",
        "✓ a wrong password is 401",
        "    HTTP\n    http_req_duration",
        "http_reqs",
        "3 complete and 0 interrupted iterations",
        // The 401s are failed requests, as k6 counts them: the threshold says so (exit 99).
        "✗ 'rate==0' rate=50.00%",
    ] {
        assert!(r.stdout.contains(want), "{want:?} not in:\n{}", r.stdout);
    }
}

#[test]
fn async_invoke_calls_run_at_once() {
    let server = chain_server();
    let r = run(
        "async_invoke.js",
        &["chain.proto"],
        &server.addr().to_string(),
        &[],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    for want in [
        "✓ all three answered",
        "✓ at once, not one after another",
        "✓ a failed call resolves with its status",
        "✓ an unknown method rejects",
        "1 complete and 0 interrupted iterations",
        // Each asyncInvoke is a call in grpc_req_duration, as invoke's are.
        "grpc_req_duration",
    ] {
        assert!(
            r.stdout.contains(want),
            "{want:?} not in:\n{}\n{}",
            r.stdout,
            r.stderr
        );
    }
}

#[test]
fn chained_calls_list_then_get_each_item() {
    let server = VOLLEY.serve(&[]);
    let r = run("list_then_get.js", &[], &server.addr().to_string(), &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // 10 starts (5/s for 2 s), each listing 10 users and getting each.
    assert!(
        r.stdout.contains("✓ each listed user can be got"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("10 complete and 0 interrupted iterations"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("gets...") && r.stdout.contains(": 100 "),
        "{}",
        r.stdout
    );
}

#[test]
fn health_checks_and_the_three_protocols() {
    let server = VOLLEY.serve(&[]);
    let addr = server.addr().to_string();
    let r = run("health.js", &[], &addr, &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("✓ serving"), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("✓ base64 as k6 writes it\n    ✓ and reads it"),
        "{}",
        r.stdout
    );
    assert!(r.stderr.contains("health status 1"), "{}", r.stderr);
    let r = run("protocols.js", &[], &addr, &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    for p in ["grpc", "grpc-web", "connect"] {
        assert!(
            r.stdout.contains(&format!("✓ hello over {p}\n")),
            "{p}: {}",
            r.stdout
        );
    }
}

#[test]
fn a_protoset_loads_as_a_proto_does() {
    let rg = route_guide();
    let dir = workdir("protoset.js", &[]);
    let set = dir.join("route_guide.protoset");
    let made = Command::new(tool("grpcurl"))
        .args([
            "-import-path",
            &dir.display().to_string(),
            "-proto",
            "route_guide.proto",
        ])
        .args(["-protoset-out", &set.display().to_string(), "describe"])
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let out = VOLLEY
        .command(&["run", "protoset.js"])
        .current_dir(&dir)
        .env("GRPC_ADDR", &rg.addr)
        .env("PROTOSET", "route_guide.protoset")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("✓ ok"), "{stdout}");
    assert!(
        stderr.contains("methods /routeguide.RouteGuide/GetFeature /routeguide.RouteGuide/ListFeatures /routeguide.RouteGuide/RecordRoute /routeguide.RouteGuide/RouteChat"),
        "{stderr}"
    );
}

#[test]
fn bad_scripts_are_named_with_file_line_and_column() {
    let rg = route_guide();
    let r = run("syntax_error.js", &[], &rg.addr, &[]);
    assert_eq!(r.code, 107, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("SyntaxError: unexpected token in expression: ';'"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("syntax_error.js:2:11"), "{}", r.stderr);
    let r = run("remote_import.js", &[], &rg.addr, &[]);
    assert_eq!(r.code, 107, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("remote module https://jslib.k6.io/k6-utils/1.2.0/index.js refused: volley run imports local files only"),
        "{}",
        r.stderr
    );
    // An unknown method is named with the closest one; the iteration's exception is logged.
    let r = run("unknown_method.js", &[], &rg.addr, &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains(r#"method \"routeguide.RouteGuide/GetFeatur\" not found in file descriptors (did you mean \"routeguide.RouteGuide/GetFeature\"?)"#),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("hint=\"script exception\""),
        "{}",
        r.stderr
    );
    // The same exception in five iterations: logged once, five iterations counted.
    let r = run("errors_once.js", &[], &rg.addr, &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(
        r.stderr.matches("the same failure each time").count(),
        1,
        "{}",
        r.stderr
    );
    assert!(
        r.stdout.contains("5 complete and 0 interrupted iterations"),
        "{}",
        r.stdout
    );
    // A script that is not there.
    let out = VOLLEY
        .command(&["run", "no/such/script.js"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(255));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no/such/script.js"));
}

/// `volley run aborts.js` with `MODE` set: exit code, stdout, stderr, and how long it took.
fn aborts(mode: &str) -> (i32, String, String, Duration) {
    let dir = workdir("aborts.js", &[]);
    let started = Instant::now();
    let out = VOLLEY
        .command(&["run", "aborts.js"])
        .current_dir(&dir)
        .env("MODE", mode)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        started.elapsed(),
    )
}

#[test]
fn runs_end_early_as_k6_ends_them() {
    // exec.test.abort(): 108, the reason logged.
    let (code, out, err, _) = aborts("abort");
    assert_eq!(code, 108, "{out}{err}");
    assert!(err.contains("test aborted: enough"), "{err}");
    // A threshold with abortOnFail: the 30 s run stops within a few seconds, 99.
    let (code, out, err, took) = aborts("threshold");
    assert_eq!(code, 99, "{out}{err}");
    assert!(
        err.contains("thresholds on metrics 'bad_things' have been crossed"),
        "{err}"
    );
    assert!(took < Duration::from_secs(15), "abortOnFail took {took:?}");
    // A 30 s sleep in a 500 ms scenario is cut after the 500 ms graceful stop: two interrupted.
    let (code, out, err, took) = aborts("stop");
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("0 complete and 2 interrupted iterations"),
        "{out}"
    );
    assert!(
        took < Duration::from_secs(10),
        "the graceful stop took {took:?}"
    );
}

#[test]
fn the_binary_named_k6_runs_k6_run() {
    let rg = route_guide();
    let dir = workdir("unary.js", &[]);
    let k6 = dir.join("k6");
    std::os::unix::fs::symlink(VOLLEY.bin(), &k6).unwrap();
    let out = Command::new(&k6)
        .args(["run", "--quiet", "unary.js"])
        .current_dir(&dir)
        .env("GRPC_ADDR", &rg.addr)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("✓ status is OK"), "{stdout}");
    // --quiet: no banner, no progress.
    assert!(
        !stdout.contains("execution: local") && !stdout.contains("running ("),
        "{stdout}"
    );
}

/// A CA of clients and a certificate it signed, as files in `dir`: (CA, certificate, key).
fn client_ca(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_pem = ca.self_signed(&ca_key).unwrap().pem();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["client".into()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    let paths = (
        dir.join("clients-ca.pem"),
        dir.join("client.pem"),
        dir.join("client.key"),
    );
    std::fs::write(&paths.0, ca_pem).unwrap();
    std::fs::write(&paths.1, cert.pem()).unwrap();
    std::fs::write(&paths.2, key.serialize_pem()).unwrap();
    paths
}

#[test]
fn tls_and_mutual_tls_from_pem_texts() {
    let dir = workdir("tls.js", &[]);
    let tls_dir = dir.join("server-tls");
    let (clients, cert, key) = client_ca(&dir);
    let run_tls = |server: &str, with_cert: bool| {
        let mut cmd = VOLLEY.command(&["run", "tls.js"]);
        cmd.current_dir(&dir)
            .env("GRPC_ADDR", server)
            .env("CA", tls_dir.join("ca.pem"));
        if with_cert {
            cmd.env("CLIENT_CERT", &cert).env("CLIENT_KEY", &key);
        }
        let out = cmd.output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let tls_dir_s = tls_dir.display().to_string();
    let server = VOLLEY.serve(&["--tls-self-signed", "--tls-dir", &tls_dir_s]);
    let (code, out, err) = run_tls(&server.addr().to_string(), false);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("✓ hello over TLS"), "{out}");
    drop(server);
    // The server asks for a client certificate: without one the connect throws (logged, the
    // iteration ends before its check: a threshold on no samples passes, as in k6); with one,
    // the call is made.
    let clients_s = clients.display().to_string();
    let server = VOLLEY.serve(&[
        "--tls-self-signed",
        "--tls-dir",
        &tls_dir_s,
        "--tls-client-ca",
        &clients_s,
    ]);
    let addr = server.addr().to_string();
    let (code, out, err) = run_tls(&addr, false);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains(&format!("failed to connect to {addr}")),
        "{err}"
    );
    assert!(!out.contains("hello over TLS"), "{out}");
    let (code, out, err) = run_tls(&addr, true);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("✓ hello over TLS"), "{out}");
}
