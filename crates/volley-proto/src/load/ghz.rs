//! ghz's `--proto` and `--protoset` (also `volley serve --proto` and `volley mock --proto`): one
//! file, whose folder and the working directory are import roots beside `--import-paths`.

use std::path::{Path, PathBuf};

use prost_reflect::DescriptorPool;

use super::{Lowered, add_common, describe, read_protoset, resolver};
use crate::schema::SchemaError;

/// Compiles `file` with protox. Like ghz, the current directory and the file's own directory are
/// added to `import_paths`.
pub fn compile_proto(file: &Path, import_paths: &[PathBuf]) -> Result<DescriptorPool, SchemaError> {
    compile(file, import_paths, false)
}

/// [`compile_proto`], the files' comments kept (for documents made from them: OpenAPI).
pub fn compile_proto_documented(
    file: &Path,
    import_paths: &[PathBuf],
) -> Result<DescriptorPool, SchemaError> {
    compile(file, import_paths, true)
}

/// Every `.proto` file (comments kept) and descriptor set in one pool, custom options
/// (`google.api.http`) kept: the pools are joined through their encodings, not `prost_types`.
pub fn documented_pool(
    protos: &[PathBuf],
    import_paths: &[PathBuf],
    protosets: &[PathBuf],
) -> Result<DescriptorPool, SchemaError> {
    let mut pool = DescriptorPool::new();
    let loaded = protos
        .iter()
        .map(|p| (p, compile_proto_documented(p, import_paths)))
        .chain(protosets.iter().map(|p| (p, load_protoset(p))));
    for (path, one) in loaded {
        pool.decode_file_descriptor_set(&one?.encode_to_vec()[..])
            .map_err(|e| SchemaError::Compile(format!("{}: {e}", path.display())))?;
    }
    Ok(pool)
}

fn compile(
    file: &Path,
    import_paths: &[PathBuf],
    comments: bool,
) -> Result<DescriptorPool, SchemaError> {
    let mut includes: Vec<PathBuf> = import_paths.to_vec();
    if let Some(dir) = file.parent() {
        includes.push(if dir.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            dir.to_path_buf()
        });
    }
    includes.push(PathBuf::from("."));
    includes.dedup();
    if !file.is_file() {
        return Err(SchemaError::Compile(format!(
            "cannot read --proto {}: no such file",
            file.display()
        )));
    }
    let mut compiler =
        protox::Compiler::with_file_resolver(resolver(&includes, &Lowered::default()));
    compiler.include_imports(true).include_source_info(comments);
    compiler
        .open_file(file)
        .map_err(|e| SchemaError::Compile(describe(&e)))?;
    let mut pool = compiler.descriptor_pool();
    add_common(&mut pool).map_err(|e| SchemaError::Compile(e.0))?;
    Ok(pool)
}

/// Loads a descriptor set into a pool of its own.
pub fn load_protoset(path: &Path) -> Result<DescriptorPool, SchemaError> {
    let set = read_protoset(path).map_err(|e| {
        let problem = match &e {
            super::ProtosetError::Read { reason, .. } => reason.to_string(),
            super::ProtosetError::Decode { reason, .. } => {
                format!("not a FileDescriptorSet: {reason}")
            }
        };
        SchemaError::Protoset {
            path: path.to_owned(),
            problem,
        }
    })?;
    Ok(DescriptorPool::from_file_descriptor_set(set.set)?)
}
