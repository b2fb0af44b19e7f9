//! `orders.OrderService` (seed 004): every order is answered with `result: true` and the server's
//! receive time, one reply per order, in order; `AddOrder` streams both ways, `AddOrderUnary` is
//! its one-call-per-order twin.
//!
//! An order without `requestTime` is refused: INVALID_ARGUMENT for the unary call; on the stream,
//! where a status would end every later order too, a reply with `result: false` (and the stream
//! goes on).

use std::time::SystemTime;

use futures_util::StreamExt;
use prost_types::Timestamp;
use volley_server::{Request, Response, Service, Status, Streaming};

use crate::{
    Options,
    pb::orders::{Order, OrderReply},
};

/// The service name.
pub const NAME: &str = "orders.OrderService";

/// The reply to an order received at `at`.
pub fn reply(at: SystemTime) -> OrderReply {
    OrderReply {
        result: true,
        response_time: Some(Timestamp::from(at)),
    }
}

/// `orders.OrderService` on volley-server.
pub fn service(opts: Options) -> Service {
    Service::builder(NAME)
        .unary("AddOrderUnary", move |req: Request<Order>| async move {
            let received = SystemTime::now();
            if req.get_ref().request_time.is_none() {
                return Err(Status::invalid_argument("order has no requestTime"));
            }
            opts.wait().await;
            Ok(Response::new(reply(received)))
        })
        .bidi_streaming(
            "AddOrder",
            move |req: Request<Streaming<Order>>| async move {
                let replies = req.into_inner().then(move |order| async move {
                    let received = SystemTime::now();
                    opts.wait().await;
                    order.map(|o| match o.request_time {
                        Some(_) => reply(received),
                        None => OrderReply {
                            result: false,
                            response_time: Some(Timestamp::from(received)),
                        },
                    })
                });
                Ok(Response::new(replies))
            },
        )
        .build()
}
