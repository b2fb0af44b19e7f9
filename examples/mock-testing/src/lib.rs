//! The code under test: a checkout that talks to the `orders.v1.Orders` service through
//! volley's generated client. Its tests (`tests/`) run it against volley-mock's `MockServer`
//! instead of the real service.

use volley_client::{Channel, Request, Status};

/// Package `orders.v1`: the messages, `orders_server` and `orders_client`.
#[allow(missing_docs)]
pub mod pb {
    volley_server::include_proto!("orders.v1");
}

use pb::{GetOrderRequest, Item, Note, PayRequest, order, orders_client::OrdersClient};

/// Pays orders and follows them.
#[derive(Clone)]
pub struct Checkout {
    client: OrdersClient<Channel>,
}

impl Checkout {
    /// A checkout over `channel`.
    pub fn new(channel: Channel) -> Checkout {
        Checkout {
            client: OrdersClient::new(channel),
        }
    }

    /// A checkout of the service at `uri` (`http://host:port`).
    pub async fn connect(uri: String) -> Result<Checkout, Box<dyn std::error::Error>> {
        Ok(Checkout {
            client: OrdersClient::connect(uri).await?,
        })
    }

    /// Pays order `id` unless it is paid already; the order's status after.
    pub async fn pay(&self, id: &str, cents: i64) -> Result<order::Status, Status> {
        let get = || GetOrderRequest { id: id.to_owned() };
        let before = self
            .client
            .get_order(Request::new(get()))
            .await?
            .into_inner();
        if before.status() == order::Status::Paid {
            return Ok(order::Status::Paid);
        }
        let pay = PayRequest {
            id: id.to_owned(),
            cents,
        };
        self.client.pay(Request::new(pay)).await?;
        let after = self
            .client
            .get_order(Request::new(get()))
            .await?
            .into_inner();
        Ok(after.status())
    }

    /// The statuses order `id` goes through, as the service streams them.
    pub async fn follow(&self, id: &str) -> Result<Vec<order::Status>, Status> {
        let req = GetOrderRequest { id: id.to_owned() };
        let mut stream = self
            .client
            .watch_order(Request::new(req))
            .await?
            .into_inner();
        let mut seen = Vec::new();
        while let Some(o) = stream.message().await? {
            seen.push(o.status());
        }
        Ok(seen)
    }

    /// An order of `items`; its id.
    pub async fn order(&self, items: Vec<Item>) -> Result<String, Status> {
        let reply = self
            .client
            .add_items(Request::new(futures_util::stream::iter(items)))
            .await?;
        Ok(reply.into_inner().id)
    }

    /// Sends `notes` and reads every note back.
    pub async fn chat(&self, notes: &[&str]) -> Result<Vec<String>, Status> {
        let out: Vec<Note> = notes
            .iter()
            .map(|t| Note {
                text: (*t).to_owned(),
            })
            .collect();
        let mut inbound = self
            .client
            .chat(Request::new(futures_util::stream::iter(out)))
            .await?
            .into_inner();
        let mut back = Vec::new();
        while let Some(n) = inbound.message().await? {
            back.push(n.text);
        }
        Ok(back)
    }
}
