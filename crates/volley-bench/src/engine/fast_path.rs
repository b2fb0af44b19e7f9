//! The gate to the fast path (`volley_client::load::fast`): which runs' calls take it, and its
//! connections, dialled on the thread whose workers use them. A run it does not suit, or whose
//! fast connections cannot be made (short of a dial timing out), takes the h2-crate channel
//! instead.

use std::{rc::Rc, time::Instant};

use volley_client::{Policy, Strategy, load::fast::Redialing};
use volley_wire::Status;

use crate::{
    call::Conn,
    callee::Target,
    plan::options::{ClientPath, RunOptions},
};

/// Why a run's calls do not take the fast path (`None`: they do). The fast path serves gRPC
/// calls of every kind (any data: fixed, templated or NDJSON, of any size; per-call metadata
/// included) on one connection, a pool, or one per call (`--strategy per-request`), to one
/// address or over the addresses of a list or a name (`--lb-strategy`); what it lacks is the
/// h2-crate path's (`docs/bench.md`). A mix takes it when each of its entries would (they share
/// the run's connections).
pub(super) fn why_not(opts: &RunOptions, target: &Target) -> Option<&'static str> {
    if let Target::Mix(m) = target {
        return m.entries().iter().find_map(|e| match &e.target {
            Target::Grpc(_) => why_not(opts, &e.target),
            _ => Some("an HTTP request in the mix"),
        });
    }
    if !matches!(target, Target::Grpc(_)) {
        return Some("not a gRPC method");
    }
    Some(if opts.client == ClientPath::H2 {
        "VOLLEY_BENCH_CLIENT=h2"
    } else if opts.service_config.is_some() {
        "--service-config"
    } else {
        return None;
    })
}

/// The thread's fast connections for `strategy` (its share of the run's): a pool's `n`, else
/// one, which under `expanding` opens more as calls fill it; when one cannot be made, why, and
/// whether its dial ran out the connect timeout. With `per-request`, none: each call dials its
/// own. Over an address list (or a name's), each is a connection per address, the calls spread
/// by `lb`.
pub(super) async fn dial(
    target: &Target,
    strategy: Strategy,
    lb: Policy,
) -> Result<Vec<(usize, Conn)>, (Status, bool)> {
    let (n, grow) = match strategy {
        Strategy::Pool(n) => (n, 1),
        Strategy::Expanding { max } => (1, max),
        _ => (1, 1),
    };
    if strategy == Strategy::PerRequest {
        let c = Redialing::per_call(target.endpoint().clone(), lb);
        return Ok(vec![(0, Conn::Fast(Rc::new(c)))]);
    }
    let mut out = Vec::new();
    for k in 0..n {
        let began = Instant::now();
        match Redialing::expanding(target.endpoint().clone(), lb, grow).await {
            Ok(c) => out.push((k, Conn::Fast(Rc::new(c)))),
            Err(e) => return Err((e, began.elapsed() >= target.endpoint().connect_timeout)),
        }
    }
    Ok(out)
}
