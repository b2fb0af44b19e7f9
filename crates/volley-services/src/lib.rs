//! The built-in services of volley, one module per seed document, each a [`volley_server::Service`].
//!
//! `users` (seed 000), `hi` (seed 001), `greeter` (seed 003), `orders` (seed 004), and `testing`
//! (gRPC's interop suite), each an implementation of the trait volley-build generates from its
//! .proto (`pb`, which also holds the generated clients). [`all`] returns
//! them together; [`Options::delay`] makes every handler wait before it replies, for the seeds'
//! sleeping-server experiments.

pub mod greeter;
pub mod hi;
pub mod orders;
pub mod pb;
pub mod rest;
pub mod testing;
pub mod users;

use std::time::Duration;

use volley_server::Service;

/// Behaviour shared by every built-in service.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Time every handler waits before replying (zero: no timer at all).
    pub delay: Duration,
}

impl Options {
    /// Waits the configured delay, if any.
    pub(crate) async fn wait(self) {
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
    }
}

/// Every built-in service.
pub fn all(opts: Options) -> Vec<Service> {
    vec![
        users::service(opts).into(),
        greeter::service(opts).into(),
        hi::service(opts).into(),
        orders::service(opts).into(),
        testing::service().into(),
    ]
}
