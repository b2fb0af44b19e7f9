//! volley-mock: a mock gRPC server for services loaded at run time, answering from stubs in
//! GripMock's language, so GripMock users bring their stub folders and commands unchanged.
//!
//! Layout, in the order a stub travels:
//! - `format`: the stub files' raw forms (JSON or YAML, one stub or a list) and their keys;
//! - `template`: GripMock's templates (Go's `text/template` and its functions), the YAML
//!   pre-pass run at load, and the reply templates run per call;
//! - `load`: stub files and folders, read at start; `watch`: read again when they change;
//! - `check`: each stub checked against the served descriptors into a `model::Stub`;
//! - `matcher`: input and headers matchers, GripMock's ranking, the per-method index;
//! - `stubs`: the table of stubs in force, shared by the calls and the admin API;
//! - `scenario`: WireMock's scenarios, the stubs' states across calls;
//! - `pick`: the stub a call (or a stream's message) picks, or NOT_FOUND (`notfound`);
//! - `answer`: the four call kinds answered from the stub picked;
//! - `history`: the calls seen;
//! - `admin`: GripMock's admin API (HTTP);
//! - `health`: `grpc.health.v1.Health`, stubbable;
//! - `defaults`: default messages for methods with no stubs (`volley serve`), the services of
//!   a pool;
//! - the protos served (files, folders, descriptor sets): `volley_proto::load::load_sources`;
//! - `contract`: `volley mock verify --against`, stubs checked against the real service;
//! - `record`: record and replay, proxying calls to an upstream and writing them as stubs;
//! - `testing`: the mock inside a Rust test ([`testing::MockServer`], wiremock's shape);
//! - `server`: `volley mock`, all of the above on GripMock's ports;
//! - `error`: why it could not start ([`MockError`]).

pub mod admin;
pub(crate) mod answer;
mod check;
pub mod contract;
pub mod defaults;
mod error;
mod format;
pub mod health;
mod history;
mod load;
mod matcher;
mod model;
mod notfound;
mod pick;
pub mod record;
mod scenario;
pub mod server;
pub mod stubs;
mod template;
pub mod testing;
#[cfg(test)]
mod testkit;
mod watch;

pub use defaults::{Defaults, pools, services};
pub use error::MockError;
pub use model::Origin;
pub use server::{Config, StopSignal, run};
pub use stubs::{Options, Stubs};
#[doc(hidden)]
pub use template::fuzz_render;
