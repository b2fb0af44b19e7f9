//! Which protocol a request speaks, read from its content type: gRPC, gRPC-Web (binary or text),
//! Connect streaming or unary, with the proto or JSON codec.

use http::{HeaderMap, header::CONTENT_TYPE};

/// The framed protocols, which share the call path and differ at the edges. Without the `web`
/// feature only `Grpc` is ever read from a request; the others stay so the call path is one.
#[cfg_attr(not(feature = "web"), allow(dead_code))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Envelope {
    /// gRPC over HTTP/2.
    Grpc,
    /// gRPC-Web (`application/grpc-web[+proto|+json]`, or `-text` for base64).
    Web {
        /// base64 bodies.
        text: bool,
    },
    /// Connect streaming (`application/connect+proto` or `+json`).
    Connect,
}

/// What a request's content type asks for.
#[cfg_attr(not(feature = "web"), allow(dead_code))]
pub(crate) enum Protocol {
    /// A framed protocol, with the JSON codec (`+json`) or protobuf.
    Framed {
        /// The framing.
        env: Envelope,
        /// Messages are JSON.
        json: bool,
    },
    /// Connect unary (`application/proto` or `application/json`).
    ConnectUnary {
        /// JSON body.
        json: bool,
    },
    /// A gRPC-family content type with a codec this server does not speak (`application/grpc+foo`).
    UnknownCodec,
    /// Anything else.
    Other,
}

/// Reads the protocol from the content type (`;charset=…` and other parameters ignored).
pub(crate) fn protocol(headers: &HeaderMap) -> Protocol {
    let Some(v) = headers.get(CONTENT_TYPE) else {
        return Protocol::Other;
    };
    // The common case, without lower-casing.
    if v.as_bytes() == b"application/grpc" {
        return Protocol::Framed {
            env: Envelope::Grpc,
            json: false,
        };
    }
    let Ok(ct) = v.to_str() else {
        return Protocol::Other;
    };
    let ct = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let (base, codec) = ct.split_once('+').unwrap_or((&ct, ""));
    let env = match base {
        "application/grpc" => Envelope::Grpc,
        #[cfg(feature = "web")]
        "application/grpc-web" => Envelope::Web { text: false },
        #[cfg(feature = "web")]
        "application/grpc-web-text" => Envelope::Web { text: true },
        #[cfg(feature = "web")]
        "application/connect" if !codec.is_empty() => Envelope::Connect,
        #[cfg(feature = "web")]
        "application/proto" | "application/json" if codec.is_empty() => {
            return Protocol::ConnectUnary {
                json: base == "application/json",
            };
        }
        // Without the `web` feature gRPC-Web and Connect are content types like any other.
        _ => return Protocol::Other,
    };
    match codec {
        "" | "proto" => Protocol::Framed { env, json: false },
        "json" => Protocol::Framed { env, json: true },
        _ => Protocol::UnknownCodec,
    }
}

/// The response content type for a framed protocol and codec.
pub(crate) fn content_type(env: Envelope, json: bool) -> http::HeaderValue {
    http::HeaderValue::from_static(match (env, json) {
        (Envelope::Grpc, false) => "application/grpc",
        (Envelope::Grpc, true) => "application/grpc+json",
        (Envelope::Web { text: false }, false) => "application/grpc-web+proto",
        (Envelope::Web { text: false }, true) => "application/grpc-web+json",
        (Envelope::Web { text: true }, false) => "application/grpc-web-text+proto",
        (Envelope::Web { text: true }, true) => "application/grpc-web-text+json",
        (Envelope::Connect, false) => "application/connect+proto",
        (Envelope::Connect, true) => "application/connect+json",
    })
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn of(content_type: &'static str) -> Protocol {
        let mut h = HeaderMap::new();
        h.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
        protocol(&h)
    }

    #[test]
    fn grpc_always_and_the_web_protocols_only_with_the_web_feature() {
        assert!(matches!(
            of("application/grpc"),
            Protocol::Framed {
                env: Envelope::Grpc,
                json: false
            }
        ));
        assert!(matches!(
            of("application/grpc+json; charset=utf-8"),
            Protocol::Framed {
                env: Envelope::Grpc,
                json: true
            }
        ));
        assert!(matches!(
            of("application/grpc+cbor"),
            Protocol::UnknownCodec
        ));
        let web = matches!(
            of("application/grpc-web-text+proto"),
            Protocol::Framed {
                env: Envelope::Web { text: true },
                json: false
            }
        );
        let connect = matches!(
            of("application/connect+json"),
            Protocol::Framed {
                env: Envelope::Connect,
                json: true
            }
        );
        let unary = matches!(
            of("application/json"),
            Protocol::ConnectUnary { json: true }
        );
        let on = cfg!(feature = "web");
        assert_eq!((web, connect, unary), (on, on, on));
        if !on {
            assert!(matches!(of("application/grpc-web"), Protocol::Other));
        }
    }
}
