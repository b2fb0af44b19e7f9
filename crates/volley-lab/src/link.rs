//! `volley lab link`: a TCP relay that behaves like a slower network, for kernels without netem
//! (toxiproxy's model). Each direction of each connection reads chunks, holds each one for the
//! one-way delay plus a jitter drawn uniformly from ±jitter (never overtaking the chunk before
//! it: a byte stream does not reorder), and sends at no more than the rate.
//!
//! Timing: tokio's timers have millisecond ticks and fired 1-2 ms late here (a 5 ms link
//! measured 11.3 ms per round trip), so chunks wait on a timer of their own (`at`): one thread
//! sleeping until the earliest deadline and waking its task, within about 0.1 ms.

use std::{
    cmp::Reverse,
    collections::BinaryHeap,
    future::Future,
    net::SocketAddr,
    sync::{Condvar, Mutex, OnceLock},
    task::{Poll, Waker},
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use bytes::{Bytes, BytesMut};
use clap::Args;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{
        TcpListener, TcpStream,
        tcp::{OwnedReadHalf, OwnedWriteHalf},
    },
    sync::mpsc,
};
use tracing::{debug, info};
use volley_bench::plan::units::parse_duration;

use crate::Signals;

/// `volley lab link`'s flags.
#[derive(Debug, Args)]
pub struct LinkArgs {
    /// Where clients connect (port 0 picks a free port; the log line says which).
    #[arg(long, value_name = "ADDR")]
    pub listen: SocketAddr,
    /// Where the relay connects for each client (HOST:PORT).
    #[arg(long, value_name = "ADDR")]
    pub to: String,
    /// One-way delay, each direction (a round trip gains twice this), e.g. 5ms.
    #[arg(long, value_parser = parse_duration, default_value = "0")]
    pub delay: Duration,
    /// Each chunk's delay varies uniformly within +-this (no reordering), e.g. 1ms.
    #[arg(long, value_parser = parse_duration, default_value = "0")]
    pub jitter: Duration,
    /// Most each direction carries, as tc writes it: 100mbit, 512kbit (bits per second) or
    /// 10mbps (bytes per second).
    #[arg(long, value_parser = parse_rate, value_name = "RATE")]
    pub rate: Option<u64>,
}

/// How the link treats bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Shape {
    /// One-way delay, each direction.
    pub delay: Duration,
    /// Each chunk's delay is `delay` plus a uniform draw from `-jitter..=jitter`.
    pub jitter: Duration,
    /// Bytes per second each direction may carry (`None`: unlimited).
    pub rate: Option<u64>,
}

/// Largest chunk read at once: small enough that the rate paces smoothly.
const CHUNK: usize = 16 * 1024;
/// Chunks in flight per direction before the reader waits (the link's buffer).
const IN_FLIGHT: usize = 4096;
/// Deadlines waited for by the timer thread, earliest first.
struct Timers {
    due: Mutex<BinaryHeap<Reverse<Due>>>,
    wake: Condvar,
}

/// A task to wake at a time.
struct Due(Instant, Waker);

impl PartialEq for Due {
    fn eq(&self, other: &Due) -> bool {
        self.0 == other.0
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Due) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Due {
    fn cmp(&self, other: &Due) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

/// The timer thread, started on first use; it lives as long as the process.
fn timers() -> &'static Timers {
    static TIMERS: OnceLock<&'static Timers> = OnceLock::new();
    TIMERS.get_or_init(|| {
        let t: &'static Timers = Box::leak(Box::new(Timers {
            due: Mutex::new(BinaryHeap::new()),
            wake: Condvar::new(),
        }));
        let _ = std::thread::Builder::new()
            .name("volley-link-timer".into())
            .spawn(move || {
                let mut due = t.due.lock().unwrap_or_else(|p| p.into_inner());
                loop {
                    let now = Instant::now();
                    match due.peek() {
                        None => due = t.wake.wait(due).unwrap_or_else(|p| p.into_inner()),
                        Some(Reverse(d)) if d.0 <= now => {
                            if let Some(Reverse(d)) = due.pop() {
                                d.1.wake();
                            }
                        }
                        Some(Reverse(d)) => {
                            let wait = d.0 - now;
                            due = t
                                .wake
                                .wait_timeout(due, wait)
                                .map(|(g, _)| g)
                                .unwrap_or_else(|p| p.into_inner().0);
                        }
                    }
                }
            });
        t
    })
}

/// Completes at `deadline`, give or take the timer thread's wake-up (about 0.1 ms).
fn at(deadline: Instant) -> impl Future<Output = ()> {
    std::future::poll_fn(move |cx| {
        if Instant::now() >= deadline {
            return Poll::Ready(());
        }
        let t = timers();
        let mut due = t.due.lock().unwrap_or_else(|p| p.into_inner());
        let earliest = due.peek().is_none_or(|Reverse(d)| deadline < d.0);
        due.push(Reverse(Due(deadline, cx.waker().clone())));
        drop(due);
        if earliest {
            t.wake.notify_one();
        }
        Poll::Pending
    })
}

/// Parses a rate as tc writes one: `100mbit`, `512kbit`, `1gbit`, `8bit` are bits per second;
/// `10mbps`, `64kbps`, `100bps` are bytes per second (tc's own, easily mistaken, convention).
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let lower = s.trim().to_ascii_lowercase();
    let split = lower
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(lower.len());
    let (num, unit) = lower.split_at(split);
    let n: f64 = num.parse().map_err(|_| {
        format!("rate {s:?}: expected a number and a unit, as in 100mbit or 10mbps")
    })?;
    let bytes_per_sec = match unit {
        "bit" => n / 8.0,
        "kbit" => n * 1e3 / 8.0,
        "mbit" => n * 1e6 / 8.0,
        "gbit" => n * 1e9 / 8.0,
        "bps" => n,
        "kbps" => n * 1e3,
        "mbps" => n * 1e6,
        "gbps" => n * 1e9,
        _ => {
            return Err(format!(
                "rate {s:?}: the unit is one of bit, kbit, mbit, gbit (bits per second) or \
                 bps, kbps, mbps, gbps (bytes per second, as tc reads them)"
            ));
        }
    };
    if bytes_per_sec < 1.0 {
        return Err(format!("rate {s:?} is below one byte per second"));
    }
    Ok(bytes_per_sec as u64)
}

/// Relays every connection accepted on `listener` to `to`, shaped, until the process ends.
pub async fn relay(listener: TcpListener, to: SocketAddr, shape: Shape) -> Result<()> {
    loop {
        let (client, peer) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                debug!("accept: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        tokio::spawn(async move {
            let server = match TcpStream::connect(to).await {
                Ok(s) => s,
                Err(e) => {
                    info!("{peer}: cannot reach {to}: {e}");
                    return;
                }
            };
            let _ = client.set_nodelay(true);
            let _ = server.set_nodelay(true);
            let (cr, cw) = client.into_split();
            let (sr, sw) = server.into_split();
            let seed = u64::from(peer.port()) ^ std::process::id() as u64;
            tokio::join!(
                direction(cr, sw, shape, seed),
                direction(sr, cw, shape, seed.rotate_left(32) ^ 0x9e37_79b9)
            );
        });
    }
}

/// One direction: a reader that stamps chunks with their release time, and a writer that sends
/// each at its time, paced by the rate.
async fn direction(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, shape: Shape, seed: u64) {
    let (tx, mut rx) = mpsc::channel::<(Instant, Bytes)>(IN_FLIGHT);
    let reader = async move {
        let mut rng = Jitter::new(seed);
        let mut last = Instant::now();
        let mut buf = BytesMut::with_capacity(CHUNK);
        loop {
            buf.reserve(CHUNK);
            match from.read_buf(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let due = Instant::now() + rng.delay(shape.delay, shape.jitter);
            // Never before the chunk ahead of it.
            last = last.max(due);
            if tx.send((last, buf.split().freeze())).await.is_err() {
                break;
            }
        }
    };
    let writer = async move {
        // When the link is next free to start sending, at the rate.
        let mut free_at = Instant::now();
        while let Some((due, chunk)) = rx.recv().await {
            let mut when = due;
            if let Some(rate) = shape.rate {
                when = when.max(free_at);
                free_at = when + Duration::from_secs_f64(chunk.len() as f64 / rate as f64);
            }
            at(when).await;
            if to.write_all(&chunk).await.is_err() {
                return;
            }
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(reader, writer);
}

/// The jitter's draws (fastrand's generator: no cryptographic need; one per direction).
struct Jitter(fastrand::Rng);

impl Jitter {
    fn new(seed: u64) -> Jitter {
        Jitter(fastrand::Rng::with_seed(seed))
    }

    /// `delay` plus a uniform draw from `-jitter..=jitter`, never below zero.
    fn delay(&mut self, delay: Duration, jitter: Duration) -> Duration {
        if jitter.is_zero() {
            return delay;
        }
        let offset = self.0.u64(0..=jitter.as_nanos() as u64 * 2);
        (delay + Duration::from_nanos(offset)).saturating_sub(jitter)
    }
}

/// `volley lab link`: binds, says where, and relays until `signals` names a signal.
pub fn run(args: LinkArgs, signals: Signals) -> Result<()> {
    // Two descriptors per relayed connection.
    volley_server::fds::raise_open_files_max();
    if args.jitter > args.delay {
        bail!(
            "--jitter {:?} is larger than --delay {:?}: a chunk cannot arrive before it was sent",
            args.jitter,
            args.delay
        );
    }
    let shape = Shape {
        delay: args.delay,
        jitter: args.jitter,
        rate: args.rate,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let to = tokio::net::lookup_host(&args.to)
            .await
            .with_context(|| format!("--to {}: cannot resolve it", args.to))?
            .next()
            .with_context(|| format!("--to {}: no address", args.to))?;
        let listener = volley_server::listen::tcp_listener(args.listen)
            .and_then(|l| {
                l.set_nonblocking(true)?;
                TcpListener::from_std(l)
            })
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        let rate = match shape.rate {
            Some(r) => format!("{:.1} Mbit/s", r as f64 * 8.0 / 1e6),
            None => "no rate limit".into(),
        };
        info!(
            "listening on {} (relaying to {to}, {:?} +- {:?} each way, {rate})",
            listener.local_addr()?,
            shape.delay,
            shape.jitter
        );
        tokio::select! {
            r = relay(listener, to, shape) => r,
            which = signals() => {
                info!("received {which}, stopping");
                Ok(())
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_read_as_tc_reads_them() {
        assert_eq!(parse_rate("100mbit"), Ok(12_500_000));
        assert_eq!(parse_rate("8kbit"), Ok(1_000));
        assert_eq!(parse_rate("10mbps"), Ok(10_000_000));
        assert_eq!(parse_rate("1.5gbit"), Ok(187_500_000));
        assert!(
            parse_rate("fast")
                .unwrap_err()
                .contains("expected a number")
        );
        assert!(
            parse_rate("10mb")
                .unwrap_err()
                .contains("the unit is one of")
        );
        assert!(parse_rate("1bit").unwrap_err().contains("below one byte"));
    }

    #[test]
    fn jitter_stays_within_its_bounds_and_spreads() {
        let mut j = Jitter::new(7);
        let (d, w) = (Duration::from_millis(5), Duration::from_millis(1));
        let draws: Vec<Duration> = (0..10_000).map(|_| j.delay(d, w)).collect();
        assert!(draws.iter().all(|x| *x >= d - w && *x <= d + w));
        let low = draws.iter().filter(|x| **x < d).count();
        assert!((4_000..6_000).contains(&low), "about half below: {low}");
    }
}
