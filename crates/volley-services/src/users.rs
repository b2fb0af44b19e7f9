//! `api.Users` (seed 000): `Get` answers one fixed user with the requested id; `List` streams ten.

use futures_util::stream;
use volley_server::{Request, Response, Status};

use crate::{
    Options,
    pb::api::{
        GetUserRequest, ListUserRequest, User,
        users_server::{Users, UsersServer},
    },
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

/// The users of `List`, named so that no box is needed: a fn pointer, not a closure.
pub type UserList =
    stream::Iter<std::iter::Map<std::ops::Range<i64>, fn(i64) -> Result<User, Status>>>;

/// The user service, on the generated `Users` trait.
#[derive(Clone, Copy, Debug, Default)]
pub struct UserService {
    opts: Options,
}

impl Users for UserService {
    async fn get(&self, req: Request<GetUserRequest>) -> Result<Response<User>, Status> {
        self.opts.wait().await;
        Ok(Response::new(get_reply(req.get_ref().id)))
    }

    type ListStream = UserList;

    async fn list(&self, _: Request<ListUserRequest>) -> Result<Response<UserList>, Status> {
        self.opts.wait().await;
        let item: fn(i64) -> Result<User, Status> = |i| Ok(list_item(i));
        Ok(Response::new(stream::iter((0..LIST_LEN).map(item))))
    }
}

/// `api.Users` on volley-server.
pub fn service(opts: Options) -> UsersServer<UserService> {
    UsersServer::new(UserService { opts })
}
