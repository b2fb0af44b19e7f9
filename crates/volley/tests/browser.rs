//! gRPC-Web and Connect from a real web page: headless Chromium (Debian's) loads the example in
//! `examples/browser` from one origin and calls `volley serve` on another port through
//! `@connectrpc/connect-web`, over Connect JSON, Connect proto and gRPC-Web. The browser enforces
//! CORS, which curl does not: with the page's origin not allowed, it refuses, and no call runs.

use std::{path::PathBuf, process::Command};

use serde_json::{Value, json};
use volley_testkit::{Volley, ok_stdout, pages::StaticFiles, tool, volley, workspace};

const VOLLEY: Volley = volley!();

const PROTOCOLS: [&str; 3] = ["connect-json", "connect-proto", "grpc-web"];

fn example() -> PathBuf {
    workspace().join("examples/browser")
}

/// Loads `url` in headless Chromium and returns what the page's calls gave and what the
/// browser logged.
fn drive(url: &str) -> Value {
    let dir = example();
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

#[test]
fn a_page_on_an_allowed_origin_calls_unary_and_streaming_methods_over_all_three_protocols() {
    let pages = StaticFiles::serve(example());
    let origin = format!("http://127.0.0.1:{}", pages.port());
    let api = VOLLEY.serve(&[
        "--cors-origin",
        &origin,
        "--cors-header",
        "x-grpc-test-echo-initial",
    ]);
    let seen = drive(&format!("{origin}/index.html?api=http://{}", api.addr()));
    for p in PROTOCOLS {
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
        assert_eq!(
            r["error"],
            json!({"code": "InvalidArgument", "message": "the page asked for this error"}),
            "{p}: {r}"
        );
    }
}

#[test]
fn a_page_on_an_origin_not_allowed_is_refused_by_the_browser_and_runs_no_call() {
    let pages = StaticFiles::serve(example());
    // The same files, but the page is loaded as http://localhost:PORT: another origin.
    let allowed = format!("http://127.0.0.1:{}", pages.port());
    let api = VOLLEY.serve(&["--cors-origin", &allowed, "--metrics"]);
    let seen = drive(&format!(
        "http://localhost:{}/index.html?api=http://{}",
        pages.port(),
        api.addr()
    ));
    for p in PROTOCOLS {
        let r = &seen["results"][p];
        assert!(r.get("hello").is_none(), "{p} got through: {r}");
        assert_eq!(r["failure"]["message"], "Failed to fetch", "{p}: {r}");
    }
    let logged = seen["logged"].to_string();
    assert!(
        logged.contains("has been blocked by CORS policy"),
        "the browser did not report a CORS refusal: {logged}"
    );
    // The preflights were refused, so no call reached a handler or an interceptor.
    let metrics = ok_stdout(
        Command::new(tool("curl")).args(["-s", &format!("http://{}/metrics", api.addr())]),
    );
    assert!(metrics.contains("# EOF"), "{metrics}");
    assert!(
        !metrics.contains("helloworld.Greeter/SayHello"),
        "a refused origin's call ran: {metrics}"
    );
}
