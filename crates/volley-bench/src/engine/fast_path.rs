//! The gate to the fast path (`volley_client::load::fast`): which runs' calls take it, and its
//! connections, dialled on the thread whose workers use them. A run it does not suit, or whose
//! fast connections cannot be made (short of a dial timing out), takes the h2-crate channel
//! instead.

use std::{rc::Rc, time::Instant};

use volley_client::{Policy, Strategy, load::fast::Redialing};
use volley_wire::Status;

use crate::{
    call::Conn,
    plan::options::{ClientPath, RunOptions},
    target::Target,
};

/// Why a run's calls do not take the fast path (`None`: they do). The fast path serves gRPC
/// calls of every kind (any data: fixed, templated or NDJSON, of any size; per-call metadata
/// included) on one connection, a pool, or one per call (`--strategy per-request`), to one
/// address or over the addresses of a list or a name (`--lb-strategy`); what it lacks is the
/// h2-crate path's (`docs/bench.md`). A mix takes it when each of its entries would (they share the run's
/// connections).
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
    } else if matches!(opts.strategy, Strategy::Expanding { .. }) {
        "--strategy expanding"
    } else {
        return None;
    })
}

/// `n` fast connections (a thread's share of a pool, else one); when one cannot be made, why,
/// and whether its dial ran out the connect timeout. With `--strategy per-request` (`per_call`),
/// none: each call dials its own. Over an address list, each is a connection per address, the
/// calls spread by `lb`.
pub(super) async fn dial(
    target: &Target,
    n: usize,
    per_call: bool,
    lb: Policy,
) -> Result<Vec<(usize, Conn)>, (Status, bool)> {
    if per_call {
        let c = Redialing::per_call(target.endpoint().clone(), lb);
        return Ok(vec![(0, Conn::Fast(Rc::new(c)))]);
    }
    let mut out = Vec::new();
    for k in 0..n {
        let began = Instant::now();
        match Redialing::balanced(target.endpoint().clone(), lb).await {
            Ok(c) => out.push((k, Conn::Fast(Rc::new(c)))),
            Err(e) => return Err((e, began.elapsed() >= target.endpoint().connect_timeout)),
        }
    }
    Ok(out)
}
