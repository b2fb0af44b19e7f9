//! The rules' messages and ghz's defaults, through `resolve` as the command line reaches it.

use std::time::Duration;

use clap::Parser;

use super::*;
use crate::plan::{ClientPath, Format, Pace, Stop};

#[derive(Parser)]
#[command(version, disable_version_flag = true)]
struct Cmd {
    #[command(flatten)]
    bench: BenchArgs,
}

fn args(argv: &[&str]) -> BenchArgs {
    let mut full = vec!["bench"];
    full.extend_from_slice(argv);
    Cmd::try_parse_from(full).unwrap().bench
}

fn plan(argv: &[&str]) -> Result<Plan, PlanError> {
    resolve(&args(argv), &Map::new())
}

#[test]
fn seed_commands_parse() {
    let p = plan(&[
        "--insecure",
        "--proto",
        "example/users.proto",
        "--call",
        "api.Users.Get",
        "-d",
        r#"{"id": 228}"#,
        "-c100",
        "-n1000",
        "127.0.0.1:9090",
    ])
    .unwrap();
    assert_eq!(p.run.stop, Stop::Calls(1000));
    assert_eq!(p.run.concurrency.start, 100.0);
    assert!(p.insecure);
    assert_eq!(p.host.as_deref(), Some("127.0.0.1:9090"));
    assert_eq!(p.raw.import_paths, ["example", "."]);

    let p = plan(&[
        "--insecure",
        "--proto",
        "grpc.proto",
        "--call",
        "grpc.hi/sayHello",
        "--duration=10s",
        "--concurrency=100",
        "--connections=6",
        "0.0.0.0:9503",
    ])
    .unwrap();
    assert_eq!(p.run.stop, Stop::Duration(Duration::from_secs(10)));
    assert_eq!(p.run.connections, 6);
}

#[test]
fn clean_like_go() {
    assert_eq!(target::clean("/a/b/../../c/./d"), "/c/d");
    assert_eq!(target::clean("a/../.."), "..");
    assert_eq!(target::clean("./x/"), "x");
    assert_eq!(target::clean(""), ".");
}

#[test]
fn defaults_are_ghz_defaults() {
    let p = plan(&["--call", "a.B/C"]).unwrap();
    assert_eq!(p.run.stop, Stop::Calls(200));
    assert_eq!(p.run.concurrency.start, 50.0);
    assert_eq!(p.run.connections, 1);
    assert_eq!(p.run.timeout, Some(Duration::from_secs(20)));
    assert_eq!(p.connect_timeout, Duration::from_secs(10));
    assert!(!p.insecure);
    assert_eq!(p.format, Format::Summary);
    assert_eq!(p.run.pace, Pace::Max);
    let p = plan(&["--call", "a.B/C", "-t", "0"]).unwrap();
    assert_eq!(p.run.timeout, None);
}

#[test]
fn validation_errors_name_the_flag() {
    let cases: &[(&[&str], &str)] = &[
        (&[], "--call is required"),
        (&["--call", "a.B/C", "-c", "0"], "-c must be at least 1"),
        (
            &["--call", "a.B/C", "-c", "2", "--connections", "3"],
            "--connections (3) must not exceed -c (2)",
        ),
        (
            &["--call", "a.B/C", "-d", "{}", "-D", "x.json"],
            "only one of -d, -D, -b and -B",
        ),
        (&["--call", "a.B/C", "-z", "ten"], "-z: invalid duration"),
        (&["--call", "a.B/C", "-O", "xml"], "-O: invalid format"),
        (
            &[
                "--call",
                "a.B/C",
                "--load-schedule",
                "step",
                "--load-start",
                "5",
                "--load-step",
                "5",
            ],
            "step-duration is required",
        ),
        (
            &[
                "--call",
                "a.B/C",
                "--load-schedule",
                "line",
                "--load-start",
                "5",
                "--load-end",
                "5",
                "--load-step",
                "1",
            ],
            "must differ",
        ),
        (
            &["--call", "a.B/C", "--skipFirst", "300"],
            "--skipFirst (300) must be less than -n (200)",
        ),
        (
            &["--call", "a.B/C", "--insecure", "--cacert", "ca.pem"],
            "conflicts with --cacert",
        ),
        (
            &["--call", "a.B/C", "--tags", "[1]"],
            "--tags must be a JSON object",
        ),
    ];
    for (argv, want) in cases {
        let e = plan(argv).unwrap_err().to_string();
        assert!(e.contains(want), "{argv:?}: {e}");
    }
}

#[test]
fn flags_beat_config_which_beats_defaults() {
    let mut cfg = Map::new();
    cfg.insert("call".into(), "api.Users.Get".into());
    cfg.insert("total".into(), 500.into());
    cfg.insert("concurrency".into(), 20.into());
    cfg.insert("insecure".into(), true.into());
    cfg.insert("timeout".into(), "5s".into());
    let p = resolve(&args(&["-c", "10"]), &cfg).unwrap();
    assert_eq!(p.call, "api.Users.Get");
    assert_eq!(p.run.stop, Stop::Calls(500));
    assert_eq!(p.run.concurrency.start, 10.0);
    assert!(p.insecure);
    assert_eq!(p.run.timeout, Some(Duration::from_secs(5)));
    cfg.insert("total".into(), "many".into());
    let e = resolve(&args(&[]), &cfg).unwrap_err().to_string();
    assert!(e.contains("config key \"total\""), "{e}");
}

fn plan_in(argv: &[&str], env: &Env) -> Result<Plan, PlanError> {
    resolve_in(&args(argv), &Map::new(), env)
}

#[test]
fn the_stop_and_the_pace_follow_n_z_rates_and_stages() {
    let p = plan(&["--call", "a.B/C", "-n", "30", "-x", "5s"]).unwrap();
    assert_eq!(p.run.stop, Stop::Calls(30));
    assert_eq!(p.run.deadline(), Some(Duration::from_secs(5)));
    let p = plan(&["--call", "a.B/C", "-z", "3s", "-x", "5s", "-r", "40"]).unwrap();
    assert_eq!(p.run.stop, Stop::Duration(Duration::from_secs(3)));
    assert_eq!(p.run.deadline(), Some(Duration::from_secs(3)));
    assert!(matches!(&p.run.pace, Pace::Rate(r) if r.start == 40.0));
    assert_eq!(p.raw.total, 0);
    // Stages set the pace and, without -z, the length.
    let p = plan(&["--call", "a.B/C", "--stage", "2s:10", "--stage", "1s:0"]).unwrap();
    assert_eq!(p.run.stop, Stop::Duration(Duration::from_secs(3)));
    assert!(matches!(&p.run.pace, Pace::Stages(s) if s.0.len() == 2));
    let e = plan(&["--call", "a.B/C", "--stage", "2s:10", "-r", "5"]).unwrap_err();
    assert!(
        e.to_string().contains("--stage sets the rate over time"),
        "{e}"
    );
}

#[test]
fn the_environment_picks_the_client_and_a_shards_index() {
    let h2 = Env {
        job_index: Some("2".into()),
        client: ClientPath::H2,
    };
    let p = plan_in(&["--call", "a.B/C", "-c", "4", "--shard", "auto/3"], &h2).unwrap();
    assert_eq!(p.run.client, ClientPath::H2);
    assert_eq!(p.run.shard.map(|s| (s.index, s.count)), Some((2, 3)));
    let p = plan_in(&["--call", "a.B/C"], &Env::default()).unwrap();
    assert_eq!(p.run.client, ClientPath::Fast);
    let e = plan_in(&["--call", "a.B/C", "--shard", "auto/3"], &Env::default()).unwrap_err();
    assert!(
        e.to_string()
            .contains("JOB_COMPLETION_INDEX, which is not set"),
        "{e}"
    );
}

#[test]
fn emit_needs_what_kubernetes_cannot_supply() {
    let base = ["--call", "a.B/C", "-c", "4", "-n", "10"];
    let cases: [(&[&str], &str); 6] = [
        (
            &["--emit", "helm", "h:1"],
            "--emit \"helm\": the one kind is k8s-job",
        ),
        (
            &["--shard", "auto/2", "--emit", "k8s-job", "h:1"],
            "needs --image",
        ),
        (
            &["--emit", "k8s-job", "--image", "i", "h:1"],
            "needs --shard auto/N",
        ),
        (
            &["--shard", "1/2", "--emit", "k8s-job", "--image", "i", "h:1"],
            "needs --shard auto/N, not 1/2",
        ),
        (
            &["--shard", "auto/2", "--emit", "k8s-job", "--image", "i"],
            "needs the target HOST:PORT",
        ),
        (
            &[
                "--shard",
                "auto/2",
                "--start-at",
                "+30s",
                "--emit",
                "k8s-job",
                "--image",
                "i",
                "h:1",
            ],
            "give --start-at as an RFC 3339 time (each pod would count +30s",
        ),
    ];
    for (flags, want) in cases {
        let argv: Vec<&str> = base.iter().chain(flags.iter()).copied().collect();
        let e = plan_in(&argv, &Env::default()).unwrap_err().to_string();
        assert!(e.contains(want), "{flags:?}: {e}");
    }
    let argv = [
        &base[..],
        &[
            "--shard", "auto/2", "--emit", "k8s-job", "--image", "i", "--cpus", "3", "h:1",
        ],
    ]
    .concat();
    let p = plan_in(&argv, &Env::default()).unwrap();
    assert_eq!(
        p.emit,
        Some(crate::plan::Emit::K8sJob {
            image: "i".into(),
            cpus: 3
        })
    );
}

#[test]
fn the_watch_flags_are_checked_together() {
    let p = plan(&[
        "--call",
        "a.B/C",
        "--live",
        "out.ndjson",
        "--live-interval",
        "250ms",
    ])
    .unwrap();
    assert!(p.watch.any());
    assert_eq!(p.watch.every, Duration::from_millis(250));
    assert!(!plan(&["--call", "a.B/C"]).unwrap().watch.any());
    let cases: [(&[&str], &str); 4] = [
        (
            &["--live-interval", "50ms"],
            "--live-interval: give 100ms or more",
        ),
        (
            &["--live-interval", "soon"],
            "--live-interval: invalid duration",
        ),
        (&["--tui", "--live", "-"], "give --live a file, not -"),
        (
            &["--linger", "5s"],
            "--linger keeps --prometheus-listen or --dashboard up after the run",
        ),
    ];
    for (flags, want) in cases {
        let argv: Vec<&str> = ["--call", "a.B/C"].iter().chain(flags).copied().collect();
        let e = plan(&argv).unwrap_err().to_string();
        assert!(e.contains(want), "{flags:?}: {e}");
    }
    let e = plan(&["--call", "a.B/C", "--stubs", "s.yaml", "h:1"]).unwrap_err();
    assert!(
        e.to_string()
            .contains("--stubs answer an in-process server"),
        "{e}"
    );
}

#[test]
fn standard_input_and_files_are_read_only_once_the_rules_hold() {
    // A data file that does not exist is not read when a rule fails first.
    let e = plan(&["--call", "a.B/C", "-D", "/nonexistent.json", "-O", "xml"]).unwrap_err();
    assert!(e.to_string().contains("-O: invalid format"), "{e}");
    let e = plan(&["--call", "a.B/C", "-D", "/nonexistent.json", "--tags", "[]"]).unwrap_err();
    assert!(
        e.to_string().contains("--tags must be a JSON object"),
        "{e}"
    );
    let e = plan(&["--call", "a.B/C", "-D", "/nonexistent.json"]).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("cannot read -D /nonexistent.json"),
        "{e}"
    );
}
