//! `orders.OrderService` (seed 004): every order is answered with `result: true` and the server's
//! receive time, one reply per order, in order; `AddOrder` streams both ways, `AddOrderUnary` is
//! its one-call-per-order twin.
//!
//! An order without `requestTime` is refused: INVALID_ARGUMENT for the unary call; on the stream,
//! where a status would end every later order too, a reply with `result: false` (and the stream
//! goes on).

use std::{pin::Pin, time::SystemTime};

use futures_util::{Stream, StreamExt};
use prost_types::Timestamp;
use volley_server::{Request, Response, Status, Streaming};

use crate::{
    Options,
    pb::orders::{
        Order, OrderReply,
        order_service_server::{OrderService, OrderServiceServer},
    },
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

/// Replies to a stream of orders, one per order, in order.
pub type OrderReplies = Pin<Box<dyn Stream<Item = Result<OrderReply, Status>> + Send>>;

/// The order service, on the generated `OrderService` trait.
#[derive(Clone, Copy, Debug, Default)]
pub struct Orders {
    opts: Options,
}

impl OrderService for Orders {
    async fn add_order_unary(&self, req: Request<Order>) -> Result<Response<OrderReply>, Status> {
        let received = SystemTime::now();
        if req.get_ref().request_time.is_none() {
            return Err(Status::invalid_argument("order has no requestTime"));
        }
        self.opts.wait().await;
        Ok(Response::new(reply(received)))
    }

    type AddOrderStream = OrderReplies;

    async fn add_order(
        &self,
        req: Request<Streaming<Order>>,
    ) -> Result<Response<OrderReplies>, Status> {
        let opts = self.opts;
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
        Ok(Response::new(Box::pin(replies)))
    }
}

/// `orders.OrderService` on volley-server.
pub fn service(opts: Options) -> OrderServiceServer<Orders> {
    OrderServiceServer::new(Orders { opts })
}
