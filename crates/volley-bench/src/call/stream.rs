//! gRPC streams, on the fast path or the h2 crate's: server streams read to the end (or to
//! `--stream-call-count` / `--stream-call-duration`); client and bidi streams sent with
//! `--stream-interval` and, for bidi, replies matched to requests in order for per-message
//! latency.

use std::{cell::RefCell, collections::VecDeque, sync::Arc, time::Instant};

use bytes::Bytes;
use h2::RecvStream;
use volley_client::{
    Connection,
    load::{MessageCounter, call::finish, fast::Redialing},
    send_message, transport_status,
};
use volley_proto::template::CallData;
use volley_wire::{Code, Status};

use crate::{
    callee::{CallKind, GrpcTarget},
    plan::RunOptions,
    recorder::Recorder,
};

pub(super) async fn stream_call(
    target: &GrpcTarget,
    opts: &RunOptions,
    conn: &Connection,
    i: u64,
    worker_id: &Arc<str>,
    rec: &RefCell<Recorder>,
) -> Result<(), Status> {
    let so = &opts.stream;
    let started = Instant::now();
    let deadline = (!so.call_duration.is_zero()).then(|| started + so.call_duration);
    let data = target.call_data(i, worker_id);
    let request = target.head_for(data.as_ref(), &mut None)?.request();
    let (resp, mut out) = conn.open_stream(request).await?;

    let sends_stream = matches!(target.kind, CallKind::ClientStreaming | CallKind::Bidi);
    let sent_at: RefCell<VecDeque<Instant>> = RefCell::new(VecDeque::new());
    let matched = target.kind == CallKind::Bidi;
    if sends_stream {
        let (messages, count) = outgoing(target, opts, i, data.as_ref())?;
        // Bidi: read replies while sending, so that per-message latency is measured as they come.
        let writer = async {
            for k in 0..count {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    break;
                }
                let msg = message_k(target, opts, i, worker_id, &messages, k)?;
                if matched {
                    sent_at.borrow_mut().push_back(Instant::now());
                }
                send_message(&mut out, msg, false).await?;
                rec.borrow_mut().messages_sent += 1;
                if !so.interval.is_zero() && k + 1 < count {
                    tokio::time::sleep(so.interval).await;
                }
            }
            out.send_data(Bytes::new(), true)
                .map_err(|e| transport_status(&e))?;
            Ok::<_, Status>(())
        };
        if matched {
            let reader = async {
                let resp = resp.await.map_err(|e| transport_status(&e))?;
                read_replies(resp, rec, started, Some(&sent_at), deadline, 0).await
            };
            let (r, w) = tokio::join!(reader, writer);
            w?;
            return r;
        }
        writer.await?;
        let resp = resp.await.map_err(|e| transport_status(&e))?;
        return finish(resp).await.map(|_| {
            rec.borrow_mut().messages_received += 1;
        });
    }
    // Server streaming: one request, read replies.
    let body = target
        .payload
        .message(i, data.as_ref())
        .map_err(Status::internal)?;
    send_message(&mut out, body, true).await?;
    rec.borrow_mut().messages_sent += 1;
    let resp = resp.await.map_err(|e| transport_status(&e))?;
    let limit = target.stream_call_count.unwrap_or(so.call_count);
    read_replies(resp, rec, started, None, deadline, limit).await
}

/// A server stream on the fast path: what the h2 path's records, from the counts its
/// connection's reader kept (messages, and when the first was in).
pub(super) async fn fast_server_stream(
    target: &GrpcTarget,
    opts: &RunOptions,
    conn: &Redialing,
    i: u64,
    worker_id: &Arc<str>,
    rec: &RefCell<Recorder>,
) -> Result<(), Status> {
    let so = &opts.stream;
    let started = Instant::now();
    let deadline = (!so.call_duration.is_zero()).then(|| started + so.call_duration);
    let data = target.call_data(i, worker_id);
    let body = target
        .payload
        .message(i, data.as_ref())
        .map_err(Status::internal)?;
    let mut own = None;
    let block = target.block_for(data.as_ref(), &mut own)?;
    let limit = target.stream_call_count.unwrap_or(so.call_count);
    rec.borrow_mut().messages_sent += 1;
    let reply = conn.server_stream(block, body, limit, deadline).await?;
    let mut r = rec.borrow_mut();
    if let Some(at) = reply.first_message {
        r.first_message
            .saturating_record((at - started).as_nanos().max(1) as u64);
    }
    r.messages_received += reply.messages;
    Ok(())
}

/// A client or bidi stream on the fast path: what [`stream_call`] does on the h2 path, with the
/// replies counted (and, for bidi, their arrivals stamped) by the connection's reader.
pub(super) async fn fast_client_stream(
    target: &GrpcTarget,
    opts: &RunOptions,
    conn: &Redialing,
    i: u64,
    worker_id: &Arc<str>,
    rec: &RefCell<Recorder>,
) -> Result<(), Status> {
    let so = &opts.stream;
    let started = Instant::now();
    let deadline = (!so.call_duration.is_zero()).then(|| started + so.call_duration);
    let data = target.call_data(i, worker_id);
    let (messages, count) = outgoing(target, opts, i, data.as_ref())?;
    let bidi = target.kind == CallKind::Bidi;
    let mut own = None;
    let block = target.block_for(data.as_ref(), &mut own)?;
    let mut stream = conn.open_stream(block, bidi).await?;
    // Bidi: each reply's latency against its request, in order, as they come.
    let mut sent_at = Vec::new();
    let mut arrivals = Vec::new();
    let mut matched = 0;
    for k in 0..count {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        let msg = message_k(target, opts, i, worker_id, &messages, k)?;
        if bidi {
            sent_at.push(Instant::now());
        }
        if !stream.send(msg).await {
            // The server has answered (or reset) already: its status ends the call.
            sent_at.pop();
            break;
        }
        rec.borrow_mut().messages_sent += 1;
        if bidi {
            stream.take_arrivals(&mut arrivals);
            record_latencies(rec, &sent_at, &mut arrivals, &mut matched);
        }
        if !so.interval.is_zero() && k + 1 < count {
            tokio::time::sleep(so.interval).await;
        }
    }
    // Bidi reads to the deadline as the h2 path's reader does; a client stream's one reply
    // is waited for.
    let reply = stream.finish(if bidi { deadline } else { None }).await?;
    if bidi {
        stream.take_arrivals(&mut arrivals);
        record_latencies(rec, &sent_at, &mut arrivals, &mut matched);
    }
    let mut r = rec.borrow_mut();
    if let (true, Some(at)) = (bidi, reply.first_message) {
        r.first_message
            .saturating_record((at - started).as_nanos().max(1) as u64);
    }
    r.messages_received += reply.messages;
    Ok(())
}

/// A client or bidi stream's messages (call `i`'s data) and how many it sends:
/// `--stream-call-count`, else each message once.
fn outgoing(
    target: &GrpcTarget,
    opts: &RunOptions,
    i: u64,
    data: Option<&CallData>,
) -> Result<(Vec<Bytes>, u64), Status> {
    let messages = target.payload.messages(i, data).map_err(Status::internal)?;
    if messages.is_empty() {
        return Err(Status::internal("no data to stream"));
    }
    let count = match target.stream_call_count.unwrap_or(opts.stream.call_count) {
        0 => messages.len() as u64,
        n => n,
    };
    Ok((messages, count))
}

/// Message `k` of a client or bidi stream: the messages in turn, or with
/// `--stream-dynamic-messages` each one rendered from call data of its own (a fresh UUID and
/// time). Inlined: it runs per message (the fixed case is one `Bytes` clone).
#[inline]
fn message_k(
    target: &GrpcTarget,
    opts: &RunOptions,
    i: u64,
    worker_id: &Arc<str>,
    messages: &[Bytes],
    k: u64,
) -> Result<Bytes, Status> {
    let n = messages.len() as u64;
    if !opts.stream.dynamic_messages {
        return Ok(messages[(k % n) as usize].clone());
    }
    let fresh = target.call_data(i, worker_id);
    Ok(target
        .payload
        .messages(i, fresh.as_ref())
        .map_err(Status::internal)?
        .swap_remove((k % n) as usize))
}

/// Records each reply arrived in `arrivals` against the request it answers (the `matched`-th
/// sent, in order), and empties `arrivals`.
fn record_latencies(
    rec: &RefCell<Recorder>,
    sent_at: &[Instant],
    arrivals: &mut Vec<Instant>,
    matched: &mut usize,
) {
    if arrivals.is_empty() {
        return;
    }
    let mut r = rec.borrow_mut();
    for at in arrivals.drain(..) {
        if let Some(sent) = sent_at.get(*matched) {
            r.message_latency
                .saturating_record((at - *sent).as_nanos().max(1) as u64);
        }
        *matched += 1;
    }
}

/// Reads a reply stream to its status, counting messages, recording time to first message and,
/// when `sent_at` is given, each reply's latency against its request (in order). Stops early (as
/// OK) after `limit` messages or at `deadline`.
async fn read_replies(
    resp: http::Response<RecvStream>,
    rec: &RefCell<Recorder>,
    started: Instant,
    sent_at: Option<&RefCell<VecDeque<Instant>>>,
    deadline: Option<Instant>,
    limit: u64,
) -> Result<(), Status> {
    let (parts, mut body) = resp.into_parts();
    if let Some(s) = Status::from_headers(&parts.headers) {
        return if s.code() == Code::Ok { Ok(()) } else { Err(s) };
    }
    let mut counter = MessageCounter::default();
    let mut received = 0u64;
    loop {
        let next = match deadline {
            Some(d) => match tokio::time::timeout_at(d.into(), body.data()).await {
                Ok(n) => n,
                Err(_) => return Ok(()),
            },
            None => body.data().await,
        };
        let Some(chunk) = next else { break };
        let chunk = chunk.map_err(|e| transport_status(&e))?;
        let _ = body.flow_control().release_capacity(chunk.len());
        let n = counter.push(&chunk);
        if n == 0 {
            continue;
        }
        let now = Instant::now();
        let mut r = rec.borrow_mut();
        if received == 0 {
            r.first_message
                .saturating_record((now - started).as_nanos().max(1) as u64);
        }
        for k in received..received + n {
            if let Some(at) = sent_at.and_then(|q| q.borrow().get(k as usize).copied()) {
                r.message_latency
                    .saturating_record((now - at).as_nanos().max(1) as u64);
            }
        }
        r.messages_received += n;
        received += n;
        if limit > 0 && received >= limit {
            return Ok(());
        }
    }
    let trailers = body.trailers().await.map_err(|e| transport_status(&e))?;
    match trailers.as_ref().and_then(Status::from_headers) {
        Some(s) if s.code() == Code::Ok => Ok(()),
        Some(s) => Err(s),
        None => Err(Status::internal(
            "server closed the stream without trailers",
        )),
    }
}
