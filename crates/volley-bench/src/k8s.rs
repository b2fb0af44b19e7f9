//! `volley bench ... --shard auto/N --emit k8s-job --image IMAGE`: the plan as a Kubernetes
//! Indexed Job. Kubernetes runs the N shards (`completionMode: Indexed` sets each pod's
//! `JOB_COMPLETION_INDEX`), spreads them over nodes, and keeps their output; volley adds no
//! coordinator. `kubectl logs -l job-name=NAME | volley report merge -` gives the run.

use serde_json::{Value, json};

use crate::{
    plan::{Emit, Plan},
    report::ReportOptions,
    results::plan_hash,
};

/// A plan printed as a Job, and what to tell the user beside it.
#[derive(Clone, Debug)]
pub struct Manifest {
    /// The Job's name.
    pub name: String,
    /// The Indexed Job, as YAML.
    pub yaml: String,
    /// A line for the user, when there is one: thresholds are judged on the merged run.
    pub note: Option<String>,
}

/// The Indexed Job of a plan with `--emit k8s-job` (`None` for a plan without `--emit`): `argv`
/// is the command line the pods' arguments are made from.
pub fn manifest(plan: &Plan, argv: &[String]) -> Option<Manifest> {
    let Emit::K8sJob { image, cpus } = plan.emit.as_ref()?;
    // `resolve` refuses `--emit` without a host and a shard.
    let host = plan.host.as_deref()?;
    let shard = plan.run.shard?;
    let options = serde_json::to_value(ReportOptions::from_plan(plan, host)).unwrap_or_default();
    let hash = plan_hash(&options);
    let spec = JobSpec {
        name: job_name(&plan.run.name, &hash),
        image,
        shards: shard.count,
        args: pod_args(argv),
        cpus: *cpus,
        plan_hash: &hash,
    };
    let note = (!plan.thresholds.is_empty()).then(|| {
        format!(
            "the thresholds are judged on the merged run: kubectl logs -l job-name={} | volley report merge - --threshold ...",
            spec.name
        )
    });
    Some(Manifest {
        yaml: indexed_job(&spec),
        name: spec.name,
        note,
    })
}

/// What the manifest is made of.
pub(crate) struct JobSpec<'a> {
    /// The Job's name (a DNS label).
    pub(crate) name: String,
    /// The container image, with `volley` as its entrypoint.
    pub(crate) image: &'a str,
    /// How many shards (completions and parallelism).
    pub(crate) shards: u64,
    /// The container's arguments: `bench` and the plan's flags.
    pub(crate) args: Vec<String>,
    /// CPUs each pod asks for.
    pub(crate) cpus: u64,
    /// The plan's hash, as a label.
    pub(crate) plan_hash: &'a str,
}

/// A name Kubernetes accepts for a Job (lower-case letters, digits and `-`, at most 52
/// characters so that pod names stay under 63): `volley-bench-` and the plan's hash unless
/// `--name` gives one.
pub(crate) fn job_name(run_name: &str, plan_hash: &str) -> String {
    let cleaned: String = run_name
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let cleaned = cleaned.trim_matches('-');
    let base = if cleaned.is_empty() {
        format!("volley-bench-{}", &plan_hash[..plan_hash.len().min(8)])
    } else {
        cleaned.to_owned()
    };
    base.chars()
        .take(52)
        .collect::<String>()
        .trim_end_matches('-')
        .to_owned()
}

/// The Indexed Job, as YAML.
pub(crate) fn indexed_job(spec: &JobSpec<'_>) -> String {
    let labels = json!({
        "app.kubernetes.io/name": "volley-bench",
        "volley.dev/plan-hash": spec.plan_hash,
    });
    let job: Value = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": spec.name, "labels": labels},
        "spec": {
            "completionMode": "Indexed",
            "completions": spec.shards,
            "parallelism": spec.shards,
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": "Never",
                    // One shard per node where there are enough nodes: shards that share a node
                    // share its CPUs, and the generator would measure itself.
                    "topologySpreadConstraints": [{
                        "maxSkew": 1,
                        "topologyKey": "kubernetes.io/hostname",
                        "whenUnsatisfiable": "ScheduleAnyway",
                        "labelSelector": {"matchLabels": {"volley.dev/plan-hash": spec.plan_hash}},
                    }],
                    "containers": [{
                        "name": "volley",
                        "image": spec.image,
                        "args": spec.args,
                        "resources": {
                            "requests": {"cpu": spec.cpus.to_string()},
                            "limits": {"cpu": spec.cpus.to_string()},
                        },
                    }],
                },
            },
        },
    });
    serde_yaml::to_string(&job).unwrap_or_default()
}

/// The pods' arguments from `volley bench`'s own: `--emit`, `--image`, `-O` and `-o` go (each pod
/// prints `-O json` to its log, which Kubernetes keeps), and so do `--threshold` and `--junit`
/// (a shard alone is not the run: `volley report merge` judges the merged one); everything else
/// stays as given.
pub(crate) fn pod_args(argv: &[String]) -> Vec<String> {
    let mut out = vec!["bench".to_owned()];
    let mut it = argv.iter().skip_while(|a| *a != "bench").skip(1).peekable();
    while let Some(a) = it.next() {
        let takes_value = [
            "--emit",
            "--image",
            "-O",
            "--format",
            "-o",
            "--output",
            "--threshold",
            "--junit",
        ];
        if takes_value.contains(&a.as_str()) {
            it.next();
            continue;
        }
        let attached = [
            "--emit=",
            "--image=",
            "--format=",
            "--output=",
            "--threshold=",
            "--junit=",
        ]
        .iter()
        .any(|p| a.starts_with(p))
            || ((a.starts_with("-O") || a.starts_with("-o")) && a.len() > 2);
        if attached {
            continue;
        }
        out.push(a.clone());
    }
    out.extend(["-O".to_owned(), "json".to_owned()]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pods_args_drop_the_emit_and_output_flags() {
        let argv: Vec<String> = "volley bench --call a.B/C -c50 -n 1000 --emit k8s-job --image=x:1 -O html -ofile --shard auto/4 --threshold p99<1s --junit=j.xml host:1"
            .split(' ')
            .map(String::from)
            .collect();
        assert_eq!(
            pod_args(&argv).join(" "),
            "bench --call a.B/C -c50 -n 1000 --shard auto/4 host:1 -O json"
        );
    }

    #[test]
    fn job_names_are_dns_labels() {
        assert_eq!(job_name("", "0123456789abcdef"), "volley-bench-01234567");
        assert_eq!(job_name("Nightly run #3", "x"), "nightly-run--3");
        assert_eq!(job_name(&"a".repeat(80), "x").len(), 52);
    }
}
