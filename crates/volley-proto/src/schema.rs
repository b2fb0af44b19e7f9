//! Descriptor pools from `.proto` files, protosets or reflected descriptors, and `--call` lookup.

use std::path::{Path, PathBuf};

use prost::Message;
use prost_reflect::{DescriptorPool, MethodDescriptor};
use prost_types::{FileDescriptorProto, FileDescriptorSet};

/// Why a schema could not be had. Each message names the file, line or symbol at fault.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// The .proto did not compile (protox's message carries file:line:column).
    #[error("{0}")]
    Compile(String),
    /// A protoset could not be read or decoded.
    #[error("cannot load protoset {path}: {problem}")]
    Protoset {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        problem: String,
    },
    /// Descriptors did not link into a pool.
    #[error("invalid descriptors: {0}")]
    Descriptor(#[from] prost_reflect::DescriptorError),
    /// `--call` is not of the form `pkg.Service/Method` or `pkg.Service.Method`.
    #[error("invalid --call {0:?}: expected package.Service/Method or package.Service.Method")]
    CallSyntax(String),
    /// The service is not in the schema.
    #[error("unknown --call {call:?}: service {service} not found{hint}")]
    UnknownService {
        /// The `--call` value.
        call: String,
        /// The service asked for.
        service: String,
        /// A list of the services there are.
        hint: String,
    },
    /// The method is not in the service.
    #[error("unknown --call {call:?}: service {service} has no method {method} (it has: {known})")]
    UnknownMethod {
        /// The `--call` value.
        call: String,
        /// The service.
        service: String,
        /// The method asked for.
        method: String,
        /// The methods there are.
        known: String,
    },
}

/// Compiles `file` with protox. Like ghz, the current directory and the file's own directory are
/// added to `import_paths`.
pub fn compile_proto(file: &Path, import_paths: &[PathBuf]) -> Result<DescriptorPool, SchemaError> {
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
    let mut compiler = protox::Compiler::with_file_resolver(crate::compile::resolver(&includes));
    compiler.include_imports(true);
    compiler.open_file(file).map_err(|e| compile_error(&e))?;
    let mut pool = compiler.descriptor_pool();
    crate::compile::add_common(&mut pool)?;
    Ok(pool)
}

/// Compiles `files` (named relative to one of `includes`) with protox into a descriptor set
/// holding them and their imports, comments kept, for code generation (`volley-build`) and
/// `volley call -proto`. Read as `--proto` is everywhere: edition files lowered to proto2
/// (`editions`), googleapis' common protos importable with no flag. A failure names
/// `file:line:column`.
pub fn compile_files(
    files: &[PathBuf],
    includes: &[PathBuf],
) -> Result<FileDescriptorSet, SchemaError> {
    let mut compiler = protox::Compiler::with_file_resolver(crate::compile::resolver(includes));
    compiler.include_imports(true).include_source_info(true);
    for f in files {
        compiler.open_file(f).map_err(|e| compile_error(&e))?;
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

fn compile_error(e: &protox::Error) -> SchemaError {
    SchemaError::Compile(crate::compile::describe(e))
}

impl From<crate::compile::CompileError> for SchemaError {
    fn from(e: crate::compile::CompileError) -> SchemaError {
        SchemaError::Compile(e.0)
    }
}

/// Loads an encoded `FileDescriptorSet` (`protoc --descriptor_set_out`, `buf build -o`).
pub fn load_protoset(path: &Path) -> Result<DescriptorPool, SchemaError> {
    let bytes = std::fs::read(path).map_err(|e| SchemaError::Protoset {
        path: path.to_owned(),
        problem: e.to_string(),
    })?;
    let mut set = FileDescriptorSet::decode(&bytes[..]).map_err(|e| SchemaError::Protoset {
        path: path.to_owned(),
        problem: format!("not a FileDescriptorSet: {e}"),
    })?;
    for f in &mut set.file {
        crate::editions::lower_descriptor(f);
    }
    Ok(DescriptorPool::from_file_descriptor_set(set)?)
}

/// Builds a pool from file descriptors in any order (as reflection returns them).
pub fn pool_from_files(files: Vec<FileDescriptorProto>) -> Result<DescriptorPool, SchemaError> {
    let mut pool = DescriptorPool::new();
    pool.add_file_descriptor_protos(files)?;
    Ok(pool)
}

/// A resolved `--call`: the method and the HTTP/2 path it is called on.
#[derive(Clone, Debug)]
pub struct Method {
    /// The method's descriptor (input and output types, streaming kinds).
    pub descriptor: MethodDescriptor,
    /// `/package.Service/Method`.
    pub path: String,
}

/// Splits `pkg.Service/Method` or `pkg.Service.Method` into service and method.
pub fn split_call(call: &str) -> Result<(&str, &str), SchemaError> {
    let bad = || SchemaError::CallSyntax(call.to_owned());
    let call_trimmed = call.trim_start_matches('/');
    let (svc, method) = match call_trimmed.rsplit_once('/') {
        Some(parts) => parts,
        None => call_trimmed.rsplit_once('.').ok_or_else(bad)?,
    };
    if svc.is_empty() || method.is_empty() || method.contains('.') {
        return Err(bad());
    }
    Ok((svc, method))
}

/// Finds the method `call` names in `pool`.
pub fn resolve(pool: &DescriptorPool, call: &str) -> Result<Method, SchemaError> {
    let (svc, method) = split_call(call)?;
    let Some(service) = pool.get_service_by_name(svc) else {
        let names: Vec<_> = pool.services().map(|s| s.full_name().to_owned()).collect();
        let hint = if names.is_empty() {
            String::new()
        } else {
            format!(" (services: {})", names.join(", "))
        };
        return Err(SchemaError::UnknownService {
            call: call.to_owned(),
            service: svc.to_owned(),
            hint,
        });
    };
    let Some(descriptor) = service.methods().find(|m| m.name() == method) else {
        let known: Vec<_> = service.methods().map(|m| m.name().to_owned()).collect();
        return Err(SchemaError::UnknownMethod {
            call: call.to_owned(),
            service: svc.to_owned(),
            method: method.to_owned(),
            known: known.join(", "),
        });
    };
    Ok(Method {
        path: format!("/{}/{}", service.full_name(), descriptor.name()),
        descriptor,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proto_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../proto")
    }

    #[test]
    fn call_forms() {
        assert_eq!(split_call("api.Users/Get").unwrap(), ("api.Users", "Get"));
        assert_eq!(split_call("api.Users.Get").unwrap(), ("api.Users", "Get"));
        assert_eq!(
            split_call("grpc.hi/sayHello").unwrap(),
            ("grpc.hi", "sayHello")
        );
        assert_eq!(split_call("/a.B/C").unwrap(), ("a.B", "C"));
        for bad in ["", "Get", "api.Users/", "/Get"] {
            assert!(split_call(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn compiles_seed_proto_and_resolves() {
        let pool = compile_proto(&proto_dir().join("orders/order.proto"), &[]).unwrap();
        let m = resolve(&pool, "orders.OrderService.AddOrder").unwrap();
        assert_eq!(m.path, "/orders.OrderService/AddOrder");
        assert!(m.descriptor.is_client_streaming() && m.descriptor.is_server_streaming());
        let e = resolve(&pool, "orders.OrderService/Nope")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("has no method Nope (it has: AddOrder, AddOrderUnary)"),
            "{e}"
        );
        let e = resolve(&pool, "x.Y/Z").unwrap_err().to_string();
        assert!(
            e.contains("service x.Y not found (services: orders.OrderService)"),
            "{e}"
        );
    }

    #[test]
    fn compile_errors_name_file_and_line() {
        let dir = std::env::temp_dir().join(format!("volley-proto-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("bad.proto");
        std::fs::write(
            &f,
            "syntax = \"proto3\";\n\nmessage A {\n  int32 x = ;\n}\n",
        )
        .unwrap();
        let e = compile_proto(&f, &[]).unwrap_err().to_string();
        assert!(e.contains("bad.proto:4:"), "{e}");
        std::fs::write(&f, "syntax = \"proto3\";\nimport \"missing.proto\";\n").unwrap();
        let e = compile_proto(&f, &[]).unwrap_err().to_string();
        assert!(e.contains("missing.proto"), "{e}");
        let e = compile_proto(&dir.join("nope.proto"), &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("no such file"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
