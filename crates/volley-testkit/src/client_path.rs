//! Which HTTP/2 client a `volley bench` run is expected to report in `volley.clientPath`, for
//! test files that scripts/test runs twice: as they are, and with every call forced onto the h2
//! crate (`VOLLEY_BENCH_CLIENT=h2` in their environment, which every run they start inherits).

/// Whether these tests run with every call forced onto the h2 crate.
pub fn h2_forced() -> bool {
    std::env::var("VOLLEY_BENCH_CLIENT").as_deref() == Ok("h2")
}

/// The `volley.clientPath` a run reports: `want`, unless the h2 crate is forced.
pub fn client_path(want: &str) -> String {
    if h2_forced() {
        "h2 (VOLLEY_BENCH_CLIENT=h2)".to_owned()
    } else {
        want.to_owned()
    }
}
