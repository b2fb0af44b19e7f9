//! Streams sent and read live, message by message (volley's, beyond grpcui, whose `invoke/`
//! sends a stream's messages together and answers when the call ends):
//!
//! - `POST /stream/open/pkg.Svc.Method` with `invoke/`'s body opens the call, sends `data`'s
//!   messages (and, for a method that takes one request, ends the request side), and answers
//!   `{"id"}`;
//! - `POST /stream/{id}/send` with `{"data": message}` sends one more; `POST /stream/{id}/close`
//!   ends the request side;
//! - `GET /stream/{id}/events?from=N` answers the events after the Nth (`{"headers"}`, each
//!   `{"message"}`, then `{"end": {"error", "trailers"}}`) and whether the call is over, waiting
//!   up to 10 s for one when there is none yet.
//!
//! A task per call reads its replies into the call's events. At most [`MAX_OPEN`] calls are
//! held; an ended call is dropped once its last event is read, or when room is needed; a call
//! whose page has not asked for its events for [`IDLE`] (the tab closed, say) is cancelled then
//! too.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use http::StatusCode;
use prost_reflect::{DeserializeOptions, DynamicMessage, MethodDescriptor};
use serde_json::{Value, json};
use tokio::sync::Notify;
use volley_call::dynamic::{Call, Sender};

use crate::{
    invoke::{Refusal, error_of, head, input, messages, reply, shown, unexpected},
    state::Ui,
};

/// Calls held open at once.
pub(crate) const MAX_OPEN: usize = 16;
/// How long `events` waits for something new.
const WAIT: Duration = Duration::from_secs(10);
/// A call not asked about for this long is abandoned: cancelled when room is needed.
const IDLE: Duration = Duration::from_secs(60);

/// The live calls of the page.
#[derive(Default)]
pub(crate) struct Streams {
    open: Mutex<HashMap<u64, Arc<Live>>>,
    next: AtomicU64,
}

/// One live call.
struct Live {
    method: MethodDescriptor,
    sender: tokio::sync::Mutex<Sender>,
    events: Mutex<Vec<Value>>,
    done: AtomicBool,
    changed: Notify,
    /// When the page last asked for its events or sent on it.
    seen: Mutex<tokio::time::Instant>,
    /// The task reading its replies, aborted (the call cancelled) when the call is abandoned.
    reader: Mutex<Option<tokio::task::AbortHandle>>,
}

impl Live {
    fn touch(&self) {
        *self.seen.lock().unwrap_or_else(|p| p.into_inner()) = tokio::time::Instant::now();
    }

    /// Ended, or abandoned by its page (and then cancelled).
    fn finished(&self) -> bool {
        if self.done.load(Ordering::Acquire) {
            return true;
        }
        let idle = self
            .seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .elapsed()
            >= IDLE;
        if idle && let Some(task) = self.reader.lock().unwrap_or_else(|p| p.into_inner()).take() {
            task.abort();
        }
        idle
    }

    fn push(&self, event: Value) {
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(event);
        self.changed.notify_waiters();
    }
}

impl Streams {
    fn get(&self, id: &str) -> Result<Arc<Live>, Refusal> {
        let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        id.parse()
            .ok()
            .and_then(|id| open.get(&id).cloned())
            .ok_or_else(|| {
                (
                    StatusCode::NOT_FOUND,
                    format!("no open stream {id}: it ended and was read, or never was"),
                )
            })
    }

    /// Keeps `live` under a new id, making room by dropping ended calls; refused when
    /// [`MAX_OPEN`] calls are still going.
    fn keep(&self, live: Arc<Live>) -> Result<u64, Refusal> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if open.len() >= MAX_OPEN {
            open.retain(|_, l| !l.finished());
        }
        if open.len() >= MAX_OPEN {
            return Err((
                StatusCode::TOO_MANY_REQUESTS,
                format!("{MAX_OPEN} streams are open: close one first"),
            ));
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        open.insert(id, live);
        Ok(id)
    }
}

/// `POST /stream/open/{method}`.
pub(crate) async fn open(
    streams: &Streams,
    ui: &Arc<Ui>,
    method: &MethodDescriptor,
    body: &[u8],
) -> Result<Value, Refusal> {
    let input = input(body)?;
    let first = messages(method, &input.data)?;
    let (conn, head) = head(ui, method, &input).await?;
    let live = Arc::new(Live {
        method: method.clone(),
        sender: tokio::sync::Mutex::new(Sender::default()),
        events: Mutex::new(Vec::new()),
        done: AtomicBool::new(false),
        changed: Notify::new(),
        seen: Mutex::new(tokio::time::Instant::now()),
        reader: Mutex::new(None),
    });
    let id = streams.keep(live.clone())?;
    let mut call = match Call::open(&conn.conn, &head).await {
        Ok(c) => c,
        Err(st) => {
            live.push(json!({"end": {"error": error_of(ui, &st), "trailers": []}}));
            live.done.store(true, Ordering::Release);
            return Ok(json!({"id": id.to_string()}));
        }
    };
    {
        let mut sender = live.sender.lock().await;
        *sender = call.sender();
        // A method that takes one request: the form's message (or an empty one), then the end.
        let one = !method.is_client_streaming();
        let to_send = match (one, first.is_empty()) {
            (true, true) => vec![DynamicMessage::new(method.input())],
            _ => first,
        };
        for m in &to_send {
            if sender.send(m, false).await.is_err() {
                break;
            }
        }
        if one {
            sender.close();
        }
    }
    let (ui, reading) = (ui.clone(), live);
    let reader = reading.clone();
    let task = tokio::spawn(async move { read(&ui, &reading, call).await });
    *reader.reader.lock().unwrap_or_else(|p| p.into_inner()) = Some(task.abort_handle());
    Ok(json!({"id": id.to_string()}))
}

/// The call's replies into its events, as they come.
async fn read(ui: &Ui, live: &Live, mut call: Call) {
    let headers = call.headers().await;
    live.push(json!({"headers": shown(&headers)}));
    let failed = loop {
        match call.message().await {
            Ok(Some(bytes)) => live.push(reply(ui, &live.method, bytes)),
            Ok(None) => break None,
            Err(st) => break Some(st),
        }
    };
    let (status, trailers) = match failed {
        Some(st) => (st, volley_call::dynamic::Metadata::new()),
        None => call.finish().await,
    };
    let error = (status.code != 0).then(|| error_of(ui, &status));
    live.push(json!({"end": {"error": error, "trailers": shown(&trailers)}}));
    live.done.store(true, Ordering::Release);
    live.changed.notify_waiters();
}

/// `POST /stream/{id}/send`.
pub(crate) async fn send(
    streams: &Streams,
    ui: &Ui,
    id: &str,
    body: &[u8],
) -> Result<Value, Refusal> {
    let live = streams.get(id)?;
    live.touch();
    let v: Value = serde_json::from_slice(body).map_err(|e| {
        (
            StatusCode::BAD_REQUEST,
            format!("Failed to parse JSON: {e}"),
        )
    })?;
    let data = v.get("data").cloned().unwrap_or_else(|| json!({}));
    let msg = DynamicMessage::deserialize_with_options(
        live.method.input(),
        &data,
        &DeserializeOptions::new(),
    )
    .map_err(|e| unexpected(format!("error getting request data: {e}")))?;
    if !live.method.is_client_streaming() {
        return Err((
            StatusCode::BAD_REQUEST,
            format!(
                "{} takes one request: it was sent when the stream opened",
                live.method.full_name()
            ),
        ));
    }
    let mut sender = live.sender.lock().await;
    match sender.send(&msg, false).await {
        Ok(()) => Ok(json!({})),
        Err(st) => Ok(json!({"error": error_of(ui, &st)})),
    }
}

/// `POST /stream/{id}/close`.
pub(crate) async fn close(streams: &Streams, id: &str) -> Result<Value, Refusal> {
    let live = streams.get(id)?;
    live.sender.lock().await.close();
    Ok(json!({}))
}

/// `GET /stream/{id}/events?from=N`.
pub(crate) async fn events(streams: &Streams, id: &str, from: usize) -> Result<Value, Refusal> {
    let live = streams.get(id)?;
    live.touch();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        // Asked for before looking, so that an event pushed in between still wakes it.
        let changed = live.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        let done = live.done.load(Ordering::Acquire);
        let (new, total) = {
            let events = live.events.lock().unwrap_or_else(|p| p.into_inner());
            (
                events.get(from..).unwrap_or_default().to_vec(),
                events.len(),
            )
        };
        if !new.is_empty() || done {
            if done && from + new.len() >= total {
                // Read to its end: forgotten.
                let mut open = streams.open.lock().unwrap_or_else(|p| p.into_inner());
                if let Ok(id) = id.parse::<u64>() {
                    open.remove(&id);
                }
            }
            return Ok(json!({"events": new, "done": done}));
        }
        if tokio::time::timeout_at(deadline, changed).await.is_err() {
            return Ok(json!({"events": [], "done": false}));
        }
    }
}

#[cfg(test)]
mod tests {
    use prost_reflect::DescriptorPool;

    use super::*;

    #[test]
    fn a_call_its_page_abandoned_makes_room_and_fresh_ones_do_not() {
        let pool = DescriptorPool::decode(volley_proto::pb::FILE_DESCRIPTOR_SET).unwrap();
        let method = pool.services().find_map(|s| s.methods().next()).unwrap();
        let live = |idle_for: Duration| {
            let seen = tokio::time::Instant::now()
                .checked_sub(idle_for)
                .expect("the clock has run past a minute");
            Arc::new(Live {
                method: method.clone(),
                sender: tokio::sync::Mutex::new(Sender::default()),
                events: Mutex::new(Vec::new()),
                done: AtomicBool::new(false),
                changed: Notify::new(),
                seen: Mutex::new(seen),
                reader: Mutex::new(None),
            })
        };
        let streams = Streams::default();
        for _ in 1..MAX_OPEN {
            streams.keep(live(Duration::ZERO)).unwrap();
        }
        streams.keep(live(IDLE + Duration::from_secs(1))).unwrap();
        // Full: the abandoned one goes to make room.
        streams.keep(live(Duration::ZERO)).unwrap();
        // Full of calls still watched: refused.
        let (status, why) = streams.keep(live(Duration::ZERO)).unwrap_err();
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{why}");
        assert_eq!(streams.open.lock().unwrap().len(), MAX_OPEN);
    }
}
