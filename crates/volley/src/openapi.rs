//! `volley openapi FILES`: the OpenAPI 3 document of the files' `google.api.http` rules, as
//! `volley serve` and `volley gateway` serve it at `GET /openapi.json`
//! (`volley_server::openapi`).

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;

/// `volley openapi`'s flags.
#[derive(Debug, Args)]
pub struct OpenapiArgs {
    /// .proto files whose services' REST rules to describe.
    #[arg(value_name = "PROTO")]
    pub protos: Vec<PathBuf>,
    /// Import paths for the .proto files, comma-separated (each file's own directory and the
    /// current one are added).
    #[arg(
        short = 'i',
        long = "import-paths",
        value_delimiter = ',',
        value_name = "DIRS"
    )]
    pub import_paths: Vec<PathBuf>,
    /// A compiled FileDescriptorSet instead of (or beside) .proto files (repeatable).
    #[arg(long, value_name = "FILE")]
    pub protoset: Vec<PathBuf>,
    /// The document's title [default: the services' names].
    #[arg(long)]
    pub title: Option<String>,
    /// json or yaml.
    #[arg(short = 'O', long = "format", default_value = "json", value_parser = ["json", "yaml"])]
    pub format: String,
    /// Write it to FILE instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Prints (or writes) the document.
pub fn run(a: OpenapiArgs) -> Result<()> {
    if a.protos.is_empty() && a.protoset.is_empty() {
        bail!("give the .proto files (or --protoset) whose REST rules to describe");
    }
    let pool = volley_proto::load::documented_pool(&a.protos, &a.import_paths, &a.protoset)?;
    let title = a.title.clone().unwrap_or_else(|| {
        pool.services()
            .map(|s| s.name().to_owned())
            .collect::<Vec<_>>()
            .join(", ")
    });
    let doc = volley_server::openapi::from_descriptors(&pool, &title)?;
    if doc["paths"].as_object().is_none_or(|p| p.is_empty()) {
        bail!(
            "no method of these files has a google.api.http rule: there is no REST API to describe"
        );
    }
    let text = match a.format.as_str() {
        "yaml" => serde_yaml::to_string(&doc)?,
        _ => serde_json::to_string_pretty(&doc)? + "\n",
    };
    match &a.output {
        Some(path) => {
            std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
        }
        None => {
            use std::io::Write;
            match std::io::stdout().lock().write_all(text.as_bytes()) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
                _ => Ok(()),
            }
        }
    }
}
