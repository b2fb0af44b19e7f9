//! `volley link`: a relay with delay, jitter and a rate cap, measured from outside: the round trip
//! of one byte echoed through `--delay 5ms` is 10 ms +- 1 ms at p50; jitter spreads it within its
//! bounds; `--rate` holds a transfer's rate within 10%; gRPC (grpcurl) goes through unchanged.

use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpListener, TcpStream},
    process::Command,
    time::{Duration, Instant},
};

use volley_testkit::{Volley, VolleyProcess, fails_in_one_line, tool, volley};

const VOLLEY: Volley = volley!();

/// A TCP server on a thread of its own: echoes every byte (`sink` false), or reads to the end
/// and answers the count as eight bytes (`sink` true).
fn server(sink: bool) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut c) = conn else { return };
            std::thread::spawn(move || {
                let _ = c.set_nodelay(true);
                let mut buf = vec![0u8; 64 * 1024];
                let mut total = 0u64;
                loop {
                    match c.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) if sink => total += n as u64,
                        Ok(n) => {
                            if c.write_all(&buf[..n]).is_err() {
                                return;
                            }
                        }
                    }
                }
                if sink {
                    let _ = c.write_all(&total.to_be_bytes());
                }
            });
        }
    });
    addr
}

fn link(to: SocketAddr, flags: &[&str]) -> VolleyProcess {
    let to = to.to_string();
    let mut args = vec!["lab", "link", "--listen", "127.0.0.1:0", "--to", &to];
    args.extend_from_slice(flags);
    VolleyProcess::start(VOLLEY.bin(), &args)
}

/// Round trips of one byte through `addr`, sorted.
fn round_trips(addr: SocketAddr, n: usize) -> Vec<Duration> {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_nodelay(true).unwrap();
    let mut out = Vec::with_capacity(n);
    let mut b = [0u8; 1];
    for i in 0..n {
        let t = Instant::now();
        c.write_all(&[i as u8]).unwrap();
        c.read_exact(&mut b).unwrap();
        out.push(t.elapsed());
        assert_eq!(b[0], i as u8);
    }
    out.sort();
    out
}

#[test]
fn a_5ms_link_gives_a_10ms_round_trip() {
    let echo = server(false);
    let direct = round_trips(echo, 50);
    let l = link(echo, &["--delay", "5ms"]);
    let rtt = round_trips(l.addr(), 200);
    let p50 = rtt[rtt.len() / 2];
    assert!(
        p50 >= Duration::from_millis(9) && p50 <= Duration::from_millis(11),
        "p50 {p50:?} (direct: {:?})",
        direct[direct.len() / 2]
    );
}

#[test]
fn jitter_spreads_the_round_trip_within_its_bounds() {
    let echo = server(false);
    let l = link(echo, &["--delay", "5ms", "--jitter", "2ms"]);
    let rtt = round_trips(l.addr(), 200);
    let (p10, p90) = (rtt[rtt.len() / 10], rtt[rtt.len() * 9 / 10]);
    // Each way 3-7 ms: a round trip of 6-14 ms, give or take the timer's half millisecond.
    assert!(rtt[0] >= Duration::from_micros(5_500), "min {:?}", rtt[0]);
    // The top: p95, not the maximum, which a busy machine can push up on its own.
    let p95 = rtt[rtt.len() * 95 / 100];
    assert!(p95 <= Duration::from_millis(15), "p95 {p95:?}");
    assert!(
        p90 - p10 >= Duration::from_millis(2),
        "spread p10 {p10:?} p90 {p90:?}"
    );
}

#[test]
fn the_rate_cap_holds_within_ten_percent() {
    let sink = server(true);
    // 40 Mbit/s is 5 MB/s: 5 MB takes a second.
    let l = link(sink, &["--rate", "40mbit"]);
    let mut c = TcpStream::connect(l.addr()).unwrap();
    let block = vec![7u8; 64 * 1024];
    let total = 5_000_000usize;
    let t = Instant::now();
    let mut sent = 0;
    while sent < total {
        let n = block.len().min(total - sent);
        c.write_all(&block[..n]).unwrap();
        sent += n;
    }
    c.shutdown(std::net::Shutdown::Write).unwrap();
    let mut count = [0u8; 8];
    c.read_exact(&mut count).unwrap();
    let elapsed = t.elapsed().as_secs_f64();
    assert_eq!(u64::from_be_bytes(count), total as u64);
    let rate = total as f64 / elapsed;
    assert!(
        (4.5e6..=5.5e6).contains(&rate),
        "{rate:.0} B/s over {elapsed:.2} s"
    );
}

#[test]
fn grpc_goes_through_and_bad_flags_are_one_line() {
    let serve = VOLLEY.serve(&[]);
    let l = link(serve.addr(), &["--delay", "2ms"]);
    let out = Command::new(tool("grpcurl"))
        .args(["-plaintext", "-d", r#"{"id":228}"#])
        .arg(l.addr().to_string())
        .arg("api.Users/Get")
        .output()
        .expect("run grpcurl");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("dmitry.k@test.tld"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );

    for (flags, want) in [
        (&["--rate", "fast"][..], "expected a number and a unit"),
        (
            &["--delay", "1ms", "--jitter", "2ms"][..],
            "larger than --delay",
        ),
    ] {
        let mut args = vec![
            "lab",
            "link",
            "--listen",
            "127.0.0.1:0",
            "--to",
            "127.0.0.1:1",
        ];
        args.extend_from_slice(flags);
        let line = fails_in_one_line(&mut VOLLEY.command(&args));
        assert!(line.contains(want), "{flags:?}: {line}");
    }
}
