//! `k6/http`'s requests in Rust: HTTP/1.1 (plain, or TLS offering `http/1.1`) on volley-client's
//! HTTP/1.1 connections, one kept per VU and origin, as k6 keeps its connections alive. The
//! reply is k6's `Response` as JSON text: status, headers by their canonical names, body, url,
//! proto, timings, error. Redirects are not followed (k6 follows up to ten).

use std::{collections::HashMap, sync::Arc, time::Duration};

use bytes::Bytes;
use http_body_util::Full;
use serde_json::{Map, Value, json};
use volley_client::{
    Endpoint, Target,
    load::http1::Http1Connection,
    tls::{TlsOptions, client_config},
};

/// A VU's connections, by origin (`http://host:port`).
#[derive(Default)]
pub(crate) struct Pool(HashMap<String, Arc<Http1Connection>>);

/// What one request gave.
pub(crate) struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
    pub url: String,
    /// The error's words and k6's code for it (1000: a generic network error).
    pub error: Option<(String, u32)>,
    /// Bytes sent (request line, headers, body; the head estimated from its lengths).
    pub sent: usize,
}

impl Reply {
    fn failed(url: &str, why: String, sent: usize) -> Reply {
        Reply {
            status: 0,
            headers: Vec::new(),
            body: Bytes::new(),
            url: url.to_owned(),
            error: Some((why, 1000)),
            sent,
        }
    }

    /// k6's `http_req_failed`: no response, or a status of 400 and up.
    pub(crate) fn failed_request(&self) -> bool {
        self.status == 0 || self.status >= 400
    }

    /// k6's `Response` fields as JSON text.
    pub(crate) fn to_json(&self, took: Duration) -> String {
        let mut headers = Map::new();
        for (k, v) in &self.headers {
            headers.insert(canonical(k), v.clone().into());
        }
        let status_text = match http::StatusCode::from_u16(self.status) {
            Ok(s) if self.status > 0 => {
                format!("{} {}", self.status, s.canonical_reason().unwrap_or(""))
            }
            _ => String::new(),
        };
        json!({
            "status": self.status,
            "status_text": status_text,
            "body": String::from_utf8_lossy(&self.body),
            "headers": headers,
            "url": self.url,
            "proto": if self.status > 0 { "HTTP/1.1" } else { "" },
            "timings": {"duration": took.as_secs_f64() * 1000.0},
            "error": self.error.as_ref().map_or("", |e| e.0.as_str()),
            "error_code": self.error.as_ref().map_or(0, |e| e.1),
        })
        .to_string()
    }
}

/// Go's `CanonicalHeaderKey`: `content-type` as `Content-Type`.
fn canonical(k: &str) -> String {
    k.split('-')
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f.to_ascii_uppercase().to_string() + &c.as_str().to_ascii_lowercase(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join("-")
}

/// `params` as the JavaScript side sends them: `{headers, tags, timeout}`.
pub(crate) struct Params {
    pub headers: Vec<(String, String)>,
    pub tags: Vec<(String, String)>,
    pub timeout: Duration,
}

/// Reads the params text; k6's default timeout is 60 s.
pub(crate) fn params(text: &str) -> Result<Params, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("invalid http params: {e}"))?;
    let pairs = |k: &str| -> Vec<(String, String)> {
        v.get(k)
            .and_then(Value::as_object)
            .map(|o| {
                o.iter()
                    .map(|(k, v)| {
                        (
                            k.clone(),
                            v.as_str().map_or_else(|| v.to_string(), str::to_owned),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let timeout = match v.get("timeout") {
        None | Some(Value::Null) => Duration::from_secs(60),
        Some(t) => {
            crate::duration::value_duration(t).map_err(|e| format!("invalid http timeout: {e}"))?
        }
    };
    Ok(Params {
        headers: pairs("headers"),
        tags: pairs("tags"),
        timeout,
    })
}

/// Sends one request on `pool`'s connection to the URL's origin (dialled on first use).
pub(crate) async fn send(
    pool: &mut Pool,
    method: &str,
    url: &str,
    body: String,
    p: &Params,
    insecure: bool,
) -> Reply {
    let sent = method.len()
        + url.len()
        + body.len()
        + p.headers
            .iter()
            .map(|(k, v)| k.len() + v.len() + 4)
            .sum::<usize>()
        + 12;
    let uri: http::Uri = match url.parse() {
        Ok(u) => u,
        Err(e) => return Reply::failed(url, format!("invalid URL {url:?}: {e}"), 0),
    };
    let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
        return Reply::failed(
            url,
            format!("invalid URL {url:?}: it needs http:// or https:// and a host"),
            0,
        );
    };
    let tls = match scheme {
        "http" => false,
        "https" => true,
        s => return Reply::failed(url, format!("unsupported protocol scheme {s:?}"), 0),
    };
    let port = authority.port_u16().unwrap_or(if tls { 443 } else { 80 });
    let hostport = format!("{}:{port}", authority.host());
    let origin = format!("{scheme}://{hostport}");
    let conn = match pool.0.get(&origin) {
        Some(c) => c.clone(),
        None => match dial(&hostport, authority.host(), tls, insecure).await {
            Ok(c) => {
                let c = Arc::new(c);
                pool.0.insert(origin.clone(), c.clone());
                c
            }
            Err(e) => return Reply::failed(url, e, sent),
        },
    };
    let mut req = http::Request::builder()
        .method(method)
        .uri(uri.path_and_query().map_or("/", |pq| pq.as_str()))
        .header(http::header::HOST, authority.as_str())
        .header(
            http::header::USER_AGENT,
            concat!("volley-run/", env!("CARGO_PKG_VERSION")),
        );
    for (k, v) in &p.headers {
        req = req.header(k.as_str(), v.as_str());
    }
    let req = match req.body(Full::new(Bytes::from(body))) {
        Ok(r) => r,
        Err(e) => return Reply::failed(url, format!("invalid request: {e}"), 0),
    };
    match tokio::time::timeout(p.timeout, conn.fetch_response(req)).await {
        Err(_) => {
            pool.0.remove(&origin);
            Reply {
                error: Some(("request timeout".into(), 1050)),
                ..Reply::failed(url, String::new(), sent)
            }
        }
        Ok(Err(e)) => {
            pool.0.remove(&origin);
            Reply::failed(url, e, sent)
        }
        Ok(Ok(resp)) => {
            let (parts, body) = resp.into_parts();
            let headers = parts
                .headers
                .iter()
                .map(|(k, v)| {
                    (
                        k.as_str().to_owned(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect();
            Reply {
                status: parts.status.as_u16(),
                headers,
                body,
                url: url.to_owned(),
                error: None,
                sent,
            }
        }
    }
}

async fn dial(
    hostport: &str,
    host: &str,
    tls: bool,
    insecure: bool,
) -> Result<Http1Connection, String> {
    let target = Target::parse(hostport).map_err(|e| e.to_string())?;
    let mut ep = Endpoint::new(target).map_err(|e| e.to_string())?;
    if tls {
        let cfg = client_config(&TlsOptions {
            skip_verify: insecure,
            ..TlsOptions::default()
        })
        .map_err(|e| e.to_string())?;
        // HTTP/1.1 over TLS: offer http/1.1, not h2.
        let mut cfg = (*cfg).clone();
        cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
        ep = ep
            .tls(Arc::new(cfg))
            .server_name(host)
            .map_err(|e| e.to_string())?;
    }
    Http1Connection::connect(&ep)
        .await
        .map_err(|e| format!("dial {hostport}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_names_read_as_go_writes_them() {
        assert_eq!(canonical("content-type"), "Content-Type");
        assert_eq!(canonical("x-request-id"), "X-Request-Id");
        assert_eq!(canonical("ETAG"), "Etag");
    }
}
