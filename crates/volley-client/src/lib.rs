//! volley-client
