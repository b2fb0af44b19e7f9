//! gRPC-Web and Connect from a real web page: headless Chromium (Debian's) loads the example in
//! `examples/browser` from one origin and calls `volley serve` on another port through
//! `@connectrpc/connect-web`, over Connect JSON, Connect proto and gRPC-Web. The browser enforces
//! CORS, which curl does not: with the page's origin not allowed, it refuses, and no call runs.

use std::{path::PathBuf, process::Command};

use volley_testkit::{
    Volley, ok_stdout,
    pages::StaticFiles,
    peers::{BROWSER_PROTOCOLS, assert_browser_example_results, drive_browser_example},
    tool, volley, workspace,
};

const VOLLEY: Volley = volley!();

fn example() -> PathBuf {
    workspace().join("examples/browser")
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
    let seen = drive_browser_example(&format!("{origin}/index.html?api=http://{}", api.addr()));
    assert_browser_example_results(&seen);
}

#[test]
fn a_page_on_an_origin_not_allowed_is_refused_by_the_browser_and_runs_no_call() {
    let pages = StaticFiles::serve(example());
    // The same files, but the page is loaded as http://localhost:PORT: another origin.
    let allowed = format!("http://127.0.0.1:{}", pages.port());
    let api = VOLLEY.serve(&["--cors-origin", &allowed, "--metrics"]);
    let seen = drive_browser_example(&format!(
        "http://localhost:{}/index.html?api=http://{}",
        pages.port(),
        api.addr()
    ));
    for p in BROWSER_PROTOCOLS {
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
