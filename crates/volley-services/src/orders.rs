//! `orders.OrderService` (seed 004): every order is answered with `result: true` and the server's
//! receive time, one reply per order, in order; `AddOrder` streams both ways, `AddOrderUnary` is
//! its one-call-per-order twin.

use std::time::SystemTime;

use futures_util::StreamExt;
use prost_types::Timestamp;
use volley_server::{Request, Response, Service, Streaming};

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
        .unary("AddOrderUnary", move |_: Request<Order>| async move {
            let received = SystemTime::now();
            opts.wait().await;
            Ok(Response::new(reply(received)))
        })
        .bidi_streaming(
            "AddOrder",
            move |req: Request<Streaming<Order>>| async move {
                let replies = req.into_inner().then(move |order| async move {
                    let received = SystemTime::now();
                    opts.wait().await;
                    order.map(|_| reply(received))
                });
                Ok(Response::new(replies))
            },
        )
        .build()
}
