//! Fuzz bodies for volley-mock: GripMock stub files loaded against the mock conformance suite's
//! proto and asked to answer fixed calls, its reply templates parsed and rendered, and its admin
//! API's requests (any method, path, query and body) answered.

use std::{
    path::{Path, PathBuf},
    sync::OnceLock,
};

use bytes::Bytes;
use http_body_util::Full;
use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage};
use serde_json::{Value, json};
use volley_mock::{Options, Stubs};
use volley_server::Server;

use super::server::{exchange, paused_runtime};

/// `conformance.v1.Conformance` (one method per call kind, request fields of every sort the stub
/// language matches on), compiled once per process from the mock suite's fixture.
fn pool() -> &'static DescriptorPool {
    static POOL: OnceLock<DescriptorPool> = OnceLock::new();
    POOL.get_or_init(|| {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../volley/tests/fixtures/mock");
        let pools = volley_mock::pools(&[dir.join("conformance.proto")], &[dir], &[])
            .expect("the mock conformance proto compiles");
        pools.into_iter().next().expect("one pool")
    })
}

/// A folder of this process's own for the stub file each input writes.
fn dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("volley-fuzz-stubs-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    })
}

/// The request every loaded stub is asked about: a field of each sort the matchers read.
fn request() -> Value {
    json!({
        "name": "equals", "id": 7, "amount": 2.5, "ratio": 0.5, "tags": ["a", "b"],
        "kind": "KIND_A", "inner": {"city": "Oslo", "zip": 150}, "file": "report_1.pdf",
        "flag": true, "uid": {"high": 1, "low": 2}, "raw": "AAEC", "user_id": "user_42"
    })
}

/// GripMock's stubs and templates. The first byte picks:
///
/// - `0`, `1`: the rest is a stub file, JSON (0) or YAML (1, the load-time template pre-pass
///   included), loaded as `volley mock` loads it (bit 2 of the first byte: unknown keys refused,
///   as `volley serve` does). When it loads, each of the four methods is called once with a fixed
///   request and headers through a server's router, the replies read to their end (on a
///   paused clock: stub delays cost nothing).
/// - `2`: the rest is a reply template, parsed and rendered for a fixed call.
pub fn stubs(data: &[u8]) {
    let [mode, rest @ ..] = data else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    match mode % 3 {
        m @ (0 | 1) => {
            let file = dir().join(if m == 0 { "stub.json" } else { "stub.yaml" });
            std::fs::write(&file, text).unwrap();
            let mut options = Options::gripmock();
            options.strict = mode & 4 != 0;
            options.history = 1 << 16;
            let Ok(stubs) = Stubs::load_with(&[file], std::slice::from_ref(pool()), options) else {
                return;
            };
            call_every_method(&stubs);
        }
        _ => {
            let headers = json!({"x-user": "alice", "authorization": "Bearer t"});
            let _ = volley_mock::fuzz_render(text, request(), headers);
        }
    }
}

/// Serves the conformance service from `stubs` and calls each of its methods once through the
/// router, as a gRPC client would (with headers the stubs may match on), reading the replies.
fn call_every_method(stubs: &Stubs) {
    let Ok(services) = volley_mock::services(std::slice::from_ref(pool()), &[], &[], stubs) else {
        return;
    };
    let mut b = Server::builder();
    for s in services {
        b = b.add_service(s);
    }
    let server = b.build().expect("a server of the conformance service");
    let mut router = server.router();
    let one = DynamicMessage::deserialize(
        pool()
            .get_message_by_name("conformance.v1.Req")
            .expect("the request type"),
        request(),
    )
    .expect("the request fits")
    .encode_to_vec();
    let mut frame = vec![0];
    frame.extend_from_slice(&(one.len() as u32).to_be_bytes());
    frame.extend_from_slice(&one);
    paused_runtime().block_on(async {
        for (method, messages) in [
            ("Unary", 1),
            ("ServerStream", 1),
            ("ClientStream", 2),
            ("Bidi", 2),
        ] {
            let req = http::Request::builder()
                .method("POST")
                .uri(format!("/conformance.v1.Conformance/{method}"))
                .header("content-type", "application/grpc")
                .header("te", "trailers")
                .header("x-user", "alice")
                .header("x-gripmock-session", "s1")
                .body(Full::new(Bytes::from(frame.repeat(messages))))
                .expect("a request");
            // No limit: a stub may ask for any delay (they cost no wall time on a paused clock);
            // a call that never ends with no timer left hangs, which libFuzzer reports.
            exchange(&mut router, req, None).await;
        }
    });
}

/// The stubs an admin request meets, added over the API to a table of each input's own (so a
/// request that deletes or adds changes only it), with a call of each kind in the history.
const ADMIN_STUBS: &str = r#"[
  {"id": "2f3c9e2a-5a4b-4c1e-9f0a-111111111111", "service": "conformance.v1.Conformance",
   "method": "Unary", "input": {"equals": {"name": "equals"}}, "output": {"data": {"message": "x"}}},
  {"service": "conformance.v1.Conformance", "method": "ServerStream",
   "input": {"contains": {"id": 7}}, "output": {"stream": [{"message": "a"}, {"message": "b"}]}}
]"#;

/// GripMock's admin API, request by request: the first byte picks the method (GET, POST,
/// DELETE, PUT, PATCH), the rest is `path?query`, a newline, then the body, answered on every
/// route the admin port has (`/api/stubs/{id}` ones too) against a few stubs and a history.
pub fn admin_api(data: &[u8]) {
    let [pick, rest @ ..] = data else {
        return;
    };
    let method = match pick % 5 {
        0 => http::Method::GET,
        1 => http::Method::POST,
        2 => http::Method::DELETE,
        3 => http::Method::PUT,
        _ => http::Method::PATCH,
    };
    let (target, body) = match rest.iter().position(|b| *b == b'\n') {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &[][..]),
    };
    let Ok(target) = std::str::from_utf8(target) else {
        return;
    };
    let target = if target.starts_with('/') {
        target.to_owned()
    } else {
        format!("/{target}")
    };
    let Ok(uri) = target.parse::<http::Uri>() else {
        return;
    };
    let mut options = Options::gripmock();
    options.history = 1 << 16;
    let stubs =
        Stubs::load_with(&[], std::slice::from_ref(pool()), options).expect("an empty stub table");
    let mut add = http::Request::new(Bytes::from_static(ADMIN_STUBS.as_bytes()));
    *add.method_mut() = http::Method::POST;
    *add.uri_mut() = http::Uri::from_static("/api/stubs");
    let added = volley_mock::admin::respond(&stubs, &add);
    assert_eq!(added.status(), http::StatusCode::OK, "{:?}", added.body());
    call_every_method(&stubs);
    let mut req = http::Request::new(Bytes::copy_from_slice(body));
    *req.method_mut() = method;
    *req.uri_mut() = uri;
    req.headers_mut()
        .insert("x-gripmock-session", http::HeaderValue::from_static("s1"));
    let _ = volley_mock::admin::respond(&stubs, &req);
}
