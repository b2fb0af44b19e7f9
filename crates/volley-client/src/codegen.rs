//! What generated clients (`volley-build`) use, in one import, as tonic's `codegen` module: not
//! meant for hand-written code, which imports from the crate root.

pub use volley_wire::Status;

pub use crate::{
    Channel, ClientInterceptor, DialError, Endpoint, Grpc, IntoStreamingRequest, Request, Response,
    Streaming,
};

/// Includes the code `volley-build` generated for the `.proto` package `$package`, as tonic's
/// `include_proto!` does: the messages, and the service's server and client modules.
///
/// ```ignore
/// pub mod helloworld {
///     volley_server::include_proto!("helloworld");
/// }
/// ```
#[macro_export]
macro_rules! include_proto {
    ($package:tt) => {
        include!(concat!(env!("OUT_DIR"), concat!("/", $package, ".rs")));
    };
}
