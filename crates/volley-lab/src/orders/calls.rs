//! The orders' calls, made on the bench engine's connections: one unary call per order, or one
//! bidi stream per client with its orders pipelined; each reply's server stamp gives the order's
//! client-to-server time.

use std::{
    cell::RefCell,
    time::{Duration, Instant, SystemTime},
};

use bytes::{Bytes, BytesMut};
use prost::Message;
use prost_types::Timestamp;
use volley_bench::{CustomCall, CustomFuture, recorder::Recorder};
use volley_client::{CallHead, Connection, load::call::attempt_with, transport_status};
use volley_services::pb::orders::{Order, OrderReply};
use volley_wire::{Code, Status, codec::FrameDecoder};

/// Records an order's client-to-server time (server `responseTime` - client `requestTime`) as
/// the run's probe figure.
fn record_c2s(rec: &RefCell<Recorder>, sent_wall: SystemTime, reply: &OrderReply) {
    if let Some(at) = &reply.response_time {
        let server = SystemTime::UNIX_EPOCH
            + Duration::new(at.seconds.max(0) as u64, at.nanos.max(0) as u32);
        let c2s = server
            .duration_since(sent_wall)
            .map_or(0, |d| d.as_nanos() as u64);
        rec.borrow_mut().probe.saturating_record(c2s.max(1));
    }
}

fn order(i: u64) -> (Order, SystemTime, Instant) {
    let wall = SystemTime::now();
    let o = Order {
        instrument_id: i as i64,
        price: 100 + (i % 1000) as i64,
        quantity: 1,
        side: i.is_multiple_of(2),
        request_time: Some(Timestamp::from(wall)),
    };
    (o, wall, Instant::now())
}

fn frame(o: &Order) -> Bytes {
    volley_wire::codec::encode_frame(o)
}

/// `--mode unary`: call number `i` is one order, answered before the worker sends the next.
pub(super) struct UnaryOrder {
    pub(super) head: CallHead,
}

impl CustomCall for UnaryOrder {
    fn call<'a>(
        &'a self,
        conn: &'a Connection,
        i: u64,
        rec: &'a RefCell<Recorder>,
    ) -> CustomFuture<'a> {
        Box::pin(async move {
            let (o, wall, _) = order(i);
            let mut kept = BytesMut::new();
            attempt_with(conn.sender(), &self.head, frame(&o), Some(&mut kept))
                .await
                .map_err(|f| f.status)?;
            let msg = volley_wire::codec::first_message(&kept.freeze())
                .ok_or_else(|| Status::internal("no reply message"))?;
            let len = msg.len();
            let reply = OrderReply::decode(msg).map_err(|e| Status::internal(e.to_string()))?;
            record_c2s(rec, wall, &reply);
            Ok(len)
        })
    }
}

/// `--mode stream`: call number `i` is client `i`'s bidi stream, carrying its share of the
/// orders.
pub(super) struct StreamOrders {
    pub(super) head: CallHead,
    pub(super) count: u64,
    pub(super) clients: u64,
    pub(super) window: usize,
}

impl CustomCall for StreamOrders {
    fn call<'a>(
        &'a self,
        conn: &'a Connection,
        i: u64,
        rec: &'a RefCell<Recorder>,
    ) -> CustomFuture<'a> {
        let share = share(self.count, self.clients, i);
        Box::pin(async move {
            stream_client(conn, &self.head, share, self.window, rec)
                .await
                .map(|()| 0)
        })
    }
}

/// Client `i`'s share of `count` orders split evenly over `clients`: the first
/// `count % clients` clients send one more.
fn share(count: u64, clients: u64, i: u64) -> u64 {
    count / clients + u64::from(i < count % clients)
}

/// One bidi stream: orders pipelined up to `window` unanswered, replies matched in order.
async fn stream_client(
    conn: &Connection,
    head: &CallHead,
    share: u64,
    window: usize,
    rec: &RefCell<Recorder>,
) -> Result<(), Status> {
    let (resp, mut out) = conn.open_stream(head.request()).await?;
    let mut pending = std::collections::VecDeque::with_capacity(window);
    let mut sent = 0u64;
    let mut answered = 0u64;
    let mut fill = |pending: &mut std::collections::VecDeque<(SystemTime, Instant)>,
                    out: &mut h2::SendStream<Bytes>|
     -> Result<(), Status> {
        while pending.len() < window && sent < share {
            let (o, wall, at) = order(sent);
            out.send_data(frame(&o), false)
                .map_err(|e| transport_status(&e))?;
            pending.push_back((wall, at));
            sent += 1;
            rec.borrow_mut().messages_sent += 1;
        }
        if sent == share {
            out.send_data(Bytes::new(), true)
                .map_err(|e| transport_status(&e))?;
            sent += 1; // end sent once
        }
        Ok(())
    };
    fill(&mut pending, &mut out)?;
    let resp = resp.await.map_err(|e| transport_status(&e))?;
    let (parts, mut body) = resp.into_parts();
    if let Some(s) = Status::from_headers(&parts.headers) {
        return Err(s);
    }
    let mut decoder = FrameDecoder::new(None, usize::MAX);
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(|e| transport_status(&e))?;
        let _ = body.flow_control().release_capacity(chunk.len());
        decoder.push(chunk);
        while let Some(m) = decoder.next_message()? {
            let reply = OrderReply::decode(m).map_err(|e| Status::internal(e.to_string()))?;
            let (wall, at) = pending
                .pop_front()
                .ok_or_else(|| Status::internal("a reply with no order"))?;
            {
                let mut r = rec.borrow_mut();
                let rtt = at.elapsed().as_nanos() as u64;
                r.message_latency.saturating_record(rtt.max(1));
                r.messages_received += 1;
            }
            record_c2s(rec, wall, &reply);
            answered += 1;
        }
        fill(&mut pending, &mut out)?;
    }
    let trailers = body.trailers().await.map_err(|e| transport_status(&e))?;
    match trailers.as_ref().and_then(Status::from_headers) {
        Some(s) if s.code() == Code::Ok => {}
        Some(s) => return Err(s),
        None => return Err(Status::internal("the stream ended without a status")),
    }
    if !pending.is_empty() || answered != share {
        return Err(Status::internal(format!(
            "{answered} of {share} orders answered"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_split_evenly_over_the_clients() {
        for (count, clients) in [(10, 3), (10_000, 1000), (5, 8), (7, 7), (1, 1)] {
            let shares: Vec<u64> = (0..clients).map(|i| share(count, clients, i)).collect();
            assert_eq!(shares.iter().sum::<u64>(), count, "{count} over {clients}");
            let (lo, hi) = (shares.iter().min().unwrap(), shares.iter().max().unwrap());
            assert!(hi - lo <= 1, "{count} over {clients}: {shares:?}");
            // The larger shares go first.
            assert!(shares.windows(2).all(|w| w[0] >= w[1]), "{shares:?}");
        }
        assert_eq!(
            (0..3).map(|i| share(10, 3, i)).collect::<Vec<_>>(),
            [4, 3, 3]
        );
    }

    #[test]
    fn an_order_is_stamped_and_varies_with_its_number() {
        let before = SystemTime::now();
        let (o, wall, _) = order(1001);
        assert_eq!(o.instrument_id, 1001);
        assert_eq!(o.price, 101);
        assert_eq!(o.quantity, 1);
        assert!(!o.side);
        assert!(order(4).0.side);
        assert!(wall >= before);
        assert_eq!(o.request_time, Some(Timestamp::from(wall)));
        // The frame is the gRPC frame of the order: flag, length, message.
        let f = frame(&o);
        assert_eq!(f[0], 0);
        assert_eq!(
            u32::from_be_bytes([f[1], f[2], f[3], f[4]]) as usize,
            o.encoded_len()
        );
        assert_eq!(Order::decode(&f[5..]).unwrap(), o);
    }
}
