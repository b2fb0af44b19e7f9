//! The one place the binary handles signals: on SIGINT and SIGTERM `serve` drains, `bench` ends
//! its run (the report is still written), the harness commands of `volley lab` stop and clean
//! up; on SIGHUP `serve` and `gateway` reread their TLS files, and `gateway` its descriptors.

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

/// Calls `then` on every SIGHUP, from a thread of its own, for as long as the process runs. The
/// handler is in place when this returns (SIGHUP's default would end the process).
pub fn on_each_hangup(mut then: impl FnMut() + Send + 'static) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    let Ok(mut hup) = ({
        let _in = rt.enter();
        signal(SignalKind::hangup())
    }) else {
        return;
    };
    std::thread::spawn(move || {
        rt.block_on(async {
            while hup.recv().await.is_some() {
                then();
            }
        });
    });
}
