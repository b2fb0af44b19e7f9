//! The multi-threaded runtime of the harness commands that serve or call from many tasks
//! (`lab gateway`, `lab orders`).

use anyhow::Result;

/// A multi-threaded runtime with `threads` workers (default: one per core), and that count.
pub(crate) fn runtime(threads: Option<usize>) -> Result<(tokio::runtime::Runtime, usize)> {
    let threads = threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()?;
    Ok((rt, threads))
}
