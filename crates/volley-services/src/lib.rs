//! The built-in services of volley, one module per seed document, each a [`volley_server::Service`].
//!
//! `users` (seed 000), `hi` (seed 001), `greeter` (seed 003), `orders` (seed 004), and `testing`
//! (gRPC's interop suite), each an implementation of the trait volley-build generates from its
//! .proto (`pb`, which also holds the generated clients). [`all`] returns
//! them together; [`Options::delay`] makes every handler wait before it replies, for the seeds'
//! sleeping-server experiments, and [`Options::work`] makes it compute, for overload ones.

pub mod greeter;
pub mod hi;
mod options;
pub mod orders;
pub mod pb;
pub mod rest;
pub mod testing;
pub mod users;

use volley_server::Service;

pub use options::Options;
use options::work_rounds;

/// Every built-in service.
pub fn all(opts: Options) -> Vec<Service> {
    if !opts.work.is_zero() {
        // Measured now, before any load.
        work_rounds(opts.work);
    }
    vec![
        users::service(opts).into(),
        greeter::service(opts).into(),
        hi::service(opts).into(),
        orders::service(opts).into(),
        testing::service().into(),
    ]
}
