//! grpcurl's `-proto` beside `-import-path` (and volley-build's code generation): files named
//! relative to the import roots, comments kept.

use std::path::{Path, PathBuf};

use prost_types::FileDescriptorSet;

use super::{Lowered, describe, resolver};
use crate::schema::SchemaError;

/// Compiles `files` (named relative to one of `includes`) with protox into a descriptor set
/// holding them and their imports, comments kept, for code generation (`volley-build`) and
/// `volley call -proto`. Read as `--proto` is everywhere: edition files lowered to proto2
/// (`editions`), googleapis' common protos importable with no flag. A failure names
/// `file:line:column`.
pub fn compile_files(
    files: &[PathBuf],
    includes: &[PathBuf],
) -> Result<FileDescriptorSet, SchemaError> {
    let mut compiler =
        protox::Compiler::with_file_resolver(resolver(includes, &Lowered::default()));
    compiler.include_imports(true).include_source_info(true);
    for f in files {
        compiler
            .open_file(f)
            .map_err(|e| SchemaError::Compile(describe(&e)))?;
    }
    Ok(compiler.file_descriptor_set())
}

/// grpcurl's reading of `-proto` names beside `-import-path` (protoparse's `ResolveFilenames`):
/// a file that exists from the working directory and lies under an import path is named
/// relative to that path (`proto/api/users.proto` with `-import-path proto` is
/// `api/users.proto`); any other name is kept, to be looked up in the import paths.
pub fn resolve_filenames(import_paths: &[PathBuf], files: &[PathBuf]) -> Vec<PathBuf> {
    let roots: Vec<PathBuf> = import_paths
        .iter()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect();
    files
        .iter()
        .map(|f| {
            let Some(abs) = std::fs::canonicalize(f).ok().filter(|_| f.is_file()) else {
                return f.clone();
            };
            roots
                .iter()
                .find_map(|r| abs.strip_prefix(r).ok())
                .map_or_else(|| f.clone(), Path::to_path_buf)
        })
        .collect()
}
