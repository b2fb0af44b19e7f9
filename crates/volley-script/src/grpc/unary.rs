//! Unary calls: `client.invoke` (the reply as `{status, message, headers, trailers, error}`)
//! and `client.healthCheck`.

use std::{fmt::Write as _, time::Instant};

use bytes::Bytes;
use prost::Message as _;
use prost_reflect::DynamicMessage;
use volley_call::dynamic::{Call, CallStatus, Head, Metadata};

use super::{
    call::{
        call_params, connected, find_method, head, metadata_json, request, status_json, to_json,
    },
    client::with_client,
    host::{Finished, Host},
};

/// `client.invoke(method, request, params)`.
pub(crate) fn invoke(
    st: &impl Host,
    client: u32,
    method: &str,
    body: &str,
    params: &str,
) -> Result<String, String> {
    let (conn, pool) = connected(st, client)?;
    let m = find_method(&pool, method)?;
    let p = call_params(params, "GRPC's client.invoke()")?;
    let msg = request(m.input(), body)?;
    let out_desc = m.output();
    let head = head(&conn, &m, &p, true);
    let sent = msg.encoded_len();
    if sent > conn.max_send {
        return Err(format!(
            "trying to send message larger than max ({sent} vs. {})",
            conn.max_send
        ));
    }
    let started = Instant::now();
    let done = st
        .block(async {
            let mut call = Call::open(&conn.conn, &head).await?;
            call.send(&msg, true).await?;
            let headers = call.headers().await;
            let reply = call.message().await?;
            // Read to the end: gRPC-Web and Connect carry the status after the message.
            while call.message().await?.is_some() {}
            let (status, trailers) = call.finish().await;
            Ok::<_, CallStatus>((headers, reply, status, trailers))
        })
        .ok_or("interrupted")?;
    let took = started.elapsed();
    let (headers, reply, status, trailers) = match done {
        Ok(x) => x,
        Err(s) => (Metadata::new(), None, s, Metadata::new()),
    };
    let received = reply.as_ref().map_or(0, Bytes::len);
    st.record_call(&Finished {
        addr: &conn.addr,
        path: &head.path,
        code: status.code,
        took,
        sent: sent + 5,
        received: received + 5 * usize::from(received > 0),
        tags: &p.tags,
    });
    let mut out = String::with_capacity(128 + received * 2);
    let _ = write!(out, "{{\"status\":{},\"message\":", status.code);
    if p.discard {
        out.push_str("null");
    } else {
        let msg = match reply.filter(|_| status.code == 0) {
            Some(b) => DynamicMessage::decode(out_desc.clone(), b).map_err(|e| {
                format!(
                    "unable to decode the reply as {}: {e}",
                    out_desc.full_name()
                )
            })?,
            None => DynamicMessage::new(out_desc),
        };
        to_json(&mut out, &msg);
    }
    out.push_str(",\"headers\":");
    metadata_json(&mut out, &headers);
    out.push_str(",\"trailers\":");
    metadata_json(&mut out, &trailers);
    if status.code != 0 {
        out.push_str(",\"error\":");
        status_json(&mut out, &status);
    }
    out.push('}');
    Ok(out)
}

/// `client.healthCheck(service)`: grpc.health.v1's Check, `{status}` back.
pub(crate) fn health(st: &impl Host, client: u32, service: &str) -> Result<String, String> {
    let conn = with_client(st, client, |c| {
        c.conn
            .clone()
            .ok_or_else(|| "no gRPC connection, you must call connect first".to_owned())
    })?;
    let head = Head {
        scheme: conn.scheme,
        authority: conn.authority.clone(),
        path: "/grpc.health.v1.Health/Check".into(),
        metadata: Ok(http::HeaderMap::new()),
        timeout: None,
        user_agent: concat!("volley-run/", env!("CARGO_PKG_VERSION")).to_owned(),
        protocol: conn.protocol,
        max_recv: conn.max_recv,
        unary: true,
    };
    // HealthCheckRequest { string service = 1; }, written by hand: one field.
    let mut req = Vec::with_capacity(service.len() + 2);
    if !service.is_empty() {
        prost::encoding::string::encode(1, &service.to_owned(), &mut req);
    }
    let req = Bytes::from(req);
    let done = st
        .block(async {
            let mut call = Call::open(&conn.conn, &head).await?;
            call.send_encoded(req, true).await?;
            let _ = call.headers().await;
            let reply = call.message().await?;
            while call.message().await?.is_some() {}
            let (status, _) = call.finish().await;
            Ok::<_, CallStatus>((reply, status))
        })
        .ok_or("interrupted")?;
    let (reply, status) = done.map_err(|s| format!("code = {} desc = {}", s.code, s.message))?;
    if status.code != 0 {
        return Err(format!(
            "rpc error: code = {} desc = {}",
            status.code, status.message
        ));
    }
    // HealthCheckResponse { ServingStatus status = 1; }.
    #[derive(Clone, PartialEq, prost::Message)]
    struct Reply {
        #[prost(int32, tag = "1")]
        status: i32,
    }
    let r = reply
        .map(|b| Reply::decode(b).unwrap_or_default())
        .unwrap_or_default();
    Ok(format!("{{\"status\":{}}}", r.status))
}
