//! `grpc.health.v1.Health`: Check, List and Watch over statuses a [`HealthReporter`] sets.

use std::{collections::HashMap, sync::Arc};

use tokio::sync::watch;

use crate::{
    Request, Response, Service, Status,
    pb::health::{
        HealthCheckRequest, HealthCheckResponse, HealthListRequest, HealthListResponse,
        health_check_response::ServingStatus,
    },
};

/// The service name of the health service.
pub const SERVICE_NAME: &str = "grpc.health.v1.Health";

/// Sets the serving status of services; cheap to clone. The empty name is the whole server.
#[derive(Clone, Debug)]
pub struct HealthReporter {
    tx: Arc<watch::Sender<HashMap<String, ServingStatus>>>,
}

impl Default for HealthReporter {
    fn default() -> Self {
        HealthReporter {
            tx: Arc::new(watch::Sender::new(HashMap::new())),
        }
    }
}

impl HealthReporter {
    /// Sets one service's status (`""` for the server as a whole).
    pub fn set(&self, service: &str, status: ServingStatus) {
        self.tx
            .send_if_modified(|m| m.insert(service.to_owned(), status) != Some(status));
    }

    /// Marks every known service, and the server, NOT_SERVING (done when a drain starts).
    pub fn shutdown(&self) {
        self.tx.send_modify(|m| {
            for v in m.values_mut() {
                *v = ServingStatus::NotServing;
            }
        });
    }

    /// The current status of a service, if known.
    pub fn get(&self, service: &str) -> Option<ServingStatus> {
        self.tx.borrow().get(service).copied()
    }

    /// The health service answering from this reporter.
    pub fn service(&self) -> Service {
        let check = self.clone();
        let list = self.clone();
        let watch = self.clone();
        Service::builder(SERVICE_NAME)
            .unary("Check", move |req: Request<HealthCheckRequest>| {
                let res = match check.get(&req.get_ref().service) {
                    Some(s) => Ok(Response::new(reply(s))),
                    None => Err(Status::not_found("unknown service")),
                };
                std::future::ready(res)
            })
            .unary("List", move |_: Request<HealthListRequest>| {
                let statuses = list
                    .tx
                    .borrow()
                    .iter()
                    .map(|(k, v)| (k.clone(), reply(*v)))
                    .collect();
                std::future::ready(Ok(Response::new(HealthListResponse { statuses })))
            })
            .server_streaming("Watch", move |req: Request<HealthCheckRequest>| {
                let rx = watch.tx.subscribe();
                let name = req.into_inner().service;
                let updates = futures_util::stream::unfold(
                    (rx, name, None),
                    |(mut rx, name, last)| async move {
                        loop {
                            let now = rx
                                .borrow_and_update()
                                .get(&name)
                                .copied()
                                .unwrap_or(ServingStatus::ServiceUnknown);
                            if Some(now) != last {
                                return Some((Ok(reply(now)), (rx, name, Some(now))));
                            }
                            rx.changed().await.ok()?;
                        }
                    },
                );
                std::future::ready(Ok(Response::new(updates)))
            })
            .build()
    }
}

fn reply(status: ServingStatus) -> HealthCheckResponse {
    HealthCheckResponse {
        status: status as i32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_get_shutdown() {
        let h = HealthReporter::default();
        assert_eq!(h.get("a"), None);
        h.set("a", ServingStatus::Serving);
        h.set("", ServingStatus::Serving);
        assert_eq!(h.get("a"), Some(ServingStatus::Serving));
        h.shutdown();
        assert_eq!(h.get("a"), Some(ServingStatus::NotServing));
        assert_eq!(h.get(""), Some(ServingStatus::NotServing));
    }
}
