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
#[derive(Clone, Debug, Default)]
pub struct HealthReporter {
    tx: Arc<watch::Sender<State>>,
}

#[derive(Debug, Default)]
struct State {
    statuses: HashMap<String, ServingStatus>,
    /// Set by [`HealthReporter::shutdown`]: Watch streams send NOT_SERVING and end, so that they
    /// do not hold a draining server open for its whole grace period.
    closing: bool,
}

impl HealthReporter {
    /// Sets one service's status (`""` for the server as a whole).
    pub fn set(&self, service: &str, status: ServingStatus) {
        self.tx
            .send_if_modified(|s| s.statuses.insert(service.to_owned(), status) != Some(status));
    }

    /// Marks every known service, and the server, NOT_SERVING, and ends Watch streams (done when a
    /// drain starts).
    pub fn shutdown(&self) {
        self.tx.send_modify(|s| {
            for v in s.statuses.values_mut() {
                *v = ServingStatus::NotServing;
            }
            s.closing = true;
        });
    }

    /// The current status of a service, if known.
    pub fn get(&self, service: &str) -> Option<ServingStatus> {
        self.tx.borrow().statuses.get(service).copied()
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
                    .statuses
                    .iter()
                    .map(|(k, v)| (k.clone(), reply(*v)))
                    .collect();
                std::future::ready(Ok(Response::new(HealthListResponse { statuses })))
            })
            .server_streaming("Watch", move |req: Request<HealthCheckRequest>| {
                let rx = watch.tx.subscribe();
                let name = req.into_inner().service;
                let updates = futures_util::stream::unfold(
                    (rx, name, None, false),
                    |(mut rx, name, last, ended)| async move {
                        if ended {
                            return None;
                        }
                        loop {
                            let (now, closing) = {
                                let s = rx.borrow_and_update();
                                let status = s.statuses.get(&name).copied();
                                (status.unwrap_or(ServingStatus::ServiceUnknown), s.closing)
                            };
                            if Some(now) != last || closing {
                                return Some((Ok(reply(now)), (rx, name, Some(now), closing)));
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
