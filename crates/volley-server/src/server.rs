//! [`Server`]: the accept loop (`serve(listener, shutdown)` on TCP, `serve_unix` on a Unix
//! socket, `serve_incoming` on a caller's byte streams; one task per connection, backoff on
//! accept errors) and the graceful drain.

use std::{future::Future, sync::Arc, time::Duration};

use futures_util::Stream;
use tokio::{
    io::{AsyncRead, AsyncWrite},
    net::{TcpListener, UnixListener},
    sync::watch,
};
use tracing::{debug, warn};

#[cfg(feature = "health")]
use crate::health::HealthReporter;
use crate::{
    ServeError,
    accept::{Logs, is_per_connection},
    conn::{
        ConnContext,
        socket::{Accept, Incoming},
    },
};

/// A built server, ready to [`serve`](Server::serve) listeners.
pub struct Server {
    pub(crate) conn: Arc<ConnContext>,
    grace: Duration,
    #[cfg(feature = "health")]
    health: HealthReporter,
}

/// Connection counts, as the server sees them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnectionCounts {
    /// Connections accepted since the server was built.
    pub accepted: u64,
    /// Connections open now.
    pub open: usize,
    /// Connections refused over the cap ([`ServerBuilder::max_connections`]).
    ///
    /// [`ServerBuilder::max_connections`]: crate::ServerBuilder::max_connections
    pub refused: u64,
}

impl Server {
    pub(crate) fn new(
        conn: ConnContext,
        grace: Duration,
        #[cfg(feature = "health")] health: HealthReporter,
    ) -> Server {
        Server {
            conn: Arc::new(conn),
            grace,
            #[cfg(feature = "health")]
            health,
        }
    }

    /// The health reporter; set statuses while serving. Needs the `health` feature.
    #[cfg(feature = "health")]
    #[cfg_attr(docsrs, doc(cfg(feature = "health")))]
    pub fn health(&self) -> &HealthReporter {
        &self.health
    }

    /// True when the server speaks TLS.
    pub fn is_tls(&self) -> bool {
        self.conn.is_tls()
    }

    /// How many connections it has accepted, and how many are open.
    pub fn connections(&self) -> ConnectionCounts {
        let (accepted, open, refused) = self.conn.counts();
        ConnectionCounts {
            accepted,
            open,
            refused,
        }
    }

    /// Accepts connections on `listener` until `shutdown` completes, then drains: stops accepting,
    /// marks health NOT_SERVING, sends GOAWAY, and waits up to the grace period for in-flight calls.
    pub async fn serve(
        &self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), ServeError> {
        self.serve_on(listener, shutdown).await
    }

    /// As [`serve`](Self::serve), on a Unix socket (sidecars and local daemons). Calls see no
    /// peer address ([`Peer::addr`](crate::intercept::Peer::addr) is `None`). The socket file
    /// is the caller's to make and remove.
    pub async fn serve_unix(
        &self,
        listener: UnixListener,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), ServeError> {
        self.serve_on(listener, shutdown).await
    }

    /// As [`serve`](Self::serve), on byte streams the caller hands in (each one a connection,
    /// e.g. one end of `tokio::io::duplex` for a test with no socket at all), until `incoming`
    /// ends or `shutdown` completes.
    pub async fn serve_incoming<S>(
        &self,
        incoming: impl Stream<Item = S> + Unpin + Send,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), ServeError>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        self.serve_on(Incoming(incoming), shutdown).await
    }

    async fn serve_on<A: Accept>(
        &self,
        mut listener: A,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), ServeError> {
        // Every connection task holds a receiver: true means drain; all dropped means drained.
        let (drain, _) = watch::channel(false);
        let mut shutdown = std::pin::pin!(shutdown);
        let mut logs = Logs::default();
        loop {
            let accepted = tokio::select! {
                biased;
                () = &mut shutdown => break,
                r = listener.accept() => r,
            };
            let Some(accepted) = accepted else { break };
            match accepted {
                Ok((stream, peer)) => {
                    let ctx = self.conn.clone();
                    if let Some(max) = ctx.over_cap() {
                        logs.note("cap", || {
                            format!("refused connections over --max-connections {max}")
                        });
                        tokio::spawn(ctx.refuse(stream));
                        continue;
                    }
                    tokio::spawn(ctx.serve_connection(stream, peer, drain.subscribe()));
                }
                Err(e) if is_per_connection(&e) => debug!("accept: {e}"),
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    logs.note("accept", || {
                        format!("accept failed: {e}; retrying every 100 ms")
                    });
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
        drop(listener);
        #[cfg(feature = "health")]
        self.health.shutdown();
        let _ = drain.send(true);
        let open = drain.receiver_count();
        debug!(
            "draining {open} connection(s), grace period {:?}",
            self.grace
        );
        tokio::select! {
            () = drain.closed() => debug!("drained"),
            () = tokio::time::sleep(self.grace) => warn!("grace period over; closing the remaining connections"),
        }
        Ok(())
    }
}
