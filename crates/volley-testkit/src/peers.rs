//! What several tests ask of the same peers: grpc-go's interop client's cases, and the browser
//! example (`examples/browser`) driven in headless Chromium, its results checked.

use std::process::Command;

use serde_json::{Value, json};

use crate::{ok_stdout, tool, workspace};

/// The cases grpc-go's interop client (v1.85.0) has, which every server under test must pass.
pub const GO_INTEROP_CASES: &[&str] = &[
    "empty_unary",
    "large_unary",
    "client_streaming",
    "server_streaming",
    "ping_pong",
    "empty_stream",
    "timeout_on_sleeping_server",
    "cancel_after_begin",
    "cancel_after_first_response",
    "status_code_and_message",
    "special_status_message",
    "custom_metadata",
    "unimplemented_method",
    "unimplemented_service",
    "rpc_soak",
    "channel_soak",
];

/// The protocols the browser example calls over.
pub const BROWSER_PROTOCOLS: [&str; 3] = ["connect-json", "connect-proto", "grpc-web"];

/// Loads `url` (the example page, its `?api=` naming the server) in headless Chromium and
/// returns what the page's calls gave and what the browser logged.
pub fn drive_browser_example(url: &str) -> Value {
    let dir = workspace().join("examples/browser");
    assert!(
        dir.join("dist/app.js").is_file() && dir.join("node_modules/puppeteer-core").is_dir(),
        "examples/browser is not built: run scripts/install-test-tools"
    );
    let out = ok_stdout(
        Command::new(tool("node"))
            .arg("test/drive.mjs")
            .arg(url)
            .current_dir(&dir),
    );
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("drive.mjs printed {out:?}: {e}"))
}

/// Checks the example page's results over every protocol: the greeting, the user, the
/// stream, a request header echoed back through CORS, TestService's stream, an error with its
/// code and message.
pub fn assert_browser_example_results(seen: &Value) {
    for p in BROWSER_PROTOCOLS {
        let r = &seen["results"][p];
        assert!(r.get("failure").is_none(), "{p}: {seen}");
        assert_eq!(r["hello"], "Hello browser", "{p}: {r}");
        assert_eq!(
            r["user"],
            json!({"id": "7", "name": "Dmitry K."}),
            "{p}: {r}"
        );
        assert_eq!(
            r["streamed"],
            json!([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]),
            "{p}: {r}"
        );
        // A request header the preflight allowed, echoed in a response header CORS exposed.
        assert_eq!(r["echoedHeader"], "from-the-page", "{p}: {r}");
        assert_eq!(r["testStream"], json!([1, 2, 3]), "{p}: {r}");
        assert_eq!(
            r["error"],
            json!({"code": "InvalidArgument", "message": "the page asked for this error"}),
            "{p}: {r}"
        );
    }
}
