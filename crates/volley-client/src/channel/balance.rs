//! Several backends behind one target: the addresses of an `ipv4:`/`ipv6:` list, or those a
//! name resolves to, each with its own connections (a `pool::Inner` under the channel's
//! strategy), and a [`Policy`] that picks one per call, as gRPC's `pick_first` and
//! `round_robin` do. An address whose dials fail backs off and is skipped meanwhile; a name is
//! resolved again every [`REFRESH`] and when every address has failed.

use std::{
    net::SocketAddr,
    sync::{
        Arc, RwLock,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use volley_wire::Status;

use super::{
    pool::{Inner, Lease},
    strategy::Strategy,
};
use crate::{
    Endpoint, Target,
    connection::unavailable,
    policy::{Policy, REFRESH, RERESOLVE_MIN, lookup},
};

/// One address and its connections.
struct Backend {
    addr: SocketAddr,
    inner: Arc<Inner>,
}

/// The addresses in force and the policy over them.
pub(crate) struct Balanced {
    ep: Endpoint,
    strategy: Strategy,
    policy: Policy,
    idle: Duration,
    backends: RwLock<Arc<[Backend]>>,
    /// When the name was last resolved (`None`: never; lists are never resolved).
    resolved: tokio::sync::Mutex<Option<Instant>>,
    /// Set once a resolution has put addresses in force: calls then skip the lock above.
    ready: std::sync::atomic::AtomicBool,
    next: AtomicUsize,
}

impl Balanced {
    pub(crate) fn new(
        ep: Endpoint,
        strategy: Strategy,
        policy: Policy,
        idle: Duration,
    ) -> Arc<Balanced> {
        let b = Arc::new(Balanced {
            backends: RwLock::new(Arc::from(Vec::new())),
            ep,
            strategy,
            policy,
            idle,
            resolved: tokio::sync::Mutex::new(None),
            ready: std::sync::atomic::AtomicBool::new(false),
            next: AtomicUsize::new(0),
        });
        match &b.ep.target {
            Target::List(addrs) => b.install(addrs),
            _ => {
                if let Ok(rt) = tokio::runtime::Handle::try_current() {
                    rt.spawn(refresh(Arc::downgrade(&b)));
                }
            }
        }
        b
    }

    pub(crate) fn endpoint(&self) -> &Endpoint {
        &self.ep
    }

    pub(crate) fn strategy(&self) -> Strategy {
        self.strategy
    }

    fn current(&self) -> Arc<[Backend]> {
        self.backends
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The sum of `f` over every address's connections.
    pub(crate) fn sum<T: std::iter::Sum>(&self, f: impl Fn(&Inner) -> T) -> T {
        self.current().iter().map(|b| f(&b.inner)).sum()
    }

    /// Puts `addrs` in force, keeping the connections of those already there.
    fn install(&self, addrs: &[SocketAddr]) {
        let old = self.current();
        let mut seen = std::collections::HashSet::new();
        let backends: Vec<Backend> = addrs
            .iter()
            .filter(|a| seen.insert(**a))
            .map(|&addr| match old.iter().find(|b| b.addr == addr) {
                Some(b) => Backend {
                    addr,
                    inner: b.inner.clone(),
                },
                None => Backend {
                    addr,
                    inner: Inner::new(self.ep.at(addr), self.strategy, self.idle),
                },
            })
            .collect();
        *self.backends.write().unwrap_or_else(|p| p.into_inner()) = Arc::from(backends);
    }

    /// Resolves the name (when the target is one) if it never was, or if `again` and the last
    /// resolution is older than [`RERESOLVE_MIN`].
    async fn resolve(&self, again: bool) -> Result<(), Status> {
        let Target::Tcp(name) = &self.ep.target else {
            return Ok(());
        };
        if !again && self.ready.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut last = self.resolved.lock().await;
        let due = match *last {
            None => true,
            Some(t) => again && t.elapsed() >= RERESOLVE_MIN,
        };
        if !due {
            return Ok(());
        }
        *last = Some(Instant::now());
        let addrs = lookup(name).await?;
        if !addrs.is_empty() {
            self.install(&addrs);
            self.ready.store(true, Ordering::Release);
        }
        Ok(())
    }

    /// Dials every address's first connections; fails only when none can be reached.
    pub(crate) async fn warm(&self) -> Result<(), Status> {
        self.resolve(false).await?;
        let backends = self.current();
        let mut first_error = None;
        let mut any = false;
        for b in backends.iter() {
            match b.inner.warm().await {
                Ok(()) => any = true,
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        match (any, first_error) {
            (false, Some(e)) => Err(e),
            _ => Ok(()),
        }
    }

    /// A connection for one call, on the address the policy picks: round robin takes the next
    /// in turn, pick-first the first; either passes over addresses backing off, and tries the
    /// next when a dial fails.
    pub(crate) async fn lease(&self) -> Result<Lease, Status> {
        self.resolve(false).await?;
        let mut backends = self.current();
        if backends.iter().all(|b| b.inner.backing_off()) {
            self.resolve(true).await?;
            backends = self.current();
        }
        let n = backends.len();
        if n == 0 {
            return Err(unavailable(format!("{} has no address", self.ep.target)));
        }
        // Round robin turns over the addresses not backing off (gRPC's over READY ones), so a
        // dead address's share is spread over all the others, not handed to its neighbour.
        // (Two passes rather than a list of them: no allocation per call.)
        let up = |i: usize| !backends[i].inner.backing_off();
        let live = (0..n).filter(|&i| up(i)).count();
        let start = match (self.policy, live) {
            (Policy::PickFirst, _) | (_, 0) => 0,
            (Policy::RoundRobin, _) => {
                let k = self.next.fetch_add(1, Ordering::Relaxed) % live;
                (0..n).filter(|&i| up(i)).nth(k).unwrap_or(0)
            }
        };
        let mut last_error = None;
        for k in 0..n {
            let i = (start + k) % n;
            if !up(i) {
                continue;
            }
            match Inner::lease(&backends[i].inner).await {
                Ok(lease) => return Ok(lease),
                Err(e) => last_error = Some(e),
            }
        }
        match last_error {
            Some(e) => Err(e),
            // Every address is backing off: the first one's error says why.
            None => Inner::lease(&backends[start].inner).await,
        }
    }
}

/// Resolves a balanced name every [`REFRESH`], for as long as its channel lives.
async fn refresh(b: std::sync::Weak<Balanced>) {
    loop {
        tokio::time::sleep(REFRESH).await;
        let Some(b) = b.upgrade() else {
            return;
        };
        // Forced past `ready` and `RERESOLVE_MIN` by clearing when it was last done.
        *b.resolved.lock().await = None;
        let _ = b.resolve(true).await;
    }
}
