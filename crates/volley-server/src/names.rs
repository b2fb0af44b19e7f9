//! Header names of the call path as constants: a `&str` name is parsed and checked on every
//! lookup or insert, a `HeaderName` only hashed (measured ~3% of a unary call's CPU).

use http::HeaderName;

pub(crate) const GRPC_STATUS: HeaderName = HeaderName::from_static("grpc-status");
pub(crate) const GRPC_MESSAGE: HeaderName = HeaderName::from_static("grpc-message");
pub(crate) const GRPC_STATUS_DETAILS: HeaderName =
    HeaderName::from_static("grpc-status-details-bin");
pub(crate) const GRPC_TIMEOUT: HeaderName = HeaderName::from_static("grpc-timeout");
pub(crate) const GRPC_ENCODING: HeaderName = HeaderName::from_static("grpc-encoding");
pub(crate) const GRPC_ACCEPT_ENCODING: HeaderName = HeaderName::from_static("grpc-accept-encoding");
pub(crate) const CONNECT_ENCODING: HeaderName = HeaderName::from_static("connect-content-encoding");
pub(crate) const CONNECT_ACCEPT_ENCODING: HeaderName =
    HeaderName::from_static("connect-accept-encoding");
