//! Where `volley bench`'s ticks go while a run goes: `--live` (one JSON line per interval),
//! `--prometheus-listen` (volley_bench's [`Exposition`], served on `/metrics` and kept up
//! `--linger` after the run), `--dashboard` (volley_ui's [`Board`]) and `--tui` (`tui`). One
//! thread takes the engine's ticks and hands each to every sink asked for.

use std::{
    io::Write,
    net::SocketAddr,
    path::Path,
    sync::{
        Arc, Mutex,
        mpsc::{Receiver, RecvTimeoutError},
    },
    thread::JoinHandle,
    time::Duration,
};

use anyhow::{Context, Result};
use volley_bench::{
    Control,
    live::{Exposition, Tick},
};

use volley_ui::dashboard::Board;

use super::tui::Tui;

/// The sinks of one run.
pub(super) struct Sinks {
    /// `--live`.
    pub ndjson: Option<Box<dyn Write + Send>>,
    /// `--prometheus-listen`.
    pub exposition: Option<Arc<Mutex<Exposition>>>,
    /// `--dashboard`, `--dashboard-export`.
    pub board: Option<Arc<Board>>,
    /// `--tui`.
    pub tui: Option<Tui>,
}

impl Sinks {
    /// `--live FILE|-`: where the lines go.
    pub(super) fn ndjson_to(path: &Path) -> Result<Box<dyn Write + Send>> {
        Ok(if path == Path::new("-") {
            Box::new(std::io::stdout())
        } else {
            Box::new(std::io::BufWriter::new(
                std::fs::File::create(path)
                    .with_context(|| format!("cannot write --live {}", path.display()))?,
            ))
        })
    }

    /// Takes ticks until the last one, on a thread of its own.
    pub(super) fn spawn(
        mut self,
        rx: Receiver<Tick>,
        control: Arc<Control>,
    ) -> JoinHandle<Result<()>> {
        std::thread::spawn(move || {
            let result = self.run(&rx, &control);
            if let Some(tui) = self.tui.take() {
                tui.close();
            }
            result
        })
    }

    fn run(&mut self, rx: &Receiver<Tick>, control: &Control) -> Result<()> {
        loop {
            let tick = match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(t) => t,
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(tui) = &mut self.tui
                        && tui.quit_asked()?
                    {
                        control.cancel();
                    }
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => return Ok(()),
            };
            if let Some(w) = &mut self.ndjson {
                serde_json::to_writer(&mut *w, &tick)?;
                w.write_all(b"\n")?;
                w.flush()?;
            }
            if let Some(e) = &self.exposition {
                e.lock().unwrap().add(&tick);
            }
            if let Some(b) = &self.board {
                b.push(serde_json::to_string(&tick)?, tick.last);
            }
            if let Some(tui) = &mut self.tui {
                tui.draw(&tick)?;
            }
            if tick.last {
                return Ok(());
            }
        }
    }
}

/// Serves `/metrics` from `exposition` on `addr` until the process ends, on volley-server's
/// side server; returns the address bound (port 0 picks one).
pub(super) fn serve(addr: &str, exposition: Arc<Mutex<Exposition>>) -> Result<SocketAddr> {
    let addr: SocketAddr = addr
        .parse()
        .with_context(|| format!("--prometheus-listen {addr:?}: expected host:port"))?;
    let listener = std::net::TcpListener::bind(addr)
        .with_context(|| format!("--prometheus-listen {addr}: cannot listen"))?;
    let bound = volley_server::side::SideServer::new("volley-metrics")
        .max_body(0)
        .spawn(listener, move |req| {
            let (status, body) = if req.uri().path() == "/metrics" {
                (http::StatusCode::OK, exposition.lock().unwrap().render())
            } else {
                (
                    http::StatusCode::NOT_FOUND,
                    "volley bench serves /metrics\n".to_owned(),
                )
            };
            let mut reply = http::Response::new(bytes::Bytes::from(body));
            *reply.status_mut() = status;
            reply.headers_mut().insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("text/plain; version=0.0.4"),
            );
            std::future::ready(reply)
        })?;
    if !bound.ip().is_loopback() {
        tracing::warn!(
            "--prometheus-listen {bound}: other hosts can read this run's figures (it takes no \
             token); a loopback address keeps them on this host"
        );
    }
    Ok(bound)
}
