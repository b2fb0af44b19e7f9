//! What the unit tests share: a pool every build has (health, reflection and the common Google
//! types, `google.rpc` details among them), its methods, messages from JSON, stubs loaded over
//! the API, fresh temporary folders and a runtime to await answers on.

use std::{
    future::Future,
    path::PathBuf,
    sync::atomic::{AtomicUsize, Ordering},
};

use http::HeaderMap;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, MethodDescriptor};
use serde_json::Value;

use crate::{
    model::Origin,
    stubs::{Options, Stubs},
};

/// `grpc.health.v1.Health` (unary `Check`, server-streaming `Watch`), `grpc.reflection.v1`
/// (bidi `ServerReflectionInfo`) and `google.rpc.ErrorInfo` in one pool.
pub(crate) fn pool() -> DescriptorPool {
    let mut pool = crate::health::pool();
    volley_proto::load::add_common(&mut pool).expect("the common protos compile");
    pool
}

/// `service`'s method `name` in `pool`.
pub(crate) fn method(pool: &DescriptorPool, service: &str, name: &str) -> MethodDescriptor {
    pool.get_service_by_name(service)
        .and_then(|s| s.methods().find(|m| m.name() == name))
        .unwrap_or_else(|| panic!("{service}/{name} is in the pool"))
}

/// `grpc.health.v1.Health/Check`.
pub(crate) fn check(pool: &DescriptorPool) -> MethodDescriptor {
    method(pool, "grpc.health.v1.Health", "Check")
}

/// A message of type `desc` from its JSON.
pub(crate) fn msg(desc: MessageDescriptor, json: Value) -> DynamicMessage {
    DynamicMessage::deserialize(desc, json).expect("the JSON fits the message")
}

/// Stubs of `pool`, behaving as `options` say, with `list` added over the API.
pub(crate) fn stubs_with(pool: &DescriptorPool, options: Options, list: Value) -> Stubs {
    let stubs = Stubs::load_with(&[], std::slice::from_ref(pool), options).unwrap();
    let values = list.as_array().cloned().unwrap_or_default();
    if !values.is_empty() {
        stubs.upsert(&values, Origin::Rest, None).unwrap();
    }
    stubs
}

/// Stubs as `volley mock` keeps them (GripMock's texts, the history on).
pub(crate) fn stubs(pool: &DescriptorPool, list: Value) -> Stubs {
    stubs_with(pool, Options::gripmock(), list)
}

/// A new empty folder under the system's temporary folder, unique to this process and call.
pub(crate) fn temp_dir(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "volley-mock-{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `f` to its end on a current-thread runtime with timers.
pub(crate) fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(f)
}

/// A response's headers, trailers and message (or stream), apart.
pub(crate) fn split<T>(resp: volley_server::Response<T>) -> (HeaderMap, HeaderMap, T) {
    let mut message = None;
    let mut rest = resp.map(|m| message = Some(m));
    (
        std::mem::take(rest.metadata_mut()),
        std::mem::take(rest.trailers_mut()),
        message.expect("map runs once"),
    )
}
