//! `volley bench` as a process, side by side with ghz v0.120.0 on the same server: the seeds' ghz
//! commands verbatim, report structure line by line and key by key, honest latency under a fixed
//! rate through a server stall, streaming figures, TLS, config files, and one-line errors.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
    time::{Duration, Instant},
};

use serde_json::Value;
use volley_testkit::{
    Volley, client_path as path_of, h2_forced, ok_stdout as ok,
    report_shape::{FORMATS, assert_same_layout, assert_valid_report, parse_summary},
    tool, volley, workspace,
};

const VOLLEY: Volley = volley!();

fn users_proto() -> String {
    workspace()
        .join("proto/api/users.proto")
        .display()
        .to_string()
}

/// ghz's usual preamble for `api.Users.Get` on a plaintext server (`proto` is users.proto),
/// followed by `rest`.
fn users_get<'a>(proto: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["--insecure", "--proto", proto, "--call", "api.Users.Get"];
    args.extend_from_slice(rest);
    args
}

fn run(cmd: &mut Command) -> Output {
    cmd.stdin(Stdio::null()).output().expect("run")
}

/// A JSON run of `volley bench` on client `path` ("fast", or "h2" through
/// `VOLLEY_BENCH_CLIENT`), asserted to have taken it.
fn json_run_on(path: &str, args: &[&str]) -> Value {
    let mut c = volley_bench(args);
    if path == "h2" {
        c.env("VOLLEY_BENCH_CLIENT", "h2");
    }
    let r: Value = serde_json::from_str(&ok(&mut c)).unwrap();
    assert_took(path, r["volley"]["clientPath"].as_str().unwrap_or_default());
    r
}

/// Asserts a run took the client `path` ("fast" or "h2") asked of it (every run takes the h2
/// crate when it is forced).
fn assert_took(path: &str, took: &str) {
    let want = if h2_forced() { "h2" } else { path };
    assert!(took.starts_with(want), "{path}: took {took}");
}

fn volley_bench(args: &[&str]) -> Command {
    let mut c = Command::new(VOLLEY.bin());
    c.arg("bench").args(args);
    c
}

fn ghz(args: &[&str]) -> Command {
    let mut c = Command::new(tool("ghz"));
    c.args(args);
    c
}

#[test]
fn reports_match_ghz_structure_format_by_format() {
    let p = VOLLEY.serve(&["--threads", "1"]);
    let addr = p.addr().to_string();
    let proto = users_proto();
    let common = users_get(
        &proto,
        &[
            "-d",
            r#"{"id":228}"#,
            "-c2",
            "-n6",
            "--name",
            "My Run",
            "--tags",
            r#"{"env":"ci"}"#,
        ],
    );
    let both = |format: &str| {
        let mut args: Vec<&str> = common.to_vec();
        args.extend(["-O", format, &addr]);
        (ok(&mut ghz(&args)), ok(&mut volley_bench(&args)))
    };
    for format in FORMATS {
        let (g, v) = both(format);
        assert_same_layout(format, &g, &v);
        match format {
            "summary" => {
                let vs = parse_summary(&v);
                assert_eq!(vs.count, 6);
                assert_eq!(vs.statuses, [("OK".to_string(), 6)]);
            }
            "json" | "pretty" => {
                let vj: Value = serde_json::from_str(&v).unwrap();
                assert_valid_report(&vj);
                assert_valid_report(&serde_json::from_str(&g).unwrap());
                assert_eq!(vj["details"].as_array().unwrap().len(), 6);
                assert_eq!(vj["histogram"].as_array().unwrap().len(), 11);
            }
            _ => {}
        }
    }
}

/// Lays out a seed's files (proto paths as the seed wrote them) in a temp dir.
fn seed_dir(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("volley-seed-{name}-{}", std::process::id()));
    for (to, from) in files {
        let dest = dir.join(to);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(workspace().join(from), dest).unwrap();
    }
    dir
}

/// Runs a seed's ghz command with `volley bench` in place of `ghz` and the seed's host replaced by
/// ours; checks that every call is OK and the summary parses as ghz's.
fn seed(dir: &Path, cmd: &str, seed_host: &str, host: &str, expect: Option<u64>) {
    let line = cmd.replace(seed_host, host);
    let mut argv = shell_words(&line);
    assert_eq!(argv.remove(0), "ghz");
    let out = ok(Command::new(VOLLEY.bin())
        .arg("bench")
        .args(&argv)
        .current_dir(dir));
    let s = parse_summary(&out);
    if let Some(n) = expect {
        assert_eq!(s.count, n, "{cmd}");
    }
    assert!(s.count > 0);
    assert_eq!(s.statuses, [("OK".to_string(), s.count)], "{cmd}\n{out}");
}

/// Splits a command line as a POSIX shell would for these seeds (single quotes, backslash-newline).
fn shell_words(s: &str) -> Vec<String> {
    let s = s.replace("\\\n", " ");
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut any = false;
    for ch in s.chars() {
        match ch {
            '\'' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(cur);
    }
    out
}

#[test]
fn seed_ghz_commands_run_verbatim() {
    let p = VOLLEY.serve(&["--threads", "1"]);
    let host = p.addr().to_string();
    let d000 = seed_dir(
        "000",
        &[("example/api/example/users.proto", "proto/api/users.proto")],
    );
    seed(
        &d000,
        "ghz --insecure --proto example/api/example/users.proto --call 'api.Users.Get'\n    -d '{\"id\": 228}' -c100 -n1000 127.0.0.1:9090",
        "127.0.0.1:9090",
        &host,
        Some(1000),
    );
    seed(
        &d000,
        "ghz --insecure --proto example/api/example/users.proto --call 'api.Users.List' -c100 -n1000 127.0.0.1:9090",
        "127.0.0.1:9090",
        &host,
        Some(1000),
    );
    let d003 = seed_dir(
        "003",
        &[(
            "benchmark/helloworld.proto",
            "proto/helloworld/helloworld.proto",
        )],
    );
    seed(
        &d003,
        "ghz --insecure \\\n    --proto ./benchmark/helloworld.proto \\\n    --call helloworld.Greeter/SayHello \\\n    -d '{\"name\": \"grpcity\"}' \\\n    -n 10000 \\\n    -c 100  \\\n    0.0.0.0:9099",
        "0.0.0.0:9099",
        &host,
        Some(10000),
    );
    let d001 = seed_dir("001", &[("grpc.proto", "proto/grpc/hi.proto")]);
    let t = Instant::now();
    seed(
        &d001,
        "ghz --insecure --proto grpc.proto --call grpc.hi/sayHello --duration=10s --concurrency=100 --connections=6 0.0.0.0:9503",
        "0.0.0.0:9503",
        &host,
        None,
    );
    assert!(t.elapsed() >= Duration::from_secs(10));
    assert!(t.elapsed() < Duration::from_secs(20));
    for d in [d000, d003, d001] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

/// A run's JSON report, checked against the report schema (`crates/volley-bench/schema`).
fn json_run(args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.extend(["-O", "json"]);
    let report = serde_json::from_str(&ok(&mut volley_bench(&a))).unwrap();
    assert_valid_report(&report);
    report
}

fn percentile(report: &Value, p: u64) -> u64 {
    report["latencyDistribution"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["percentage"] == p)
        .unwrap()["latency"]
        .as_u64()
        .unwrap()
}

#[test]
fn a_server_stall_shows_in_the_percentiles_under_a_fixed_rate() {
    let p = VOLLEY.serve(&["--threads", "1"]);
    let addr = p.addr().to_string();
    let pid = p.pid().to_string();
    let proto = users_proto();
    let stall = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1000));
        Command::new("kill").args(["-STOP", &pid]).status().unwrap();
        std::thread::sleep(Duration::from_millis(1000));
        Command::new("kill").args(["-CONT", &pid]).status().unwrap();
    });
    let r = json_run(&users_get(
        &proto,
        &[
            "-d",
            r#"{"id":1}"#,
            "-c",
            "10",
            "-r",
            "200",
            "-z",
            "3s",
            &addr,
        ],
    ));
    stall.join().unwrap();
    assert_eq!(r["statusCodeDistribution"]["OK"], r["count"]);
    // About a third of the calls were due while the server was stopped: from their intended send
    // times they waited up to a second, so p90 is far above the service time of a call.
    let p90 = percentile(&r, 90);
    let p99 = percentile(&r, 99);
    assert!(p99 >= 700_000_000, "p99 {p99} ns should show the 1 s stall");
    assert!(p90 >= 200_000_000, "p90 {p90} ns should show the stall");
    // The uncorrected service time (what ghz reports) hides it: only the 10 in-flight calls saw it.
    let service_p90 = r["volley"]["serviceTimeDistribution"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["percentage"] == 90.0)
        .unwrap()["latency"]
        .as_u64()
        .unwrap();
    assert!(
        service_p90 < p90 / 4,
        "service p90 {service_p90} vs corrected p90 {p90}"
    );
}

#[test]
fn streaming_calls_report_message_figures() {
    let p = VOLLEY.serve(&["--threads", "1"]);
    let addr = p.addr().to_string();
    let orders = workspace()
        .join("proto/orders/order.proto")
        .display()
        .to_string();
    // Bidi and client streams on either client path: every message sent, each bidi reply
    // matched to its request for the per-message latency, the client stream's one reply.
    let testing = workspace().join("proto").display().to_string();
    let test_proto = workspace()
        .join("proto/grpc/testing/test.proto")
        .display()
        .to_string();
    for path in ["fast", "h2"] {
        let r = json_run_on(
            path,
            &[
                "--insecure",
                "--proto",
                &orders,
                "--call",
                "orders.OrderService/AddOrder",
                "-d",
                r#"[{"instrumentID": 1, "price": 10}, {"instrumentID": 2, "price": 11}]"#,
                "--stream-call-count",
                "50",
                "-c",
                "4",
                "-n",
                "40",
                "-O",
                "json",
                &addr,
            ],
        );
        assert_valid_report(&r);
        assert_eq!(r["statusCodeDistribution"]["OK"], 40, "{path}");
        let s = &r["volley"]["streaming"];
        assert_eq!(s["messagesSent"], 2000, "{path}");
        assert_eq!(s["messagesReceived"], 2000, "{path}");
        let lat = s["messageLatency"].as_array().unwrap();
        assert!(lat.len() >= 7, "{path}: {lat:?}");
        assert!(s["receivedPerSecond"].as_f64().unwrap() > 0.0, "{path}");

        // 20 messages of 100,000 bytes per stream, four streams at once: past the streams' and
        // the connection's 65,535-byte windows, so messages wait for WINDOW_UPDATEs.
        let big =
            std::env::temp_dir().join(format!("volley-bench-big-{}.json", std::process::id()));
        std::fs::write(
            &big,
            format!(r#"{{"payload":{{"body":"{}"}}}}"#, "eHh4".repeat(33_334)),
        )
        .unwrap();
        let r = json_run_on(
            path,
            &[
                "--insecure",
                "--import-paths",
                &testing,
                "--proto",
                &test_proto,
                "--call",
                "grpc.testing.TestService/StreamingInputCall",
                "-D",
                big.to_str().unwrap(),
                "--stream-call-count",
                "20",
                "-c",
                "4",
                "-n",
                "12",
                "-O",
                "json",
                &addr,
            ],
        );
        std::fs::remove_file(&big).unwrap();
        assert_eq!(r["statusCodeDistribution"]["OK"], 12, "{path}: {r}");
        let s = &r["volley"]["streaming"];
        assert_eq!(s["messagesSent"], 240, "{path}");
        assert_eq!(s["messagesReceived"], 12, "{path}");
    }

    // Interval and duration: each stream sends one order every 20 ms and is closed after 300 ms.
    let t = Instant::now();
    let r = json_run(&[
        "--insecure",
        "--proto",
        &orders,
        "--call",
        "orders.OrderService/AddOrder",
        "-d",
        r#"{"instrumentID": 1}"#,
        "--stream-call-count",
        "1000",
        "--stream-interval",
        "20ms",
        "--stream-call-duration",
        "300ms",
        "-c",
        "2",
        "-n",
        "4",
        &addr,
    ]);
    assert_eq!(r["statusCodeDistribution"]["OK"], 4);
    let sent = r["volley"]["streaming"]["messagesSent"].as_u64().unwrap();
    assert!(
        (40..=80).contains(&sent),
        "about 15 per 300 ms stream, 4 streams: {sent}"
    );
    assert!(
        t.elapsed() >= Duration::from_millis(550),
        "{:?}",
        t.elapsed()
    );

    // Server streams on either client path: the same figures, read to the end or cut at
    // --stream-call-count (the stream reset, the call OK).
    let users = users_proto();
    for (path, count, each) in [
        ("fast", None, 10),
        ("h2", None, 10),
        ("fast", Some("3"), 3),
        ("h2", Some("3"), 3),
    ] {
        let mut a = vec!["--insecure", "--proto", &users, "--call", "api.Users.List"];
        a.extend(["-c", "5", "-n", "50", "-O", "json", &addr]);
        if let Some(n) = count {
            a.extend(["--stream-call-count", n]);
        }
        let r = json_run_on(path, &a);
        assert_valid_report(&r);
        assert_eq!(
            r["statusCodeDistribution"]["OK"], 50,
            "{path} {count:?}: {r}"
        );
        assert_eq!(
            r["volley"]["streaming"]["messagesReceived"],
            50 * each,
            "{path} {count:?}"
        );
        assert_eq!(r["volley"]["streaming"]["messagesSent"], 50, "{path}");
        assert!(
            !r["volley"]["streaming"]["timeToFirstMessage"]
                .as_array()
                .unwrap()
                .is_empty(),
            "{path}"
        );
    }

    // Reflection instead of --proto, and templated data rendered per call.
    let r = json_run(&[
        "--insecure",
        "--call",
        "helloworld.Greeter.SayHello",
        "-d",
        r#"{"name": "{{.WorkerID}}-{{.RequestNumber}}-{{randomString 4}}"}"#,
        "-c",
        "3",
        "-n",
        "30",
        &addr,
    ]);
    assert_eq!(r["statusCodeDistribution"]["OK"], 30);
}

#[test]
fn config_files_and_the_embedded_default() {
    let p = VOLLEY.serve(&["--threads", "1"]);
    let dir = std::env::temp_dir().join(format!("volley-bench-cfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("run.yaml");
    std::fs::write(
        &cfg,
        format!(
            "call: api.Users.Get\ninsecure: true\ntotal: 77\nconcurrency: 7\ndata:\n  id: 3\nhost: {}\nproto: {}\n",
            p.addr(),
            users_proto()
        ),
    )
    .unwrap();
    let cfg_s = cfg.to_str().unwrap();
    let r = json_run(&["--config", cfg_s]);
    assert_eq!(r["count"], 77);
    assert_eq!(r["options"]["concurrency"], 7);
    // A flag on the command line wins.
    let r = json_run(&["--config", cfg_s, "-n", "20"]);
    assert_eq!(r["count"], 20);
    std::fs::remove_dir_all(dir).unwrap();

    // No host: the built-in services are started in-process and found by reflection.
    let out = ok(&mut volley_bench(&[
        "--call",
        "api.Users.Get",
        "-d",
        r#"{"id":228}"#,
        "-c100",
        "-n10000",
    ]));
    let s = parse_summary(&out);
    assert_eq!(s.statuses, [("OK".to_string(), 10000)]);
}

#[test]
fn tls_works_and_mismatches_say_which_side_refused() {
    let dir = std::env::temp_dir().join(format!("volley-bench-tls-{}", std::process::id()));
    let dir_s = dir.to_str().unwrap();
    let p = VOLLEY.serve(&["--threads", "1", "--tls-self-signed", "--tls-dir", dir_s]);
    let addr = p.addr().to_string();
    let ca = dir.join("ca.pem");
    let proto = users_proto();
    let base = [
        "--proto",
        proto.as_str(),
        "--call",
        "api.Users.Get",
        "-n",
        "20",
        "-c",
        "2",
    ];
    let mut a = base.to_vec();
    a.extend(["--cacert", ca.to_str().unwrap(), &addr]);
    let s = parse_summary(&ok(&mut volley_bench(&a)));
    assert_eq!(s.statuses, [("OK".to_string(), 20)]);

    let mut a = base.to_vec();
    a.extend(["--skipTLS", &addr]);
    assert_eq!(parse_summary(&ok(&mut volley_bench(&a))).count, 20);

    // System roots do not know our CA: we refuse the server.
    let mut a = base.to_vec();
    a.push(&addr);
    let err = one_line_error(&mut volley_bench(&a));
    assert!(err.contains("we refused the server's certificate"), "{err}");
    // Plaintext against TLS.
    let mut a = base.to_vec();
    a.extend(["--insecure", &addr]);
    let err = one_line_error(&mut volley_bench(&a));
    assert!(
        err.contains("HTTP/2 handshake") && err.contains("TLS"),
        "{err}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// Runs a command that must fail with exactly one line on stderr, before any load.
fn one_line_error(cmd: &mut Command) -> String {
    let t = Instant::now();
    let out = run(cmd);
    assert!(!out.status.success(), "{cmd:?} should fail");
    assert!(out.stdout.is_empty(), "no report on failure");
    let err = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<_> = err
        .lines()
        .filter(|l| !l.starts_with("volley: no host given"))
        .collect();
    assert_eq!(lines.len(), 1, "{cmd:?}: {err}");
    assert!(lines[0].starts_with("volley: error: "), "{err}");
    assert!(t.elapsed() < Duration::from_secs(15));
    lines[0].to_string()
}

#[test]
fn bad_input_is_one_line_naming_the_problem() {
    let p = VOLLEY.serve(&["--threads", "1"]);
    let addr = p.addr().to_string();
    let proto = users_proto();
    let dir = std::env::temp_dir().join(format!("volley-bench-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.proto");
    std::fs::write(
        &bad,
        "syntax = \"proto3\";\npackage x;\nmessage A {\n  int32 a = ;\n}\n",
    )
    .unwrap();
    let missing = dir.join("missing.proto");
    std::fs::write(
        &missing,
        "syntax = \"proto3\";\nimport \"nowhere/dep.proto\";\n",
    )
    .unwrap();
    let (bad, missing) = (bad.to_str().unwrap(), missing.to_str().unwrap());
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "--insecure",
                "--proto",
                &proto,
                "--call",
                "api.Users.Nope",
                &addr,
            ],
            "has no method Nope",
        ),
        (
            vec![
                "--insecure",
                "--proto",
                &proto,
                "--call",
                "api.Nobody/Get",
                &addr,
            ],
            "service api.Nobody not found",
        ),
        (
            vec!["--insecure", "--proto", bad, "--call", "x.S/M", &addr],
            "bad.proto:4:",
        ),
        (
            vec!["--insecure", "--proto", missing, "--call", "x.S/M", &addr],
            "nowhere/dep.proto",
        ),
        (users_get(&proto, &["-d", r#"{"idd": 1}"#, &addr]), "idd"),
        (
            users_get(&proto, &["-d", r#"{"id": "x"}"#, &addr]),
            "api.GetUserRequest",
        ),
        (
            users_get(&proto, &["-c", "0", &addr]),
            "-c must be at least 1",
        ),
        (
            users_get(&proto, &["-c", "2", "--connections", "5", &addr]),
            "--connections (5) must not exceed -c (2)",
        ),
        (
            users_get(&proto, &["-d", "{}", "-b", &addr]),
            "only one of -d, -D, -b and -B",
        ),
        (
            vec![
                "--insecure",
                "--call",
                "api.Users.Get",
                "--connect-timeout",
                "1s",
                &closed,
            ],
            "cannot connect to",
        ),
        (
            users_get(&proto, &["-x", "soon", &addr]),
            "-x: invalid duration",
        ),
        (
            users_get(&proto, &["--strategy", "roundrobin", &addr]),
            "--strategy: unknown strategy \"roundrobin\": use per-request, single, pool[:N] or expanding[:MAX]",
        ),
    ];
    for (args, want) in cases {
        let err = one_line_error(&mut volley_bench(&args));
        assert!(err.contains(want), "{args:?}: {err}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn every_connection_strategy_runs() {
    let p = VOLLEY.serve(&["--threads", "1"]);
    let addr = p.addr().to_string();
    let proto = users_proto();
    for strategy in ["per-request", "single", "pool:3", "expanding:4"] {
        let r = json_run(&users_get(
            &proto,
            &[
                "-d",
                "{\"id\": 7}",
                "-n",
                "60",
                "-c",
                "6",
                "--strategy",
                strategy,
                &addr,
            ],
        ));
        assert_eq!(r["count"], 60, "{strategy}: {r}");
        assert_eq!(r["statusCodeDistribution"]["OK"], 60, "{strategy}: {r}");
        assert_eq!(
            r["volley"]["clientPath"],
            path_of("fast").as_str(),
            "{strategy}"
        );
    }
}

/// `expanding:4` with 30 calls in flight (one thread) against a server that takes 10 streams a
/// connection: another connection each time every one is full, so three, as the server counts
/// them (on the fast path, and on the h2 crate's when forced).
#[test]
fn expanding_opens_a_connection_when_every_one_is_full() {
    let p = VOLLEY.serve(&[
        "--threads",
        "1",
        "--metrics",
        "--max-concurrent-streams",
        "10",
    ]);
    let addr = p.addr().to_string();
    let proto = users_proto();
    let r = json_run(&users_get(
        &proto,
        &[
            "-d",
            "{\"id\": 7}",
            "-n",
            "3000",
            "-c",
            "30",
            "--cpus",
            "1",
            "--strategy",
            "expanding:4",
            &addr,
        ],
    ));
    assert_eq!(r["statusCodeDistribution"]["OK"], 3000, "{r}");
    assert_eq!(r["volley"]["clientPath"], path_of("fast").as_str());
    let metrics = ok(Command::new(tool("curl")).args(["-sf", &format!("http://{addr}/metrics")]));
    let accepted = metrics
        .lines()
        .find_map(|l| l.strip_prefix("volley_server_connections_accepted_total "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .expect("volley_server_connections_accepted_total");
    // The bench's connections, and curl's own.
    assert_eq!(accepted, 4.0, "{metrics}");
}

#[test]
fn async_mode_and_schedules() {
    let p = VOLLEY.serve(&["--threads", "1"]);
    let addr = p.addr().to_string();
    let proto = users_proto();
    let base = [
        "--insecure",
        "--proto",
        proto.as_str(),
        "--call",
        "api.Users.Get",
        "-d",
        r#"{"id":1}"#,
    ];
    let with = |extra: &[&str]| {
        let mut a: Vec<&str> = base.to_vec();
        a.extend_from_slice(extra);
        a.push(&addr);
        json_run(&a)
    };
    // Open model: 100 calls at 200/s take about half a second whatever -c is.
    let t = Instant::now();
    let r = with(&["--async", "-r", "200", "-n", "100", "-c", "1"]);
    assert_eq!(r["statusCodeDistribution"]["OK"], 100);
    assert!(
        t.elapsed() >= Duration::from_millis(450),
        "{:?}",
        t.elapsed()
    );
    assert!(r["volley"]["rateNotKept"] == false);

    // Rate steps 100/s -> 200/s -> 300/s every 500 ms: 300 calls need about 1.4 s.
    let r = with(&[
        "--load-schedule",
        "step",
        "--load-start",
        "100",
        "--load-step",
        "100",
        "--load-end",
        "300",
        "--load-step-duration",
        "500ms",
        "-n",
        "300",
        "-c",
        "20",
    ]);
    assert_eq!(r["statusCodeDistribution"]["OK"], 300);
    let total = Duration::from_nanos(r["total"].as_u64().unwrap());
    assert!(
        total >= Duration::from_millis(1150) && total < Duration::from_secs(4),
        "{total:?}"
    );
    assert_eq!(r["options"]["load-schedule"], "step");

    // Workers ramp 2 -> 10 over the run.
    let r = with(&[
        "--concurrency-schedule",
        "line",
        "--concurrency-start",
        "2",
        "--concurrency-step",
        "4",
        "--concurrency-end",
        "10",
        "-z",
        "2500ms",
    ]);
    assert!(r["count"].as_u64().unwrap() > 0);
    assert_eq!(r["statusCodeDistribution"]["OK"], r["count"]);
    assert_eq!(r["endReason"], "timeout");
}

#[test]
fn gzip_binary_data_and_a_self_contained_html_report() {
    let p = VOLLEY.serve(&["--threads", "1", "--compress"]);
    let addr = p.addr().to_string();
    let proto = users_proto();
    let r = json_run(&users_get(&proto, &["-e", "-n", "50", "-c", "5", &addr]));
    assert_eq!(r["statusCodeDistribution"]["OK"], 50);
    assert_eq!(r["options"]["enable-compression"], true);

    let dir = std::env::temp_dir().join(format!("volley-bench-bin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bin_file = dir.join("req.bin");
    std::fs::write(&bin_file, [0x08, 0xe4, 0x01]).unwrap(); // GetUserRequest{id: 228}
    let r = json_run(&users_get(
        &proto,
        &[
            "-B",
            bin_file.to_str().unwrap(),
            "-n",
            "20",
            "-c",
            "2",
            &addr,
        ],
    ));
    assert_eq!(r["statusCodeDistribution"]["OK"], 20);
    assert_eq!(r["options"]["binary"], true);

    let html = dir.join("report.html");
    ok(&mut volley_bench(&users_get(
        &proto,
        &[
            "-n",
            "200",
            "-c",
            "10",
            "-O",
            "html",
            "-o",
            html.to_str().unwrap(),
            &addr,
        ],
    )));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(
        page.contains("<svg") && page.contains("polyline"),
        "charts drawn inline"
    );
    assert!(
        !page.contains("<script") && !page.contains("http://") && !page.contains("https://"),
        "no CDN, no script"
    );
    assert!(page.contains("200"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn message_limits_template_switches_and_debug_log() {
    let p = VOLLEY.serve(&["--threads", "1"]);
    let addr = p.addr().to_string();
    let proto = users_proto();
    let base = [
        "--insecure",
        "--proto",
        proto.as_str(),
        "--call",
        "api.Users.Get",
        "-d",
        r#"{"id":228}"#,
        "-n",
        "10",
        "-c",
        "2",
    ];
    let with = |extra: &[&str]| {
        let mut a: Vec<&str> = base.to_vec();
        a.extend_from_slice(extra);
        a.push(&addr);
        a.into_iter().map(String::from).collect::<Vec<_>>()
    };
    // Replies over the receive limit fail the calls, as grpc-go's client does, on either
    // client path; a limit the replies fit is no error.
    for (path, limit, exhausted) in [
        ("fast", "10B", Some(10)),
        ("h2", "10B", Some(10)),
        ("fast", "1KiB", None),
    ] {
        let args = with(&["--max-recv-message-size", limit, "-O", "json"]);
        let r = json_run_on(path, &args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(
            r["statusCodeDistribution"]["ResourceExhausted"].as_u64(),
            exhausted,
            "{path} {limit}: {r}"
        );
        if exhausted.is_some() {
            let detail = r["errorDistribution"].to_string();
            assert!(
                detail.contains("received message larger than max"),
                "{detail}"
            );
        }
    }
    // Keepalive on the fast path: PINGs every 50 ms through a 400 ms run (the server answers
    // them; one unanswered would fail the connection), every call OK.
    let mut a: Vec<&str> = base
        .iter()
        .copied()
        .filter(|a| *a != "-n" && *a != "10")
        .collect();
    a.extend(["-z", "400ms", "--keepalive", "50ms", "-O", "json", &addr]);
    let r: Value = serde_json::from_str(&ok(&mut volley_bench(&a))).unwrap();
    assert_eq!(r["volley"]["clientPath"], path_of("fast").as_str(), "{r}");
    let codes = r["statusCodeDistribution"].as_object().unwrap();
    assert_eq!(codes.keys().collect::<Vec<_>>(), ["OK"], "{r}");
    // A request over the send limit is refused before any load.
    let args = with(&["--max-send-message-size", "2"]);
    let err = one_line_error(&mut volley_bench(
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    assert!(err.contains("--max-send-message-size"), "{err}");
    // Template functions can be switched off; variables stay.
    let mut a: Vec<&str> = vec![
        "--insecure",
        "--proto",
        &proto,
        "--call",
        "helloworld.Greeter.SayHello",
    ];
    let greeter = workspace()
        .join("proto/helloworld/helloworld.proto")
        .display()
        .to_string();
    a[2] = &greeter;
    let mut off = a.clone();
    off.extend([
        "--disable-template-functions",
        "-d",
        r#"{"name": "{{newUUID}}"}"#,
        "-n",
        "5",
        &addr,
    ]);
    let err = one_line_error(&mut volley_bench(&off));
    assert!(err.contains("not available"), "{err}");
    let dir = std::env::temp_dir().join(format!("volley-bench-debug-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("debug.jsonl");
    let mut on = a.clone();
    on.extend([
        "--disable-template-functions",
        "-d",
        r#"{"name": "{{.RequestNumber}}"}"#,
        "-n",
        "5",
        "--debug",
        log.to_str().unwrap(),
        &addr,
    ]);
    assert_eq!(parse_summary(&ok(&mut volley_bench(&on))).count, 5);
    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[1]["msg"], "run done");
    assert_eq!(lines[1]["count"], 5);
    std::fs::remove_dir_all(dir).unwrap();
}
