//! Where schemas come from, as grpcurl's descriptor sources: server reflection (volley-client's
//! `reflect` module, files fetched per symbol and kept), `-proto` files compiled by protox
//! (volley-proto), `-protoset` files, or reflection first with the files as a fallback.

use http::{HeaderName, HeaderValue};
use prost::Message;
use prost_reflect::DescriptorPool;
use prost_types::{FileDescriptorProto, FileDescriptorSet};
use volley_client::{Connection, reflect::ReflectError};
use volley_proto::load::ProtosetError;

use crate::{describe::Symbol, goerr};

/// Why a source could not answer, in grpcurl's words.
#[derive(Debug, Clone)]
pub(crate) enum SourceError {
    /// `Symbol not found: X` (or `Service not found: X`).
    NotFound(String),
    /// The server answered reflection with UNIMPLEMENTED.
    Unsupported,
    /// A reflection call failed with a status.
    Rpc {
        /// grpc-go's code name.
        code: String,
        /// The status message.
        message: String,
    },
    /// Anything else.
    Other(String),
}

impl std::fmt::Display for SourceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceError::NotFound(m) | SourceError::Other(m) => f.write_str(m),
            SourceError::Unsupported => f.write_str("server does not support the reflection API"),
            SourceError::Rpc { code, message } => {
                write!(f, "rpc error: code = {code} desc = {message}")
            }
        }
    }
}

/// The reflection side: a connection and the headers reflection requests carry.
pub(crate) struct Reflector {
    /// The server's connection.
    pub conn: Connection,
    /// `http` or `https`.
    pub scheme: &'static str,
    /// The `:authority`.
    pub authority: String,
    /// `-H` and `-reflect-header`, or why grpc-go would refuse them (every reflection call
    /// then fails with INTERNAL, as grpc-go's do).
    pub metadata: Result<Vec<(HeaderName, HeaderValue)>, String>,
}

impl Reflector {
    fn metadata(&self) -> Result<&[(HeaderName, HeaderValue)], SourceError> {
        self.metadata.as_deref().map_err(|e| SourceError::Rpc {
            code: "Internal".into(),
            message: e.clone(),
        })
    }
}

/// A descriptor source.
pub(crate) struct Source {
    reflect: Option<Reflector>,
    files: Option<DescriptorPool>,
    fetched: DescriptorPool,
}

impl Source {
    /// A source from reflection, files, or both (reflection first).
    pub(crate) fn new(reflect: Option<Reflector>, files: Option<DescriptorPool>) -> Source {
        Source {
            reflect,
            files,
            fetched: DescriptorPool::new(),
        }
    }

    /// The services, in the source's order (the server's, or the files').
    pub(crate) async fn list_services(&mut self) -> Result<Vec<String>, SourceError> {
        if let Some(r) = &self.reflect {
            return volley_client::reflect::list_services(
                &r.conn,
                r.scheme,
                &r.authority,
                r.metadata()?,
            )
            .await
            .map_err(|e| reflect_error(e, ""));
        }
        Ok(self
            .files
            .as_ref()
            .map(|p| p.services().map(|s| s.full_name().to_owned()).collect())
            .unwrap_or_default())
    }

    /// The element named `name`.
    pub(crate) async fn find(&mut self, name: &str) -> Result<Symbol, SourceError> {
        if self.reflect.is_some() {
            match self.find_by_reflection(name).await {
                Ok(s) => return Ok(s),
                Err(e) if self.files.is_none() => return Err(e),
                Err(_) => {}
            }
        }
        self.files
            .as_ref()
            .and_then(|p| Symbol::lookup(p, name))
            .ok_or_else(|| not_found(name))
    }

    async fn find_by_reflection(&mut self, name: &str) -> Result<Symbol, SourceError> {
        if let Some(s) = Symbol::lookup(&self.fetched, name) {
            return Ok(s);
        }
        let r = self.reflect.as_ref().expect("checked by the caller");
        let pool = volley_client::reflect::fetch_pool(
            &r.conn,
            r.scheme,
            &r.authority,
            name,
            r.metadata()?,
        )
        .await
        .map_err(|e| reflect_error(e, name))?;
        let known: Vec<String> = self.fetched.files().map(|f| f.name().to_owned()).collect();
        let new: Vec<FileDescriptorProto> = pool
            .files()
            .filter(|f| !known.iter().any(|k| k == f.name()))
            .map(|f| f.file_descriptor_proto().clone())
            .collect();
        self.fetched
            .add_file_descriptor_protos(new)
            .map_err(|e| SourceError::Other(e.to_string()))?;
        Symbol::lookup(&self.fetched, name).ok_or_else(|| not_found(name))
    }

    /// Every type known so far (for `Any` in responses and status details).
    pub(crate) fn pool(&self) -> DescriptorPool {
        match (&self.reflect, &self.files) {
            (None, Some(files)) => files.clone(),
            _ => self.fetched.clone(),
        }
    }

    /// grpcurl's `WriteProtoset`: the files defining `symbols`, each after its dependencies.
    pub(crate) async fn protoset(&mut self, symbols: &[String]) -> Result<Vec<u8>, SourceError> {
        let mut files: Vec<prost_reflect::FileDescriptor> = Vec::new();
        for s in symbols {
            let file = self.find(s).await?.file();
            if !files.iter().any(|f| f.name() == file.name()) {
                files.push(file);
            }
        }
        let mut set = FileDescriptorSet::default();
        let mut seen: Vec<String> = Vec::new();
        for f in &files {
            add_with_deps(f, &mut set, &mut seen);
        }
        Ok(set.encode_to_vec())
    }
}

fn add_with_deps(
    f: &prost_reflect::FileDescriptor,
    set: &mut FileDescriptorSet,
    seen: &mut Vec<String>,
) {
    if seen.iter().any(|s| s == f.name()) {
        return;
    }
    seen.push(f.name().to_owned());
    for dep in f.dependencies() {
        add_with_deps(&dep, set, seen);
    }
    set.file.push(f.file_descriptor_proto().clone());
}

fn not_found(name: &str) -> SourceError {
    SourceError::NotFound(format!("Symbol not found: {name}"))
}

fn reflect_error(e: ReflectError, name: &str) -> SourceError {
    match e {
        ReflectError::Unsupported(_) => SourceError::Unsupported,
        ReflectError::NotFound(_) => not_found(name),
        ReflectError::Call(s) => match s
            .strip_prefix("rpc error: code = ")
            .and_then(|r| r.split_once(" desc = "))
        {
            Some((code, message)) => SourceError::Rpc {
                code: code.to_owned(),
                message: message.to_owned(),
            },
            None => SourceError::Other(s),
        },
        ReflectError::Descriptor(s) => SourceError::Other(s),
    }
}

/// Loads `-protoset` files (grpcurl: all files of all sets, linked together), edition files
/// lowered as `-proto` lowers them (volley-proto's one loader).
pub fn load_protosets(paths: &[String]) -> Result<DescriptorPool, String> {
    let mut all = FileDescriptorSet::default();
    for p in paths {
        let read =
            volley_proto::load::read_protoset(std::path::Path::new(p)).map_err(|e| match e {
                ProtosetError::Read { reason, .. } => format!(
                    "could not load protoset file {}: open {p}: {}",
                    crate::args::go_quote(p),
                    goerr::io(&reason)
                ),
                ProtosetError::Decode { reason, .. } => format!(
                    "could not parse contents of protoset file {}: {reason}",
                    crate::args::go_quote(p)
                ),
            })?;
        all.file.extend(read.set.file);
    }
    let mut pool = DescriptorPool::new();
    let mut seen = Vec::new();
    let files: Vec<FileDescriptorProto> = all
        .file
        .into_iter()
        .filter(|f| {
            let fresh = !seen.contains(&f.name().to_owned());
            seen.push(f.name().to_owned());
            fresh
        })
        .collect();
    pool.add_file_descriptor_protos(files)
        .map_err(|e| e.to_string())?;
    Ok(pool)
}

/// Compiles `-proto` files with protox, comments kept (grpcurl's `describe` prints them).
pub fn compile_protos(files: &[String], import_paths: &[String]) -> Result<DescriptorPool, String> {
    let named: Vec<std::path::PathBuf> = files.iter().map(Into::into).collect();
    // protoparse's ResolveFilenames, as grpcurl calls it: with no -import-path each name is
    // opened as it is, from the working directory, and an absolute one is refused.
    if import_paths.is_empty() && named.iter().any(|f| f.is_absolute()) {
        return Err(
            "must specify at least one import path if any absolute file paths are given".into(),
        );
    }
    let includes: Vec<std::path::PathBuf> = if import_paths.is_empty() {
        vec![std::path::PathBuf::from(".")]
    } else {
        import_paths.iter().map(Into::into).collect()
    };
    let files = if import_paths.is_empty() {
        named.clone()
    } else {
        volley_proto::load::resolve_filenames(&includes, &named)
    };
    for (f, given) in files.iter().zip(&named) {
        if !includes.iter().any(|d| d.join(f).is_file()) {
            return Err(format!(
                "could not parse given files: open {}: no such file or directory",
                given.display()
            ));
        }
    }
    let set = volley_proto::load::compile_files(&files, &includes)
        .map_err(|e| format!("could not parse given files: {e}"))?;
    DescriptorPool::from_file_descriptor_set(set).map_err(|e| e.to_string())
}
