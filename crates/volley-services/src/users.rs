//! `api.Users` (seed 000): `Get` answers one fixed user with the requested id; `List` streams ten.

use futures_util::stream;
use volley_server::{Request, Response, Service, Status};

use crate::{
    Options,
    pb::api::{GetUserRequest, ListUserRequest, User},
};

/// The service name.
pub const NAME: &str = "api.Users";

/// How many users `List` streams.
pub const LIST_LEN: i64 = 10;

/// The user `Get` answers, carrying the requested id.
pub fn get_reply(id: i64) -> User {
    User {
        id,
        email: "dmitry.k@test.tld".into(),
        name: "Dmitry K.".into(),
        rating: 228.53,
    }
}

/// The i-th user of `List`.
pub fn list_item(i: i64) -> User {
    User {
        id: i,
        email: format!("user{i}@test"),
        name: format!("User {i}"),
        rating: i as f64 * 1.53,
    }
}

/// `api.Users` on volley-server.
pub fn service(opts: Options) -> Service {
    Service::builder(NAME)
        .unary("Get", move |req: Request<GetUserRequest>| async move {
            opts.wait().await;
            Ok(Response::new(get_reply(req.get_ref().id)))
        })
        .server_streaming("List", move |_: Request<ListUserRequest>| async move {
            opts.wait().await;
            let users = stream::iter((0..LIST_LEN).map(|i| Ok::<_, Status>(list_item(i))));
            Ok(Response::new(users))
        })
        .build()
}
