//! A fast-path connection that is dialled again when it stops taking calls, and a call the
//! server never saw sent once more on the new one.

use std::cell::RefCell;

use bytes::Bytes;
use volley_wire::Status;

use super::{FastConnection, error::CallError, frame::HeaderBlock};
use crate::UnaryReply;

/// A fast-path connection to an endpoint that is dialled again when it stops taking calls
/// (GOAWAY, a closed socket), as a channel does for the h2-crate path; a call the server never
/// saw (past a GOAWAY's last stream, or refused) is sent once more on the new connection.
pub struct Redialing {
    ep: crate::Endpoint,
    conn: RefCell<FastConnection>,
}

impl Redialing {
    /// A first connection to `ep`.
    pub async fn connect(ep: crate::Endpoint) -> Result<Redialing, Status> {
        let conn = FastConnection::connect(&ep).await?;
        Ok(Redialing {
            ep,
            conn: RefCell::new(conn),
        })
    }

    async fn current(&self) -> Result<FastConnection, Status> {
        let conn = self.conn.borrow().clone();
        if !conn.is_closed() {
            return Ok(conn);
        }
        let fresh = FastConnection::connect(&self.ep).await?;
        *self.conn.borrow_mut() = fresh.clone();
        Ok(fresh)
    }

    /// One unary call (see [`FastConnection::unary`]).
    pub async fn unary(&self, block: &HeaderBlock, body: Bytes) -> Result<UnaryReply, Status> {
        let conn = self.current().await?;
        match conn.call(block, body.clone()).await {
            Err(e) if e.never_seen() => self.current().await?.unary(block, body).await,
            r => r.map_err(CallError::into_status),
        }
    }

    /// The largest request body one call can send.
    pub fn max_body(&self) -> usize {
        self.conn.borrow().max_body()
    }
}
