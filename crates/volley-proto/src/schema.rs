//! A `--call` looked up in a descriptor pool (the pools come from `load`, or from reflected
//! descriptors here), and why a schema could not be had.

use std::path::PathBuf;

use prost_reflect::{DescriptorPool, MethodDescriptor};
use prost_types::FileDescriptorProto;

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
    use crate::load::compile_proto;
    use std::path::Path;

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
