//! `volley report merge`: JSON results read from files or standard input (as `kubectl logs`
//! prints a Job's pods), merged by `volley_bench::merge`, printed in any `volley bench -O`
//! format, and gated like `volley bench --threshold` (exit 99 when a threshold fails, 98 when a
//! shard is missing or repeated, or the run cannot be judged).

use std::{
    io::{Read, Write},
    process::ExitCode,
};

use anyhow::{Context, Result, bail};
use serde_json::Value;
use volley_bench::{
    Format,
    gate::{EXIT_INVALID, Verdicts, parse_all, write_junit},
    merge::{Input, merge as merge_inputs},
};

use crate::cli::{CompareArgs, MergeArgs};

/// Runs `volley report merge`.
pub fn merge(args: MergeArgs) -> Result<ExitCode> {
    let format = Format::parse(&args.format).map_err(|e| anyhow::anyhow!("-O: {e}"))?;
    let thresholds = parse_all(&args.thresholds)?;
    let mut inputs = Vec::new();
    for file in &args.files {
        let (name, text) = if file == "-" {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("cannot read standard input")?;
            ("stdin".to_owned(), text)
        } else {
            let text =
                std::fs::read_to_string(file).with_context(|| format!("cannot read {file}"))?;
            (file.clone(), text)
        };
        inputs.extend(documents(&name, &text)?);
    }
    if inputs.is_empty() {
        bail!("no JSON results in {}", args.files.join(", "));
    }
    let mut merged = merge_inputs(&inputs)?;
    if !thresholds.is_empty() {
        let mut v = Verdicts::judge(&thresholds, &merged.report);
        if let Some(why) = &merged.incomplete {
            v.invalid = Some(why.clone());
        }
        merged.report.volley.verdicts = Some(v);
    }
    let mut out: Box<dyn Write> = match &args.output {
        Some(p) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("cannot write -o {}", p.display()))?,
        )),
        None => Box::new(std::io::stdout().lock()),
    };
    volley_bench::report::format::write(&mut out, format, &merged.report)?;
    out.flush()?;
    if let Some(why) = &merged.incomplete {
        eprintln!("volley: the merge is not the whole run: {why}");
    }
    let Some(verdicts) = &merged.report.volley.verdicts else {
        return Ok(ExitCode::from(if merged.incomplete.is_some() {
            EXIT_INVALID
        } else {
            0
        }));
    };
    if let Some(path) = &args.junit {
        let mut f = std::fs::File::create(path)
            .with_context(|| format!("cannot write --junit {}", path.display()))?;
        write_junit(&mut f, "volley report merge", verdicts)?;
    }
    for v in verdicts.thresholds.iter().filter(|v| !v.held) {
        eprintln!("volley: threshold {} failed: {}", v.threshold, v.shown);
    }
    Ok(ExitCode::from(verdicts.exit_code()))
}

/// Runs `volley report compare`.
pub fn compare(args: CompareArgs) -> Result<ExitCode> {
    use volley_bench::compare::{Run, compare as compare_runs, markdown, parse_fail_if, text};
    let gates = args
        .fail_if
        .iter()
        .map(|g| parse_fail_if(g))
        .collect::<Result<Vec<_>, _>>()?;
    let read = |file: &str| -> Result<Run> {
        let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {file}"))?;
        let mut docs = documents(file, &text)?;
        match docs.len() {
            0 => bail!("{file}: no JSON result"),
            1 => Ok(Run::from_report(file, &docs.remove(0).report)?),
            n => bail!("{file} holds {n} results: merge them first (volley report merge)"),
        }
    };
    let (base, new) = (read(&args.base)?, read(&args.new)?);
    let rows = compare_runs(&base, &new);
    match args.format.as_str() {
        "summary" => print!("{}", text(&rows)),
        "md" => print!("{}", markdown(&rows)),
        "json" => println!("{}", serde_json::to_string_pretty(&rows)?),
        other => bail!("-O {other:?}: compare writes summary, md or json"),
    }
    let mut failed = false;
    for g in &gates {
        match g.judge(&rows) {
            Some((row, true)) => {
                failed = true;
                let change = match row.kind {
                    volley_bench::compare::Kind::Share => {
                        format!("{:+.3} points", row.change * 100.0)
                    }
                    _ => format!("{:+.1} %", row.change * 100.0),
                };
                eprintln!(
                    "volley: {} failed: {} changed {change}, beyond the noise",
                    g.text, row.metric
                );
            }
            Some(_) => {}
            None => eprintln!("volley: {}: the runs have no such figure", g.text),
        }
    }
    Ok(ExitCode::from(if failed {
        volley_bench::gate::EXIT_FAILED
    } else {
        0
    }))
}

/// The JSON documents in `text`, one after another; lines outside them (a pod's log lines) are
/// skipped. A document cut short is an error naming where.
fn documents(name: &str, text: &str) -> Result<Vec<Input>> {
    let mut found = Vec::new();
    let mut pos = 0;
    while pos < text.len() {
        let rest = &text[pos..];
        let trimmed = rest.trim_start();
        if trimmed.is_empty() {
            break;
        }
        pos += rest.len() - trimmed.len();
        if !trimmed.starts_with('{') {
            // Not a result: skip the line.
            pos += trimmed.find('\n').map_or(trimmed.len(), |n| n + 1);
            continue;
        }
        let mut stream = serde_json::Deserializer::from_str(trimmed).into_iter::<Value>();
        match stream.next() {
            Some(Ok(report)) => {
                let n = found.len() + 1;
                found.push(Input {
                    name: format!("{name} (result {n})"),
                    report,
                });
                pos += stream.byte_offset();
            }
            Some(Err(e)) => {
                let line = text[..pos].matches('\n').count() + e.line();
                let what = if e.is_eof() {
                    "truncated JSON"
                } else {
                    "invalid JSON"
                };
                let text = e.to_string();
                let why = text.split(" at line ").next().unwrap_or(&text);
                bail!(
                    "{name}: {what} at line {line}, column {}: {why}",
                    e.column()
                );
            }
            None => break,
        }
    }
    if found.len() == 1 {
        found[0].name = name.to_owned();
    }
    Ok(found)
}
