//! `volley gateway`: one port in front of any gRPC server (Go, Java, C++, Python: volley need
//! not have written it) that answers REST (its `google.api.http` rules), Connect (JSON and
//! binary), gRPC-Web (binary and text) and gRPC, and forwards every call to the upstream over
//! volley's client: its channel's connection strategies, round robin over a name's addresses,
//! retries and hedging from a service config, the caller's deadline carried, a caller that
//! leaves cancelling the upstream call.
//!
//! The translating is volley-server's (the same REST, Connect and gRPC-Web adapters that serve
//! volley's own services); this crate gives it services whose every method forwards
//! ([`services`]), with the upstream's descriptors (from `.proto` files, a descriptor set, or
//! the upstream's reflection: [`reflect`]). Messages cross still encoded (no decode on the gRPC
//! paths; REST and JSON callers' messages are transcoded once by the server).
//!
//! | module | what |
//! |---|---|
//! | `forward` | the forwarding handlers |
//! | `headers` | which headers cross, each way (grpc-gateway's rules for REST) |
//! | `opaque` | a message carried as its bytes |
//! | `outage` | one log line per upstream outage |
//! | `rules` | HTTP rules from a service config file (grpc-gateway's and Envoy's) |
//! | `upstream` | where the upstream is and the channels to it |

mod forward;
pub mod headers;
mod opaque;
mod outage;
pub mod rules;
mod upstream;

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderName, HeaderValue};
use prost_reflect::DescriptorPool;
use volley_client::{Connection, Endpoint};

pub use opaque::Opaque;
pub use outage::Outage;
pub use upstream::Upstream;

/// The services a gateway serves for `pool`, each forwarding to `upstream`.
#[derive(Default)]
pub struct Forwarded {
    /// One per service of the pool (reflection's left out: the gateway answers reflection
    /// itself, from the same descriptors).
    pub services: Vec<volley_server::Service>,
    /// Whether the upstream's `grpc.health.v1.Health` is among them (then the gateway's own
    /// health service must be off, and health checks reach the upstream).
    pub health: bool,
}

/// Every service of `pool`, each method forwarding to `upstream` (shared by the services of
/// each reload of the descriptors: its outage state and settings carry over).
pub fn services(pool: &DescriptorPool, upstream: &Arc<Upstream>) -> Forwarded {
    let up = upstream.clone();
    let descriptors = Bytes::from(pool.encode_to_vec());
    let mut out = Forwarded::default();
    for s in pool.services() {
        if s.full_name().starts_with("grpc.reflection.") {
            continue;
        }
        out.health |= s.full_name() == "grpc.health.v1.Health";
        out.services
            .push(forward::service(&s, &up, descriptors.clone()));
    }
    out
}

/// The schema of every service the upstream lists, by server reflection (v1, else v1alpha),
/// with `metadata` on the reflection call.
pub async fn reflect(
    endpoint: &Endpoint,
    metadata: &[(HeaderName, HeaderValue)],
) -> Result<DescriptorPool, String> {
    let conn = Connection::connect(endpoint)
        .await
        .map_err(|e| format!("cannot reach the upstream {}: {e}", endpoint.authority))?;
    let scheme = if endpoint.is_tls() { "https" } else { "http" };
    volley_client::reflect::fetch_all(&conn, scheme, &endpoint.authority, metadata)
        .await
        .map_err(|e| format!("the upstream {}: {e}", endpoint.authority))
}
