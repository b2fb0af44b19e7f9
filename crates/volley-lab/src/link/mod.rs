//! `volley lab link`: a TCP relay that behaves like a slower network, for kernels without netem
//! (toxiproxy's model). Each direction of each connection reads chunks, holds each one for the
//! one-way delay plus a jitter drawn uniformly from ±jitter (never overtaking the chunk before
//! it: a byte stream does not reorder), and sends at no more than the rate; faults
//! (`faults`: loss, resets, partitions) are injected on top. Chunks wait on a timer of the link's
//! own (`timer`).

mod faults;
mod timer;

use std::{
    net::SocketAddr,
    sync::Arc,
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
    sync::{mpsc, watch},
};
use tracing::{debug, info};
use volley_bench::plan::units::parse_duration;

use crate::Signals;
use faults::Draws;
pub use faults::{Faults, Partition, RETRANSMIT_AFTER, parse_chance, parse_partition};
use timer::at;

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
    /// Lose this share of chunks as TCP loses a segment (e.g. 1%): each one is sent again and
    /// arrives 200 ms late (TCP's minimum retransmission timeout), holding up the bytes behind
    /// it. Nothing is cut.
    #[arg(long, value_parser = parse_chance, default_value = "0", value_name = "PERCENT")]
    pub retransmit: f64,
    /// Drop this share of chunks for good (e.g. 0.1%): their bytes never arrive and the stream
    /// goes on without them, as past a middlebox that loses data; the peers' framing breaks. A
    /// connection's first few chunks (its handshakes) are spared.
    #[arg(long, value_parser = parse_chance, default_value = "0", value_name = "PERCENT")]
    pub drop: f64,
    /// Reset the connection (a TCP RST to both sides) at this share of chunks (e.g. 0.1%); a
    /// connection's first few chunks (its handshakes) are spared.
    #[arg(long, value_parser = parse_chance, default_value = "0", value_name = "PERCENT")]
    pub reset: f64,
    /// Pass nothing for LASTS from AT after the start (e.g. 2s@5s; repeat for more): bytes wait,
    /// new connections are held, as when a route is blackholed.
    #[arg(long, value_parser = parse_partition, value_name = "LASTS@AT")]
    pub partition: Vec<Partition>,
}

/// How the link treats bytes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Shape {
    /// One-way delay, each direction.
    pub delay: Duration,
    /// Each chunk's delay is `delay` plus a uniform draw from `-jitter..=jitter`.
    pub jitter: Duration,
    /// Bytes per second each direction may carry (`None`: unlimited).
    pub rate: Option<u64>,
    /// What goes wrong on purpose.
    pub faults: Faults,
}

/// Largest chunk read at once: small enough that the rate paces smoothly.
const CHUNK: usize = 16 * 1024;
/// Chunks in flight per direction before the reader waits (the link's buffer).
const IN_FLIGHT: usize = 4096;
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
    let (shape, start) = (Arc::new(shape), Instant::now());
    loop {
        let (client, peer) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                debug!("accept: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let shape = shape.clone();
        tokio::spawn(async move {
            // A partition holds a new connection too (its client's SYN goes unanswered).
            at(shape.faults.passes_at(start, Instant::now())).await;
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
            let (reset, _) = watch::channel(false);
            let link = Link {
                shape: &shape,
                start,
                reset: &reset,
            };
            tokio::join!(
                link.direction(cr, sw, seed),
                link.direction(sr, cw, seed.rotate_left(32) ^ 0x9e37_79b9)
            );
        });
    }
}

/// Linger 0: closing the socket sends RST instead of FIN.
fn linger_zero(half: &OwnedReadHalf) {
    let _ = socket2::SockRef::from(half.as_ref()).set_linger(Some(Duration::ZERO));
}

/// One relayed connection, as both of its directions see it.
#[derive(Clone, Copy)]
struct Link<'a> {
    shape: &'a Shape,
    start: Instant,
    /// Set when a drawn reset ends the connection: both directions stop.
    reset: &'a watch::Sender<bool>,
}

impl Link<'_> {
    /// One direction: a reader that stamps chunks with their release time, and a writer that
    /// sends each at its time, paced by the rate.
    async fn direction(self, mut from: OwnedReadHalf, mut to: OwnedWriteHalf, seed: u64) {
        let Link {
            shape,
            start,
            reset,
        } = self;
        let faults = &shape.faults;
        let (tx, mut rx) = mpsc::channel::<(Instant, Bytes)>(IN_FLIGHT);
        let mut stop = reset.subscribe();
        let reader = async move {
            let mut draws = Draws::new(seed);
            let mut last = Instant::now();
            let mut buf = BytesMut::with_capacity(CHUNK);
            let mut seen = 0;
            loop {
                buf.reserve(CHUNK);
                tokio::select! {
                    r = from.read_buf(&mut buf) => match r {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    },
                    _ = stop.changed() => {
                        linger_zero(&from);
                        break;
                    }
                }
                // A connection's first chunks (its handshake) are left alone: a reset there is
                // a refused dial, not a call cut off.
                seen += 1;
                if seen > faults::HANDSHAKE_CHUNKS && draws.chance(faults.reset) {
                    // This side's socket here, the other's by the other direction's reader.
                    linger_zero(&from);
                    info!("reset a connection (--reset)");
                    reset.send_replace(true);
                    break;
                }
                if seen > faults::HANDSHAKE_CHUNKS && draws.chance(faults.drop) {
                    info!("dropped {} bytes for good (--drop)", buf.len());
                    buf.clear();
                    continue;
                }
                let mut due = Instant::now() + draws.delay(shape.delay, shape.jitter);
                if draws.chance(faults.retransmit) {
                    due += RETRANSMIT_AFTER;
                }
                // Never before the chunk ahead of it, nor inside a partition.
                last = faults.passes_at(start, last.max(due));
                if tx.send((last, buf.split().freeze())).await.is_err() {
                    break;
                }
            }
        };
        let mut stop = reset.subscribe();
        let writer = async move {
            // When the link is next free to start sending, at the rate.
            let mut free_at = Instant::now();
            loop {
                let next = tokio::select! {
                    n = rx.recv() => n,
                    _ = stop.changed() => return,
                };
                let Some((due, chunk)) = next else { break };
                let mut when = due;
                if let Some(rate) = shape.rate {
                    when = when.max(free_at);
                    free_at = when + Duration::from_secs_f64(chunk.len() as f64 / rate as f64);
                }
                tokio::select! {
                    _ = at(when) => {}
                    _ = stop.changed() => return,
                }
                if to.write_all(&chunk).await.is_err() {
                    return;
                }
            }
            let _ = to.shutdown().await;
        };
        tokio::join!(reader, writer);
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
        faults: Faults {
            retransmit: args.retransmit,
            drop: args.drop,
            reset: args.reset,
            partitions: args.partition,
        },
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
        if !listener.local_addr()?.ip().is_loopback() {
            tracing::warn!(
                "{}: other hosts can reach this relay, which takes no auth",
                listener.local_addr()?
            );
        }
        info!(
            "listening on {} (relaying to {to}, {:?} +- {:?} each way, {rate}, {})",
            listener.local_addr()?,
            shape.delay,
            shape.jitter,
            shape.faults.describe()
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
}
