//! What a VU holds for `k6/net/grpc` (its clients, each with a schema and a connection; its
//! open streams and their events) and the [`Host`] trait, what this module needs of the VU it
//! runs in: its runtime to block on and where its samples go.

use std::{
    cell::RefCell,
    collections::HashMap,
    future::Future,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor};
use tokio::sync::mpsc;
use volley_call::dynamic::Protocol;
use volley_client::Connection;

use crate::{metrics::Kind, shared::Shared};

/// What the gRPC module needs of the VU it runs in: its runtime to block on, its clients and
/// streams, and where its samples go.
pub(crate) trait Host {
    fn shared(&self) -> &Shared;
    /// In the init context (`load` only there, `connect` never).
    fn in_init(&self) -> bool;
    /// Starts a task beside the VU (a stream's), on the runtime its waits use.
    fn spawn<F: Future<Output = ()> + Send + 'static>(&self, f: F);
    fn clients(&self) -> &RefCell<Vec<Client>>;
    fn streams(&self) -> &RefCell<Streams>;
    /// Runs `f` to its end, or `None` when the VU is stopped first.
    fn block<F: Future>(&self, f: F) -> Option<F::Output>;
    fn record(&self, metric: usize, kind: Kind, v: f64);
    /// A finished unary call: its duration with k6's tags, bytes both ways.
    fn record_call(&self, call: &Finished<'_>);
    /// A file holding a PEM text, for the TLS loader.
    fn pem_file(&self, pem: &str) -> Result<String, String>;
}

/// A finished unary call, for [`Host::record_call`].
pub(crate) struct Finished<'a> {
    pub addr: &'a str,
    pub path: &'a str,
    pub code: i32,
    /// The status message (empty when OK).
    pub message: &'a str,
    pub took: Duration,
    pub sent: usize,
    pub received: usize,
    pub tags: &'a [(String, String)],
}

/// One `new grpc.Client()`.
#[derive(Default)]
pub(crate) struct Client {
    pub(super) pool: Option<Arc<DescriptorPool>>,
    pub(super) conn: Option<Conn>,
}

/// A connected client.
#[derive(Clone)]
pub(super) struct Conn {
    /// The connection this call takes (the first of `pool` until [`Conn::pick`]).
    pub(super) conn: Connection,
    /// Every connection of the client (volley's `connections` and `lb` params; one as in k6),
    /// and the next to take, round robin.
    pub(super) pool: Arc<[Connection]>,
    pub(super) next: Arc<AtomicUsize>,
    pub(super) scheme: &'static str,
    pub(super) authority: String,
    pub(super) addr: String,
    pub(super) protocol: Protocol,
    pub(super) max_recv: usize,
    pub(super) max_send: usize,
}

/// A stream's event for the VU's event loop.
pub(crate) struct Event {
    pub id: u32,
    /// `data`, `error`, `end` (a stream's); `reply`, `fail` (an `asyncInvoke`'s); `timer`.
    pub kind: &'static str,
    pub payload: Option<String>,
    /// An `asyncInvoke`'s call, for the VU to record when it takes the reply.
    pub call: Option<Box<Record>>,
}

/// A finished unary call, owned (it crosses from the call's task to its VU).
pub(crate) struct Record {
    pub addr: String,
    pub path: String,
    pub code: i32,
    pub message: String,
    pub took: Duration,
    pub sent: usize,
    pub received: usize,
    pub tags: Vec<(String, String)>,
}

impl Conn {
    /// This client for one call: on the next connection of its pool, round robin.
    pub(super) fn pick(mut self) -> Conn {
        if self.pool.len() > 1 {
            let i = self.next.fetch_add(1, Ordering::Relaxed) % self.pool.len();
            self.conn = self.pool[i].clone();
        }
        self
    }
}

impl Record {
    pub(crate) fn finished(&self) -> Finished<'_> {
        Finished {
            addr: &self.addr,
            path: &self.path,
            code: self.code,
            message: &self.message,
            took: self.took,
            sent: self.sent,
            received: self.received,
            tags: &self.tags,
        }
    }
}

/// A VU's open streams and the channel their events come back on.
pub(crate) struct Streams {
    pub(super) next: u32,
    /// Streams, `asyncInvoke` calls and timers whose last event has not been dispatched yet.
    pub open: usize,
    /// Timers cleared before they fired: their event is dropped when it comes.
    pub cleared: std::collections::HashSet<u32>,
    /// Each open stream's writer, its request type and whether the client streams (a
    /// server-streaming call's one request ends its side, as k6 sends it).
    pub(super) writers: HashMap<
        u32,
        (
            mpsc::UnboundedSender<Option<DynamicMessage>>,
            MessageDescriptor,
            bool,
        ),
    >,
    pub(super) tx: mpsc::UnboundedSender<Event>,
    pub rx: Option<mpsc::UnboundedReceiver<Event>>,
}

impl Default for Streams {
    fn default() -> Streams {
        let (tx, rx) = mpsc::unbounded_channel();
        Streams {
            next: 0,
            open: 0,
            writers: HashMap::new(),
            tx,
            rx: Some(rx),
            cleared: Default::default(),
        }
    }
}

impl Streams {
    /// A new id for something the event loop waits for (an `asyncInvoke`), and the channel
    /// its event comes back on.
    pub(crate) fn open_one(&mut self) -> (u32, mpsc::UnboundedSender<Event>) {
        self.next += 1;
        self.open += 1;
        (self.next, self.tx.clone())
    }

    /// A timer cleared before it fired: no longer waited for.
    pub(crate) fn clear(&mut self, id: u32) {
        if self.cleared.insert(id) {
            self.open = self.open.saturating_sub(1);
        }
    }

    /// A stream has ended: its writer goes.
    pub(crate) fn ended(&mut self, id: u32) {
        self.writers.remove(&id);
        self.open = self.open.saturating_sub(1);
    }
}
