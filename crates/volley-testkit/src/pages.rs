//! A static file server on a loopback port, for the browser tests: it serves a web page from one
//! origin while `volley serve` answers on another.

use std::{
    io::{BufRead, BufReader, Write},
    net::{SocketAddr, TcpListener, TcpStream},
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    thread,
};

/// Files under a directory, served over HTTP/1.1 (`GET` only, one request per connection) until
/// dropped.
pub struct StaticFiles {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl StaticFiles {
    /// Serves `root` on a free port of 127.0.0.1.
    pub fn serve(root: impl Into<PathBuf>) -> StaticFiles {
        let root = root.into();
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let addr = listener.local_addr().expect("the listener's address");
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        thread::spawn(move || {
            for conn in listener.incoming() {
                if stopped.load(Ordering::Relaxed) {
                    break;
                }
                if let Ok(conn) = conn {
                    let root = root.clone();
                    thread::spawn(move || answer(&root, conn));
                }
            }
        });
        StaticFiles { addr, stop }
    }

    /// The port the files are served on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }
}

impl Drop for StaticFiles {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the accept loop so that it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

/// Answers one request: the file at its path (query string ignored), or 404.
fn answer(root: &Path, mut conn: TcpStream) {
    let mut line = String::new();
    let mut reader = BufReader::new(match conn.try_clone() {
        Ok(c) => c,
        Err(_) => return,
    });
    if reader.read_line(&mut line).is_err() {
        return;
    }
    // The rest of the head: read and ignored.
    let mut header = String::new();
    while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
        header.clear();
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/");
    let path = path
        .split('?')
        .next()
        .unwrap_or("/")
        .trim_start_matches('/');
    let file = (!path.split('/').any(|p| p == "..")).then(|| root.join(path));
    let (status, kind, body) = match file.and_then(|f| std::fs::read(&f).ok().map(|b| (f, b))) {
        Some((f, body)) => ("200 OK", content_type(&f), body),
        None => ("404 Not Found", "text/plain", b"not found\n".to_vec()),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.write_all(&body);
}

fn content_type(file: &Path) -> &'static str {
    match file.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        _ => "application/octet-stream",
    }
}
