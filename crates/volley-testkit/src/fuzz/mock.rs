//! Fuzz body for volley-mock: GripMock stub files loaded against the mock conformance suite's
//! proto and asked to answer fixed calls, and its reply templates parsed and rendered.

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
