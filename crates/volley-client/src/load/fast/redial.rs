//! Fast-path connections to a target's addresses that are dialled again when they stop taking
//! calls, and a call the server never saw sent once more on the new one. Redials after a
//! connection that closed before the server answered any call, or after a failed dial, back
//! off. An address list, or the addresses a name resolves to under `round_robin`, is balanced
//! as gRPC's `pick_first` and `round_robin` balance it; or, per call, a connection of its own
//! (`--strategy per-request`).

use std::{
    cell::{Cell, RefCell},
    net::SocketAddr,
    rc::Rc,
    time::Instant,
};

use bytes::Bytes;
use volley_wire::Status;

use super::{
    FastConnection, OpenStream, StreamReply, address::Address, error::CallError, frame::HeaderBlock,
};
use crate::{
    Policy, Target, UnaryReply,
    connection::unavailable,
    policy::{REFRESH, RERESOLVE_MIN, lookup},
};

/// Fast-path connections to an endpoint, one per address (an `ipv4:`/`ipv6:` list has several,
/// and so has a name balanced `round_robin`, once resolved; any other target one), each
/// dialled again when it stops taking calls (GOAWAY, a closed socket), as a channel does for
/// the h2-crate path; a call the server never saw (past a GOAWAY's last stream, or refused) is
/// sent once more, on the connection the policy gives it then (its own address's, redialled,
/// when it is the only one). Each call takes an address by the [`Policy`]: the first that can
/// be reached (`pick_first`), or the next in turn (`round_robin`); an address backing off is
/// passed over while another can take the call, and a call whose address cannot be dialled
/// tries the next.
///
/// A server that closes every connection before answering a call (GOAWAY as soon as it has
/// sent its SETTINGS, a protocol error on the first reply), or one that cannot be reached, would
/// otherwise be dialled once or twice per call, as fast as calls fail (measured: 4,000
/// connections a second, each left in TIME_WAIT). So after such a connection, or a failed dial,
/// the next dial waits 100 ms, doubling to 2 s, and calls meanwhile fail at once with that
/// connection's (or dial's) status (or go to another address); a connection the server answered
/// on resets the wait.
pub struct Redialing {
    /// The addresses in force: swapped whole when a name is resolved again, so a call keeps
    /// its address (an `Rc`) while the list changes under it.
    addrs: RefCell<Rc<[Rc<Address>]>>,
    policy: Policy,
    /// The address the next round-robin call starts from.
    next: Cell<usize>,
    /// A name balanced round robin: resolved to its addresses before the first dial, again
    /// when a call finds the address whose turn it is without a connection (at most every
    /// [`REFRESH`]), or every address backing off (at most every [`RERESOLVE_MIN`]).
    name: Option<Name>,
    /// Whether each address keeps its connection (else each call dials its own).
    kept: bool,
    /// `expanding`: the most connections an address opens (1: one, dialled again as it goes).
    max_per_address: usize,
}

/// A name to resolve, and when it last was.
struct Name {
    ep: crate::Endpoint,
    host_port: String,
    resolved: Cell<Option<Instant>>,
}

impl Redialing {
    /// Connections to `ep`'s addresses, calls spread by `policy`: `pick_first` dials the
    /// addresses in order until one answers, `round_robin` dials them all (a name's, once it is
    /// resolved); an error only when none can be reached (the first address's). An address
    /// whose dial failed backs off.
    pub async fn balanced(ep: crate::Endpoint, policy: Policy) -> Result<Redialing, Status> {
        Redialing::expanding(ep, policy, 1).await
    }

    /// As [`Self::balanced`], each address opening another connection (up to `max` in all)
    /// when a call finds every one it has full (as many calls open or waiting as the server's
    /// MAX_CONCURRENT_STREAMS), as the channel's `expanding` strategy does. Connections opened
    /// so stay open until the run ends (the channel closes them after 30 s idle).
    pub async fn expanding(
        ep: crate::Endpoint,
        policy: Policy,
        max: usize,
    ) -> Result<Redialing, Status> {
        let r = Redialing::new(ep, policy, true, max.max(1));
        if let Some(name) = &r.name {
            r.resolve(name).await?;
        }
        let mut first_err = None;
        let mut reached = false;
        let addrs = r.addrs.borrow().clone();
        for a in addrs.iter() {
            match a.current().await {
                Ok(_) => reached = true,
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
            if reached && policy == Policy::PickFirst {
                break;
            }
        }
        match first_err {
            Some(e) if !reached => Err(e),
            _ => Ok(r),
        }
    }

    /// Each call on a connection of its own, dialled for it to the address `policy` picks
    /// (none is dialled now; a name under `round_robin` is resolved at the first call): the
    /// connection closes once the call's last handle on it goes. A dial that fails fails its
    /// call (after every address of a list has been tried), as the h2-crate path's
    /// per-request calls do, with no backoff.
    pub fn per_call(ep: crate::Endpoint, policy: Policy) -> Redialing {
        Redialing::new(ep, policy, false, 1)
    }

    fn new(ep: crate::Endpoint, policy: Policy, kept: bool, max_per_address: usize) -> Redialing {
        let name = match &ep.target {
            // A name balanced round robin: its addresses, each a backend, once resolved (a
            // name under pick_first is dialled as one, as the system orders its addresses).
            Target::Tcp(hp)
                if policy == Policy::RoundRobin && hp.parse::<SocketAddr>().is_err() =>
            {
                Some(Name {
                    host_port: hp.clone(),
                    ep: ep.clone(),
                    resolved: Cell::new(None),
                })
            }
            _ => None,
        };
        let addrs = match &ep.target {
            Target::List(list) => Redialing::addresses(&ep, list, &[], kept, max_per_address),
            _ => Rc::from([Rc::new(Address::new(ep, kept, max_per_address))]),
        };
        Redialing {
            addrs: RefCell::new(addrs),
            policy,
            next: Cell::new(0),
            name,
            kept,
            max_per_address,
        }
    }

    /// An address for each of `list` (in order, once each), keeping those of `old` already
    /// there with their connections.
    fn addresses(
        ep: &crate::Endpoint,
        list: &[SocketAddr],
        old: &[Rc<Address>],
        kept: bool,
        max: usize,
    ) -> Rc<[Rc<Address>]> {
        let mut seen = std::collections::HashSet::new();
        list.iter()
            .filter(|a| seen.insert(**a))
            .map(|&a| {
                let one = ep.at(a);
                match old.iter().find(|o| o.ep.target == one.target) {
                    Some(o) => o.clone(),
                    None => Rc::new(Address::new(one, kept, max)),
                }
            })
            .collect()
    }

    /// Resolves the name and puts its addresses in force. A failure is the call's when the name
    /// never resolved; later, the addresses in force stay.
    async fn resolve(&self, name: &Name) -> Result<(), Status> {
        let first = name.resolved.get().is_none();
        name.resolved.set(Some(Instant::now()));
        let found = match lookup(&name.host_port).await {
            Ok(found) if !found.is_empty() => found,
            Ok(_) if first => {
                return Err(unavailable(format!("{} has no address", name.host_port)));
            }
            Err(e) if first => return Err(e),
            _ => return Ok(()),
        };
        let old = self.addrs.borrow().clone();
        let fresh = Redialing::addresses(&name.ep, &found, &old, self.kept, self.max_per_address);
        *self.addrs.borrow_mut() = fresh;
        Ok(())
    }

    /// Resolves the name again when it is due: never resolved, every address backing off
    /// for [`RERESOLVE_MIN`], or otherwise [`REFRESH`] since the last time (a call only
    /// gets here when the address whose turn it is has no connection).
    async fn resolve_if_due(&self) -> Result<(), Status> {
        let Some(name) = &self.name else {
            return Ok(());
        };
        let due = match name.resolved.get() {
            None => true,
            Some(t) => {
                let stuck = self.addrs.borrow().iter().all(|a| a.backing_off());
                t.elapsed() >= if stuck { RERESOLVE_MIN } else { REFRESH }
            }
        };
        if due {
            self.resolve(name).await?;
        }
        Ok(())
    }

    /// The open connection the policy gives the next call, and its address, without dialling;
    /// `None` when the address whose turn it is has none open (then [`Self::pick`] dials). Kept
    /// apart from `pick` so that a call's future does not carry a dial's state: with it inline,
    /// the generator paid 1.027-1.038 x instructions per unary call (callgrind). Each call
    /// method matches on the two itself: an `async fn` doing it for all three added a future
    /// level, 1.006-1.012 x.
    fn ready(&self) -> Option<FastConnection> {
        let addrs = self.addrs.borrow();
        if let [a] = &addrs[..] {
            return a.open();
        }
        let i = self.in_turn(&addrs).next()?;
        let conn = addrs[i].open()?;
        self.took(i, addrs.len());
        Some(conn)
    }

    /// Where the next call starts looking among `n` addresses: round robin's turn, else the
    /// first address.
    fn first_turn(&self, n: usize) -> usize {
        match self.policy {
            Policy::RoundRobin => self.next.get() % n.max(1),
            Policy::PickFirst => 0,
        }
    }

    /// The addresses in the order the next call tries them, those backing off passed over (a
    /// single address never is: its calls fail with its status).
    fn in_turn<'a>(&self, addrs: &'a [Rc<Address>]) -> impl Iterator<Item = usize> + 'a {
        let (n, start) = (addrs.len(), self.first_turn(addrs.len()));
        (0..n)
            .map(move |k| (start + k) % n)
            .filter(move |&i| n == 1 || !addrs[i].backing_off())
    }

    /// Address `i` of `n` takes a call: round robin's turn passes to the one after it, so that
    /// addresses passed over do not hand their turns to their neighbour.
    fn took(&self, i: usize, n: usize) {
        if self.policy == Policy::RoundRobin {
            self.next.set((i + 1) % n);
        }
    }

    /// A connection for one call, or for a call the server never saw, sent once more: by the
    /// policy, passing over addresses that are backing off while another may take the call,
    /// and trying the next address when one cannot be dialled. A name is resolved again first
    /// when that is due.
    async fn pick(&self) -> Result<FastConnection, Status> {
        self.resolve_if_due().await?;
        let addrs = self.addrs.borrow().clone();
        let mut first_err = None;
        for i in self.in_turn(&addrs) {
            self.took(i, addrs.len());
            let a = &addrs[i];
            match a.current().await {
                Ok(conn) => return Ok(conn),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_err {
            return Err(e);
        }
        // Every address is backing off: the call fails with the first one's status.
        let a = &addrs[self.first_turn(addrs.len())];
        a.current().await
    }

    /// One unary call (see [`FastConnection::unary`]).
    pub async fn unary(&self, block: &HeaderBlock, body: Bytes) -> Result<UnaryReply, Status> {
        let conn = match self.ready() {
            Some(conn) => conn,
            None => Box::pin(self.pick()).await?,
        };
        match conn.call(block, body.clone()).await {
            Err(e) if e.never_seen() => Box::pin(self.pick()).await?.unary(block, body).await,
            r => r.map_err(CallError::into_status),
        }
    }

    /// One server-streaming call (see [`FastConnection::server_stream`]).
    pub async fn server_stream(
        &self,
        block: &HeaderBlock,
        body: Bytes,
        limit: u64,
        deadline: Option<Instant>,
    ) -> Result<StreamReply, Status> {
        let conn = match self.ready() {
            Some(conn) => conn,
            None => Box::pin(self.pick()).await?,
        };
        match conn.stream_call(block, body.clone(), limit, deadline).await {
            Err(e) if e.never_seen() => {
                Box::pin(self.pick())
                    .await?
                    .server_stream(block, body, limit, deadline)
                    .await
            }
            r => r.map_err(CallError::into_status),
        }
    }

    /// Opens a client or bidi stream (see [`FastConnection::open_stream`]). A stream the
    /// server refuses or a GOAWAY passes over once it is open fails as its call; only a
    /// connection already closed is dialled again first.
    pub async fn open_stream(
        &self,
        block: &HeaderBlock,
        stamp: bool,
    ) -> Result<OpenStream, Status> {
        let conn = match self.ready() {
            Some(conn) => conn,
            None => Box::pin(self.pick()).await?,
        };
        match conn.open(block, stamp).await {
            Err(e) if e.never_seen() => {
                Box::pin(self.pick()).await?.open_stream(block, stamp).await
            }
            r => r.map_err(CallError::into_status),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn only_a_name_under_round_robin_is_resolved() {
        let ep = |s: &str| crate::Endpoint::from_target_str(s).unwrap();
        let rr = Redialing::new(ep("dns:///localhost:1"), Policy::RoundRobin, true, 1);
        assert_eq!(rr.name.as_ref().unwrap().host_port, "localhost:1");
        for (target, policy) in [
            ("localhost:1", Policy::PickFirst),
            ("127.0.0.1:1", Policy::RoundRobin),
            ("ipv4:127.0.0.1:1,127.0.0.2:1", Policy::RoundRobin),
        ] {
            assert!(
                Redialing::new(ep(target), policy, true, 1).name.is_none(),
                "{target}"
            );
        }
    }

    #[test]
    fn a_new_resolution_keeps_the_addresses_still_there() {
        let ep = crate::Endpoint::from_target_str("localhost:1").unwrap();
        let (a, b, c) = (
            addr("127.0.0.1:1"),
            addr("127.0.0.2:1"),
            addr("127.0.0.3:1"),
        );
        let first = Redialing::addresses(&ep, &[a, b, a], &[], true, 1);
        assert_eq!(first.len(), 2, "each address once");
        let second = Redialing::addresses(&ep, &[c, b], &first, true, 1);
        assert_eq!(second[0].ep.target, Target::Tcp("127.0.0.3:1".into()));
        assert!(
            Rc::ptr_eq(&second[1], &first[1]),
            "b kept, with its connection"
        );
        // Each address is dialled under the name's authority and TLS name.
        assert_eq!(second[0].ep.authority, ep.authority);
        assert_eq!(second[0].ep.server_name, ep.server_name);
    }

    #[tokio::test]
    async fn a_name_resolves_to_its_addresses_once_until_due() {
        let ep = crate::Endpoint::from_target_str("localhost:9").unwrap();
        let r = Redialing::new(ep, Policy::RoundRobin, false, 1);
        r.resolve_if_due().await.unwrap();
        let addrs = r.addrs.borrow().clone();
        assert!(
            addrs
                .iter()
                .any(|a| a.ep.target == Target::Tcp("127.0.0.1:9".into())),
            "localhost includes 127.0.0.1"
        );
        // Not due again: the last resolution is under a second old.
        let when = r.name.as_ref().unwrap().resolved.get();
        r.resolve_if_due().await.unwrap();
        assert_eq!(r.name.as_ref().unwrap().resolved.get(), when);
    }
}
