//! Bearer-token authentication as an interceptor: calls without `authorization: Bearer TOKEN` end
//! UNAUTHENTICATED before their body is read. Health checks and reflection stay open, so load
//! balancers and `grpcurl list` keep working. The same check guards every page served beside the
//! calls (an admin API, `/metrics`, `GET /`) and on a [side server](crate::side::SideServer)
//! it guards: refused with 401 unless opened by path ([`BearerToken::open_endpoint`]).
//!
//! ```no_run
//! # use volley_server::{Server, auth::BearerToken};
//! let server = Server::builder()
//!     .intercept(BearerToken::new("s3cret").open_endpoint("/metrics"))
//!     .build();
//! ```

use std::future::Future;

use volley_wire::Status;

use crate::intercept::{Call, Interceptor, Page};

/// Services that answer without a token.
const OPEN_SERVICES: [&str; 3] = [
    "grpc.health.v1.Health",
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
];

/// Requires `authorization: Bearer <token>` on every call but health and reflection, and on
/// every page but those opened by path.
#[derive(Clone)]
pub struct BearerToken {
    expected: Vec<u8>,
    open_paths: Vec<String>,
}

impl BearerToken {
    /// Accepts calls and pages bearing `token`.
    pub fn new(token: impl AsRef<str>) -> BearerToken {
        BearerToken {
            expected: format!("Bearer {}", token.as_ref()).into_bytes(),
            open_paths: Vec::new(),
        }
    }

    /// Serves the page at `path` (exactly) without the token: `/metrics` for a scraper that
    /// cannot send one, say.
    #[must_use]
    pub fn open_endpoint(mut self, path: impl Into<String>) -> BearerToken {
        self.open_paths.push(path.into());
        self
    }

    fn admits(&self, presented: &[u8]) -> bool {
        same_secret(presented, &self.expected)
    }
}

/// Whether `presented` is the secret `expected`, every byte compared whatever the first
/// difference, so the time taken does not say how much of a guess was right (the length
/// aside). For pages that check a token themselves (a `?token=` link, say).
pub fn same_secret(presented: &[u8], expected: &[u8]) -> bool {
    presented.len() == expected.len()
        && presented
            .iter()
            .zip(expected)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

impl Interceptor for BearerToken {
    fn on_call(&self, call: &mut Call) -> impl Future<Output = Result<(), Status>> + Send {
        std::future::ready(self.check(call))
    }

    fn on_call_now(&self, call: &mut Call) -> Option<Result<(), Status>> {
        Some(self.check(call))
    }

    fn on_endpoint(&self, page: &Page<'_>) -> Result<(), Status> {
        if self.open_paths.iter().any(|p| p == page.path) {
            return Ok(());
        }
        self.verdict(page.headers.get(http::header::AUTHORIZATION))
    }
}

impl BearerToken {
    fn check(&self, call: &Call) -> Result<(), Status> {
        if OPEN_SERVICES.contains(&call.method().service()) {
            return Ok(());
        }
        self.verdict(call.metadata().get(http::header::AUTHORIZATION))
    }

    fn verdict(&self, presented: Option<&http::HeaderValue>) -> Result<(), Status> {
        match presented {
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

/// The answer to a page an interceptor refused: the status's HTTP code (401 with
/// `www-authenticate: Bearer` for UNAUTHENTICATED) and Connect's error JSON, which names the
/// code and says why.
pub(crate) fn refused_page(status: &Status) -> http::Response<bytes::Bytes> {
    let body = crate::transcode::error_json(status).to_string() + "\n";
    let mut resp = http::Response::new(bytes::Bytes::from(body));
    *resp.status_mut() = crate::transcode::http_status(status.code());
    let h = resp.headers_mut();
    h.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    if status.code() == volley_wire::Code::Unauthenticated {
        h.insert(
            http::header::WWW_AUTHENTICATE,
            http::HeaderValue::from_static("Bearer"),
        );
    }
    resp
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

    #[test]
    fn pages_need_the_token_unless_opened_by_path() {
        fn page<'a>(path: &'a str, headers: &'a http::HeaderMap) -> Page<'a> {
            Page {
                method: &http::Method::GET,
                path,
                headers,
            }
        }
        let t = BearerToken::new("abc").open_endpoint("/metrics");
        let mut headers = http::HeaderMap::new();
        let e = t.on_endpoint(&page("/api/stubs", &headers)).unwrap_err();
        assert_eq!(e.code(), volley_wire::Code::Unauthenticated);
        assert!(t.on_endpoint(&page("/metrics", &headers)).is_ok());
        // The open path is exact: neither a prefix nor a longer path is open.
        assert!(t.on_endpoint(&page("/metrics/x", &headers)).is_err());
        assert!(t.on_endpoint(&page("/metric", &headers)).is_err());
        headers.insert("authorization", "Bearer abd".parse().unwrap());
        assert!(t.on_endpoint(&page("/api/stubs", &headers)).is_err());
        headers.insert("authorization", "Bearer abc".parse().unwrap());
        assert!(t.on_endpoint(&page("/api/stubs", &headers)).is_ok());
        let resp = refused_page(&e);
        assert_eq!(resp.status(), http::StatusCode::UNAUTHORIZED);
        assert_eq!(resp.headers()["www-authenticate"], "Bearer");
    }
}
