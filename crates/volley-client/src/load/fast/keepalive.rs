//! Keepalive on a fast-path connection, as the h2-crate path (and grpc-go's client) does it: a
//! PING every interval; one still unanswered at the next tick fails the connection, so its calls
//! end with Unavailable and the next call dials again.

use std::{
    cell::RefCell,
    rc::{Rc, Weak},
    time::Duration,
};

use tokio::sync::Notify;
use volley_wire::Status;

use super::{error::CallError, state::Inner};

/// Runs until the connection closes (or goes): every `every`, checks that the last PING was
/// answered and sends the next.
pub(super) async fn keepalive(inner: Weak<RefCell<Inner>>, write: Rc<Notify>, every: Duration) {
    let mut sent = 0u64;
    loop {
        tokio::time::sleep(every).await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let mut i = inner.borrow_mut();
        if i.is_closed() {
            return;
        }
        if i.pongs() < sent {
            i.close(CallError::Failed(Status::unavailable(format!(
                "connection error: keepalive ping not answered within {every:?}"
            ))));
            drop(i);
            write.notify_one();
            return;
        }
        i.ping();
        sent += 1;
        drop(i);
        write.notify_one();
    }
}
