//! HTTP/1.1 connections for plain-HTTP load (wrk's model: one request in flight per connection),
//! on hyper's client connection API. HTTP/2 HTTP load uses [`crate::Connection`] instead.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use tokio::sync::Mutex;

use crate::{ConnectError, Endpoint, connection::dial_io};

/// One HTTP/1.1 connection; requests on it are serialised.
pub struct Http1Connection {
    send: Mutex<SendRequest<Full<Bytes>>>,
}

/// What an HTTP request returned.
#[derive(Debug, Clone, Copy)]
pub struct HttpReply {
    /// The status code.
    pub status: u16,
    /// Bytes received: status line and headers (estimated from their lengths) plus the body.
    pub bytes: usize,
}

impl Http1Connection {
    /// Dials `ep` within its connect timeout.
    pub async fn connect(ep: &Endpoint) -> Result<Http1Connection, ConnectError> {
        let dial = async {
            let io = dial_io(ep).await?;
            let (send, conn) =
                http1::handshake(TokioIo::new(io))
                    .await
                    .map_err(|e| ConnectError::Http2 {
                        target: ep.target.to_string(),
                        detail: format!("HTTP/1.1 handshake: {e}"),
                    })?;
            tokio::spawn(async move {
                let _ = conn.await;
            });
            Ok(Http1Connection {
                send: Mutex::new(send),
            })
        };
        match tokio::time::timeout(ep.connect_timeout, dial).await {
            Ok(r) => r,
            Err(_) => Err(ConnectError::Timeout {
                target: ep.target.to_string(),
                after: ep.connect_timeout,
            }),
        }
    }

    /// Sends one request and returns the status and the whole body.
    pub async fn fetch(&self, req: http::Request<Full<Bytes>>) -> Result<(u16, Bytes), String> {
        let resp = self.exchange(req).await?;
        let status = resp.status().as_u16();
        Ok((status, read_body(resp).await?))
    }

    /// Sends one request and returns the whole response: status, headers and body.
    pub async fn fetch_response(
        &self,
        req: http::Request<Full<Bytes>>,
    ) -> Result<http::Response<Bytes>, String> {
        let resp = self.exchange(req).await?;
        let (parts, body) = resp.into_parts();
        let body = body
            .collect()
            .await
            .map_err(|e| format!("reading the body: {e}"))?
            .to_bytes();
        Ok(http::Response::from_parts(parts, body))
    }

    /// Sends one request on the connection and returns the response head.
    async fn exchange(
        &self,
        req: http::Request<Full<Bytes>>,
    ) -> Result<http::Response<hyper::body::Incoming>, String> {
        let mut send = self.send.lock().await;
        send.ready()
            .await
            .map_err(|e| format!("connection closed: {e}"))?;
        send.send_request(req)
            .await
            .map_err(|e| format!("request failed: {e}"))
    }

    /// Sends one request and reads the whole response.
    pub async fn send(&self, req: http::Request<Full<Bytes>>) -> Result<HttpReply, String> {
        let resp = self.exchange(req).await?;
        let status = resp.status().as_u16();
        let head: usize = 17
            + resp
                .headers()
                .iter()
                .map(|(k, v)| k.as_str().len() + v.len() + 4)
                .sum::<usize>();
        Ok(HttpReply {
            status,
            bytes: head + read_body(resp).await?.len(),
        })
    }
}

/// A response's whole body.
async fn read_body(resp: http::Response<hyper::body::Incoming>) -> Result<Bytes, String> {
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("reading the body: {e}"))?;
    Ok(body.to_bytes())
}
