//! Where imports are found: the include roots (edition files lowered to proto2 as they are
//! read, `editions`), then googleapis' common protos embedded in the binary, then the
//! well-known types; and the common files every pool gets.

use std::path::{Path, PathBuf};

use prost_reflect::DescriptorPool;

use super::CompileError;
use protox::{
    Error,
    file::{ChainFileResolver, File, FileResolver, GoogleFileResolver},
};

/// A protox error as one line: `file:line:column: what` (its Display names the file and the
/// problem; its Debug, miette's, holds line and column).
pub(crate) fn describe(e: &protox::Error) -> String {
    let mut msg = e.to_string();
    if let Some(loc) = location(e) {
        msg = format!("{loc}: {msg}");
    }
    msg
}

/// `file:line:column` of a compile error, when protox knows it.
fn location(e: &protox::Error) -> Option<String> {
    use miette::Diagnostic;
    let file = e.file()?.to_owned();
    let span = e.labels()?.next()?;
    let src = e.source_code()?;
    let contents = src.read_span(span.inner(), 0, 0).ok()?;
    Some(format!(
        "{file}:{}:{}",
        contents.line() + 1,
        contents.column() + 1
    ))
}

/// Edition files lowered so far: (name, edition).
pub(crate) type Lowered = std::sync::Arc<std::sync::Mutex<Vec<(String, String)>>>;

/// The files of one include root, read from disk; edition files lowered to proto2
/// (`editions`).
struct Root(PathBuf, Lowered);

impl FileResolver for Root {
    fn resolve_path(&self, path: &Path) -> Option<String> {
        let rel = path.strip_prefix(&self.0).ok()?;
        let mut name = String::new();
        for c in rel.components() {
            match c {
                std::path::Component::Normal(s) => {
                    if !name.is_empty() {
                        name.push('/');
                    }
                    name.push_str(s.to_str()?);
                }
                std::path::Component::CurDir => {}
                _ => return None,
            }
        }
        Some(name)
    }

    fn open_file(&self, name: &str) -> Result<File, Error> {
        let path = self.0.join(name);
        let lowered = std::fs::read_to_string(&path)
            .ok()
            .and_then(|src| crate::editions::lower(&src));
        match lowered {
            Some((lowered, edition)) => {
                if let Ok(mut seen) = self.1.lock() {
                    seen.push((name.to_owned(), edition));
                }
                File::from_source(name, &lowered)
            }
            None => File::open(name, &path),
        }
    }
}

/// googleapis' common protos (`google/api`, `google/rpc`, `google/type`, `google/longrunning`,
/// ...; see `googleapis/README.md`), by their import names: importable with no flag, as under
/// GripMock and buf.
pub const EMBEDDED: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/googleapis.rs"));

/// The embedded googleapis protos, searched after the include roots.
struct Embedded;

impl FileResolver for Embedded {
    fn open_file(&self, name: &str) -> Result<File, Error> {
        match EMBEDDED.iter().find(|(n, _)| *n == name) {
            Some((_, source)) => File::from_source(name, source),
            None => Err(Error::file_not_found(name)),
        }
    }
}

/// The include roots as protox reads them (paths as given), then the embedded googleapis
/// protos, then the well-known types.
/// The edition files it lowered are noted in `lowered`.
pub(crate) fn resolver(includes: &[PathBuf], lowered: &Lowered) -> ChainFileResolver {
    let mut chain = ChainFileResolver::new();
    for dir in includes {
        chain.add(Root(dir.clone(), lowered.clone()));
    }
    chain.add(Embedded);
    chain.add(GoogleFileResolver::new());
    chain
}

/// Files every pool gets, so stubs can name them with no import: the well-known types (for
/// `Any` payloads such as `google.protobuf.StringValue`) and `google.rpc`'s error details.
const COMMON: [&str; 10] = [
    "google/protobuf/any.proto",
    "google/protobuf/duration.proto",
    "google/protobuf/empty.proto",
    "google/protobuf/field_mask.proto",
    "google/protobuf/struct.proto",
    "google/protobuf/timestamp.proto",
    "google/protobuf/wrappers.proto",
    "google/rpc/code.proto",
    "google/rpc/error_details.proto",
    "google/rpc/status.proto",
];

/// Adds the well-known types and `google.rpc`'s status and error details to `pool` where it
/// lacks them.
pub fn add_common(pool: &mut DescriptorPool) -> Result<(), CompileError> {
    let mut chain = ChainFileResolver::new();
    chain.add(Embedded);
    chain.add(GoogleFileResolver::new());
    let mut compiler = protox::Compiler::with_file_resolver(chain);
    compiler.include_imports(true);
    compiler
        .open_files(COMMON)
        .map_err(|e| CompileError(describe(&e)))?;
    let missing: Vec<_> = compiler
        .file_descriptor_set()
        .file
        .into_iter()
        .filter(|f| pool.get_file_by_name(f.name()).is_none())
        .collect();
    pool.add_file_descriptor_protos(missing)
        .map_err(|e| CompileError(format!("invalid descriptors: {e}")))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_googleapis_file_compiles() {
        let mut chain = ChainFileResolver::new();
        chain.add(Embedded);
        chain.add(GoogleFileResolver::new());
        let mut compiler = protox::Compiler::with_file_resolver(chain);
        for (name, _) in EMBEDDED {
            compiler
                .open_file(name)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        let pool = compiler.descriptor_pool();
        for m in [
            "google.rpc.ErrorInfo",
            "google.type.Money",
            "google.api.HttpRule",
        ] {
            assert!(pool.get_message_by_name(m).is_some(), "{m}");
        }
        assert!(EMBEDDED.len() > 50);
    }
}
