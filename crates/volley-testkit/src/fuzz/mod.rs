//! The bodies of the cargo-fuzz targets (`fuzz/fuzz_targets/*.rs`), here so that the regression
//! inputs in `fuzz/regressions/<target>/` replay under plain `cargo test` on stable Rust.
//!
//! Each takes arbitrary bytes and must return without panicking, hanging or allocating without
//! bound; errors are fine (they are the point). The wire-level bodies are here; the others are
//! grouped by what they feed: `server` (a real server's HTTP/2 input and its protocols'
//! envelopes), `mock` (GripMock stubs and templates, the admin API), `call` (`volley call`'s
//! command line and `-d` JSON), `bench` (the bench's plan parsers) and `config` (service
//! configs and REST path templates).

mod bench;
mod call;
mod config;
mod mock;
mod server;

pub use bench::bench_parsers;
pub use call::{call_args, call_json};
pub use config::service_config;
pub use mock::{admin_api, stubs};
pub use server::{envelopes, server_frames};

use std::{
    path::{Path, PathBuf},
    sync::OnceLock,
};

use bytes::Bytes;
use prost_reflect::MessageDescriptor;
use volley_proto::template::{CallData, Template};
use volley_wire::{codec::FrameDecoder, compression::Encoding};

/// A fuzz target's body.
pub type Target = fn(&[u8]);

/// The fuzz targets, by name (as in `fuzz/Cargo.toml`).
pub const TARGETS: &[(&str, Target)] = &[
    ("framing", framing),
    ("json_message", json_message),
    ("proto_schema", proto_schema),
    ("call_template", call_template),
    ("fast_frames", fast_frames),
    ("server_frames", server_frames),
    ("envelopes", envelopes),
    ("stubs", stubs),
    ("bench_parsers", bench_parsers),
    ("service_config", service_config),
    ("call_args", call_args),
    ("call_json", call_json),
    ("admin_api", admin_api),
];

/// gRPC length-prefixed framing: the first byte picks the receive limit and whether gzip is the
/// call's encoding, the second where the rest is split into two network chunks; every message is
/// taken out until the decoder wants more or fails.
pub fn framing(data: &[u8]) {
    let [mode, split, rest @ ..] = data else {
        return;
    };
    let encoding = (mode & 1 == 1).then_some(Encoding::Gzip);
    let max = 1usize << (4 + (mode >> 4)); // 16 B .. 512 KiB
    let mut dec = FrameDecoder::new(encoding, max);
    let at = (*split as usize).min(rest.len());
    for chunk in [&rest[..at], &rest[at..]] {
        dec.push(Bytes::copy_from_slice(chunk));
        while let Ok(Some(m)) = dec.next_message() {
            assert!(m.len() <= max, "a message over the limit got through");
        }
    }
}

/// The interop suite's messages (nested messages, enums, maps, bytes, repeated fields): a rich
/// schema for JSON input, compiled once per process.
fn interop_messages() -> &'static [MessageDescriptor] {
    static MESSAGES: OnceLock<Vec<MessageDescriptor>> = OnceLock::new();
    MESSAGES.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../proto");
        volley_proto::load::compile_proto(&root.join("grpc/testing/test.proto"), &[root])
            .expect("the interop protos compile")
            .all_messages()
            .collect()
    })
}

/// JSON to message, as `volley bench -d` and the server's JSON codecs do it: the first byte picks
/// the message type, the rest is the JSON text. Messages that parse are encoded, decoded and
/// turned back into JSON by the server's transcoder.
pub fn json_message(data: &[u8]) {
    let [pick, rest @ ..] = data else {
        return;
    };
    let messages = interop_messages();
    let desc = &messages[*pick as usize % messages.len()];
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    if let Ok(msgs) = volley_proto::message::from_json(desc, text) {
        for wire in volley_proto::message::encode_all(&msgs) {
            let json = volley_server::transcode::proto_to_json(desc, &wire)
                .expect("a message we encoded transcodes to JSON");
            volley_server::transcode::json_to_proto(desc, &json)
                .expect("JSON the server wrote reads back");
        }
    }
    let _ = volley_server::transcode::json_to_proto(desc, rest);
}

/// The schema loader of `volley bench --proto`: the bytes are a .proto file, compiled with its
/// imports resolved beside it (a second file, `dep.proto`, holds a fixed message).
pub fn proto_schema(data: &[u8]) {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("volley-fuzz-proto-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("dep.proto"),
            "syntax = \"proto3\";\npackage dep;\nmessage D { string s = 1; }\n",
        )
        .unwrap();
        d
    });
    let file = dir.join("fuzz.proto");
    std::fs::write(&file, data).unwrap();
    if let Ok(pool) = volley_proto::load::compile_proto(&file, std::slice::from_ref(dir)) {
        for s in pool.services() {
            for m in s.methods() {
                let call = format!("{}/{}", s.full_name(), m.name());
                volley_proto::schema::resolve(&pool, &call).expect("a method of the pool resolves");
            }
        }
    }
}

/// Call-data templates (`-d '{"id": {{.RequestNumber}}}'`): parsed with and without the function
/// library and rendered with fixed call data.
pub fn call_template(data: &[u8]) {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let call = CallData {
        worker_id: "g0c0".into(),
        request_number: 42,
        fully_qualified_name: "api.Users.Get".into(),
        method_name: "Get".into(),
        service_name: "api.Users".into(),
        input_name: "api.GetUserRequest".into(),
        output_name: "api.User".into(),
        timestamp_unix_nano: 1_700_000_000_000_000_000,
        uuid: "00000000-0000-4000-8000-000000000000".into(),
        ..Default::default()
    };
    for functions in [false, true] {
        if let Ok(t) = Template::parse_with(src, functions) {
            let mut out = String::new();
            let _ = t.render(&call, &mut out);
        }
    }
    // Differential: a template compiled to protobuf must encode what the JSON route encodes
    // (render, parse, encode), for one of the interop messages.
    let Ok(t) = Template::parse(src) else {
        return;
    };
    let messages = interop_messages();
    let desc = &messages[src.len() % messages.len()];
    let Some(compiled) = volley_proto::template::ProtoTemplate::compile(&t, desc, &call) else {
        return;
    };
    let mut ours = Vec::new();
    if !compiled.encode(&call, &mut ours).unwrap_or(false) {
        return;
    }
    // Random functions render differently each time: only the encoding's success is checked.
    if src.contains("random") || src.contains("newUUID") {
        return;
    }
    let mut json = String::new();
    t.render(&call, &mut json).expect("the JSON route renders");
    let msgs = volley_proto::message::from_json(desc, &json)
        .unwrap_or_else(|e| panic!("compiled {src:?} to {ours:?}, the JSON route refuses: {e}"));
    let theirs = volley_proto::message::encode_all(&msgs);
    assert_eq!(theirs.len(), 1, "{src:?}");
    assert_eq!(
        ours,
        theirs[0].to_vec(),
        "{src:?} against {}",
        desc.full_name()
    );
}

/// The bench's fast HTTP/2 client (`volley_client::load::fast`) reading whatever a server sends: a
/// valid SETTINGS frame, then the input as the server's bytes, then the end of the stream; two
/// calls go out meanwhile. Whatever the bytes, the calls must end (with a status) and nothing may
/// panic or grow without bound.
pub fn fast_frames(data: &[u8]) {
    use tokio::io::AsyncWriteExt;
    use volley_client::load::fast::{FastConnection, frame::HeaderBlock};
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let (client, mut server) = tokio::io::duplex(1 << 16);
        // SETTINGS with no parameters, then the input.
        let mut bytes = vec![0, 0, 0, 4, 0, 0, 0, 0, 0];
        bytes.extend_from_slice(data);
        let writer = tokio::task::spawn_local(async move {
            let _ = server.write_all(&bytes).await;
            let _ = server.shutdown().await;
            // Keep reading what the client sends until it closes, so that it never blocks.
            let mut sink = [0u8; 4096];
            while let Ok(n) = tokio::io::AsyncReadExt::read(&mut server, &mut sink).await {
                if n == 0 {
                    break;
                }
            }
        });
        let Ok(conn) = FastConnection::handshake(client).await else {
            return;
        };
        let head = volley_client::CallHead::new("http", "x:1", "/a.B/C", &[], None, false)
            .expect("a call head");
        let block = HeaderBlock::of(&head);
        let body = Bytes::from_static(&[0, 0, 0, 0, 0]);
        let calls = futures_join(conn.unary(&block, body.clone()), conn.unary(&block, body));
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), calls)
            .await
            .expect("the calls end once the server's bytes do");
        drop(conn);
        let _ = writer.await;
    });
}

/// Both futures to completion.
async fn futures_join<A: std::future::Future, B: std::future::Future>(
    a: A,
    b: B,
) -> (A::Output, B::Output) {
    tokio::join!(a, b)
}
