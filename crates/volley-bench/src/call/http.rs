//! Plain HTTP load (`volley bench http://host:port/path`): one prepared request, sent over
//! HTTP/1.1 (one in flight per connection, as wrk) or HTTP/2 (multiplexed).

use http_body_util::Full;
use volley_wire::Status;

use super::conn::Conn;
use crate::callee::HttpTarget;

fn status_of(code: u16) -> Result<(), Status> {
    if (200..400).contains(&code) {
        return Ok(());
    }
    Err(Status::new(
        volley_wire::Code::from_http_status(code),
        format!("HTTP status {code}"),
    ))
}

/// Sends the request once.
pub(super) async fn call(t: &HttpTarget, conn: &Conn) -> Result<usize, Status> {
    let mut req = http::Request::new(());
    *req.method_mut() = t.method.clone();
    *req.uri_mut() = t.uri.clone();
    *req.headers_mut() = t.headers.clone();
    match conn {
        Conn::H1(c) => {
            let (parts, ()) = req.into_parts();
            let reply = c
                .send(http::Request::from_parts(parts, Full::new(t.body.clone())))
                .await
                .map_err(Status::unavailable)?;
            status_of(reply.status).map(|()| reply.bytes)
        }
        Conn::H2(c) => {
            let lease = c.lease().await?;
            let mut send = lease
                .connection()
                .sender()
                .clone()
                .ready()
                .await
                .map_err(|e| volley_client::transport_status(&e))?;
            let empty = t.body.is_empty();
            let (resp, mut out) = send
                .send_request(req, empty)
                .map_err(|e| volley_client::transport_status(&e))?;
            if !empty {
                out.send_data(t.body.clone(), true)
                    .map_err(|e| volley_client::transport_status(&e))?;
            }
            let resp = resp
                .await
                .map_err(|e| volley_client::transport_status(&e))?;
            let code = resp.status().as_u16();
            let mut body = resp.into_body();
            let mut bytes = 0;
            while let Some(chunk) = body.data().await {
                let chunk = chunk.map_err(|e| volley_client::transport_status(&e))?;
                bytes += chunk.len();
                let _ = body.flow_control().release_capacity(chunk.len());
            }
            status_of(code).map(|()| bytes)
        }
        // The engine dials own connections for custom calls only.
        Conn::Own(_) | Conn::Fast(_) => {
            Err(Status::internal("plain HTTP runs on a channel or HTTP/1.1"))
        }
    }
}
