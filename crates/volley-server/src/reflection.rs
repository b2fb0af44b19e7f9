//! Server reflection (v1 and v1alpha, which share their messages) answered from a descriptor pool.

use std::{collections::HashSet, sync::Arc};

use futures_util::StreamExt;
use prost_reflect::{DescriptorPool, FileDescriptor};

use crate::{
    Code, Request, Response, Service, Streaming,
    pb::reflection::{
        ErrorResponse, ExtensionNumberResponse, FileDescriptorResponse, ListServiceResponse,
        ServerReflectionRequest, ServerReflectionResponse, ServiceResponse,
        server_reflection_request::MessageRequest as Req,
        server_reflection_response::MessageResponse as Resp,
    },
};

/// The two service names reflection answers on.
pub const SERVICE_NAMES: [&str; 2] = [
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
];

/// What reflection knows: the schema pool and the names of the services actually served.
struct Index {
    pool: DescriptorPool,
    services: Vec<String>,
}

/// Builds both reflection services over `pool`, listing `services`.
pub fn services(pool: DescriptorPool, services: Vec<String>) -> [Service; 2] {
    let index = Arc::new(Index { pool, services });
    SERVICE_NAMES.map(|name| {
        let index = index.clone();
        Service::builder(name)
            .bidi_streaming(
                "ServerReflectionInfo",
                move |req: Request<Streaming<ServerReflectionRequest>>| {
                    let index = index.clone();
                    let replies = req
                        .into_inner()
                        .map(move |r| r.map(|req| index.answer(req)));
                    std::future::ready(Ok(Response::new(replies)))
                },
            )
            .build()
    })
}

impl Index {
    fn answer(&self, req: ServerReflectionRequest) -> ServerReflectionResponse {
        let response = match &req.message_request {
            None => error(Code::InvalidArgument, "empty reflection request"),
            Some(Req::ListServices(_)) => Resp::ListServicesResponse(ListServiceResponse {
                service: self
                    .services
                    .iter()
                    .map(|name| ServiceResponse { name: name.clone() })
                    .collect(),
            }),
            Some(Req::FileByFilename(name)) => match self.pool.get_file_by_name(name) {
                Some(f) => files_with_deps(f),
                None => error(Code::NotFound, &format!("file not found: {name}")),
            },
            Some(Req::FileContainingSymbol(symbol)) => match self.file_of_symbol(symbol) {
                Some(f) => files_with_deps(f),
                None => error(Code::NotFound, &format!("symbol not found: {symbol}")),
            },
            Some(Req::FileContainingExtension(ext)) => match self
                .pool
                .get_message_by_name(&ext.containing_type)
                .and_then(|m| m.get_extension(ext.extension_number as u32))
            {
                Some(e) => files_with_deps(e.parent_file()),
                None => error(
                    Code::NotFound,
                    &format!(
                        "extension not found: {} {}",
                        ext.containing_type, ext.extension_number
                    ),
                ),
            },
            Some(Req::AllExtensionNumbersOfType(ty)) => match self.pool.get_message_by_name(ty) {
                Some(m) => Resp::AllExtensionNumbersResponse(ExtensionNumberResponse {
                    base_type_name: ty.clone(),
                    extension_number: m.extensions().map(|e| e.number() as i32).collect(),
                }),
                None => error(Code::NotFound, &format!("type not found: {ty}")),
            },
        };
        ServerReflectionResponse {
            valid_host: req.host.clone(),
            original_request: Some(req),
            message_response: Some(response),
        }
    }

    /// The file defining a service, method, message, field, enum, enum value or extension.
    fn file_of_symbol(&self, symbol: &str) -> Option<FileDescriptor> {
        let pool = &self.pool;
        let symbol = symbol.strip_prefix('.').unwrap_or(symbol);
        if let Some(s) = pool.get_service_by_name(symbol) {
            return Some(s.parent_file());
        }
        if let Some(m) = pool.get_message_by_name(symbol) {
            return Some(m.parent_file());
        }
        if let Some(e) = pool.get_enum_by_name(symbol) {
            return Some(e.parent_file());
        }
        if let Some(e) = pool.get_extension_by_name(symbol) {
            return Some(e.parent_file());
        }
        let (parent, child) = symbol.rsplit_once('.')?;
        if let Some(s) = pool.get_service_by_name(parent) {
            return s
                .methods()
                .any(|m| m.name() == child)
                .then(|| s.parent_file());
        }
        if let Some(m) = pool.get_message_by_name(parent) {
            return m.get_field_by_name(child).map(|_| m.parent_file());
        }
        pool.get_enum_by_name(parent)
            .and_then(|e| e.get_value_by_name(child).map(|_| e.parent_file()))
    }
}

/// The file and everything it imports, transitively, each once.
fn files_with_deps(file: FileDescriptor) -> Resp {
    let mut seen = HashSet::new();
    let mut stack = vec![file];
    let mut out = Vec::new();
    while let Some(f) = stack.pop() {
        if !seen.insert(f.name().to_owned()) {
            continue;
        }
        // The file as it was given, custom options (`google.api.http`) included, as grpc-go
        // serves it; `prost_types`' copy would drop them.
        out.push(f.encode_to_vec());
        stack.extend(f.dependencies());
    }
    Resp::FileDescriptorResponse(FileDescriptorResponse {
        file_descriptor_proto: out,
    })
}

fn error(code: Code, message: &str) -> Resp {
    Resp::ErrorResponse(ErrorResponse {
        error_code: code as i32,
        error_message: message.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;

    fn index() -> Index {
        let pool = DescriptorPool::decode(crate::pb::FILE_DESCRIPTOR_SET).unwrap();
        Index {
            pool,
            services: vec!["grpc.health.v1.Health".into()],
        }
    }

    fn ask(r: Req) -> Resp {
        index()
            .answer(ServerReflectionRequest {
                host: String::new(),
                message_request: Some(r),
            })
            .message_response
            .unwrap()
    }

    #[test]
    fn lists_services() {
        let Resp::ListServicesResponse(l) = ask(Req::ListServices(String::new())) else {
            panic!()
        };
        assert_eq!(l.service[0].name, "grpc.health.v1.Health");
    }

    #[test]
    fn finds_files_by_symbol_and_name() {
        for sym in [
            "grpc.health.v1.Health",
            "grpc.health.v1.Health.Check",
            "grpc.health.v1.HealthCheckRequest",
            "grpc.health.v1.HealthCheckRequest.service",
            "grpc.health.v1.HealthCheckResponse.ServingStatus",
        ] {
            let Resp::FileDescriptorResponse(f) = ask(Req::FileContainingSymbol(sym.into())) else {
                panic!("{sym}")
            };
            let fd =
                prost_types::FileDescriptorProto::decode(&f.file_descriptor_proto[0][..]).unwrap();
            assert_eq!(fd.name(), "grpc/health/v1/health.proto", "{sym}");
        }
        assert!(matches!(
            ask(Req::FileByFilename("grpc/health/v1/health.proto".into())),
            Resp::FileDescriptorResponse(_)
        ));
        let Resp::ErrorResponse(e) = ask(Req::FileContainingSymbol("no.Such".into())) else {
            panic!()
        };
        assert_eq!(e.error_code, Code::NotFound as i32);
    }
}
