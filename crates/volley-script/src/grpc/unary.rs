//! Unary calls: `client.invoke` (the reply as `{status, message, headers, trailers, error}`)
//! and `client.healthCheck`.

use std::{
    fmt::Write as _,
    time::{Duration, Instant},
};

use bytes::Bytes;
use prost::Message as _;
use prost_reflect::{DynamicMessage, MessageDescriptor};
use volley_call::dynamic::{Call, CallStatus, Head, Metadata};
use volley_client::Connection;

use super::{
    call::{
        call_params, connected, find_method, head, metadata_json, request, status_json, to_json,
    },
    client::with_client,
    host::{Conn, Event, Finished, Host, Record},
};

/// A unary call ready to go: where, what, and how its reply is shown.
struct Prepared {
    conn: Conn,
    head: Head,
    msg: DynamicMessage,
    out: MessageDescriptor,
    discard: bool,
    tags: Vec<(String, String)>,
    /// The request message's encoded length.
    sent: usize,
}

/// A unary call's end: response headers, the reply message, status, trailers, time taken.
struct Done {
    headers: Metadata,
    reply: Option<Bytes>,
    status: CallStatus,
    trailers: Metadata,
    took: Duration,
}

fn prepare(
    st: &impl Host,
    client: u32,
    method: &str,
    body: &str,
    params: &str,
    what: &str,
) -> Result<Prepared, String> {
    let (conn, pool) = connected(st, client)?;
    let m = find_method(&pool, method)?;
    let p = call_params(params, what)?;
    let msg = request(m.input(), body)?;
    let sent = msg.encoded_len();
    if sent > conn.max_send {
        return Err(format!(
            "trying to send message larger than max ({sent} vs. {})",
            conn.max_send
        ));
    }
    let head = head(&conn, &m, &p, true);
    Ok(Prepared {
        conn,
        head,
        msg,
        out: m.output(),
        discard: p.discard,
        tags: p.tags,
        sent,
    })
}

/// Makes the call: the request, then the reply read to its end (gRPC-Web and Connect carry
/// the status after the message).
async fn exchange(conn: &Connection, head: &Head, msg: &DynamicMessage) -> Done {
    let started = Instant::now();
    let done = async {
        let mut call = Call::open(conn, head).await?;
        call.send(msg, true).await?;
        let headers = call.headers().await;
        let reply = call.message().await?;
        while call.message().await?.is_some() {}
        let (status, trailers) = call.finish().await;
        Ok::<_, CallStatus>((headers, reply, status, trailers))
    }
    .await;
    let (headers, reply, status, trailers) = match done {
        Ok(x) => x,
        Err(s) => (Metadata::new(), None, s, Metadata::new()),
    };
    Done {
        headers,
        reply,
        status,
        trailers,
        took: started.elapsed(),
    }
}

impl Done {
    fn received(&self) -> usize {
        self.reply.as_ref().map_or(0, |b| b.len() + 5)
    }

    /// `{status, message, headers, trailers, error}` as JSON text.
    fn reply_json(self, out_desc: MessageDescriptor, discard: bool) -> Result<String, String> {
        let mut out = String::with_capacity(128 + self.received() * 2);
        let _ = write!(out, "{{\"status\":{},\"message\":", self.status.code);
        if discard {
            out.push_str("null");
        } else {
            let msg = match self.reply.filter(|_| self.status.code == 0) {
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
        metadata_json(&mut out, &self.headers);
        out.push_str(",\"trailers\":");
        metadata_json(&mut out, &self.trailers);
        if self.status.code != 0 {
            out.push_str(",\"error\":");
            status_json(&mut out, &self.status);
        }
        out.push('}');
        Ok(out)
    }
}

/// `client.invoke(method, request, params)`.
pub(crate) fn invoke(
    st: &impl Host,
    client: u32,
    method: &str,
    body: &str,
    params: &str,
) -> Result<String, String> {
    let c = prepare(st, client, method, body, params, "GRPC's client.invoke()")?;
    let done = st
        .block(exchange(&c.conn.conn, &c.head, &c.msg))
        .ok_or("interrupted")?;
    st.record_call(&Finished {
        addr: &c.conn.addr,
        path: &c.head.path,
        code: done.status.code,
        message: &done.status.message,
        took: done.took,
        sent: c.sent + 5,
        received: done.received(),
        tags: &c.tags,
    });
    done.reply_json(c.out, c.discard)
}

/// `client.asyncInvoke(method, request, params)`: the call runs beside the VU's other work; its
/// reply (or why it could not be read) comes back as an event the VU's event loop hands to the
/// Promise, with what the metrics need.
pub(crate) fn async_invoke(
    st: &impl Host,
    client: u32,
    method: &str,
    body: &str,
    params: &str,
) -> Result<u32, String> {
    let c = prepare(
        st,
        client,
        method,
        body,
        params,
        "GRPC's client.asyncInvoke()",
    )?;
    let (id, events) = st.streams().borrow_mut().open_one();
    st.spawn(async move {
        let done = exchange(&c.conn.conn, &c.head, &c.msg).await;
        let record = Record {
            addr: c.conn.addr.clone(),
            path: c.head.path.clone(),
            code: done.status.code,
            message: done.status.message.clone(),
            took: done.took,
            sent: c.sent + 5,
            received: done.received(),
            tags: c.tags,
        };
        let (kind, payload) = match done.reply_json(c.out, c.discard) {
            Ok(json) => ("reply", json),
            Err(e) => ("fail", e),
        };
        let _ = events.send(Event {
            id,
            kind,
            payload: Some(payload),
            call: Some(Box::new(record)),
        });
    });
    Ok(id)
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
