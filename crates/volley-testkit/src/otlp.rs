//! A minimal OTLP/HTTP collector for tests: accepts `POST /v1/traces` bodies on a loopback port
//! and keeps them (still encoded: the test decodes them with `opentelemetry-proto`, the
//! OpenTelemetry project's own types). Plain HTTP/1.1, one request per connection.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{SocketAddr, TcpListener},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

/// The collector: its address and the bodies received so far.
pub struct OtlpReceiver {
    addr: SocketAddr,
    bodies: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl OtlpReceiver {
    /// Listens on a free loopback port, on a thread of its own, for the life of the test.
    pub fn start() -> OtlpReceiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let addr = listener.local_addr().expect("local address");
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let keep = bodies.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let keep = keep.clone();
                std::thread::spawn(move || {
                    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
                    let mut reader = BufReader::new(&conn);
                    loop {
                        let mut len = 0usize;
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        loop {
                            line.clear();
                            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                                return;
                            }
                            let l = line.trim_end();
                            if l.is_empty() {
                                break;
                            }
                            if let Some((k, v)) = l.split_once(':')
                                && k.eq_ignore_ascii_case("content-length")
                            {
                                len = v.trim().parse().unwrap_or(0);
                            }
                        }
                        let mut body = vec![0; len];
                        if reader.read_exact(&mut body).is_err() {
                            return;
                        }
                        keep.lock().unwrap().push(body);
                        let _ = (&conn).write_all(
                            b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n",
                        );
                    }
                });
            }
        });
        OtlpReceiver { addr, bodies }
    }

    /// The collector's base URL (`http://127.0.0.1:PORT`).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Waits (up to `limit`) until `done` holds for the bodies received, and returns them.
    pub fn wait_for(&self, limit: Duration, done: impl Fn(&[Vec<u8>]) -> bool) -> Vec<Vec<u8>> {
        let start = Instant::now();
        loop {
            let bodies = self.bodies.lock().unwrap().clone();
            if done(&bodies) || start.elapsed() > limit {
                return bodies;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
