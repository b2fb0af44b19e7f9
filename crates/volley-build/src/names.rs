//! The Rust names generated for services and methods (modules, fns, stream types, type paths
//! from inside the generated module, the methods every client has), and the check that two
//! never collide.

use std::collections::HashMap;

use heck::{ToSnakeCase, ToUpperCamelCase};

use prost_build::Service;
use prost_types::FileDescriptorSet;

/// `Greeter` -> `greeter`, `TestService` -> `test_service` (tonic-build's module stem).
pub(crate) fn snake(name: &str) -> String {
    name.to_snake_case()
}

/// `List` -> `ListStream`: the associated type naming a method's reply stream.
pub(crate) fn stream_type(method_proto_name: &str) -> String {
    format!("{}Stream", method_proto_name.to_upper_camel_case())
}

/// The methods `generate` writes on every client besides the rpcs: an rpc whose Rust name is one
/// of these would collide ([`collisions`] refuses it). Keep in step with `client::generate`'s text.
pub(crate) const OWN_METHODS: &[&str] = &[
    "new",
    "connect",
    "from_grpc",
    "send_compressed",
    "with_interceptor",
    "max_decoding_message_size",
    "grpc",
];

/// A message type as seen from inside the generated module (one level below the package's).
pub(crate) fn type_path(rust_path: &str) -> String {
    if rust_path.starts_with("::") || rust_path.starts_with("crate::") {
        rust_path.to_owned()
    } else {
        format!("super::{rust_path}")
    }
}

/// The fully-qualified service name, `package.Service`.
pub(crate) fn full_name(service: &Service) -> String {
    qualified(&service.package, &service.proto_name)
}

/// Every generated name that two services (per package) or two methods (per service) would
/// share, as one line each naming both.
pub(crate) fn collisions(fds: &FileDescriptorSet, files: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut modules: HashMap<(String, String), String> = HashMap::new();
    for file in fds
        .file
        .iter()
        .filter(|f| files.contains(&f.name().to_owned()))
    {
        let package = file.package().to_owned();
        for svc in &file.service {
            let full = qualified(&package, svc.name());
            let key = (package.clone(), snake(svc.name()));
            if let Some(other) = modules.insert(key.clone(), full.clone()) {
                out.push(format!(
                    "services {other} and {full} both generate module {}_server and type {}",
                    key.1,
                    svc.name().to_upper_camel_case()
                ));
            }
            let mut methods: HashMap<String, String> = HashMap::new();
            let mut streams: HashMap<String, String> = HashMap::new();
            for m in &svc.method {
                let name = format!("{full}.{}", m.name());
                let fn_name = snake(m.name());
                if let Some(other) = methods.insert(fn_name.clone(), name.clone()) {
                    out.push(format!(
                        "methods {other} and {name} both generate fn {fn_name}"
                    ));
                }
                if OWN_METHODS.contains(&fn_name.as_str()) {
                    out.push(format!(
                        "method {name} generates fn {fn_name}, which the generated client \
                         already has; rename the rpc"
                    ));
                }
                if m.server_streaming() {
                    let ty = stream_type(m.name());
                    if let Some(other) = streams.insert(ty.clone(), name.clone()) {
                        out.push(format!(
                            "methods {other} and {name} both generate type {ty}"
                        ));
                    }
                }
            }
        }
    }
    out
}

fn qualified(package: &str, name: &str) -> String {
    if package.is_empty() {
        name.to_owned()
    } else {
        format!("{package}.{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost_types::{FileDescriptorProto, MethodDescriptorProto, ServiceDescriptorProto};

    fn method(name: &str, streams: bool) -> MethodDescriptorProto {
        MethodDescriptorProto {
            name: Some(name.into()),
            server_streaming: Some(streams),
            ..Default::default()
        }
    }

    #[test]
    fn names_both_sides_of_a_collision() {
        let svc = |name: &str, methods| ServiceDescriptorProto {
            name: Some(name.into()),
            method: methods,
            ..Default::default()
        };
        let fds = FileDescriptorSet {
            file: vec![FileDescriptorProto {
                name: Some("a.proto".into()),
                package: Some("pkg".into()),
                service: vec![
                    svc(
                        "Users",
                        vec![
                            method("GetUser", false),
                            method("get_user", false),
                            method("List", true),
                            method("list", true),
                            method("Connect", false),
                            method("WithInterceptor", false),
                        ],
                    ),
                    svc("users", vec![]),
                ],
                ..Default::default()
            }],
        };
        let got = collisions(&fds, &["a.proto".into()]);
        assert_eq!(
            got,
            [
                "methods pkg.Users.GetUser and pkg.Users.get_user both generate fn get_user",
                "methods pkg.Users.List and pkg.Users.list both generate fn list",
                "methods pkg.Users.List and pkg.Users.list both generate type ListStream",
                "method pkg.Users.Connect generates fn connect, which the generated client \
                 already has; rename the rpc",
                "method pkg.Users.WithInterceptor generates fn with_interceptor, which the \
                 generated client already has; rename the rpc",
                "services pkg.Users and pkg.users both generate module users_server and type Users",
            ]
        );
        assert!(collisions(&fds, &["other.proto".into()]).is_empty());
    }
}
