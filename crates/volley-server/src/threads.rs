//! Thread per core: one [`Server`] on several single-threaded runtimes, each accepting on its own
//! handle of every listener (the kernel hands each connection to one of them), stopped and
//! drained together. `volley serve` and `volley mock` serve this way.
//!
//! Single-threaded runtimes rather than tokio's multi-threaded one: a connection's tasks never
//! move between threads, so nothing on the call path is shared or stolen. That is how the
//! server's figures in BENCHMARKS.md were measured.

use std::{future::Future, io, sync::Arc, thread};

use tokio::sync::watch;

use crate::{ServeError, listen::Bound, server::Server};

impl Server {
    /// Serves `listeners` on `threads` threads (at least one; the calling thread is the first,
    /// the others are named `{name}-1`, `{name}-2`, ...), each a single-threaded tokio runtime
    /// running [`serve`](Self::serve) (or [`serve_unix`](Self::serve_unix)) on its own handle of
    /// every listener, until `shutdown` completes. Then every thread drains as `serve` does, and
    /// this returns once all have. A listener that fails on any thread stops them all.
    pub fn serve_on_threads(
        self: &Arc<Self>,
        listeners: Vec<Bound>,
        threads: usize,
        name: &str,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), ServeError> {
        let (stop_tx, stop_rx) = watch::channel(false);
        let stop_tx = Arc::new(stop_tx);
        let mut workers = Vec::new();
        for i in 1..threads.max(1) {
            let (server, rx, tx) = (self.clone(), stop_rx.clone(), stop_tx.clone());
            let mine = listeners
                .iter()
                .map(Bound::try_clone)
                .collect::<io::Result<Vec<_>>>()?;
            let worker = move || {
                let r = runtime().and_then(|rt| rt.block_on(server.serve_all(mine, rx)));
                if r.is_err() {
                    let _ = tx.send(true);
                }
                r
            };
            workers.push(
                thread::Builder::new()
                    .name(format!("{name}-{i}"))
                    .spawn(worker)?,
            );
        }
        let here = runtime()?.block_on(async {
            let serving = self.serve_all(listeners, stop_rx);
            tokio::pin!(serving);
            tokio::select! {
                r = &mut serving => r,
                () = shutdown => {
                    let _ = stop_tx.send(true);
                    serving.await
                }
            }
        });
        // This thread's listener may have failed on its own: the others stop too.
        let _ = stop_tx.send(true);
        let mut result = here;
        for w in workers {
            let r = w
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("a server thread panicked").into()));
            result = result.and(r);
        }
        result
    }

    /// Serves every listener on this thread's runtime until `stop` turns true.
    async fn serve_all(
        &self,
        listeners: Vec<Bound>,
        stop: watch::Receiver<bool>,
    ) -> Result<(), ServeError> {
        let mut running: Vec<futures_util::future::BoxFuture<'_, _>> = Vec::new();
        for l in listeners {
            let mut stop = stop.clone();
            let stopped = async move {
                let _ = stop.wait_for(|s| *s).await;
            };
            running.push(match l {
                Bound::Tcp(l) => {
                    Box::pin(self.serve(tokio::net::TcpListener::from_std(l)?, stopped))
                }
                Bound::Unix(l) => {
                    Box::pin(self.serve_unix(tokio::net::UnixListener::from_std(l)?, stopped))
                }
            });
        }
        futures_util::future::try_join_all(running).await?;
        Ok(())
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, ServeError> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

#[cfg(test)]
mod tests {
    use std::{io::Read as _, net::TcpStream, sync::mpsc, time::Duration};

    use super::*;

    /// Three threads on one listener answer every connection; `shutdown` stops and drains them
    /// all, returns, and the listener is closed (a hang fails at the 5 s wait).
    #[test]
    fn every_thread_accepts_and_all_stop_together() {
        let server = Arc::new(
            Server::builder()
                .grace_period(Duration::from_millis(200))
                .build()
                .unwrap(),
        );
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (done_tx, done_rx) = mpsc::channel();
        let s = server.clone();
        std::thread::spawn(move || {
            let stopped = async {
                let _ = stop_rx.await;
            };
            let _ = done_tx.send(s.serve_on_threads(vec![Bound::Tcp(listener)], 3, "t", stopped));
        });
        // An HTTP/1.1 request for a path nobody serves: each connection gets an answer.
        for _ in 0..12 {
            let mut c = TcpStream::connect(addr).unwrap();
            c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            std::io::Write::write_all(
                &mut c,
                b"GET /nothing HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
            )
            .unwrap();
            let mut reply = String::new();
            c.read_to_string(&mut reply).unwrap();
            assert!(reply.starts_with("HTTP/1.1 "), "{reply:?}");
        }
        assert_eq!(server.connections().accepted, 12);
        stop_tx.send(()).unwrap();
        let r = done_rx
            .recv_timeout(Duration::from_secs(5))
            .expect("all threads stopped");
        assert!(r.is_ok(), "{r:?}");
        assert!(
            TcpStream::connect(addr).is_err(),
            "the listener is closed once served"
        );
    }
}
