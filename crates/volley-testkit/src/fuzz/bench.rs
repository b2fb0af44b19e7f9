//! Fuzz body for `volley bench`'s plan: threshold expressions, the flags that carry a little
//! language (stages, mixes, shards, schedules, durations, sizes) and config or scenario files,
//! resolved into a plan whose pacing and sharding are then asked questions.

use std::time::Duration;

use serde_json::{Map, Value};
use volley_bench::plan::{
    self, BenchArgs, DurationStop, Format, LineOrder, Pace, Plan,
    schedule::{Pacer, Shape},
    threshold, units,
};

/// The bench's parsers. The first byte picks what reads the rest (UTF-8 text):
///
/// - `0`: threshold expressions, one per line (`p99<50ms`, `errors<0.1%`, ...), parsed alone
///   and as a list, each one judged against a few observed values.
/// - `1`: a flag: the second byte picks which (`--stage`, `--call`, `--shard`, `--start-at`,
///   `--abort-on`, `--threshold`, the schedules' and durations' flags, sizes, ...); the lines of
///   the rest are its values. The plan is resolved with a fixed target and call.
/// - `2`, `3`, `4`: a config (or scenario) file in JSON, YAML or TOML, read into ghz's keys as
///   `--config` reads it (keys that name files or standard input removed), then resolved.
/// - `5`: the units and names the flags take: durations, sizes, schedule shapes and the like.
///
/// A plan that resolves is asked for its send times, rates, call numbers and workers.
pub fn bench_parsers(data: &[u8]) {
    let [mode, rest @ ..] = data else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    match mode % 6 {
        0 => thresholds(text),
        1 => {
            let Some((pick, text)) = text.split_at_checked(1) else {
                return;
            };
            let Some(args) = flag(pick.as_bytes()[0], text) else {
                return;
            };
            if let Ok(p) = plan::resolve(&args, &Map::new()) {
                exercise(&p);
            }
        }
        m @ 2..=4 => {
            let Some(cfg) = config(m, text) else {
                return;
            };
            if let Ok(p) = plan::resolve(&BenchArgs::default(), &cfg) {
                exercise(&p);
            }
        }
        _ => {
            let _ = units::parse_duration(text);
            let _ = units::parse_size(text);
            let _ = Shape::parse(text);
            let _ = DurationStop::parse(text);
            let _ = Format::parse(text);
            let _ = LineOrder::parse(text);
        }
    }
}

/// Thresholds, one per line.
fn thresholds(text: &str) {
    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let _ = threshold::parse_all(&lines);
    for line in &lines {
        if let Ok(t) = threshold::parse(line) {
            let _ = t.metric.is_duration();
            for observed in [0.0, 0.001, 1.0, 50e6, f64::MAX, f64::NAN] {
                let _ = t.op.holds(observed, t.limit);
            }
            if let Some(c) = &t.call {
                let _ = threshold::same_method(c, "api.Users.Get");
                let _ = threshold::same_method(c, "api.Users/Get");
            }
        }
    }
}

/// Arguments with a target and a call, and the flag `pick` chooses set to `text`'s lines (its
/// first line for flags given once); `None` for what would read a file.
fn flag(pick: u8, text: &str) -> Option<BenchArgs> {
    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let one = || Some(lines.first().cloned().unwrap_or_default());
    let mut a = BenchArgs {
        host: Some("127.0.0.1:50051".into()),
        call: vec!["api.Users.Get".into()],
        ..BenchArgs::default()
    };
    match pick % 24 {
        0 => a.stages = lines,
        1 => a.call = lines,
        2 => a.shard = one(),
        3 => a.start_at = one(),
        4 => a.abort_on = one(),
        5 => a.thresholds = Some(lines),
        6 => {
            // A schedule: shape, step duration and max duration, a line each.
            let mut it = lines.into_iter();
            a.load_schedule = it.next();
            a.load_step_duration = it.next();
            a.load_max_duration = it.next();
            a.load_start = Some(10);
            a.load_end = Some(100);
            a.load_step = Some(10);
        }
        7 => {
            let mut it = lines.into_iter();
            a.concurrency_schedule = it.next();
            a.concurrency_step_duration = it.next();
            a.concurrency_max_duration = it.next();
            a.concurrency_start = Some(1);
            a.concurrency_end = Some(20);
            a.concurrency_step = Some(2);
        }
        8 => a.timeout = one(),
        9 => a.duration = one(),
        10 => a.max_duration = one(),
        11 => a.duration_stop = one(),
        12 => a.stream_interval = one(),
        13 => a.connect_timeout = one(),
        14 => a.keepalive = one(),
        15 => a.strategy = one(),
        16 => a.lb_strategy = one(),
        17 => {
            // Inline JSON only: anything else names a file.
            let s = text.to_owned();
            if !s.starts_with('{') {
                return None;
            }
            a.service_config = Some(s);
        }
        18 => a.max_recv_message_size = one(),
        19 => a.format = one(),
        20 => a.tags = one(),
        21 => a.header = lines,
        22 => {
            a.emit = one();
            a.image = Some("volley:latest".into());
        }
        _ => {
            a.live_interval = one();
            a.linger = lines.get(1).cloned();
        }
    }
    Some(a)
}

/// Keys that make `resolve` read a file or standard input.
const READS: &[&str] = &["data-file", "binary-file", "metadata-file", "binary"];

/// A config file's text read into ghz's keys (`m`: 2 JSON, 3 YAML, 4 TOML), as `--config` or
/// `--scenario` reads it, without the keys that would read files or standard input.
fn config(m: u8, text: &str) -> Option<Map<String, Value>> {
    let value: Value = match m {
        2 => serde_json::from_str(text).ok()?,
        3 => serde_yaml::from_str(text).ok()?,
        _ => serde_json::to_value(toml::from_str::<toml::Value>(text).ok()?).ok()?,
    };
    let Value::Object(mut cfg) = value else {
        return None;
    };
    // A scenario's `target` is the host (`config::load_scenario`).
    if let Some(t) = cfg.remove("target")
        && !cfg.contains_key("host")
    {
        cfg.insert("host".into(), t);
    }
    for key in READS {
        cfg.remove(*key);
    }
    for key in ["data", "metadata"] {
        if cfg.get(key).and_then(Value::as_str) == Some("@") {
            cfg.remove(key);
        }
    }
    if cfg
        .get("service-config")
        .and_then(Value::as_str)
        .is_some_and(|s| !s.starts_with('{'))
    {
        cfg.remove("service-config");
    }
    if let Some(Value::Array(mix)) = cfg.get_mut("mix") {
        for e in mix.iter_mut().filter_map(Value::as_object_mut) {
            e.remove("data-file");
        }
    }
    Some(cfg)
}

/// Asks a resolved plan what the engine asks it: send times and rates, worker counts, which
/// calls and workers are this shard's.
fn exercise(p: &Plan) {
    let run = &p.run;
    let pacer = match &run.pace {
        Pace::Max => None,
        Pace::Rate(r) => Some(Pacer::new(r.clone())),
        Pace::Stages(s) => {
            let _ = s.length();
            let _ = s.describe();
            Some(Pacer::Stages(s.clone()))
        }
    };
    let times = [0, 1, 1_000, 3_600_000, u64::MAX / 2];
    for t in times.map(Duration::from_millis) {
        let _ = run.concurrency.value_at(t);
        if let Some(pacer) = &pacer {
            let _ = pacer.rate_at(t);
        }
    }
    if let Some(pacer) = &pacer {
        for k in [0, 1, 2, 100, 1_000_000, u64::MAX] {
            let _ = pacer.time_of(k);
        }
    }
    for k in [0, 1, 7, u64::MAX] {
        let _ = run.call_number(k);
    }
    for w in [0, 1, 5, usize::MAX] {
        let _ = run.runs_worker(w);
    }
    let _ = run.max_workers();
    let _ = run.deadline();
    for t in p.thresholds.iter().chain(&run.abort_on) {
        let _ = t.op.holds(1.0, t.limit);
    }
}
