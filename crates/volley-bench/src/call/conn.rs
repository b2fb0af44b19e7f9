//! A worker's connection, of either HTTP version and either client path.

use volley_client::{Channel, Connection};

/// A connection of either HTTP version.
#[derive(Clone)]
pub(crate) enum Conn {
    /// HTTP/2: gRPC, or HTTP load with `--http2`, through this thread's channel.
    H2(Channel),
    /// HTTP/1.1: plain HTTP load, one request in flight.
    H1(std::rc::Rc<volley_client::load::http1::Http1Connection>),
    /// A worker's own HTTP/2 connection (custom calls: one client, one connection).
    Own(Connection),
    /// The fast path's connection (gRPC calls of every kind), dialled again when it
    /// closes.
    Fast(std::rc::Rc<volley_client::load::fast::Redialing>),
}
