//! What resolving reads from outside the flags, in one place: the environment first (a
//! Kubernetes Job's shard index, `VOLLEY_BENCH_CLIENT`), and, once every rule holds, the standard
//! input and files the flags name (data, metadata, a service config).

use std::{io::Read, path::Path, sync::Arc};

use super::data::{DataFrom, MetadataFrom};
use crate::plan::{DataSource, PlanError, mix, options::ClientPath, shard::INDEX_VAR};

/// The environment a plan is resolved in.
#[derive(Clone, Debug, Default)]
pub(super) struct Env {
    /// `JOB_COMPLETION_INDEX` (`--shard auto/N`).
    pub(super) job_index: Option<String>,
    /// `VOLLEY_BENCH_CLIENT=h2`: every call on the h2-crate path.
    pub(super) client: ClientPath,
}

impl Env {
    /// This process's environment.
    pub(super) fn read() -> Env {
        Env {
            job_index: std::env::var(INDEX_VAR).ok(),
            client: match std::env::var("VOLLEY_BENCH_CLIENT").as_deref() {
                Ok("h2") => ClientPath::H2,
                _ => ClientPath::Fast,
            },
        }
    }
}

/// The data, metadata and service config the flags name, read.
pub(super) struct Input {
    pub(super) data: DataSource,
    pub(super) metadata: Option<String>,
    pub(super) service_config: Option<Arc<volley_client::ServiceConfig>>,
}

fn read_stdin() -> Result<Vec<u8>, PlanError> {
    let mut buf = Vec::new();
    std::io::stdin()
        .read_to_end(&mut buf)
        .map_err(|e| PlanError::new(format!("cannot read standard input: {e}")))?;
    Ok(buf)
}

fn read_file(path: &Path, flag: &str) -> Result<Vec<u8>, PlanError> {
    std::fs::read(path)
        .map_err(|e| PlanError::new(format!("cannot read {flag} {}: {e}", path.display())))
}

fn utf8(bytes: Vec<u8>, what: impl FnOnce() -> String) -> Result<String, PlanError> {
    String::from_utf8(bytes).map_err(|_| PlanError::new(what()))
}

/// Reads what `data`, `metadata` and `service_config` name.
pub(super) fn read(
    data: DataFrom,
    metadata: MetadataFrom,
    service_config: Option<&str>,
) -> Result<Input, PlanError> {
    let data = match data {
        DataFrom::Empty => DataSource::Empty,
        DataFrom::Json(d) => DataSource::Json(d),
        DataFrom::JsonStdin => DataSource::Json(utf8(read_stdin()?, || {
            "-d @: standard input is not UTF-8".into()
        })?),
        DataFrom::File(p, order) if mix::is_lines(&p) => {
            mix::data_file(&p, "-D", order.unwrap_or_default())?
        }
        DataFrom::File(p, _) => DataSource::Json(utf8(read_file(&p, "-D")?, || {
            format!("-D {}: not UTF-8 text", p.display())
        })?),
        DataFrom::BinaryStdin => DataSource::Binary(read_stdin()?),
        DataFrom::BinaryFile(p) => DataSource::Binary(read_file(&p, "-B")?),
    };
    let metadata = match metadata {
        MetadataFrom::None => None,
        MetadataFrom::Text(s) => Some(s),
        MetadataFrom::Stdin => Some(utf8(read_stdin()?, || {
            "-m @: standard input is not UTF-8".into()
        })?),
        MetadataFrom::File(p) => Some(utf8(read_file(&p, "-M")?, || {
            format!("-M {}: not UTF-8 text", p.display())
        })?),
    };
    Ok(Input {
        data,
        metadata,
        service_config: service_config
            .map(self::service_config)
            .transpose()?
            .map(Arc::new),
    })
}

/// `--service-config`: JSON given inline (it starts with `{`), or the path of a file holding it.
fn service_config(given: &str) -> Result<volley_client::ServiceConfig, PlanError> {
    let text = if given.trim_start().starts_with('{') {
        given.to_owned()
    } else {
        std::fs::read_to_string(given)
            .map_err(|e| PlanError::new(format!("--service-config: cannot read {given}: {e}")))?
    };
    volley_client::ServiceConfig::parse(&text)
        .map_err(|e| PlanError::new(format!("--service-config: {e}")))
}
