//! `volley bench` through the library, in-process (as oha's `tests/tests.rs` runs oha): the
//! command line parsed with clap, resolved by `plan::from_args`, run by `run_plan` against the
//! built-in services on a loopback port in this process. What the process tests of the `volley`
//! binary check most, without a process: counts, status distributions, thresholds and exit
//! codes, `-O json`'s fields, a mix's per-method counts, `-z`, and the observers' view of a run.
//! The comparisons with ghz itself stay in `crates/volley/tests/bench.rs`.

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
        mpsc,
    },
    thread::JoinHandle,
    time::Duration,
};

use clap::Parser;
use serde_json::Value;
use volley_bench::{
    ClientPath, Control, Finished, Observers, Plan, Stop,
    callee::mix::pick,
    gate::{EXIT_FAILED, EXIT_INVALID},
    live::Live,
    plan::{BenchArgs, from_args},
    run_plan,
};
use volley_testkit::{client_path as path_of, report_shape::assert_valid_report};

/// The built-in services on a loopback port, served from a thread of this process until dropped.
struct Server {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    fn start(opts: volley_services::Options) -> Server {
        Server::start_with(opts, |b| b)
    }

    fn start_with(
        opts: volley_services::Options,
        then: impl FnOnce(volley_server::ServerBuilder) -> volley_server::ServerBuilder,
    ) -> Server {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let mut builder = volley_server::Server::builder();
        for s in volley_services::all(opts) {
            builder = builder.add_service(s);
        }
        let server = then(builder).build().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let _ = server
                    .serve(listener, async {
                        let _ = stopped.await;
                    })
                    .await;
            });
        });
        Server {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    fn plain() -> Server {
        Server::start(volley_services::Options::default())
    }

    /// The built-in services, with every call's metadata values under `key` collected.
    fn seeing(key: &'static str) -> (Server, Arc<std::sync::Mutex<Vec<String>>>) {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let into = seen.clone();
        let server = Server::start_with(volley_services::Options::default(), move |b| {
            b.intercept(volley_server::intercept::from_fn(move |call| {
                let mut seen = into.lock().unwrap();
                for v in call.metadata().get_all(key) {
                    seen.push(v.to_str().unwrap_or("").to_owned());
                }
                Ok(())
            }))
        });
        (server, seen)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[derive(Parser)]
#[command(version, disable_version_flag = true)]
struct Cmd {
    #[command(flatten)]
    bench: BenchArgs,
}

/// The plan of `volley bench --insecure ARGV... HOST`.
fn plan(server: &Server, argv: &[&str]) -> Plan {
    let host = server.addr.to_string();
    let full = ["bench", "--insecure"]
        .into_iter()
        .chain(argv.iter().copied())
        .chain([host.as_str()]);
    from_args(&Cmd::parse_from(full).bench).expect("the flags resolve")
}

/// Runs a plan with nothing watching; returns what it finished with and what it wrote.
fn run(plan: &Plan) -> (Finished, String) {
    run_watched(plan, Observers::default())
}

fn run_watched(plan: &Plan, observers: Observers) -> (Finished, String) {
    let mut out = Vec::new();
    let done = run_plan(plan, Arc::new(Control::default()), observers, &mut out).expect("a run");
    (done, String::from_utf8(out).expect("a text report"))
}

/// Runs a plan whose report is `-O json`, and reads it back.
fn json_run(plan: &Plan) -> (Finished, Value) {
    let (done, out) = run(plan);
    let report: Value = serde_json::from_str(&out).expect("an -O json report");
    assert_valid_report(&report);
    (done, report)
}

const HELLO: &str = "helloworld.Greeter.SayHello";
const UNARY: &str = "grpc.testing.TestService.UnaryCall";

#[test]
fn a_run_counts_every_call_and_its_json_report_has_ghz_fields() {
    let server = Server::plain();
    let (done, r) = json_run(&plan(
        &server,
        &["--call", HELLO, "-n", "40", "-c", "4", "-O", "json"],
    ));
    assert_eq!(done.exit_code, 0);
    assert!(done.notes.is_empty() || done.notes.iter().all(|n| n.starts_with("note: ")));
    assert_eq!(r["count"], 40);
    assert_eq!(r["statusCodeDistribution"]["OK"], 40);
    assert_eq!(r["endReason"], "normal");
    assert_eq!(r["details"].as_array().unwrap().len(), 40);
    assert_eq!(r["histogram"].as_array().unwrap().len(), 11);
    assert_eq!(r["latencyDistribution"].as_array().unwrap().len(), 7);
    assert_eq!(r["options"]["total"], 40);
    assert_eq!(r["options"]["concurrency"], 4);
    assert_eq!(r["options"]["call"], HELLO);
    assert_eq!(r["volley"]["results"]["count"], 40);
    assert!(r["volley"].get("verdicts").is_none());
    let report = done.report.expect("the report");
    assert_eq!(report.count, 40);
    assert!(report.fastest > 0 && report.fastest <= report.slowest);
}

#[test]
fn statuses_and_errors_are_counted_by_code_and_text() {
    let server = Server::plain();
    // A JSON array goes round-robin by call number: every other call asks for Unavailable.
    let data = r#"[{}, {"responseStatus": {"code": 14, "message": "down"}}]"#;
    let (done, r) = json_run(&plan(
        &server,
        &[
            "--call", UNARY, "-d", data, "-n", "30", "-c", "3", "-O", "json",
        ],
    ));
    assert_eq!(
        done.exit_code, 0,
        "errors alone do not fail a run without thresholds"
    );
    assert_eq!(r["count"], 30);
    assert_eq!(r["statusCodeDistribution"]["OK"], 15);
    assert_eq!(r["statusCodeDistribution"]["Unavailable"], 15);
    let errors = r["errorDistribution"].as_object().unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    let (text, n) = errors.iter().next().unwrap();
    assert!(text.contains("down"), "{text}");
    assert_eq!(n, 15);
}

#[test]
fn thresholds_choose_the_exit_code_and_the_junit_file_says_why() {
    let server = Server::start(volley_services::Options {
        delay: Duration::from_millis(20),
        ..Default::default()
    });
    let junit = std::env::temp_dir().join(format!("volley-bench-run-{}.xml", std::process::id()));
    let junit_arg = junit.display().to_string();
    let (done, out) = run(&plan(
        &server,
        &[
            "--call",
            HELLO,
            "-n",
            "40",
            "-c",
            "8",
            "--threshold",
            "p99<5ms",
            "--threshold",
            "errors<1%",
            "--junit",
            &junit_arg,
        ],
    ));
    assert_eq!(done.exit_code, EXIT_FAILED);
    assert!(
        out.contains("Thresholds:\n  p99<5ms     FAILED   p99 = "),
        "{out}"
    );
    let failed: Vec<&String> = done
        .notes
        .iter()
        .filter(|n| n.starts_with("threshold "))
        .collect();
    assert_eq!(failed.len(), 1, "{:?}", done.notes);
    assert!(
        failed[0].starts_with("threshold p99<5ms failed: p99 = "),
        "{failed:?}"
    );
    let verdicts = done.report.unwrap().volley.verdicts.expect("verdicts");
    assert_eq!(
        verdicts
            .thresholds
            .iter()
            .map(|v| v.held)
            .collect::<Vec<_>>(),
        [false, true]
    );
    let xml = std::fs::read_to_string(&junit).expect("the JUnit file");
    let _ = std::fs::remove_file(&junit);
    assert!(
        xml.contains(r#"tests="2" failures="1" errors="0""#),
        "{xml}"
    );

    let (done, _) = run(&plan(
        &server,
        &["--call", HELLO, "-n", "20", "--threshold", "p99<2s"],
    ));
    assert_eq!(done.exit_code, 0);
}

#[test]
fn abort_on_stops_a_failing_run_with_exit_99() {
    let server = Server::plain();
    let (done, r) = json_run(&plan(
        &server,
        &[
            "--call",
            UNARY,
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
        ],
    ));
    assert_eq!(done.exit_code, EXIT_FAILED);
    assert_eq!(r["endReason"], "cancel");
    let count = r["count"].as_u64().unwrap();
    assert!(
        (50..100_000).contains(&count),
        "stopped after {count} calls"
    );
    assert!(
        done.notes
            .iter()
            .any(|n| n.starts_with("aborted: errors>50% (")),
        "{:?}",
        done.notes
    );
}

#[test]
fn a_rate_the_generator_cannot_reach_is_invalid_with_exit_98() {
    let server = Server::plain();
    let (done, _) = run(&plan(
        &server,
        &[
            "--call",
            HELLO,
            "-c",
            "1",
            "-r",
            "1000000",
            "-z",
            "500ms",
            "--threshold",
            "p99<10s",
        ],
    ));
    assert_eq!(done.exit_code, EXIT_INVALID);
    assert!(
        done.notes
            .iter()
            .any(|n| n.starts_with("the run cannot be judged: the rate asked was not reached")),
        "{:?}",
        done.notes
    );
}

#[test]
fn a_shard_late_for_its_start_sends_nothing_and_exits_98() {
    let server = Server::plain();
    let (done, out) = run(&plan(
        &server,
        &[
            "--call",
            HELLO,
            "-n",
            "10",
            "-c",
            "2",
            "--shard",
            "0/2",
            "--start-at",
            "2001-01-01T00:00:00Z",
        ],
    ));
    assert_eq!(done.exit_code, EXIT_INVALID);
    assert!(done.report.is_none());
    assert!(out.is_empty(), "{out}");
    assert!(
        done.notes[0].starts_with("--start-at: the start time had passed by "),
        "{:?}",
        done.notes
    );
}

#[test]
fn z_stops_the_run_on_time() {
    let server = Server::plain();
    let p = plan(
        &server,
        &["--call", HELLO, "-z", "300ms", "-c", "2", "-O", "json"],
    );
    assert_eq!(p.run.stop, Stop::Duration(Duration::from_millis(300)));
    let (done, r) = json_run(&p);
    assert_eq!(done.exit_code, 0);
    assert_eq!(r["endReason"], "timeout");
    assert!(r["count"].as_u64().unwrap() > 0);
    assert!(
        r["options"].get("total").is_none(),
        "-n is not echoed under -z"
    );
    assert_eq!(r["options"]["duration"], 300_000_000);
    let total = Duration::from_nanos(r["total"].as_u64().unwrap());
    assert!(
        total >= Duration::from_millis(300) && total < Duration::from_secs(3),
        "{total:?}"
    );
}

#[test]
fn a_mix_sends_each_method_the_calls_its_hash_picks() {
    let server = Server::plain();
    let (done, r) = json_run(&plan(
        &server,
        &[
            "--call",
            &format!("{HELLO}:3"),
            "--call",
            "grpc.testing.TestService.EmptyCall:1",
            "-n",
            "80",
            "-c",
            "4",
            "--threshold",
            &format!("count{{call={HELLO}}}>0"),
            "-O",
            "json",
        ],
    ));
    assert_eq!(done.exit_code, 0, "{:?}", done.notes);
    let mut want = [0u64; 2];
    for k in 0..80 {
        want[pick(&[3, 4], k)] += 1;
    }
    let methods = r["methods"].as_array().expect("a report per method");
    assert_eq!(methods.len(), 2);
    assert_eq!(methods[0]["call"], HELLO);
    assert_eq!(methods[0]["weight"], 3);
    for (m, n) in methods.iter().zip(want) {
        assert_eq!(m["count"], n, "{}", m["call"]);
        assert_eq!(m["statusCodeDistribution"]["OK"], n, "{}", m["call"]);
    }
    assert_eq!(r["count"], 80);
    // Two unary methods: the mix's calls take the fast path, each with its own header block.
    assert_eq!(r["volley"]["clientPath"], path_of("fast").as_str());
}

#[test]
fn the_observers_see_every_call_and_the_client_path_is_a_plan_field() {
    let server = Server::plain();
    let mut p = plan(&server, &["--call", HELLO, "-n", "60", "-c", "3"]);
    let progress = Arc::new(AtomicU64::new(0));
    let (tx, rx) = mpsc::channel();
    let observers = Observers {
        progress: Some(progress.clone()),
        live: Some(Live {
            every: Duration::from_millis(100),
            histograms: false,
            tx,
        }),
    };
    let (done, _) = run_watched(&p, observers);
    assert_eq!(done.exit_code, 0);
    assert_eq!(progress.load(Ordering::Relaxed), 60);
    // The run dropped its observers: the channel is closed, and its ticks add up to the run.
    let ticks: Vec<_> = rx.iter().collect();
    assert!(ticks.last().is_some_and(|t| t.last));
    assert_eq!(ticks.iter().map(|t| t.calls).sum::<u64>(), 60);

    // The h2-crate path (VOLLEY_BENCH_CLIENT=h2's), set on the plan: the same calls, all OK.
    p.run.client = ClientPath::H2;
    let (done, _) = run(&p);
    let report = done.report.unwrap();
    assert_eq!(report.count, 60);
    assert_eq!(report.status_code_distribution.0, [("OK".to_owned(), 60)]);
}

#[test]
fn the_report_goes_to_o_and_debug_logs_the_run() {
    let server = Server::plain();
    let dir = std::env::temp_dir().join(format!("volley-bench-run-o-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (report, debug) = (dir.join("report.csv"), dir.join("debug.jsonl"));
    let (report_arg, debug_arg) = (report.display().to_string(), debug.display().to_string());
    let (done, out) = run(&plan(
        &server,
        &[
            "--call",
            HELLO,
            "-n",
            "12",
            "-O",
            "csv",
            "-o",
            &report_arg,
            "--debug",
            &debug_arg,
        ],
    ));
    assert_eq!(done.exit_code, 0);
    assert!(out.is_empty(), "-o takes the report: {out}");
    let csv = std::fs::read_to_string(&report).unwrap();
    assert!(csv.starts_with("\nduration (ms),status,error\n"), "{csv}");
    assert_eq!(
        csv.lines().filter(|l| l.ends_with(",OK,")).count(),
        12,
        "a row per call: {csv}"
    );
    let log = std::fs::read_to_string(&debug).unwrap();
    let lines: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["msg"], "run options");
    assert_eq!(lines[1]["count"], 12);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn templated_metadata_is_rendered_per_call_on_both_client_paths() {
    // ghz renders -m per call: {{.UUID}} gives each call its own id. The fast path keeps
    // serving a run whose metadata is templated (its data is not).
    let (server, seen) = Server::seeing("x-request-id");
    for client in [ClientPath::Fast, ClientPath::H2] {
        seen.lock().unwrap().clear();
        let mut p = plan(
            &server,
            &[
                "--call",
                HELLO,
                "-d",
                r#"{"name":"x"}"#,
                "-m",
                r#"{"x-request-id":"{{.UUID}}","x-n":"{{.RequestNumber}}"}"#,
                "-n",
                "1000",
                "-c",
                "20",
                "-O",
                "json",
            ],
        );
        p.run.client = client;
        let (done, r) = json_run(&p);
        assert_eq!(done.exit_code, 0);
        assert_eq!(r["statusCodeDistribution"]["OK"], 1000);
        let want = match client {
            ClientPath::Fast => "fast",
            ClientPath::H2 => "h2 (VOLLEY_BENCH_CLIENT=h2)",
        };
        assert_eq!(r["volley"]["clientPath"], want);
        let ids = seen.lock().unwrap().clone();
        assert_eq!(ids.len(), 1000, "{client:?}");
        let distinct: std::collections::HashSet<&String> = ids.iter().collect();
        assert_eq!(distinct.len(), 1000, "{client:?}: ids repeat");
        assert!(
            ids.iter()
                .all(|id| id.len() == 36 && id.matches('-').count() == 4)
        );
    }
}

#[test]
fn h_lines_reach_a_grpc_server_as_metadata() {
    let (server, seen) = Server::seeing("authorization");
    let (done, r) = json_run(&plan(
        &server,
        &[
            "--call",
            HELLO,
            "-H",
            "Authorization: Bearer x",
            "-n",
            "10",
            "-O",
            "json",
        ],
    ));
    assert_eq!(done.exit_code, 0);
    assert_eq!(r["statusCodeDistribution"]["OK"], 10);
    assert_eq!(*seen.lock().unwrap(), vec!["Bearer x".to_owned(); 10]);
}

#[test]
fn the_report_says_why_calls_took_the_h2_crate_path() {
    let server = Server::plain();
    let path = |argv: &[&str]| {
        let mut all = vec!["-n", "4", "-O", "json"];
        all.extend_from_slice(argv);
        let (_, r) = json_run(&plan(&server, &all));
        r["volley"]["clientPath"].as_str().unwrap().to_owned()
    };
    assert_eq!(path(&["--call", HELLO]), path_of("fast"));
    assert_eq!(
        path(&["--call", HELLO, "-d", r#"{"name":"{{.RequestNumber}}"}"#]),
        path_of("fast")
    );
    // Server streams, a mix holding one, keepalive and a receive limit take the fast path too.
    assert_eq!(path(&["--call", "api.Users.List"]), path_of("fast"));
    assert_eq!(
        path(&["--call", "api.Users.Get:1", "--call", "api.Users.List:1"]),
        path_of("fast")
    );
    assert_eq!(
        path(&["--call", HELLO, "--keepalive", "10s"]),
        path_of("fast")
    );
    assert_eq!(
        path(&["--call", HELLO, "--max-recv-message-size", "1MiB"]),
        path_of("fast")
    );
    // Bidi streams too.
    assert_eq!(
        path(&["--call", "orders.OrderService.AddOrder", "-d", "{}"]),
        path_of("fast")
    );
    assert_eq!(
        path(&["--call", HELLO, "--strategy", "per-request"]),
        path_of("fast")
    );
    assert_eq!(
        path(&["--call", HELLO, "--strategy", "expanding:4"]),
        path_of("fast")
    );
    // A service config is the h2 crate's alone.
    assert_eq!(
        path(&[
            "--call",
            HELLO,
            "--service-config",
            r#"{"methodConfig": [{"name": [{}], "timeout": "5s"}]}"#
        ]),
        path_of("h2 (--service-config)")
    );
}

#[test]
fn requests_over_a_frame_and_a_window_take_the_fast_path_whole() {
    // 100,000 bytes of name: seven DATA frames, past the default 65,535-byte stream window; the
    // reply ("Hello " and the name) shows the server read all of it.
    let server = Server::plain();
    let long = "x".repeat(100_000);
    let fixed = format!(r#"{{"name":"{long}"}}"#);
    let templated = format!(r#"{{"name":"{{{{.RequestNumber}}}}{long}"}}"#);
    for data in [&fixed, &templated] {
        let (done, r) = json_run(&plan(
            &server,
            &[
                "--call", HELLO, "-d", data, "-n", "6", "-c", "3", "-O", "json",
            ],
        ));
        assert_eq!(done.exit_code, 0);
        assert_eq!(r["statusCodeDistribution"]["OK"], 6, "{r}");
        assert_eq!(r["volley"]["clientPath"], path_of("fast").as_str());
        // Each reply: a 5-byte frame header, tag, a 3-byte length, "Hello ", the name.
        let name = if data == &fixed { 100_000 } else { 100_001 };
        assert_eq!(r["volley"]["bytesReceived"], 6 * (5 + 1 + 3 + 6 + name));
    }
}
