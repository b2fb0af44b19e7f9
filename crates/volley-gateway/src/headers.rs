//! What crosses the gateway besides messages: which of a caller's headers go to the upstream
//! as metadata, and which of the upstream's come back.
//!
//! - gRPC, gRPC-Web and Connect callers send metadata already: all of it goes up but the
//!   protocol's own headers (`grpc-*`, `connect-*`, content type, hop-by-hop), which the
//!   gateway's own call sets again (the deadline goes up as the remaining time).
//! - REST callers send HTTP headers: grpc-gateway's default rules (v2.33) apply, so an upstream
//!   written for grpc-gateway sees the same metadata: `authorization` goes up as it is; IANA's
//!   permanent request headers go up prefixed (`user-agent` as `grpcgateway-user-agent`);
//!   `x-forwarded-host` (the caller's `Host`) and `x-forwarded-for` (the caller's address
//!   appended) are added; every other header stays at the gateway, unless the gateway names it
//!   (`--forward-header`, as it is) or turns on grpc-gateway's legacy matching
//!   (`Grpc-Metadata-Foo: v` up as `foo: v`; never into `grpcgateway-*` or `x-forwarded-*`).
//! - The upstream's headers and trailers come back but for the protocol's own; REST callers get
//!   them as `Grpc-Metadata-*` headers (volley-server's REST side does that for every service).

use std::net::SocketAddr;

use http::{HeaderMap, HeaderName, HeaderValue};

/// A header a protocol owns: never forwarded as metadata either way.
fn protocol_own(name: &str) -> bool {
    name.starts_with(':')
        || name.starts_with("grpc-")
        || name.starts_with("connect-")
        || matches!(
            name,
            "content-type"
                | "content-length"
                | "content-encoding"
                | "accept-encoding"
                | "te"
                | "host"
                | "connection"
                | "keep-alive"
                | "proxy-connection"
                | "transfer-encoding"
                | "upgrade"
                | "user-agent"
                | "x-grpc-web"
                | "x-user-agent"
        )
}

/// The metadata a gRPC, gRPC-Web or Connect caller's headers carry up.
pub fn upstream_metadata(headers: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::with_capacity(headers.len());
    for (k, v) in headers {
        if !protocol_own(k.as_str()) {
            out.append(k.clone(), v.clone());
        }
    }
    out
}

/// IANA's permanent request headers, as grpc-gateway's `isPermanentHTTPHeader` lists them.
const PERMANENT: &[&str] = &[
    "accept",
    "accept-charset",
    "accept-language",
    "accept-ranges",
    "authorization",
    "cache-control",
    "content-type",
    "cookie",
    "date",
    "expect",
    "from",
    "host",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-schedule-tag-match",
    "if-unmodified-since",
    "max-forwards",
    "origin",
    "pragma",
    "referer",
    "user-agent",
    "via",
    "warning",
];

/// Which of a REST caller's headers go up besides grpc-gateway's defaults.
#[derive(Clone, Debug, Default)]
pub struct RestHeaders {
    /// grpc-gateway's `WithLegacyHeaderMatching`: `Grpc-Metadata-Foo` goes up as `foo`.
    pub legacy_metadata: bool,
    /// Headers forwarded as they are (a permitted-header list).
    pub permitted: Vec<HeaderName>,
}

/// Metadata keys the gateway sets itself: no caller's header may become one.
fn reserved(key: &str) -> bool {
    key.starts_with("grpcgateway-") || key == "x-forwarded-for" || key == "x-forwarded-host"
}

impl RestHeaders {
    /// The metadata a REST caller's headers carry up (module doc).
    pub fn metadata(&self, headers: &HeaderMap, peer: Option<SocketAddr>) -> HeaderMap {
        let mut out = HeaderMap::new();
        // First, as grpc-gateway puts it: a backend reading the first value gets the caller's.
        for v in headers.get_all(http::header::AUTHORIZATION) {
            out.append(http::header::AUTHORIZATION, v.clone());
        }
        for (k, v) in headers {
            let name = k.as_str();
            // Go's server keeps Host out of the header map, so grpc-gateway never forwards it.
            if name == "host" || name == "x-forwarded-for" || name == "x-forwarded-host" {
                continue;
            }
            if PERMANENT.contains(&name) {
                if let Ok(n) = HeaderName::try_from(format!("grpcgateway-{name}")) {
                    out.append(n, v.clone());
                }
            } else if self.permitted.contains(k) && !reserved(name) && !protocol_own(name) {
                out.append(k.clone(), v.clone());
            } else if self.legacy_metadata
                && let Some(rest) = name.strip_prefix("grpc-metadata-")
                && !rest.is_empty()
                && !reserved(rest)
                && !protocol_own(rest)
                && let Ok(n) = HeaderName::try_from(rest)
            {
                out.append(n, v.clone());
            }
        }
        let forwarded_host = headers
            .get("x-forwarded-host")
            .or_else(|| headers.get(http::header::HOST));
        if let Some(h) = forwarded_host {
            out.insert("x-forwarded-host", h.clone());
        }
        if let Some(ip) = peer.map(|p| p.ip().to_string()) {
            let before: Vec<&str> = headers
                .get_all("x-forwarded-for")
                .iter()
                .filter_map(|v| v.to_str().ok())
                .collect();
            let value = if before.is_empty() {
                ip
            } else {
                format!("{}, {ip}", before.join(", "))
            };
            if let Ok(v) = HeaderValue::try_from(value) {
                out.insert("x-forwarded-for", v);
            }
        }
        out
    }
}

/// The upstream's headers or trailers as the caller gets them: the protocol's own left out
/// (the gateway's server writes its own), `date` and `server` too.
pub fn passed_back(headers: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::new();
    for (k, v) in headers {
        let n = k.as_str();
        if !(protocol_own(n) || matches!(n, "date" | "server")) {
            out.append(k.clone(), v.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn grpc_callers_metadata_goes_up_without_the_protocols_headers() {
        let h = map(&[
            ("content-type", "application/grpc"),
            ("te", "trailers"),
            ("grpc-timeout", "1S"),
            ("connect-protocol-version", "1"),
            ("user-agent", "grpc-go/1.85"),
            ("x-user", "ann"),
            ("authorization", "Bearer t"),
            ("trace-bin", "AAEC"),
        ]);
        let up = upstream_metadata(&h);
        let names: Vec<_> = up.keys().map(|k| k.as_str()).collect();
        assert_eq!(names, ["x-user", "authorization", "trace-bin"]);
    }

    #[test]
    fn rest_headers_follow_grpc_gateways_rules() {
        let h = map(&[
            ("host", "api.example:8080"),
            ("user-agent", "curl/8"),
            ("authorization", "Bearer t"),
            ("grpc-metadata-tenant", "blue"),
            ("x-custom", "stays"),
            ("x-forwarded-for", "10.0.0.1"),
        ]);
        let peer = Some("127.0.0.1:5555".parse().unwrap());
        let up = RestHeaders::default().metadata(&h, peer);
        let get = |m: &HeaderMap, k: &str| m.get(k).map(|v| v.to_str().unwrap().to_owned());
        assert_eq!(get(&up, "authorization").as_deref(), Some("Bearer t"));
        assert_eq!(
            get(&up, "grpcgateway-authorization").as_deref(),
            Some("Bearer t")
        );
        assert_eq!(
            get(&up, "grpcgateway-user-agent").as_deref(),
            Some("curl/8")
        );
        assert_eq!(get(&up, "grpcgateway-host"), None, "Go's server drops Host");
        assert_eq!(
            get(&up, "x-forwarded-host").as_deref(),
            Some("api.example:8080")
        );
        assert_eq!(
            get(&up, "x-forwarded-for").as_deref(),
            Some("10.0.0.1, 127.0.0.1")
        );
        assert_eq!(
            get(&up, "tenant"),
            None,
            "grpc-gateway v2.33 dropped Grpc-Metadata-*"
        );
        assert_eq!(get(&up, "x-custom"), None);

        let legacy = RestHeaders {
            legacy_metadata: true,
            permitted: vec![HeaderName::from_static("x-custom")],
        };
        let h2 = map(&[
            ("grpc-metadata-tenant", "blue"),
            ("grpc-metadata-grpc-status", "0"),
            ("grpc-metadata-x-forwarded-for", "6.6.6.6"),
            ("grpc-metadata-grpcgateway-host", "evil"),
            ("x-custom", "goes"),
        ]);
        let up = legacy.metadata(&h2, peer);
        assert_eq!(get(&up, "tenant").as_deref(), Some("blue"));
        assert_eq!(get(&up, "x-custom").as_deref(), Some("goes"));
        assert_eq!(
            get(&up, "grpc-status"),
            None,
            "no protocol header smuggled up"
        );
        assert_eq!(
            get(&up, "grpcgateway-host"),
            None,
            "no reserved key smuggled up"
        );
        assert_eq!(get(&up, "x-forwarded-for").as_deref(), Some("127.0.0.1"));
    }

    #[test]
    fn the_upstreams_protocol_headers_stay_behind() {
        let h = map(&[
            ("content-type", "application/grpc"),
            ("grpc-encoding", "gzip"),
            ("date", "today"),
            ("x-served-by", "b1"),
        ]);
        let back = passed_back(&h);
        assert_eq!(back.len(), 1);
        assert_eq!(back["x-served-by"], "b1");
    }
}
