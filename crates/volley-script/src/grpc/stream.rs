//! Streams: `new grpc.Stream(client, method, params)`, opened in a task of the VU's runtime;
//! `write` and `end` reach it over a channel, its messages, error and end come back as events
//! the VU's event loop hands to the script.

use prost::Message as _;
use prost_reflect::DynamicMessage;
use tokio::sync::mpsc;
use volley_call::dynamic::{Call, CallStatus};

use super::{
    call::{call_params, connected, find_method, head, request, status_json, to_json},
    host::{Event, Host},
};
use crate::metrics::{Kind, id};

/// `new grpc.Stream(client, method, params)`: opens the call in a task of the VU's runtime,
/// whose events the VU's event loop hands to the script.
pub(crate) fn stream_open(
    st: &impl Host,
    client: u32,
    method: &str,
    params: &str,
) -> Result<u32, String> {
    let (conn, pool) = connected(st, client)?;
    let m = find_method(&pool, method)?;
    let p = call_params(params, "GRPC's stream")?;
    let head = head(&conn, &m, &p, false);
    let out_desc = m.output();
    let (wtx, mut wrx) = mpsc::unbounded_channel::<Option<DynamicMessage>>();
    let mut streams = st.streams().borrow_mut();
    streams.next += 1;
    let id = streams.next;
    streams.open += 1;
    streams
        .writers
        .insert(id, (wtx, m.input(), m.is_client_streaming()));
    let events = streams.tx.clone();
    drop(streams);
    st.record(id::GRPC_STREAMS, Kind::Counter, 1.0);
    st.spawn(async move {
        let send = |kind: &'static str, payload: Option<String>| {
            let _ = events.send(Event {
                id,
                kind,
                payload,
                call: None,
            });
        };
        let mut call = match Call::open(&conn.conn, &head).await {
            Ok(c) => c,
            Err(s) => {
                let mut e = String::new();
                status_json(&mut e, &s);
                send("error", Some(e));
                send("end", None);
                return;
            }
        };
        let mut sender = call.sender();
        let writer = tokio::spawn(async move {
            while let Some(item) = wrx.recv().await {
                match item {
                    Some(msg) => {
                        if sender.send(&msg, false).await.is_err() {
                            break;
                        }
                    }
                    None => {
                        sender.close();
                        break;
                    }
                }
            }
        });
        let _ = call.headers().await;
        let mut failed = None;
        loop {
            match call.message().await {
                Ok(Some(b)) => {
                    let mut json = String::new();
                    match DynamicMessage::decode(out_desc.clone(), b) {
                        Ok(msg) => to_json(&mut json, &msg),
                        Err(e) => {
                            failed = Some(CallStatus::new(
                                13,
                                format!("unable to decode the reply: {e}"),
                            ));
                            break;
                        }
                    }
                    send("data", Some(json));
                }
                Ok(None) => break,
                Err(s) => {
                    failed = Some(s);
                    break;
                }
            }
        }
        let status = match failed {
            Some(s) => s,
            None => call.finish().await.0,
        };
        writer.abort();
        if status.code != 0 {
            let mut e = String::new();
            status_json(&mut e, &status);
            send("error", Some(e));
        }
        send("end", None);
    });
    Ok(id)
}

/// `stream.write(message)`.
pub(crate) fn stream_write(st: &impl Host, id: u32, body: &str) -> Result<(), String> {
    let streams = st.streams().borrow();
    let Some((tx, desc, client_streams)) = streams.writers.get(&id) else {
        return Err("stream is closed".into());
    };
    let msg = request(desc.clone(), body)?;
    let len = msg.encoded_len();
    tx.send(Some(msg))
        .map_err(|_| "stream is closed".to_owned())?;
    if !client_streams {
        let _ = tx.send(None);
    }
    drop(streams);
    st.record(id::GRPC_STREAMS_MSGS_SENT, Kind::Counter, 1.0);
    st.record(id::DATA_SENT, Kind::Counter, (len + 5) as f64);
    Ok(())
}

/// `stream.end()`.
pub(crate) fn stream_end(st: &impl Host, id: u32) {
    if let Some((tx, _, _)) = st.streams().borrow().writers.get(&id) {
        let _ = tx.send(None);
    }
}
