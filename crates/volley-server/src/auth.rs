//! Bearer-token authentication as an interceptor: calls without `authorization: Bearer TOKEN` end
//! UNAUTHENTICATED before their body is read. Health checks and reflection stay open, so load
//! balancers and `grpcurl list` keep working.
//!
//! ```no_run
//! # use volley_server::{Server, auth::BearerToken};
//! let server = Server::builder().intercept(BearerToken::new("s3cret")).build();
//! ```

use std::future::Future;

use volley_wire::Status;

use crate::intercept::{Call, Interceptor};

/// Services that answer without a token.
const OPEN_SERVICES: [&str; 3] = [
    "grpc.health.v1.Health",
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
];

/// Requires `authorization: Bearer <token>` on every call but health and reflection.
pub struct BearerToken {
    expected: Vec<u8>,
}

impl BearerToken {
    /// Accepts calls bearing `token`.
    pub fn new(token: impl AsRef<str>) -> BearerToken {
        BearerToken {
            expected: format!("Bearer {}", token.as_ref()).into_bytes(),
        }
    }

    fn admits(&self, presented: &[u8]) -> bool {
        // Every byte compared whatever the first difference, so the time taken does not say
        // how much of a guess was right.
        presented.len() == self.expected.len()
            && presented
                .iter()
                .zip(&self.expected)
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
    }
}

impl Interceptor for BearerToken {
    fn on_call(&self, call: &mut Call) -> impl Future<Output = Result<(), Status>> + Send {
        std::future::ready(self.check(call))
    }

    fn on_call_now(&self, call: &mut Call) -> Option<Result<(), Status>> {
        Some(self.check(call))
    }
}

impl BearerToken {
    fn check(&self, call: &Call) -> Result<(), Status> {
        let open = OPEN_SERVICES.contains(&call.method().service());
        match call.metadata().get(http::header::AUTHORIZATION) {
            _ if open => Ok(()),
            Some(v) if self.admits(v.as_bytes()) => Ok(()),
            Some(_) => Err(Status::unauthenticated(
                "the bearer token is not the one expected",
            )),
            None => Err(Status::unauthenticated(
                "this server requires `authorization: Bearer <token>`",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compares_the_whole_header() {
        let t = BearerToken::new("abc");
        assert!(t.admits(b"Bearer abc"));
        assert!(!t.admits(b"Bearer abd"));
        assert!(!t.admits(b"Bearer ab"));
        assert!(!t.admits(b"bearer abc"));
        assert!(!t.admits(b""));
    }
}
