//! The server the gateway forwards to: where it is, how calls share connections to it, its
//! service config, which REST headers go to it, and whether it is away ([`Outage`](crate::outage::Outage)). Each server
//! thread calls it through a channel of its own, built on first use on that thread's runtime
//! (volley-server runs one runtime per thread), so a call and its connection never cross
//! threads.

use std::{
    cell::RefCell,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
};

use volley_client::{Channel, Endpoint, Grpc, Policy, ServiceConfig, Strategy};
use volley_wire::Status;

use crate::{headers::RestHeaders, outage::Outage};

/// The upstream server and how to reach it.
pub struct Upstream {
    /// Tells this upstream's channels from another's on the same thread.
    id: usize,
    endpoint: Endpoint,
    strategy: Strategy,
    policy: Policy,
    config: Option<Arc<ServiceConfig>>,
    /// The target as logs name it.
    target: String,
    outage: Outage,
    /// Which of a REST caller's headers go up.
    pub(crate) rest_headers: RestHeaders,
}

thread_local! {
    /// This thread's channel to each upstream, by [`Upstream::id`].
    static CHANNELS: RefCell<Vec<(usize, Grpc)>> = const { RefCell::new(Vec::new()) };
}

static NEXT_ID: AtomicUsize = AtomicUsize::new(0);

impl Upstream {
    /// An upstream at `endpoint`: one connection per server thread (`Strategy::Single`),
    /// pick-first, no service config.
    pub fn new(endpoint: Endpoint) -> Upstream {
        let target = endpoint.authority.clone();
        Upstream {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            endpoint,
            strategy: Strategy::Single,
            policy: Policy::PickFirst,
            config: None,
            target,
            outage: Outage::default(),
            rest_headers: RestHeaders::default(),
        }
    }

    /// How each thread's calls share connections (`single`, `pool:N`, `expanding:MAX`,
    /// `per-request`).
    #[must_use]
    pub fn strategy(mut self, strategy: Strategy) -> Upstream {
        self.strategy = strategy;
        self
    }

    /// How calls spread over the target's addresses (round robin over a name's addresses or an
    /// `ipv4:` list).
    #[must_use]
    pub fn policy(mut self, policy: Policy) -> Upstream {
        self.policy = policy;
        self
    }

    /// Retries, hedging and timeouts by method, as a gRPC service config gives them.
    #[must_use]
    pub fn service_config(mut self, config: ServiceConfig) -> Upstream {
        self.config = Some(Arc::new(config));
        self
    }

    /// Which of a REST caller's headers go up besides grpc-gateway's defaults.
    #[must_use]
    pub fn rest_headers(mut self, rules: RestHeaders) -> Upstream {
        self.rest_headers = rules;
        self
    }

    /// The target, as logs name it.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// This thread's client for the upstream.
    pub(crate) fn client(&self) -> Grpc {
        CHANNELS.with(|c| {
            let mut all = c.borrow_mut();
            if let Some((_, g)) = all.iter().find(|(id, _)| *id == self.id) {
                return g.clone();
            }
            let mut channel = match self.policy {
                Policy::PickFirst => Channel::new(self.endpoint.clone(), self.strategy),
                Policy::RoundRobin => {
                    Channel::balanced(self.endpoint.clone(), self.strategy, self.policy)
                }
            };
            if let Some(c) = &self.config {
                channel = channel.with_service_config(c.clone());
            }
            // Replies up to 4 MiB, grpc-go's default and so grpc-gateway's.
            let g = Grpc::new(channel);
            all.push((self.id, g.clone()));
            g
        })
    }

    /// Notes a call's outcome, logging an outage's start and end (one line each).
    pub(crate) fn note(&self, outcome: Result<(), &Status>) {
        if let Some(line) = self.outage.note(&self.target, outcome) {
            if self.outage.is_down() {
                tracing::warn!("{line}");
            } else {
                tracing::info!("{line}");
            }
        }
    }
}
