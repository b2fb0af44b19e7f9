//! Handlers: [`Service`]s of typed methods, erased once to byte handlers the router stores, and
//! what a handler receives ([`Request`]) and returns ([`Response`]).

#[cfg(feature = "dynamic")]
mod dynamic;
mod message;
mod service;

#[cfg(feature = "dynamic")]
pub use dynamic::{DynamicFuture, DynamicHandler, DynamicStream};
pub use message::{Request, Response};
pub(crate) use service::{BoxFuture, Handler};
pub use service::{Service, ServiceBuilder};
