//! The method table: `/package.Service/Method` paths to handlers, and grpc-go's "unknown" messages.

use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
};

use prost_reflect::MethodDescriptor;
use volley_wire::Status;

use crate::{
    handler::{Handler, Service},
    intercept::{Chain, MethodInfo, Registered},
};

/// A registered method: its handler, what calls are told about it, and its interceptors.
pub(crate) struct Route {
    pub(crate) handler: Handler,
    pub(crate) method: Arc<MethodInfo>,
    /// The server's interceptors then the service's; `None` when there are none.
    pub(crate) chain: Option<Arc<Chain>>,
    /// The service's own interceptors, until [`Router::finish`] builds the chain.
    own: Vec<Registered>,
}

/// Every registered method, looked up by request path with one hash probe.
#[derive(Default)]
pub(crate) struct Router {
    /// foldhash, not SipHash: the table is built once and only looked up per call, so a
    /// request's path cannot flood it; SipHash cost ~200 instructions of a unary call.
    methods: HashMap<Box<str>, Route, foldhash::fast::RandomState>,
    services: HashSet<String>,
}

impl Router {
    /// Registers a service; a later registration of the same method path replaces the earlier one.
    pub(crate) fn add(&mut self, service: Service) {
        for (method, handler) in service.methods {
            let path = format!("/{}/{}", service.name, method);
            let info = MethodInfo::registered(path.clone(), handler.kind());
            let route = Route {
                handler,
                method: Arc::new(info),
                chain: None,
                own: service.interceptors.clone(),
            };
            self.methods.insert(path.into_boxed_str(), route);
        }
        self.services.insert(service.name);
    }

    /// Gives each method its descriptor (when one is registered) and its interceptor chain.
    pub(crate) fn finish(
        &mut self,
        descriptors: &HashMap<String, MethodDescriptor>,
        global: &[Registered],
    ) {
        for (path, route) in &mut self.methods {
            route.chain = Chain::of(global, &std::mem::take(&mut route.own));
            // Nothing else holds the method's facts yet: the server has not started.
            let info = Arc::get_mut(&mut route.method).expect("unshared before the server starts");
            if let Some(d) = descriptors.get(&**path) {
                info.set_descriptor(d.clone());
            }
            info.set_interceptors(route.chain.as_ref().map_or(0, |c| c.len()));
        }
    }

    /// Whether any method has interceptors.
    pub(crate) fn any_chain(&self) -> bool {
        self.methods.values().any(|r| r.chain.is_some())
    }

    pub(crate) fn get(&self, path: &str) -> Option<&Route> {
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
