//! `volley report merge`: JSON results of the same plan (the shards of one run, or runs on many
//! hosts) summed exactly into one report. Each input's `volley.results` is read back into a
//! recorder and the recorders are merged as one process merges its threads, so the merged
//! percentiles are those of every call (within HDR precision), not an average of percentiles.

use serde_json::Value;

use crate::{
    Outcome, Report, ReportOptions,
    engine::MethodOutcome,
    recorder::Recorder,
    results::{Results, plan_hash},
};

/// One input: where it came from (a file name, or `stdin #2`) and its JSON report.
pub struct Input {
    /// For messages.
    pub name: String,
    /// The `-O json` report.
    pub report: Value,
}

/// A merge that cannot be made (the inputs are not results of one plan).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct MergeError(String);

/// The merged report, and why it is not the whole run when it is not (a shard missing or
/// repeated): the figures are then exact for the shards given, but not the plan's.
pub struct Merged {
    /// The report of every call in the inputs.
    pub report: Report,
    /// Set when the inputs are not every shard of the plan exactly once.
    pub incomplete: Option<String>,
}

fn results_of(input: &Input) -> Result<Results, MergeError> {
    let v = input.report.pointer("/volley/results").ok_or_else(|| {
        MergeError(format!(
            "{}: no volley.results (merge needs `volley bench -O json` reports)",
            input.name
        ))
    })?;
    let r: Results = serde_json::from_value(v.clone())
        .map_err(|e| MergeError(format!("{}: volley.results: {e}", input.name)))?;
    if r.version != crate::results::VERSION {
        return Err(MergeError(format!(
            "{}: results version {} (this volley reads {})",
            input.name,
            r.version,
            crate::results::VERSION
        )));
    }
    Ok(r)
}

/// The first option that differs between two reports' `options` (the generator's CPU count
/// aside), as `options.KEY is A in X, B in Y`.
fn differing_option(a: &Input, b: &Input) -> Option<String> {
    let empty = serde_json::Map::new();
    let oa = a
        .report
        .get("options")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let ob = b
        .report
        .get("options")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let mut keys: Vec<&String> = oa
        .keys()
        .chain(ob.keys())
        .filter(|k| *k != "CPUs")
        .collect();
    keys.sort();
    keys.dedup();
    keys.into_iter().find_map(|k| {
        let (x, y) = (oa.get(k), ob.get(k));
        (x != y).then(|| {
            let show = |v: Option<&Value>| v.map_or("absent".to_owned(), Value::to_string);
            format!(
                "options.{k} is {} in {}, {} in {}",
                show(x),
                a.name,
                show(y),
                b.name
            )
        })
    })
}

/// Merges `inputs` into one report.
pub fn merge(inputs: &[Input]) -> Result<Merged, MergeError> {
    let first = inputs
        .first()
        .ok_or_else(|| MergeError("nothing to merge: no results were given".into()))?;
    let all: Vec<Results> = inputs.iter().map(results_of).collect::<Result<_, _>>()?;
    for (input, r) in inputs.iter().zip(&all).skip(1) {
        if r.plan_hash != all[0].plan_hash {
            let why = differing_option(first, input)
                .unwrap_or_else(|| format!("plan hashes {} and {}", all[0].plan_hash, r.plan_hash));
            return Err(MergeError(format!(
                "{} and {} are not results of the same plan: {why}",
                first.name, input.name
            )));
        }
    }
    let incomplete = shard_problem(inputs, &all)?;
    let mut recorder = all[0]
        .recorder()
        .map_err(|e| MergeError(format!("{}: {e}", first.name)))?;
    for (input, r) in inputs.iter().zip(&all).skip(1) {
        recorder.merge(
            r.recorder()
                .map_err(|e| MergeError(format!("{}: {e}", input.name)))?,
        );
    }
    let methods = merge_methods(inputs, &all)?;
    let start = all.iter().map(|r| r.start_unix_nano).min().unwrap_or(0);
    let end = all.iter().map(|r| r.end_unix_nano).max().unwrap_or(start);
    let total = std::time::Duration::from_nanos(end.saturating_sub(start).max(0) as u64);
    let mut outcome = Outcome::recorded(recorder, total, start);
    outcome.generator_saturated = all.iter().any(|r| r.generator_saturated);
    outcome.rate_unreachable = all.iter().any(|r| r.rate_unreachable);
    outcome.methods = methods;
    let options_json = first.report.get("options").cloned().unwrap_or(Value::Null);
    let options: ReportOptions = serde_json::from_value(options_json.clone())
        .map_err(|e| MergeError(format!("{}: options: {e}", first.name)))?;
    let tags = first.report.get("tags").cloned();
    let mut report = Report::new(outcome, options, tags);
    report.name = first
        .report
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if let Some(r) = &mut report.volley.results {
        r.plan_hash = plan_hash(&options_json);
    }
    Ok(Merged { report, incomplete })
}

/// A mix's entries merged one by one, as the whole run is (same plan, so same entries).
fn merge_methods(inputs: &[Input], all: &[Results]) -> Result<Vec<MethodOutcome>, MergeError> {
    let mut out = Vec::new();
    for (j, first) in all[0].methods.iter().enumerate() {
        let mut recorder = Recorder::new(false, 0, 0);
        for (input, r) in inputs.iter().zip(all) {
            let m = r
                .methods
                .get(j)
                .filter(|m| m.call == first.call)
                .ok_or_else(|| {
                    MergeError(format!(
                        "{}: volley.results.methods has no {} at position {j}",
                        input.name, first.call
                    ))
                })?;
            recorder.merge(
                m.results
                    .recorder()
                    .map_err(|e| MergeError(format!("{}: {}: {e}", input.name, m.call)))?,
            );
        }
        out.push(MethodOutcome {
            name: first.call.clone(),
            weight: first.weight,
            recorder,
        });
    }
    Ok(out)
}

/// Checks that sharded inputs are every shard of one count exactly once; unsharded inputs (whole
/// runs of the same plan, say on several hosts) merge as they are.
fn shard_problem(inputs: &[Input], all: &[Results]) -> Result<Option<String>, MergeError> {
    let sharded: Vec<_> = inputs
        .iter()
        .zip(all)
        .filter(|(_, r)| r.shard.is_some())
        .collect();
    if sharded.is_empty() {
        return Ok(None);
    }
    if sharded.len() != all.len() {
        return Err(MergeError(
            "some inputs are shards and some are not: merge the shards of one run".into(),
        ));
    }
    let count = all[0].shard.map_or(0, |s| s.count);
    let mut seen: Vec<Vec<&str>> = vec![Vec::new(); count as usize];
    for (input, r) in &sharded {
        let s = r.shard.expect("sharded");
        if s.count != count {
            return Err(MergeError(format!(
                "{} is shard {} of {}, {} is of {count}",
                input.name, s.index, s.count, inputs[0].name
            )));
        }
        seen[s.index as usize].push(&input.name);
    }
    let mut problems = Vec::new();
    for (i, names) in seen.iter().enumerate() {
        match names.len() {
            0 => problems.push(format!("shard {i} of {count} is missing")),
            1 => {}
            _ => problems.push(format!(
                "shard {i} of {count} appears {} times ({})",
                names.len(),
                names.join(", ")
            )),
        }
    }
    Ok((!problems.is_empty()).then(|| problems.join("; ")))
}
