//! A hostile HTTP/2 peer for attack tests: frames written by hand on a blocking socket (any
//! bytes, in any order, at any pace), the server's frames read back whole (GOAWAY and RST_STREAM
//! codes, SETTINGS and PING acknowledgements), a minimal HPACK writer, and the server process's
//! CPU time and peak memory from /proc.

use std::{
    io::{self, Read, Write},
    net::{SocketAddr, TcpStream},
    time::{Duration, Instant},
};

use volley_wire::h2::{FRAME_HEADER_LEN, Head, PREFACE, flag, kind};

/// One frame the server sent.
#[derive(Clone, Debug)]
pub struct Frame {
    /// Its header.
    pub head: Head,
    /// Its payload.
    pub payload: Vec<u8>,
}

/// A GOAWAY frame's fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GoAway {
    /// The last stream the server processed.
    pub last_stream: u32,
    /// The error code (`volley_wire::h2::reason`).
    pub code: u32,
    /// The debug data, as text.
    pub debug: String,
}

/// What the server sent until it closed the connection or went quiet.
#[derive(Debug, Default)]
pub struct Ending {
    /// The first GOAWAY it sent, if any.
    pub goaway: Option<GoAway>,
    /// RST_STREAM frames: (stream, error code).
    pub resets: Vec<(u32, u32)>,
    /// Streams it answered with a HEADERS frame.
    pub answered: Vec<u32>,
    /// SETTINGS acknowledgements.
    pub settings_acks: usize,
    /// PING acknowledgements.
    pub ping_acks: usize,
    /// True when it closed the connection (EOF or reset); false when it went quiet.
    pub closed: bool,
}

/// A blocking HTTP/2 client that writes whatever it is told to.
pub struct HostilePeer {
    s: TcpStream,
    rbuf: Vec<u8>,
}

impl HostilePeer {
    /// Connects and sends the preface and a SETTINGS frame with `settings`; reads nothing.
    pub fn connect(addr: SocketAddr, settings: &[(u16, u32)]) -> io::Result<HostilePeer> {
        let s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
        s.set_nodelay(true)?;
        s.set_write_timeout(Some(Duration::from_secs(5)))?;
        let mut p = HostilePeer {
            s,
            rbuf: Vec::new(),
        };
        p.write(PREFACE)?;
        let mut payload = Vec::new();
        for (id, v) in settings {
            payload.extend_from_slice(&id.to_be_bytes());
            payload.extend_from_slice(&v.to_be_bytes());
        }
        p.frame(kind::SETTINGS, 0, 0, &payload)?;
        Ok(p)
    }

    /// [`connect`](Self::connect), then waits for the server's SETTINGS (and acknowledges them)
    /// and for its connection WINDOW_UPDATE (volley's server opens the connection window
    /// beyond 65,535 at once; until the update arrives a client may not send more): a
    /// connection as a well-behaved client starts it.
    pub fn handshake(addr: SocketAddr, settings: &[(u16, u32)]) -> io::Result<HostilePeer> {
        let mut p = HostilePeer::connect(addr, settings)?;
        let deadline = Instant::now() + Duration::from_secs(5);
        let (mut settings_seen, mut window_seen) = (false, false);
        while !(settings_seen && window_seen) {
            let left = deadline.saturating_duration_since(Instant::now());
            match p.read_frame(left)? {
                Some(f) if f.head.kind == kind::SETTINGS && f.head.flags & flag::ACK == 0 => {
                    p.frame(kind::SETTINGS, flag::ACK, 0, &[])?;
                    settings_seen = true;
                }
                Some(f) if f.head.kind == kind::WINDOW_UPDATE && f.head.stream == 0 => {
                    window_seen = true;
                }
                Some(_) => {}
                None => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "no SETTINGS or WINDOW_UPDATE",
                    ));
                }
            }
        }
        Ok(p)
    }

    /// Sends a PING and reads until its ACK: true when it came within `limit`, before any
    /// GOAWAY or close.
    pub fn ping(&mut self, limit: Duration) -> bool {
        if self.frame(kind::PING, 0, 0, b"alive?!!").is_err() {
            return false;
        }
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.read_frame(left) {
                Ok(Some(f)) if f.head.kind == kind::PING && f.head.flags & flag::ACK != 0 => {
                    return true;
                }
                Ok(Some(f)) if f.head.kind == kind::GOAWAY => return false,
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => return false,
            }
        }
    }

    /// The socket (to dribble bytes, set options, or shut it down).
    pub fn socket(&self) -> &TcpStream {
        &self.s
    }

    /// Writes raw bytes.
    pub fn write(&mut self, b: &[u8]) -> io::Result<()> {
        self.s.write_all(b)
    }

    /// Writes one frame.
    pub fn frame(&mut self, kind: u8, flags: u8, stream: u32, payload: &[u8]) -> io::Result<()> {
        let mut out = Vec::with_capacity(FRAME_HEADER_LEN + payload.len());
        volley_wire::h2::write(&mut out, kind, flags, stream, payload);
        self.s.write_all(&out)
    }

    /// The next frame within `limit`: `Ok(None)` when none came, an error when the connection
    /// ended (`UnexpectedEof` for a clean close).
    pub fn read_frame(&mut self, limit: Duration) -> io::Result<Option<Frame>> {
        let deadline = Instant::now() + limit;
        loop {
            if self.rbuf.len() >= FRAME_HEADER_LEN {
                let head = Head::read(&self.rbuf);
                if self.rbuf.len() >= FRAME_HEADER_LEN + head.len {
                    let payload = self.rbuf[FRAME_HEADER_LEN..FRAME_HEADER_LEN + head.len].to_vec();
                    self.rbuf.drain(..FRAME_HEADER_LEN + head.len);
                    return Ok(Some(Frame { head, payload }));
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            self.s.set_read_timeout(Some(left))?;
            let mut chunk = [0u8; 16 * 1024];
            match self.s.read(&mut chunk) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => self.rbuf.extend_from_slice(&chunk[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Ok(None);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Reads what the server sends until it closes the connection, or sends nothing for
    /// `quiet`, or `limit` passes; answers nothing.
    pub fn drain(&mut self, quiet: Duration, limit: Duration) -> Ending {
        let mut end = Ending::default();
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return end;
            }
            match self.read_frame(quiet.min(left)) {
                Ok(Some(f)) => end.note(&f),
                Ok(None) => return end,
                Err(_) => {
                    end.closed = true;
                    return end;
                }
            }
        }
    }
}

impl Ending {
    /// Takes note of one frame.
    pub fn note(&mut self, f: &Frame) {
        let p = &f.payload;
        match f.head.kind {
            kind::GOAWAY if p.len() >= 8 && self.goaway.is_none() => {
                self.goaway = Some(GoAway {
                    last_stream: u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff,
                    code: u32::from_be_bytes([p[4], p[5], p[6], p[7]]),
                    debug: String::from_utf8_lossy(&p[8..]).into_owned(),
                });
            }
            kind::RST_STREAM if p.len() == 4 => self
                .resets
                .push((f.head.stream, u32::from_be_bytes([p[0], p[1], p[2], p[3]]))),
            kind::HEADERS => self.answered.push(f.head.stream),
            kind::SETTINGS if f.head.flags & flag::ACK != 0 => self.settings_acks += 1,
            kind::PING if f.head.flags & flag::ACK != 0 => self.ping_acks += 1,
            _ => {}
        }
    }

    /// The GOAWAY's code, if one came.
    pub fn goaway_code(&self) -> Option<u32> {
        self.goaway.as_ref().map(|g| g.code)
    }
}

/// HPACK, written by hand (RFC 7541): integers, raw (not Huffman) strings, indexed fields and
/// literals. Enough to build any header block, including ones no encoder would make.
pub mod hpack {
    /// Appends an integer with an `n`-bit prefix, the first byte's other bits set to `flags`.
    pub fn int(out: &mut Vec<u8>, n: u8, flags: u8, mut v: usize) {
        let max = (1usize << n) - 1;
        if v < max {
            out.push(flags | v as u8);
            return;
        }
        out.push(flags | max as u8);
        v -= max;
        while v >= 128 {
            out.push((v % 128) as u8 | 0x80);
            v /= 128;
        }
        out.push(v as u8);
    }

    /// Appends a string literal, not Huffman-coded.
    pub fn string(out: &mut Vec<u8>, s: &[u8]) {
        int(out, 7, 0, s.len());
        out.extend_from_slice(s);
    }

    /// An indexed field (static table 1-61, dynamic table from 62).
    pub fn indexed(out: &mut Vec<u8>, index: usize) {
        int(out, 7, 0x80, index);
    }

    /// A literal without indexing whose name is table entry `name`.
    pub fn literal_indexed_name(out: &mut Vec<u8>, name: usize, value: &[u8]) {
        int(out, 4, 0, name);
        string(out, value);
    }

    /// A literal without indexing with a new name.
    pub fn literal(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
        out.push(0);
        string(out, name);
        string(out, value);
    }

    /// A literal with incremental indexing and a new name: it enters the dynamic table (as
    /// entry 62, pushing older ones down).
    pub fn literal_indexed(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
        out.push(0x40);
        string(out, name);
        string(out, value);
    }

    /// A gRPC request's header block for `path`: POST, http, `:authority` localhost,
    /// `content-type: application/grpc`, `te: trailers`.
    pub fn request(path: &str) -> Vec<u8> {
        let mut b = Vec::new();
        indexed(&mut b, 3); // :method POST
        indexed(&mut b, 6); // :scheme http
        literal_indexed_name(&mut b, 4, path.as_bytes()); // :path
        literal_indexed_name(&mut b, 1, b"localhost"); // :authority
        literal_indexed_name(&mut b, 31, b"application/grpc"); // content-type
        literal(&mut b, b"te", b"trailers");
        b
    }
}

/// CPU time (user + system) a process has used, from /proc/PID/stat, in seconds (at Linux's
/// fixed 100 ticks per second for /proc).
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("the process is alive");
    // The fields after the command name (which may hold spaces) in parentheses.
    let rest = &stat[stat.rfind(')').expect("(comm)") + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    ticks as f64 / 100.0
}

/// The peak resident memory of a process so far (VmHWM), in KiB.
pub fn peak_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .expect("the process is alive")
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmHWM in /proc/PID/status")
}

#[cfg(test)]
mod tests {
    use super::hpack;

    #[test]
    fn integers_follow_rfc_7541_c_1() {
        let mut b = Vec::new();
        hpack::int(&mut b, 5, 0, 10);
        assert_eq!(b, [10]);
        b.clear();
        hpack::int(&mut b, 5, 0, 1337);
        assert_eq!(b, [31, 154, 10]);
        b.clear();
        hpack::int(&mut b, 4, 0, 31);
        assert_eq!(b, [0x0f, 0x10]);
    }
}
