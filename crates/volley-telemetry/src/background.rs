//! The exporters' own small tokio runtime: the SDK's batch processor exports from a plain thread
//! of its own, and volley's client needs a runtime to dial and drive its connections. Work is
//! handed over and its result comes back on a oneshot channel, which any executor can await.

use std::future::Future;

/// One worker thread, kept for the exporter's life.
#[derive(Debug)]
pub(crate) struct Background {
    rt: Option<tokio::runtime::Runtime>,
}

impl Background {
    /// Starts the runtime.
    pub(crate) fn new() -> std::io::Result<Background> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("volley-otlp")
            .enable_all()
            .build()?;
        Ok(Background { rt: Some(rt) })
    }

    /// Runs `fut` on the runtime; `None` when the runtime has stopped.
    pub(crate) async fn run<F, T>(&self, fut: F) -> Option<T>
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.rt.as_ref()?.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.await.ok()
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        // Dropped from any thread, an async context's included: never block there.
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}
