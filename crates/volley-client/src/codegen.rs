//! What generated clients (`volley-build`) use, in one import, as tonic's `codegen` module: not
//! meant for hand-written code, which imports from the crate root.

pub use volley_wire::Status;

pub use crate::{
    Channel, ClientInterceptor, DialError, Grpc, IntoStreamingRequest, Request, Response, Streaming,
};
