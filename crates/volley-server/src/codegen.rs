//! What generated services (`volley-build`) use, in one import, as tonic's `codegen` module:
//! not meant for hand-written code, which imports from the crate root.

pub use std::{future::Future, sync::Arc};

pub use futures_util::{Stream, StreamExt};
pub use volley_wire::ReplyItem;

pub use crate::{Reply, Request, Response, Service, Status, Streaming};
