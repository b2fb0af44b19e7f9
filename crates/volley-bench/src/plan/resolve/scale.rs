//! The scale section: one shard of a plan run on many hosts (`--shard`), their common start
//! (`--start-at`), and `--emit k8s-job`, which prints the plan as a Kubernetes Indexed Job
//! instead of running it (and so needs what Kubernetes cannot supply: an image, `auto/N`
//! shards, the target, an absolute start).

use std::time::SystemTime;

use super::input::Env;
use crate::plan::{
    PlanError,
    args::BenchArgs,
    shard::{Emit, Shard, parse_shard, parse_start_at},
};

/// What the scale section resolves to.
pub(super) struct Scale {
    pub(super) shard: Option<Shard>,
    pub(super) start_at: Option<SystemTime>,
    pub(super) emit: Option<Emit>,
}

/// Resolves the scale section: `max_c` is the largest worker count, `host` the target.
pub(super) fn scale(
    a: &BenchArgs,
    env: &Env,
    max_c: u64,
    host: Option<&str>,
) -> Result<Scale, PlanError> {
    let shard = match &a.shard {
        None => None,
        Some(text) => {
            // A manifest's shards get their index from Kubernetes, not from here.
            let var = match a.emit {
                Some(_) => Some("0"),
                None => env.job_index.as_deref(),
            };
            let s = parse_shard(text, var)?;
            if max_c < s.count {
                bail!(
                    "--shard {text}: each shard runs the workers numbered I mod N, so -c ({max_c}) must be at least N ({})",
                    s.count
                );
            }
            Some(s)
        }
    };
    let start_at = match &a.start_at {
        None => None,
        Some(text) => Some(parse_start_at(text, SystemTime::now())?),
    };
    let emit = match &a.emit {
        None => None,
        Some(kind) => Some(emit(kind, a, host)?),
    };
    Ok(Scale {
        shard,
        start_at,
        emit,
    })
}

/// `--emit KIND`: what Kubernetes needs to run the plan's shards.
fn emit(kind: &str, a: &BenchArgs, host: Option<&str>) -> Result<Emit, PlanError> {
    if kind != "k8s-job" {
        bail!("--emit {kind:?}: the one kind is k8s-job");
    }
    let Some(image) = &a.image else {
        bail!("--emit k8s-job needs --image (an image whose entrypoint is volley)");
    };
    let Some(text) = &a.shard else {
        bail!("--emit k8s-job needs --shard auto/N (Kubernetes gives each pod its index)");
    };
    if !text.starts_with("auto/") {
        bail!(
            "--emit k8s-job needs --shard auto/N, not {text} (Kubernetes gives each pod its index)"
        );
    }
    if host.is_none() {
        bail!(
            "--emit k8s-job needs the target HOST:PORT (the pods load it, not a built-in server)"
        );
    }
    if let Some(at) = a.start_at.as_deref().filter(|s| s.starts_with('+')) {
        bail!(
            "--emit k8s-job: give --start-at as an RFC 3339 time (each pod would count {at} from its own start)"
        );
    }
    Ok(Emit::K8sJob {
        image: image.clone(),
        cpus: a.cpus.unwrap_or(1).max(1),
    })
}
