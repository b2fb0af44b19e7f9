//! The report's `options` block: the run's settings with ghz's keys and omission rules, rebuilt
//! from the [`Plan`] (ghz echoes its options as given, so `Plan` keeps those raw values).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::plan::{
    DataSource, Pace, Plan,
    schedule::{Ramp, Shape},
};

/// The `options` block (ghz's keys and omission rules); read back by `volley report merge`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ReportOptions {
    #[serde(skip_serializing_if = "String::is_empty")]
    #[allow(missing_docs)]
    pub call: String,
    /// Arrival-rate stages (`--stage`), as `DURATION:RATE`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[allow(missing_docs)]
    pub host: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[allow(missing_docs)]
    pub proto: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[allow(missing_docs)]
    pub protoset: String,
    #[serde(rename = "import-paths", skip_serializing_if = "Vec::is_empty")]
    #[allow(missing_docs)]
    pub import_paths: Vec<String>,
    #[serde(rename = "enable-compression", skip_serializing_if = "is_false")]
    #[allow(missing_docs)]
    pub enable_compression: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[allow(missing_docs)]
    pub cacert: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[allow(missing_docs)]
    pub cert: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[allow(missing_docs)]
    pub key: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[allow(missing_docs)]
    pub cname: String,
    #[serde(rename = "skipTLS", skip_serializing_if = "is_false")]
    #[allow(missing_docs)]
    pub skip_tls: bool,
    #[allow(missing_docs)]
    pub insecure: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[allow(missing_docs)]
    pub authority: String,
    #[serde(skip_serializing_if = "is_zero")]
    #[allow(missing_docs)]
    pub rps: u64,
    #[serde(rename = "load-schedule")]
    #[allow(missing_docs)]
    pub load_schedule: String,
    #[serde(rename = "load-start")]
    #[allow(missing_docs)]
    pub load_start: u64,
    #[serde(rename = "load-end")]
    #[allow(missing_docs)]
    pub load_end: u64,
    #[serde(rename = "load-step")]
    #[allow(missing_docs)]
    pub load_step: i64,
    #[serde(rename = "load-step-duration")]
    #[allow(missing_docs)]
    pub load_step_duration: u64,
    #[serde(rename = "load-max-duration")]
    #[allow(missing_docs)]
    pub load_max_duration: u64,
    #[allow(missing_docs)]
    pub concurrency: u64,
    #[serde(rename = "concurrency-schedule")]
    #[allow(missing_docs)]
    pub concurrency_schedule: String,
    #[serde(rename = "concurrency-start")]
    #[allow(missing_docs)]
    pub concurrency_start: u64,
    #[serde(rename = "concurrency-end")]
    #[allow(missing_docs)]
    pub concurrency_end: u64,
    #[serde(rename = "concurrency-step")]
    #[allow(missing_docs)]
    pub concurrency_step: i64,
    #[serde(rename = "concurrency-step-duration")]
    #[allow(missing_docs)]
    pub concurrency_step_duration: u64,
    #[serde(rename = "concurrency-max-duration")]
    #[allow(missing_docs)]
    pub concurrency_max_duration: u64,
    #[serde(skip_serializing_if = "is_zero")]
    #[allow(missing_docs)]
    pub total: u64,
    #[serde(rename = "async", skip_serializing_if = "is_false")]
    #[allow(missing_docs)]
    pub async_mode: bool,
    #[allow(missing_docs)]
    pub connections: u64,
    #[serde(skip_serializing_if = "is_zero")]
    #[allow(missing_docs)]
    pub duration: u64,
    #[allow(missing_docs)]
    pub timeout: u64,
    #[serde(rename = "dial-timeout")]
    #[allow(missing_docs)]
    pub dial_timeout: u64,
    #[serde(skip_serializing_if = "is_zero")]
    #[allow(missing_docs)]
    pub keepalive: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[allow(missing_docs)]
    pub data: Option<Value>,
    #[allow(missing_docs)]
    pub binary: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[allow(missing_docs)]
    pub metadata: Option<Value>,
    #[serde(rename = "CPUs")]
    #[allow(missing_docs)]
    pub cpus: u64,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[allow(missing_docs)]
    pub name: String,
    #[serde(rename = "skipFirst", skip_serializing_if = "is_zero")]
    #[allow(missing_docs)]
    pub skip_first: u64,
    #[serde(rename = "count-errors", skip_serializing_if = "is_false")]
    #[allow(missing_docs)]
    pub count_errors: bool,
}

impl ReportOptions {
    /// The options of a run of `plan` against `host`, as ghz reports them.
    pub fn from_plan(plan: &Plan, host: &str) -> ReportOptions {
        let r = &plan.run;
        let secs_ns = |d: Duration| d.as_nanos() as u64;
        let path = |p: &Option<std::path::PathBuf>| {
            p.as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        };
        // ghz echoes a constant schedule's start as 0.
        let start = |r: &Ramp| {
            if r.shape == Shape::Const {
                0
            } else {
                r.start as u64
            }
        };
        let data = match &plan.data {
            DataSource::Json(t) => serde_json::from_str(t)
                .ok()
                .or_else(|| Some(Value::String(t.clone()))),
            _ => None,
        };
        let c = &r.concurrency;
        let load = match &r.pace {
            Pace::Rate(ramp) => ramp.clone(),
            Pace::Max | Pace::Stages(_) => Ramp::constant(0.0),
        };
        Self {
            call: plan.call.clone(),
            stages: match &r.pace {
                Pace::Stages(s) => s.describe(),
                Pace::Max | Pace::Rate(_) => Vec::new(),
            },
            host: host.to_owned(),
            proto: plan.raw.proto.clone(),
            protoset: plan.raw.protoset.clone(),
            import_paths: plan.raw.import_paths.clone(),
            enable_compression: plan.gzip,
            cacert: path(&plan.cacert),
            cert: path(&plan.cert),
            key: path(&plan.key),
            cname: plan.cname.clone().unwrap_or_default(),
            skip_tls: plan.skip_tls,
            insecure: plan.insecure,
            authority: plan.authority.clone().unwrap_or_default(),
            rps: plan.raw.rps,
            load_schedule: load.shape.as_str().into(),
            load_start: start(&load),
            load_end: load.end as u64,
            load_step: load.step as i64,
            load_step_duration: secs_ns(load.step_duration),
            load_max_duration: secs_ns(load.max_duration),
            concurrency: plan.raw.concurrency,
            concurrency_schedule: c.shape.as_str().into(),
            concurrency_start: start(c),
            concurrency_end: c.end as u64,
            concurrency_step: if c.shape == Shape::Const {
                1
            } else {
                c.step as i64
            },
            concurrency_step_duration: secs_ns(c.step_duration),
            concurrency_max_duration: secs_ns(c.max_duration),
            total: plan.raw.total,
            async_mode: r.async_mode,
            connections: r.connections as u64,
            duration: plan.raw.duration_ns,
            timeout: plan.raw.timeout_ns,
            dial_timeout: secs_ns(plan.connect_timeout),
            keepalive: plan.keepalive.map_or(0, secs_ns),
            data,
            binary: plan.raw.binary,
            metadata: plan
                .metadata
                .as_deref()
                .and_then(|m| serde_json::from_str(m).ok()),
            cpus: r.cpus as u64,
            name: r.name.clone(),
            skip_first: r.skip_first,
            count_errors: r.count_errors,
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}
