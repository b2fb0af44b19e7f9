//! The one place the binary handles SIGINT and SIGTERM: `serve` drains on them, `bench` ends
//! its run (the report is still written), the harness commands of `volley lab` stop and clean up.

use std::{future::Future, pin::Pin};

/// Waits for the next SIGINT or SIGTERM and names it; never ends where signals cannot be
/// watched. The shape of [`volley_lab::Signals`].
pub fn next() -> Pin<Box<dyn Future<Output = &'static str> + Send>> {
    Box::pin(async {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        }
    })
}

/// Calls `then` with the signal's name on the first SIGINT or SIGTERM, from a thread of its own
/// (for code that runs outside a runtime, such as the bench engine's threads).
pub fn on_first(then: impl FnOnce(&'static str) + Send + 'static) {
    std::thread::spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        let which = rt.block_on(next());
        then(which);
    });
}
