//! CORS, so that web pages on other origins can call the server over gRPC-Web and Connect:
//! preflights (`OPTIONS` with `Access-Control-Request-Method`) are answered for allowed origins
//! with the methods and request headers those protocols send, and replies to allowed origins
//! carry `Access-Control-Allow-Origin` and expose the headers clients must read (`grpc-status`,
//! `grpc-message`, ...). Requests from other origins get no CORS headers (so the browser refuses
//! them), and a preflight never runs a call.
//!
//! ```
//! # use volley_server::{Server, cors::Cors};
//! let server = Server::builder()
//!     .cors(Cors::new().allow_origin("https://app.example.com").allow_headers(["x-tenant"]))
//!     .build();
//! ```

use std::time::Duration;

use http::{HeaderMap, HeaderValue, header};

/// Request headers gRPC-Web and Connect clients send (connect-go's `cors` helpers list the same),
/// and `authorization` for bearer tokens.
pub const PROTOCOL_REQUEST_HEADERS: [&str; 12] = [
    "content-type",
    "connect-protocol-version",
    "connect-timeout-ms",
    "connect-accept-encoding",
    "connect-content-encoding",
    "grpc-timeout",
    "grpc-accept-encoding",
    "grpc-encoding",
    "x-grpc-web",
    "x-user-agent",
    "content-encoding",
    "authorization",
];

/// Response headers browsers must be allowed to read for the protocols to work.
pub const PROTOCOL_RESPONSE_HEADERS: [&str; 6] = [
    "grpc-status",
    "grpc-message",
    "grpc-status-details-bin",
    "grpc-encoding",
    "connect-content-encoding",
    "content-encoding",
];

/// Which origins may call, and what they may send and read.
#[derive(Clone, Debug)]
pub struct Cors {
    any_origin: bool,
    origins: Vec<HeaderValue>,
    allow_headers: Vec<String>,
    expose_headers: Vec<String>,
    max_age: Duration,
}

impl Default for Cors {
    fn default() -> Self {
        Cors::new()
    }
}

impl Cors {
    /// No origin allowed yet; the protocols' headers, a 2-hour preflight cache.
    pub fn new() -> Cors {
        Cors {
            any_origin: false,
            origins: Vec::new(),
            allow_headers: PROTOCOL_REQUEST_HEADERS.map(String::from).to_vec(),
            expose_headers: PROTOCOL_RESPONSE_HEADERS.map(String::from).to_vec(),
            max_age: Duration::from_secs(7200),
        }
    }

    /// Allows `origin` (`https://app.example.com`, compared exactly); `*` allows any.
    #[must_use]
    pub fn allow_origin(mut self, origin: &str) -> Cors {
        if origin == "*" {
            self.any_origin = true;
        } else if let Ok(v) = HeaderValue::from_str(origin.trim_end_matches('/')) {
            self.origins.push(v);
        }
        self
    }

    /// Also allows these request headers (the application's own metadata keys).
    #[must_use]
    pub fn allow_headers<S: AsRef<str>>(mut self, names: impl IntoIterator<Item = S>) -> Cors {
        self.allow_headers
            .extend(names.into_iter().map(|n| n.as_ref().to_ascii_lowercase()));
        self
    }

    /// Also lets pages read these response headers (the application's own response metadata).
    #[must_use]
    pub fn expose_headers<S: AsRef<str>>(mut self, names: impl IntoIterator<Item = S>) -> Cors {
        self.expose_headers
            .extend(names.into_iter().map(|n| n.as_ref().to_ascii_lowercase()));
        self
    }

    /// How long browsers may cache a preflight's answer.
    #[must_use]
    pub fn max_age(mut self, age: Duration) -> Cors {
        self.max_age = age;
        self
    }

    /// The request's origin, if it names one this allows.
    fn allowed<'a>(&self, headers: &'a HeaderMap) -> Option<&'a HeaderValue> {
        let origin = headers.get(header::ORIGIN)?;
        (self.any_origin || self.origins.iter().any(|o| o == origin)).then_some(origin)
    }

    /// For a preflight (`OPTIONS` with `Access-Control-Request-Method`): the answer's headers
    /// when the origin is allowed, `None` when it is not (the browser then refuses the call).
    pub(crate) fn preflight(&self, headers: &HeaderMap) -> Option<HeaderMap> {
        let origin = self.allowed(headers)?;
        let mut h = self.origin_headers(origin);
        h.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("GET, POST"),
        );
        if let Ok(v) = HeaderValue::from_str(&self.allow_headers.join(", ")) {
            h.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, v);
        }
        h.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from(self.max_age.as_secs()),
        );
        Some(h)
    }

    /// For any other request from an allowed origin: the headers its reply carries.
    pub(crate) fn reply_headers(&self, headers: &HeaderMap) -> Option<HeaderMap> {
        let origin = self.allowed(headers)?;
        let mut h = self.origin_headers(origin);
        if let Ok(v) = HeaderValue::from_str(&self.expose_headers.join(", ")) {
            h.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, v);
        }
        Some(h)
    }

    fn origin_headers(&self, origin: &HeaderValue) -> HeaderMap {
        let mut h = HeaderMap::new();
        if self.any_origin {
            h.insert(
                header::ACCESS_CONTROL_ALLOW_ORIGIN,
                HeaderValue::from_static("*"),
            );
        } else {
            h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
            h.insert(header::VARY, HeaderValue::from_static("origin"));
        }
        h
    }
}

/// Whether a request is a CORS preflight.
pub(crate) fn is_preflight(req: &http::request::Parts) -> bool {
    req.method == http::Method::OPTIONS
        && req
            .headers
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_origin(o: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ORIGIN, o.parse().unwrap());
        h
    }

    #[test]
    fn only_allowed_origins_get_headers() {
        let c = Cors::new().allow_origin("http://app.test/");
        let ok = c.preflight(&with_origin("http://app.test")).unwrap();
        assert_eq!(ok[header::ACCESS_CONTROL_ALLOW_ORIGIN], "http://app.test");
        assert!(
            ok[header::ACCESS_CONTROL_ALLOW_HEADERS]
                .to_str()
                .unwrap()
                .contains("x-grpc-web")
        );
        assert!(c.preflight(&with_origin("http://evil.test")).is_none());
        assert!(c.reply_headers(&HeaderMap::new()).is_none());
        let any = Cors::new().allow_origin("*");
        let r = any.reply_headers(&with_origin("null")).unwrap();
        assert_eq!(r[header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");
        assert!(
            r[header::ACCESS_CONTROL_EXPOSE_HEADERS]
                .to_str()
                .unwrap()
                .contains("grpc-status")
        );
    }
}
