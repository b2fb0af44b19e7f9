//! `ServeError`: why a server could not be built.

use std::io;

/// Errors from building or running a server.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A registered descriptor set did not decode or link.
    #[error("invalid file descriptor set: {0}")]
    Descriptor(#[from] prost_reflect::DescriptorError),
    /// A REST rule could not be used.
    #[cfg(feature = "web")]
    #[error("{0}")]
    Rule(#[from] crate::route::rest::RuleError),
    /// A REST rule names a method the schema does not have.
    #[cfg(feature = "web")]
    #[error(
        "an HTTP rule names {0}, which no service here has (its selector is package.Service.Method)"
    )]
    UnknownMethod(String),
    /// The listener failed.
    #[error("{0}")]
    Io(#[from] io::Error),
}
