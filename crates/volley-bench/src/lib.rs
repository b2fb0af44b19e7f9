//! volley-bench
