//! k6's `options`, as the script exports them and the command line overrides them, turned into
//! the run's scenarios: the shortcuts (`vus`, `duration`, `iterations`, `stages`) become the
//! one `default` scenario k6 would make of them; `scenarios` are read executor by executor.

use std::{collections::BTreeMap, time::Duration};

use serde::Deserialize;
use serde_json::Value;
use volley_bench::plan::shard::Shard;

use crate::duration::{duration, format_duration, opt_duration, parse_duration, value_duration};

/// What the script's `options` say, with k6's names (unknown keys are kept, not refused: k6
/// has many that change nothing here).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ScriptOptions {
    pub vus: Option<u64>,
    #[serde(default, deserialize_with = "opt_duration")]
    pub duration: Option<Duration>,
    pub iterations: Option<u64>,
    pub stages: Option<Vec<Stage>>,
    pub scenarios: Option<BTreeMap<String, Value>>,
    #[serde(default)]
    pub thresholds: BTreeMap<String, Value>,
    pub summary_trend_stats: Option<Vec<String>>,
    pub insecure_skip_tls_verify: Option<bool>,
    /// How long `setup()` may run (k6's default: 60 s).
    #[serde(default, deserialize_with = "opt_duration")]
    pub setup_timeout: Option<Duration>,
    /// How long `teardown()` may run (60 s).
    #[serde(default, deserialize_with = "opt_duration")]
    pub teardown_timeout: Option<Duration>,
}

/// One ramp: reach `target` over `duration`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub(crate) struct Stage {
    #[serde(deserialize_with = "duration")]
    pub duration: Duration,
    #[serde(default)]
    pub target: f64,
}

/// How a scenario starts its iterations.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Executor {
    SharedIterations {
        vus: u64,
        iterations: u64,
        max_duration: Duration,
    },
    PerVuIterations {
        vus: u64,
        iterations: u64,
        max_duration: Duration,
    },
    ConstantVus {
        vus: u64,
        duration: Duration,
    },
    RampingVus {
        start_vus: u64,
        stages: Vec<Stage>,
        graceful_ramp_down: Duration,
    },
    ConstantArrivalRate {
        rate: f64,
        time_unit: Duration,
        duration: Duration,
        pre_allocated: u64,
        max_vus: u64,
    },
    RampingArrivalRate {
        start_rate: f64,
        time_unit: Duration,
        stages: Vec<Stage>,
        pre_allocated: u64,
        max_vus: u64,
    },
}

impl Executor {
    /// k6's name for it.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Executor::SharedIterations { .. } => "shared-iterations",
            Executor::PerVuIterations { .. } => "per-vu-iterations",
            Executor::ConstantVus { .. } => "constant-vus",
            Executor::RampingVus { .. } => "ramping-vus",
            Executor::ConstantArrivalRate { .. } => "constant-arrival-rate",
            Executor::RampingArrivalRate { .. } => "ramping-arrival-rate",
        }
    }

    /// The most VUs it runs at once.
    pub(crate) fn max_vus(&self) -> u64 {
        match self {
            Executor::SharedIterations { vus, .. }
            | Executor::PerVuIterations { vus, .. }
            | Executor::ConstantVus { vus, .. } => *vus,
            Executor::RampingVus {
                start_vus, stages, ..
            } => stages
                .iter()
                .map(|s| s.target.max(0.0) as u64)
                .chain([*start_vus])
                .max()
                .unwrap_or(0),
            Executor::ConstantArrivalRate {
                pre_allocated,
                max_vus,
                ..
            }
            | Executor::RampingArrivalRate {
                pre_allocated,
                max_vus,
                ..
            } => (*max_vus).max(*pre_allocated),
        }
    }

    /// How long it runs at most, before its graceful stop.
    pub(crate) fn max_duration(&self) -> Duration {
        match self {
            Executor::SharedIterations { max_duration, .. }
            | Executor::PerVuIterations { max_duration, .. } => *max_duration,
            Executor::ConstantVus { duration, .. }
            | Executor::ConstantArrivalRate { duration, .. } => *duration,
            Executor::RampingVus { stages, .. } | Executor::RampingArrivalRate { stages, .. } => {
                stages.iter().map(|s| s.duration).sum()
            }
        }
    }

    /// k6's line for it in the start banner, after `NAME: `.
    pub(crate) fn describe(&self, graceful_stop: Duration) -> String {
        let gs = format_duration(graceful_stop);
        match self {
            Executor::SharedIterations {
                vus,
                iterations,
                max_duration,
            } => format!(
                "{iterations} iterations shared among {vus} VUs (maxDuration: {}, gracefulStop: {gs})",
                format_duration(*max_duration)
            ),
            Executor::PerVuIterations {
                vus,
                iterations,
                max_duration,
            } => format!(
                "{iterations} iterations for each of {vus} VUs (maxDuration: {}, gracefulStop: {gs})",
                format_duration(*max_duration)
            ),
            Executor::ConstantVus { vus, duration } => format!(
                "{vus} looping VUs for {} (gracefulStop: {gs})",
                format_duration(*duration)
            ),
            Executor::RampingVus {
                stages,
                graceful_ramp_down,
                ..
            } => format!(
                "Up to {} looping VUs for {} over {} stages (gracefulRampDown: {}, gracefulStop: {gs})",
                self.max_vus(),
                format_duration(self.max_duration()),
                stages.len(),
                format_duration(*graceful_ramp_down)
            ),
            Executor::ConstantArrivalRate {
                rate,
                time_unit,
                duration,
                pre_allocated,
                max_vus,
            } => {
                format!(
                    "{} iterations/s for {} (maxVUs: {}-{}, gracefulStop: {gs})",
                    format_rate(*rate / time_unit.as_secs_f64()),
                    format_duration(*duration),
                    pre_allocated,
                    max_vus
                )
            }
            Executor::RampingArrivalRate {
                stages,
                time_unit,
                pre_allocated,
                max_vus,
                start_rate,
            } => {
                let peak = stages.iter().map(|s| s.target).fold(*start_rate, f64::max);
                format!(
                    "Up to {} iterations/s for {} over {} stages (maxVUs: {}-{}, gracefulStop: {gs})",
                    format_rate(peak / time_unit.as_secs_f64()),
                    format_duration(self.max_duration()),
                    stages.len(),
                    pre_allocated,
                    max_vus
                )
            }
        }
    }
}

/// k6's `%.2f`.
fn format_rate(r: f64) -> String {
    format!("{r:.2}")
}

/// A scenario: its executor and what every executor has.
#[derive(Clone, Debug)]
pub(crate) struct Scenario {
    pub name: String,
    pub executor: Executor,
    /// The exported function each iteration calls (`exec`, `default` unless given).
    pub exec: String,
    pub start_time: Duration,
    pub graceful_stop: Duration,
    /// `env` of the scenario, added to `__ENV` in its VUs.
    pub env: BTreeMap<String, String>,
    /// `tags` of the scenario, on every sample its VUs take.
    pub tags: BTreeMap<String, String>,
    /// `--shard I/N`: an arrival rate starts only the plan's starts numbered I mod N.
    pub stripe: Option<Shard>,
}

/// What the command line sets over the script's options.
#[derive(Clone, Debug, Default)]
pub(crate) struct Overrides {
    pub vus: Option<u64>,
    pub duration: Option<Duration>,
    pub iterations: Option<u64>,
    pub stages: Option<Vec<Stage>>,
}

const GRACEFUL_STOP: Duration = Duration::from_secs(30);
const MAX_DURATION: Duration = Duration::from_secs(600);

/// The run's scenarios, as k6 derives them: the command line's shortcuts win over the script's
/// and over its `scenarios`; without any, one VU runs one iteration.
pub(crate) fn scenarios(opts: &ScriptOptions, cli: &Overrides) -> Result<Vec<Scenario>, String> {
    let shortcut = cli.vus.is_some()
        || cli.duration.is_some()
        || cli.iterations.is_some()
        || cli.stages.is_some();
    if !shortcut && let Some(list) = &opts.scenarios {
        if opts.duration.is_some() || opts.iterations.is_some() || opts.stages.is_some() {
            return Err(
                "using multiple execution config shortcuts (`duration`, `iterations`, \
                        `stages`) simultaneously with `scenarios` is not allowed"
                    .into(),
            );
        }
        return list.iter().map(|(name, v)| scenario(name, v)).collect();
    }
    let vus = cli.vus.or(opts.vus);
    let duration = cli.duration.or(if cli.iterations.is_some() {
        None
    } else {
        opts.duration
    });
    let iterations = cli.iterations.or(if cli.duration.is_some() {
        None
    } else {
        opts.iterations
    });
    let stages = cli.stages.clone().or_else(|| {
        if cli.duration.is_some() || cli.iterations.is_some() {
            None
        } else {
            opts.stages.clone()
        }
    });
    let executor = if let Some(stages) = stages.filter(|s| !s.is_empty()) {
        Executor::RampingVus {
            start_vus: vus.unwrap_or(1),
            stages,
            graceful_ramp_down: GRACEFUL_STOP,
        }
    } else if let Some(iterations) = iterations {
        Executor::SharedIterations {
            vus: vus.unwrap_or(1),
            iterations,
            max_duration: duration.unwrap_or(MAX_DURATION),
        }
    } else if let Some(duration) = duration.filter(|d| !d.is_zero()) {
        Executor::ConstantVus {
            vus: vus.unwrap_or(1),
            duration,
        }
    } else {
        Executor::PerVuIterations {
            vus: vus.unwrap_or(1),
            iterations: 1,
            max_duration: MAX_DURATION,
        }
    };
    if executor.max_vus() == 0 {
        return Err("the number of VUs can't be 0 here (set --vus or options.vus)".into());
    }
    Ok(vec![Scenario {
        name: "default".into(),
        executor,
        exec: "default".into(),
        start_time: Duration::ZERO,
        graceful_stop: GRACEFUL_STOP,
        env: BTreeMap::new(),
        tags: BTreeMap::new(),
        stripe: None,
    }])
}

fn scenario(name: &str, v: &Value) -> Result<Scenario, String> {
    let at = |what: &str| format!("scenario {name:?}: {what}");
    let obj = v.as_object().ok_or_else(|| at("must be an object"))?;
    let get_u = |k: &str| -> Result<Option<u64>, String> {
        match obj.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(x) => x
                .as_f64()
                .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                .map(|f| Some(f as u64))
                .ok_or_else(|| at(&format!("`{k}` must be a whole number, not {x}"))),
        }
    };
    let get_f = |k: &str| -> Result<Option<f64>, String> {
        match obj.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(x) => x
                .as_f64()
                .filter(|f| *f >= 0.0)
                .map(Some)
                .ok_or_else(|| at(&format!("`{k}` must be a number, not {x}"))),
        }
    };
    let get_d = |k: &str| -> Result<Option<Duration>, String> {
        match obj.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(x) => value_duration(x)
                .map(Some)
                .map_err(|e| at(&format!("`{k}`: {e}"))),
        }
    };
    let get_stages = || -> Result<Vec<Stage>, String> {
        let list = obj
            .get("stages")
            .cloned()
            .unwrap_or(Value::Array(Vec::new()));
        serde_json::from_value::<Vec<Stage>>(list).map_err(|e| at(&format!("`stages`: {e}")))
    };
    let kind = obj
        .get("executor")
        .and_then(Value::as_str)
        .ok_or_else(|| at("has no `executor`"))?;
    let need = |x: Option<u64>, k: &str| x.ok_or_else(|| at(&format!("{kind} needs `{k}`")));
    let executor = match kind {
        "shared-iterations" => Executor::SharedIterations {
            vus: get_u("vus")?.unwrap_or(1),
            iterations: get_u("iterations")?.unwrap_or(1),
            max_duration: get_d("maxDuration")?.unwrap_or(MAX_DURATION),
        },
        "per-vu-iterations" => Executor::PerVuIterations {
            vus: get_u("vus")?.unwrap_or(1),
            iterations: get_u("iterations")?.unwrap_or(1),
            max_duration: get_d("maxDuration")?.unwrap_or(MAX_DURATION),
        },
        "constant-vus" => Executor::ConstantVus {
            vus: get_u("vus")?.unwrap_or(1),
            duration: get_d("duration")?.ok_or_else(|| at("constant-vus needs `duration`"))?,
        },
        "ramping-vus" => Executor::RampingVus {
            start_vus: get_u("startVUs")?.unwrap_or(1),
            stages: get_stages()?,
            graceful_ramp_down: get_d("gracefulRampDown")?.unwrap_or(GRACEFUL_STOP),
        },
        "constant-arrival-rate" => {
            let pre = need(get_u("preAllocatedVUs")?, "preAllocatedVUs")?;
            Executor::ConstantArrivalRate {
                rate: get_f("rate")?.ok_or_else(|| at("constant-arrival-rate needs `rate`"))?,
                time_unit: get_d("timeUnit")?.unwrap_or(Duration::from_secs(1)),
                duration: get_d("duration")?
                    .ok_or_else(|| at("constant-arrival-rate needs `duration`"))?,
                pre_allocated: pre,
                max_vus: get_u("maxVUs")?.unwrap_or(pre).max(pre),
            }
        }
        "ramping-arrival-rate" => {
            let pre = need(get_u("preAllocatedVUs")?, "preAllocatedVUs")?;
            Executor::RampingArrivalRate {
                start_rate: get_f("startRate")?.unwrap_or(0.0),
                time_unit: get_d("timeUnit")?.unwrap_or(Duration::from_secs(1)),
                stages: get_stages()?,
                pre_allocated: pre,
                max_vus: get_u("maxVUs")?.unwrap_or(pre).max(pre),
            }
        }
        "externally-controlled" => {
            return Err(at(
                "the externally-controlled executor is not supported by volley run",
            ));
        }
        other => return Err(at(&format!("unknown executor type {other:?}"))),
    };
    if executor.max_vus() == 0 {
        return Err(at("needs at least one VU"));
    }
    let strings = |k: &str| -> Result<BTreeMap<String, String>, String> {
        match obj.get(k) {
            None | Some(Value::Null) => Ok(BTreeMap::new()),
            Some(Value::Object(m)) => Ok(m
                .iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_str().map_or_else(|| v.to_string(), str::to_owned),
                    )
                })
                .collect()),
            Some(_) => Err(at(&format!("`{k}` must be an object"))),
        }
    };
    Ok(Scenario {
        name: name.to_owned(),
        executor,
        exec: obj
            .get("exec")
            .and_then(Value::as_str)
            .unwrap_or("default")
            .to_owned(),
        start_time: get_d("startTime")?.unwrap_or_default(),
        graceful_stop: get_d("gracefulStop")?.unwrap_or(GRACEFUL_STOP),
        env: strings("env")?,
        tags: strings("tags")?,
        stripe: None,
    })
}

/// `-s 30s:10` (k6's `--stage`), one or several separated by commas.
pub(crate) fn parse_stages(specs: &[String]) -> Result<Vec<Stage>, String> {
    let mut out = Vec::new();
    for spec in specs.iter().flat_map(|s| s.split(',')) {
        let (d, t) = spec.split_once(':').unwrap_or((spec, "0"));
        out.push(Stage {
            duration: parse_duration(d).map_err(|e| format!("--stage {spec:?}: {e}"))?,
            target: t
                .trim()
                .parse()
                .map_err(|_| format!("--stage {spec:?}: the target {t:?} is not a number"))?,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortcuts_make_the_scenario_k6_makes() {
        let none = scenarios(&ScriptOptions::default(), &Overrides::default()).unwrap();
        assert_eq!(
            none[0].executor.describe(GRACEFUL_STOP),
            "1 iterations for each of 1 VUs (maxDuration: 10m0s, gracefulStop: 30s)"
        );
        let cli = Overrides {
            vus: Some(2),
            iterations: Some(10),
            ..Default::default()
        };
        let s = scenarios(&ScriptOptions::default(), &cli).unwrap();
        assert_eq!(
            s[0].executor.describe(GRACEFUL_STOP),
            "10 iterations shared among 2 VUs (maxDuration: 10m0s, gracefulStop: 30s)"
        );
        let opts: ScriptOptions =
            serde_json::from_value(serde_json::json!({"vus": 5, "duration": "10s"})).unwrap();
        let s = scenarios(&opts, &Overrides::default()).unwrap();
        assert_eq!(
            s[0].executor,
            Executor::ConstantVus {
                vus: 5,
                duration: Duration::from_secs(10)
            }
        );
    }

    #[test]
    fn scenarios_are_read_by_executor_and_a_bad_one_is_named() {
        let opts: ScriptOptions = serde_json::from_value(serde_json::json!({"scenarios": {
            "open": {"executor": "constant-arrival-rate", "rate": 50, "timeUnit": "1s",
                     "duration": "30s", "preAllocatedVUs": 10, "maxVUs": 20},
            "bad": {"executor": "ramping-arrivals"}
        }}))
        .unwrap();
        let e = scenarios(&opts, &Overrides::default()).unwrap_err();
        assert_eq!(
            e,
            "scenario \"bad\": unknown executor type \"ramping-arrivals\""
        );
        let opts: ScriptOptions = serde_json::from_value(serde_json::json!({"scenarios": {
            "open": {"executor": "constant-arrival-rate", "rate": 50, "timeUnit": "1s",
                     "duration": "30s", "preAllocatedVUs": 10, "maxVUs": 20, "exec": "login"}
        }}))
        .unwrap();
        let s = scenarios(&opts, &Overrides::default()).unwrap();
        assert_eq!(s[0].exec, "login");
        assert_eq!(
            s[0].executor.describe(GRACEFUL_STOP),
            "50.00 iterations/s for 30s (maxVUs: 10-20, gracefulStop: 30s)"
        );
    }
}
