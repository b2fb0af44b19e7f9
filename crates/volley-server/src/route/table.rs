//! The method table: `/package.Service/Method` paths to handlers, and grpc-go's "unknown" messages.

use std::collections::{HashMap, HashSet};

use volley_wire::Status;

use crate::handler::{Handler, Service};

/// Every registered method, looked up by request path with one hash probe.
#[derive(Default)]
pub(crate) struct Router {
    methods: HashMap<Box<str>, Handler>,
    services: HashSet<String>,
}

impl Router {
    /// Registers a service; a later registration of the same method path replaces the earlier one.
    pub(crate) fn add(&mut self, service: Service) {
        for (method, handler) in service.methods {
            let path = format!("/{}/{}", service.name, method);
            self.methods.insert(path.into_boxed_str(), handler);
        }
        self.services.insert(service.name);
    }

    pub(crate) fn get(&self, path: &str) -> Option<&Handler> {
        self.methods.get(path)
    }

    /// The status for a path that names no method, worded as grpc-go words it.
    pub(crate) fn not_found(&self, path: &str) -> Status {
        let Some((service, method)) = path.strip_prefix('/').and_then(|p| p.rsplit_once('/'))
        else {
            return Status::unimplemented(format!("malformed method name: {path:?}"));
        };
        if self.services.contains(service) {
            Status::unimplemented(format!("unknown method {method} for service {service}"))
        } else {
            Status::unimplemented(format!("unknown service {service}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handler::{Request, Response};

    #[test]
    fn lookup_and_unknowns() {
        let mut r = Router::default();
        r.add(
            Service::builder("pkg.Svc")
                .unary("Do", |_: Request<()>| async { Ok(Response::new(())) })
                .build(),
        );
        assert!(r.get("/pkg.Svc/Do").is_some());
        assert!(r.get("/pkg.Svc/Other").is_none());
        assert_eq!(
            r.not_found("/pkg.Svc/Other").message(),
            "unknown method Other for service pkg.Svc"
        );
        assert_eq!(
            r.not_found("/pkg.Nope/Do").message(),
            "unknown service pkg.Nope"
        );
        assert!(
            r.not_found("nonsense")
                .message()
                .starts_with("malformed method name")
        );
    }
}
