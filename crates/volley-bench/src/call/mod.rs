//! One call of any kind: unary straight through `volley_client::Channel::unary` or the fast
//! path, streams in `stream`, plain HTTP requests in `http`, and custom calls handed their
//! connection.

mod conn;
mod http;
mod stream;

use std::{cell::RefCell, sync::Arc};

use volley_wire::Status;

use crate::{
    callee::{CallKind, Target},
    plan::RunOptions,
    recorder::Recorder,
};
pub(crate) use conn::Conn;

/// Makes call number `i` of `target` (a mix's entry, not the mix: see [`Target::leaf`]);
/// returns the bytes received.
pub(crate) async fn call(
    target: &Target,
    opts: &RunOptions,
    conn: &Conn,
    i: u64,
    worker_id: &Arc<str>,
    rec: &RefCell<Recorder>,
) -> Result<usize, Status> {
    match (target, conn) {
        (Target::Mix(_), _) => Err(Status::internal("a mix is called through its entries")),
        (Target::Http(h), _) => http::call(h, conn).await,
        (Target::Grpc(g), Conn::H2(c)) if g.kind == CallKind::Unary => {
            let data = g.call_data(i, worker_id);
            let body = g
                .payload
                .message(i, data.as_ref())
                .map_err(Status::internal)?;
            // One await (a second, per-call metadata's, would grow every call's future): the
            // head is the target's, or made for this call.
            let mut own = None;
            let head = g.head_for(data.as_ref(), &mut own)?;
            c.unary(head, body).await.map(|r| r.bytes)
        }
        (Target::Grpc(g), Conn::Fast(c)) if g.kind == CallKind::Unary => {
            let data = g.call_data(i, worker_id);
            let body = g
                .payload
                .message(i, data.as_ref())
                .map_err(Status::internal)?;
            // One await (a second, per-call metadata's, would grow every call's future): the
            // block is the target's, or made for this call.
            let mut own = None;
            let block = g.block_for(data.as_ref(), &mut own)?;
            // The limit is checked on the whole reply, as the h2 path does (grpc-go refuses
            // the message once read).
            c.unary(block, body)
                .await
                .and_then(|r| r.within(g.head.max_recv))
                .map(|r| r.bytes)
        }
        (Target::Grpc(g), Conn::Fast(c)) if g.kind == CallKind::ServerStreaming => {
            // Boxed, as the h2 path's streams are: the unary future stays small.
            Box::pin(stream::fast_server_stream(g, opts, c, i, worker_id, rec))
                .await
                .map(|()| 0)
        }
        (Target::Grpc(g), Conn::Fast(c)) => {
            // Client and bidi streams, boxed as the others are.
            Box::pin(stream::fast_client_stream(g, opts, c, i, worker_id, rec))
                .await
                .map(|()| 0)
        }
        (Target::Grpc(g), Conn::H2(c)) => {
            let lease = c.lease().await?;
            // Boxed: a stream's future is large, and unary calls (the common case) would carry
            // its size in every call's future, which is moved by value once per call.
            Box::pin(stream::stream_call(
                g,
                opts,
                lease.connection(),
                i,
                worker_id,
                rec,
            ))
            .await
            .map(|()| 0)
        }
        (Target::Custom(t), Conn::Own(c)) => t.call.call(c, i, rec).await,
        // The engine dials channels for gRPC and own connections for custom calls only.
        (Target::Grpc(_), Conn::H1(_) | Conn::Own(_))
        | (Target::Custom(_), Conn::H1(_) | Conn::H2(_) | Conn::Fast(_)) => Err(Status::internal(
            "no connection of this kind for this target",
        )),
    }
}
