//! The gate to the fast path (`volley_client::load::fast`): which runs' calls take it, and its
//! connections, dialled on the thread whose workers use them. A run it does not suit, or whose
//! fast connections cannot be made, takes the h2-crate channel instead.

use std::rc::Rc;

use volley_client::{Strategy, load::fast::Redialing};

use crate::{
    call::Conn,
    plan::options::{ClientPath, RunOptions},
    target::{CallKind, Target, payload::Payload},
};

/// Whether a run's calls take the fast path: unary gRPC with a request framed once and small
/// enough for one DATA frame, one or a pool of connections to one address, no service config,
/// keepalive or reply size limit (the h2-crate path's features). [`ClientPath::H2`]
/// (`VOLLEY_BENCH_CLIENT=h2`) keeps every call on the h2-crate path.
pub(super) fn fast_path(opts: &RunOptions, target: &Target) -> bool {
    if opts.client == ClientPath::H2 {
        return false;
    }
    let Target::Grpc(g) = target else {
        return false;
    };
    g.kind == CallKind::Unary
        && matches!(&g.payload, Payload::Static(f) if f.iter().all(|m| m.len() <= volley_wire::h2::DEFAULT_MAX_FRAME_SIZE))
        && g.head.max_recv >= i32::MAX as usize
        && opts.service_config.is_none()
        && matches!(opts.strategy, Strategy::Single | Strategy::Pool(_))
        && !matches!(g.endpoint.target, volley_client::Target::List(_))
        && g.endpoint.keepalive.is_none()
}

/// `n` fast connections (a thread's share of a pool, else one); empty when one cannot be made,
/// and the channel then dials and says why.
pub(super) async fn dial(target: &Target, n: usize) -> Vec<(usize, Conn)> {
    let mut out = Vec::new();
    for k in 0..n {
        match Redialing::connect(target.endpoint().clone()).await {
            Ok(c) => out.push((k, Conn::Fast(Rc::new(c)))),
            Err(_) => {
                out.clear();
                break;
            }
        }
    }
    out
}
