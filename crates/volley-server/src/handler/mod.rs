//! Handlers: [`Service`]s of typed methods, erased once to byte handlers the router stores, and
//! what a handler receives ([`Request`]) and returns ([`Response`]).

mod dynamic;
mod message;
mod service;

pub use dynamic::{DynamicFuture, DynamicHandler, DynamicStream};
pub use message::{Request, Response};
pub(crate) use service::{BoxFuture, Handler};
pub use service::{Service, ServiceBuilder};
