//! `volley bench` and the client library against a hostile HTTP/2 server written here, frame by
//! frame: frames announced over the client's SETTINGS_MAX_FRAME_SIZE, a header block of endless
//! CONTINUATION frames, a GOAWAY on every connection, reply streams that never end, header blocks
//! that are not HPACK, trailers that never come, a server that never speaks, and one that floods
//! PINGs and never reads the acknowledgements. Each case runs on
//! the fast path, on the h2-crate path (`VOLLEY_BENCH_CLIENT=h2`) and through the library, and
//! checks that the run ends within its deadline (the bench process is killed past a hard limit),
//! that every call asked is counted under the right status, that memory stays bounded (the
//! process's peak RSS, VmHWM), and that nothing panics.

use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpListener, TcpStream},
    process::Stdio,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
        mpsc,
    },
    thread::JoinHandle,
    time::{Duration, Instant},
};

use bytes::Bytes;
use serde_json::Value;
use volley_client::{
    CallHead, Channel, Endpoint, Strategy,
    load::fast::{FastConnection, frame::HeaderBlock},
};
use volley_testkit::{Volley, volley, workspace_file};
use volley_wire::{
    Code,
    h2::{FRAME_HEADER_LEN, Head, PREFACE, flag, kind, reason, write},
};

const VOLLEY: Volley = volley!();

/// A bench process's peak resident memory may not pass this (a healthy run stays near 20 MiB;
/// a client that keeps what a hostile server sends reaches hundreds).
const MAX_PEAK_KIB: u64 = 96 * 1024;

/// What a flooding server sends on one connection at most, so that a client that keeps it all
/// shows it in its memory without taking the machine's.
const FLOOD_CAP: usize = 256 << 20;

/// How the server misbehaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// A reply's DATA frame announcing 16 MiB - 1 bytes, over the 16 KiB the client allows.
    Oversized,
    /// A reply's HEADERS without END_HEADERS, then CONTINUATION frames without end.
    EndlessContinuation,
    /// SETTINGS then GOAWAY(NO_ERROR, last stream 0) on every connection.
    GoawayLoop,
    /// SETTINGS, then GOAWAY(NO_ERROR, last stream 0) on every connection's first call.
    GoawayOnCall,
    /// Reply headers and a message, then a small DATA frame every 20 ms, never END_STREAM.
    NeverEnds,
    /// A reply header block that is not HPACK.
    BadHpack,
    /// Reply headers and a whole gRPC message, then silence.
    NoTrailers,
    /// Accepts, reads, never writes a byte.
    Silent,
    /// SETTINGS, answers until the first call, then PINGs without end (up to [`FLOOD_CAP`]
    /// bytes), reading nothing more: the client's PING ACKs pile up on its side.
    PingFlood,
}

/// What the reader half of a server connection saw.
enum Event {
    Settings,
    Ping([u8; 8]),
    Headers(u32),
    Reset(u32),
}

/// The hostile server: a listener on port 0 and a thread per connection; stopped on drop.
struct Hostile {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accepted: Arc<AtomicUsize>,
    streams: Arc<AtomicUsize>,
    acceptor: Option<JoinHandle<()>>,
}

impl Hostile {
    fn start(mode: Mode) -> Hostile {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(AtomicUsize::new(0));
        let streams = Arc::new(AtomicUsize::new(0));
        let (s, a, n) = (stop.clone(), accepted.clone(), streams.clone());
        let acceptor = std::thread::spawn(move || {
            for tcp in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(tcp) = tcp else { continue };
                a.fetch_add(1, Ordering::SeqCst);
                let (s, n) = (s.clone(), n.clone());
                std::thread::spawn(move || serve(tcp, mode, &s, &n));
            }
        });
        Hostile {
            addr,
            stop,
            accepted,
            streams,
            acceptor: Some(acceptor),
        }
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so that it sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
    }
}

fn frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    write(out, kind, flags, stream, payload);
}

/// `:status 200` (static index 8) and `content-type: application/grpc` (a literal without
/// indexing, new name), by hand.
fn ok_headers() -> Vec<u8> {
    let mut b = vec![0x88, 0x00, 12];
    b.extend_from_slice(b"content-type");
    b.push(16);
    b.extend_from_slice(b"application/grpc");
    b
}

/// GOAWAY's payload: last stream 0 (no call was seen), NO_ERROR.
fn goaway() -> Vec<u8> {
    let mut p = 0u32.to_be_bytes().to_vec();
    p.extend_from_slice(&reason::NO_ERROR.to_be_bytes());
    p
}

/// An empty gRPC message: not compressed, length 0.
const EMPTY_MESSAGE: [u8; 5] = [0, 0, 0, 0, 0];

/// Reads the client's preface and frames, and tells the writer what matters; under
/// `PingFlood`, stops reading at the first call.
fn read_client(mut tcp: TcpStream, mode: Mode, events: &mpsc::Sender<Event>) {
    let mut preface = [0u8; 24];
    if tcp.read_exact(&mut preface).is_err() || &preface != PREFACE {
        return;
    }
    let mut head = [0u8; FRAME_HEADER_LEN];
    let mut payload = Vec::new();
    loop {
        if tcp.read_exact(&mut head).is_err() {
            return;
        }
        let h = Head::read(&head);
        payload.resize(h.len, 0);
        if tcp.read_exact(&mut payload).is_err() {
            return;
        }
        let event = match h.kind {
            kind::SETTINGS if h.flags & flag::ACK == 0 => Event::Settings,
            kind::PING if h.flags & flag::ACK == 0 && h.len == 8 => {
                Event::Ping(payload[..8].try_into().unwrap())
            }
            kind::HEADERS => Event::Headers(h.stream),
            kind::RST_STREAM => Event::Reset(h.stream),
            _ => continue,
        };
        let last = mode == Mode::PingFlood && matches!(event, Event::Headers(_));
        if events.send(event).is_err() || last {
            return;
        }
    }
}

/// One connection: the reader on its own thread, the writer misbehaving here.
fn serve(tcp: TcpStream, mode: Mode, stop: &AtomicBool, streams: &AtomicUsize) {
    let (tx, rx) = mpsc::channel();
    let reader = tcp.try_clone().unwrap();
    std::thread::spawn(move || read_client(reader, mode, &tx));
    let mut tcp = tcp;
    let mut out = Vec::new();
    if mode != Mode::Silent {
        frame(&mut out, kind::SETTINGS, 0, 0, &[]);
    }
    if mode == Mode::GoawayLoop {
        frame(&mut out, kind::GOAWAY, 0, 0, &goaway());
    }
    let born = Instant::now();
    // Streams whose reply never ends (`NeverEnds`), and CONTINUATION bytes sent so far.
    let mut endless: Vec<u32> = Vec::new();
    let mut flooding: Option<u32> = None;
    let mut flooded = 0usize;
    // `PingFlood`: PINGs sent once the first call came (the reader has stopped then).
    let mut pings: Option<u64> = None;
    let mut tick = Instant::now();
    loop {
        if !out.is_empty() {
            if tcp.write_all(&out).is_err() {
                return;
            }
            out.clear();
        }
        if stop.load(Ordering::SeqCst) || born.elapsed() > Duration::from_secs(30) {
            return;
        }
        // A GOAWAY connection is let go after a second, whatever the client does.
        if matches!(mode, Mode::GoawayLoop | Mode::GoawayOnCall)
            && born.elapsed() > Duration::from_secs(1)
        {
            return;
        }
        if let Some(sent) = &mut pings {
            // 64 KiB of PINGs at a time, each with its own payload; once the cap is reached,
            // silence until the client goes (the write fails) or the server stops.
            if flooded < FLOOD_CAP {
                for _ in 0..(64 << 10) / (FRAME_HEADER_LEN + 8) {
                    *sent += 1;
                    frame(&mut out, kind::PING, 0, 0, &sent.to_be_bytes());
                }
                flooded += out.len();
            } else {
                std::thread::sleep(Duration::from_millis(5));
            }
            continue;
        }
        let wait = if flooding.is_some() && flooded < FLOOD_CAP {
            Duration::ZERO
        } else {
            Duration::from_millis(5)
        };
        let event = match rx.recv_timeout(wait) {
            Ok(e) => Some(e),
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            // The client closed the connection.
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        };
        match event {
            Some(Event::Settings) if mode != Mode::Silent => {
                frame(&mut out, kind::SETTINGS, flag::ACK, 0, &[]);
            }
            Some(Event::Ping(p)) if mode != Mode::Silent => {
                frame(&mut out, kind::PING, flag::ACK, 0, &p);
            }
            Some(Event::Headers(_)) if mode == Mode::PingFlood => {
                streams.fetch_add(1, Ordering::SeqCst);
                pings = Some(0);
            }
            Some(Event::Headers(id)) => {
                streams.fetch_add(1, Ordering::SeqCst);
                reply(mode, id, &mut out, &mut endless, &mut flooding);
            }
            Some(Event::Reset(id)) => endless.retain(|s| *s != id),
            _ => {}
        }
        if let Some(id) = flooding
            && flooded < FLOOD_CAP
        {
            // 16 KiB of CONTINUATION at a time, never END_HEADERS.
            frame(&mut out, kind::CONTINUATION, 0, id, &[0u8; 16_384]);
            flooded += 16_384;
        }
        if !endless.is_empty() && tick.elapsed() >= Duration::from_millis(20) {
            tick = Instant::now();
            for id in &endless {
                frame(&mut out, kind::DATA, 0, *id, &EMPTY_MESSAGE);
            }
        }
    }
}

/// The server's answer to a call on stream `id`.
fn reply(
    mode: Mode,
    id: u32,
    out: &mut Vec<u8>,
    endless: &mut Vec<u32>,
    flooding: &mut Option<u32>,
) {
    match mode {
        Mode::Oversized => {
            frame(out, kind::HEADERS, flag::END_HEADERS, id, &ok_headers());
            // A DATA frame header announcing 16,777,215 bytes; 64 KiB of it follow, then
            // nothing.
            out.extend_from_slice(&[0xff, 0xff, 0xff, kind::DATA, 0]);
            out.extend_from_slice(&id.to_be_bytes());
            out.extend_from_slice(&[0u8; 64 * 1024]);
        }
        // One endless block per connection: the header block in progress blocks every other
        // frame anyway.
        Mode::EndlessContinuation if flooding.is_none() => {
            frame(out, kind::HEADERS, 0, id, &[0x88]);
            *flooding = Some(id);
        }
        Mode::NeverEnds => {
            frame(out, kind::HEADERS, flag::END_HEADERS, id, &ok_headers());
            frame(out, kind::DATA, 0, id, &EMPTY_MESSAGE);
            endless.push(id);
        }
        Mode::BadHpack => {
            // An indexed field whose index (an HPACK integer that never ends) is past any table.
            let garbage = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x00, 0x13];
            frame(out, kind::HEADERS, flag::END_HEADERS, id, &garbage);
        }
        Mode::NoTrailers => {
            frame(out, kind::HEADERS, flag::END_HEADERS, id, &ok_headers());
            frame(out, kind::DATA, 0, id, &EMPTY_MESSAGE);
        }
        Mode::GoawayOnCall => frame(out, kind::GOAWAY, 0, 0, &goaway()),
        _ => {}
    }
}

/// Which client `volley bench` is made to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
    Fast,
    H2,
}

/// What one `volley bench` run did.
struct Run {
    wall: Duration,
    success: bool,
    stdout: String,
    stderr: String,
    /// The largest VmHWM read while it ran, in KiB.
    peak_kib: u64,
}

impl Run {
    fn report(&self) -> Value {
        assert!(self.success, "volley bench failed:\n{}", self.stderr);
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not a JSON report ({e}):\n{}", self.stdout))
    }
}

fn vm_hwm_kib(pid: u32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// `volley bench` on `api.Users.Get` against `addr` with `flags`, killed (and the test failed)
/// if it is still running after `limit`.
fn bench(path: Path, addr: SocketAddr, flags: &[&str], limit: Duration) -> Run {
    let proto = workspace_file("proto/api/users.proto");
    let addr = addr.to_string();
    let mut args = vec![
        "bench",
        "--insecure",
        "--proto",
        &proto,
        "--call",
        "api.Users.Get",
        "-d",
        r#"{"id":1}"#,
        "-O",
        "json",
    ];
    args.extend_from_slice(flags);
    args.push(&addr);
    let mut cmd = VOLLEY.command(&args);
    cmd.env_remove("VOLLEY_BENCH_CLIENT");
    if path == Path::H2 {
        cmd.env("VOLLEY_BENCH_CLIENT", "h2");
    }
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn volley bench");
    let pid = child.id();
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let mut peak_kib = 0;
    let status = loop {
        if let Some(kib) = vm_hwm_kib(pid) {
            peak_kib = peak_kib.max(kib);
        }
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{path:?}: volley bench {flags:?} still running after {limit:?} (peak {peak_kib} \
                 KiB); stderr:\n{}",
                stderr.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let run = Run {
        wall: started.elapsed(),
        success: status.success(),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
        peak_kib,
    };
    assert!(
        !run.stderr.contains("panicked"),
        "{path:?}: volley bench panicked:\n{}",
        run.stderr
    );
    assert!(
        run.peak_kib < MAX_PEAK_KIB,
        "{path:?}: volley bench {flags:?} peaked at {} KiB (limit {MAX_PEAK_KIB})",
        run.peak_kib
    );
    run
}

/// A report's count for `code` in `statusCodeDistribution` (0 when absent).
fn status_count(r: &Value, code: &str) -> u64 {
    r["statusCodeDistribution"][code].as_u64().unwrap_or(0)
}

/// Checks that a report counts `calls` calls, all with status `code`, and that the errors'
/// distribution adds up to them; prints the run's figures.
fn all_failed_with(case: &str, path: Path, run: &Run, calls: u64, code: &str) -> Value {
    let r = run.report();
    eprintln!(
        "{case} {path:?}: {:.2?}, peak {} KiB, statuses {}, errors {}, client {}",
        run.wall,
        run.peak_kib,
        r["statusCodeDistribution"],
        r["errorDistribution"],
        r["volley"]["clientPath"]
    );
    assert_eq!(r["count"].as_u64(), Some(calls), "{case} {path:?}: {r}");
    assert_eq!(
        status_count(&r, code),
        calls,
        "{case} {path:?}: every call {code}: {}",
        r["statusCodeDistribution"]
    );
    let errors: u64 = r["errorDistribution"]
        .as_object()
        .map_or(0, |m| m.values().filter_map(Value::as_u64).sum());
    assert_eq!(errors, calls, "{case} {path:?}: {}", r["errorDistribution"]);
    let want_path = match path {
        Path::Fast => "fast",
        Path::H2 => "h2 (VOLLEY_BENCH_CLIENT=h2)",
    };
    assert_eq!(r["volley"]["clientPath"], want_path, "{case}: {r}");
    r
}

const BOTH: [Path; 2] = [Path::Fast, Path::H2];

/// A case run as `-n 8 -c 4 --timeout T`: two waves of four calls, each failing by `code`.
fn counted_case(case: &str, mode: Mode, timeout: &str, code: &str, limit: Duration) {
    for path in BOTH {
        let server = Hostile::start(mode);
        let flags = ["-n", "8", "-c", "4", "--timeout", timeout];
        let run = bench(path, server.addr, &flags, limit);
        all_failed_with(case, path, &run, 8, code);
        eprintln!(
            "{case} {path:?}: {} connections, {} calls seen by the server",
            server.accepted(),
            server.streams.load(Ordering::SeqCst)
        );
    }
}

#[test]
fn oversized_frames_fail_the_calls_at_once() {
    // The client refuses the frame from its header: no call waits for its deadline.
    counted_case(
        "oversized",
        Mode::Oversized,
        "5s",
        "Unavailable",
        Duration::from_secs(4),
    );
}

#[test]
fn endless_continuation_is_cut_off_with_memory_bounded() {
    for path in BOTH {
        let server = Hostile::start(Mode::EndlessContinuation);
        let flags = ["-n", "4", "-c", "2", "--timeout", "500ms"];
        let run = bench(path, server.addr, &flags, Duration::from_secs(8));
        let r = run.report();
        eprintln!(
            "continuation {path:?}: {:.2?}, peak {} KiB, statuses {}, errors {}, {} connections",
            run.wall,
            run.peak_kib,
            r["statusCodeDistribution"],
            r["errorDistribution"],
            server.accepted()
        );
        assert_eq!(r["count"], 4, "{r}");
        // A header block past the client's limit is a connection error (Unavailable), or the
        // deadline comes first: either way no call succeeds.
        let failed = status_count(&r, "Unavailable") + status_count(&r, "DeadlineExceeded");
        assert_eq!(failed, 4, "{path:?}: {}", r["statusCodeDistribution"]);
    }
}

/// A GOAWAY loop under `-n 10` and under `-z 1s`: the calls all fail Unavailable, the run ends
/// on time; returns the dials of each.
fn goaway_runs(mode: Mode, path: Path) -> (usize, usize) {
    let server = Hostile::start(mode);
    let flags = ["-n", "10", "-c", "2", "--timeout", "2s"];
    let run = bench(path, server.addr, &flags, Duration::from_secs(10));
    all_failed_with(&format!("{mode:?} -n"), path, &run, 10, "Unavailable");
    let short = server.accepted();
    drop(server);

    // Under -z the calls go on until the clock stops them; the dials must not follow them.
    // Paced at 1,000 calls a second: calls that fail at once would otherwise number hundreds
    // of thousands, and the JSON report keeps every one's details (up to ghz's million).
    let server = Hostile::start(mode);
    let flags = ["-z", "1s", "-c", "2", "-r", "1000", "--timeout", "2s"];
    let run = bench(path, server.addr, &flags, Duration::from_secs(8));
    let r = run.report();
    let count = r["count"].as_u64().unwrap();
    let long = server.accepted();
    eprintln!(
        "{mode:?} {path:?}: -n 10: {short} connections; -z 1s: {:.2?}, peak {} KiB, {count} \
         calls, {long} connections, statuses {}",
        run.wall, run.peak_kib, r["statusCodeDistribution"]
    );
    assert!(
        run.wall < Duration::from_secs(4),
        "{path:?}: -z 1s took {:?}",
        run.wall
    );
    assert_eq!(status_count(&r, "Unavailable"), count, "{r}");
    (short, long)
}

#[test]
fn goaway_on_every_connection_redials_boundedly_and_ends() {
    // A connection is up, on the fast path, once the server's SETTINGS are in, and on the
    // h2-crate path once a PING comes back. Redials back off (100 ms doubling to 2 s) while no
    // connection is answered on, on both paths: a handful of dials in a second (0, 100, 300,
    // 700 ms... so 5 in -z 1s), however many calls fail meanwhile (measured before the h2 path
    // backed off: 57 dials for 36 calls in -z 1s, 15 for -n 10).
    let runs = [
        (Mode::GoawayLoop, Path::Fast),
        (Mode::GoawayOnCall, Path::Fast),
        (Mode::GoawayOnCall, Path::H2),
    ];
    for (mode, path) in runs {
        let (short, long) = goaway_runs(mode, path);
        assert!(short <= 4, "{mode:?} {path:?}: {short} dials for -n 10");
        assert!(long <= 10, "{mode:?} {path:?}: {long} dials in -z 1s");
    }
    // On the h2-crate path a GOAWAY before the PING's answer fails the dial, and the run, at
    // once, in one line that says what the server sent (it spoke HTTP/2: no hint about TLS).
    let server = Hostile::start(Mode::GoawayLoop);
    let run = bench(Path::H2, server.addr, &["-n", "10"], Duration::from_secs(6));
    eprintln!(
        "GoawayLoop H2: {:.2?}, peak {} KiB, exit ok {}, {} connections, stderr {}",
        run.wall,
        run.peak_kib,
        run.success,
        server.accepted(),
        run.stderr.trim()
    );
    assert!(!run.success);
    assert_eq!(
        run.stderr.trim(),
        format!(
            "volley: error: connection error: HTTP/2 handshake with {} failed: the server sent \
             GOAWAY (NO_ERROR) during the handshake",
            server.addr
        )
    );
    assert!(run.wall < Duration::from_secs(2), "{:?}", run.wall);
}

#[test]
fn streams_that_never_end_hit_the_deadline() {
    counted_case(
        "never-ending",
        Mode::NeverEnds,
        "400ms",
        "DeadlineExceeded",
        Duration::from_secs(6),
    );
    // Under -z with no per-call deadline the clock ends the run; calls it cut off are left out.
    for path in BOTH {
        let server = Hostile::start(Mode::NeverEnds);
        let flags = ["-z", "1s", "-c", "4", "--timeout", "0"];
        let run = bench(path, server.addr, &flags, Duration::from_secs(6));
        let r = run.report();
        eprintln!(
            "never-ending -z {path:?}: {:.2?}, peak {} KiB, count {}, statuses {}",
            run.wall, run.peak_kib, r["count"], r["statusCodeDistribution"]
        );
        assert!(run.wall < Duration::from_secs(4), "{:?}", run.wall);
        assert_eq!(r["count"], 0, "{r}");
    }
}

#[test]
fn bad_hpack_fails_the_calls_at_once() {
    counted_case(
        "bad-hpack",
        Mode::BadHpack,
        "5s",
        "Unavailable",
        Duration::from_secs(4),
    );
}

#[test]
fn trailers_that_never_come_hit_the_deadline() {
    counted_case(
        "no-trailers",
        Mode::NoTrailers,
        "400ms",
        "DeadlineExceeded",
        Duration::from_secs(6),
    );
}

#[test]
fn a_ping_flood_that_is_never_read_keeps_memory_bounded() {
    // Every PING wants an ACK, which the server never reads: a client that reads on while its
    // ACKs cannot be sent keeps them all (measured before the fix, fast path: hundreds of MiB).
    // The calls get no reply and end by their deadline; the run ends with them.
    counted_case(
        "ping-flood",
        Mode::PingFlood,
        "400ms",
        "DeadlineExceeded",
        Duration::from_secs(6),
    );
}

#[test]
fn a_server_that_never_speaks_fails_within_the_connect_timeout() {
    for path in BOTH {
        let server = Hostile::start(Mode::Silent);
        let flags = ["-n", "4", "-c", "2", "--connect-timeout", "1s"];
        let run = bench(path, server.addr, &flags, Duration::from_secs(6));
        eprintln!(
            "silent {path:?}: {:.2?}, peak {} KiB, exit ok {}, {} connections, stderr {}",
            run.wall,
            run.peak_kib,
            run.success,
            server.accepted(),
            run.stderr.trim()
        );
        // No connection is ever ready, so there is no run to report: one line says why, within
        // the connect timeout (and a little for the process itself).
        assert!(!run.success, "{path:?}: {}", run.stdout);
        assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
        assert!(
            run.wall < Duration::from_millis(2500),
            "{path:?}: {:?} for --connect-timeout 1s",
            run.wall
        );
    }
}

// The library: a `FastConnection` and a `Channel` (h2 crate) against each server.

/// Every hostile library call's deadline (sent as `grpc-timeout`, and kept by the client).
const CALL_DEADLINE: Duration = Duration::from_secs(1);

/// How long the test waits for a call past its deadline before it calls the client broken.
/// Measured: the calls that time out end 1.00-1.01 s after they start.
const PAST_DEADLINE: Duration = Duration::from_secs(2);

fn head(addr: SocketAddr) -> CallHead {
    CallHead::new(
        "http",
        &addr.to_string(),
        "/api.Users/Get",
        &[],
        Some(CALL_DEADLINE),
        false,
    )
    .unwrap()
}

fn endpoint(addr: SocketAddr) -> Endpoint {
    let mut ep = Endpoint::from_target_str(&addr.to_string()).unwrap();
    ep.connect_timeout = Duration::from_millis(500);
    ep
}

/// One call's outcome: its status, or `None` when it had not ended [`PAST_DEADLINE`] after its
/// deadline (a client that waits forever).
type Outcome = Option<Code>;

/// Runs `call`, waiting for it at most [`PAST_DEADLINE`] past its deadline: its outcome and
/// how long it took.
async fn timed(
    call: impl std::future::Future<Output = Result<(), volley_wire::Status>>,
) -> (Outcome, Duration) {
    let t = Instant::now();
    let outcome = match tokio::time::timeout(CALL_DEADLINE + PAST_DEADLINE, call).await {
        Ok(Ok(())) => Some(Code::Ok),
        Ok(Err(s)) => Some(s.code()),
        Err(_) => None,
    };
    (outcome, t.elapsed())
}

/// The caller's deadline on a load path, as `volley bench --timeout` keeps it.
async fn by_the_caller<T>(
    call: impl std::future::Future<Output = Result<T, volley_wire::Status>>,
) -> Result<(), volley_wire::Status> {
    match tokio::time::timeout(CALL_DEADLINE, call).await {
        Ok(r) => r.map(drop),
        Err(_) => Err(volley_wire::Status::new(
            Code::DeadlineExceeded,
            "--timeout",
        )),
    }
}

/// One call on each library client (connect timeout 500 ms), each with a deadline of
/// [`CALL_DEADLINE`] kept the way its users keep it: the application client
/// (`volley_client::Grpc`, `Request::set_timeout`) by itself; the load paths (the fast
/// connection, the channel) by their caller, as `volley bench` keeps `--timeout`. Each status
/// with how long the call took: (application, fast, channel).
fn library_call(mode: Mode) -> [(Outcome, Duration); 3] {
    use volley_services::pb::api::{GetUserRequest, User};
    let server = Hostile::start(mode);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let app = timed(async {
            let client = volley_client::Grpc::connect(endpoint(server.addr))
                .await
                .map_err(|e| volley_wire::Status::new(Code::Unavailable, e.to_string()))?;
            let mut req = volley_client::Request::new(GetUserRequest { id: 1 });
            req.set_timeout(CALL_DEADLINE);
            let reply: Result<volley_client::Response<User>, _> =
                client.unary("/api.Users/Get", req).await;
            reply.map(drop)
        })
        .await;
        let body = Bytes::from_static(&EMPTY_MESSAGE);
        let fast = timed(by_the_caller(async {
            let conn = FastConnection::connect(&endpoint(server.addr)).await?;
            conn.unary(&HeaderBlock::of(&head(server.addr)), body.clone())
                .await
        }))
        .await;
        let channel = Channel::new(endpoint(server.addr), Strategy::Single);
        let h2 = timed(by_the_caller(channel.unary(&head(server.addr), body))).await;
        [app, fast, h2]
    })
}

#[test]
fn the_library_fails_each_hostile_call_by_its_deadline() {
    use Code::{DeadlineExceeded, Internal, Unavailable};
    // What each client ends with: (application, the load paths).
    let cases = [
        (Mode::Oversized, Unavailable, Unavailable),
        (Mode::EndlessContinuation, Unavailable, Unavailable),
        (Mode::GoawayLoop, Unavailable, Unavailable),
        (Mode::GoawayOnCall, Unavailable, Unavailable),
        // A unary reply that goes on after its message: the application client reads the
        // second message and fails at once, as grpc-go does (INTERNAL); the load paths take
        // the first message and wait for trailers, until the deadline.
        (Mode::NeverEnds, Internal, DeadlineExceeded),
        (Mode::BadHpack, Unavailable, Unavailable),
        (Mode::NoTrailers, DeadlineExceeded, DeadlineExceeded),
        // The connect timeout, not the call's deadline.
        (Mode::Silent, Unavailable, Unavailable),
        (Mode::PingFlood, DeadlineExceeded, DeadlineExceeded),
    ];
    let mut wrong = Vec::new();
    for (mode, app_want, load_want) in cases {
        let before = vm_hwm_kib(std::process::id()).unwrap_or(0);
        let calls = library_call(mode);
        let after = vm_hwm_kib(std::process::id()).unwrap_or(0);
        eprintln!(
            "library {mode:?}: (application, fast, channel) {calls:?}, peak {after} KiB (was {before})"
        );
        for ((got, took), path) in calls.iter().zip(["application", "fast", "channel"]) {
            let want = if path == "application" {
                app_want
            } else {
                load_want
            };
            match got {
                None => wrong.push(format!(
                    "{mode:?} on the {path} client: not ended {PAST_DEADLINE:?} past its deadline"
                )),
                Some(code) if *code != want => wrong.push(format!(
                    "{mode:?} on the {path} client: {code:?}, want {want:?}"
                )),
                // A call that fails by its deadline ends at it, not long after.
                Some(_) if *took > CALL_DEADLINE + Duration::from_millis(500) => wrong.push(
                    format!("{mode:?} on the {path} client: ended after {took:?}"),
                ),
                Some(_) => {}
            }
        }
        assert!(after < MAX_PEAK_KIB * 2, "{mode:?}: peak {after} KiB");
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
