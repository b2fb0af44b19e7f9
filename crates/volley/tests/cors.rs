//! CORS on `volley serve --cors-origin`, checked with curl acting as a browser would: the
//! preflight a gRPC-Web or Connect page sends, and the headers on the replies it reads.

use std::{os::unix::ffi::OsStrExt, process::Command};

use volley_testkit::{Volley, ok_stdout, tool, volley};

const VOLLEY: Volley = volley!();

/// `curl -si` with `args`: the status line and headers (lower-cased) and the body.
fn curl(args: &[&str]) -> (String, String) {
    let out = ok_stdout(Command::new(tool("curl")).args(["-si"]).args(args));
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    (head.to_ascii_lowercase(), body.to_owned())
}

fn preflight(addr: &str, origin: &str, path: &str) -> (String, String) {
    curl(&[
        "-X",
        "OPTIONS",
        "-H",
        &format!("origin: {origin}"),
        "-H",
        "access-control-request-method: POST",
        "-H",
        "access-control-request-headers: content-type,x-grpc-web,x-user-agent,x-tenant",
        &format!("http://{addr}{path}"),
    ])
}

#[test]
fn allowed_origins_get_preflights_and_headers_others_get_none() {
    let p = VOLLEY.serve(&[
        "--cors-origin",
        "http://app.test:5173",
        "--cors-header",
        "x-tenant",
    ]);
    let addr = p.addr().to_string();

    let (head, _) = preflight(&addr, "http://app.test:5173", "/api.Users/Get");
    assert!(head.starts_with("http/1.1 204"), "{head}");
    assert!(
        head.contains("access-control-allow-origin: http://app.test:5173"),
        "{head}"
    );
    assert!(
        head.contains("access-control-allow-methods: get, post"),
        "{head}"
    );
    for h in [
        "x-grpc-web",
        "x-user-agent",
        "grpc-timeout",
        "connect-protocol-version",
        "x-tenant",
    ] {
        assert!(head.contains(h), "{h} not allowed: {head}");
    }
    assert!(head.contains("access-control-max-age: 7200"), "{head}");

    // Another origin, and a preflight for a path that names nothing: no CORS headers, no call.
    let (head, _) = preflight(&addr, "http://evil.test", "/api.Users/Get");
    assert!(head.starts_with("http/1.1 403"), "{head}");
    assert!(!head.contains("access-control-"), "{head}");
    let (head, _) = preflight(&addr, "http://app.test:5173", "/no.Such/Thing");
    assert!(head.starts_with("http/1.1 204"), "{head}");

    // Malformed origins (not a URL; bytes that are not text): refused like any other, no panic.
    let (head, _) = preflight(&addr, "%%not an origin%%", "/api.Users/Get");
    assert!(head.starts_with("http/1.1 403"), "{head}");
    assert!(!head.contains("access-control-"), "{head}");
    let out = Command::new(tool("curl"))
        .args([
            "-si",
            "-X",
            "OPTIONS",
            "-H",
            "access-control-request-method: POST",
            "-H",
        ])
        .arg(std::ffi::OsStr::from_bytes(
            b"origin: http://app.test:5173\xff\x01",
        ))
        .arg(format!("http://{addr}/api.Users/Get"))
        .output()
        .expect("run curl");
    let head = String::from_utf8_lossy(&out.stdout).to_ascii_lowercase();
    assert!(!head.contains("access-control-allow-origin"), "{head}");

    // The call itself, Connect JSON from the allowed origin: the reply is readable.
    let (head, body) = curl(&[
        "-H",
        "origin: http://app.test:5173",
        "-H",
        "content-type: application/json",
        "-d",
        r#"{"id":228}"#,
        &format!("http://{addr}/api.Users/Get"),
    ]);
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(body.contains("Dmitry K."), "{body}");
    assert!(
        head.contains("access-control-allow-origin: http://app.test:5173"),
        "{head}"
    );
    assert!(head.contains("vary: origin"), "{head}");
    let expose = head
        .lines()
        .find(|l| l.starts_with("access-control-expose-headers:"))
        .unwrap_or_default();
    for h in [
        "grpc-status",
        "grpc-message",
        "grpc-status-details-bin",
        "x-tenant",
    ] {
        assert!(expose.contains(h), "{h} not exposed: {head}");
    }

    // gRPC-Web text from the allowed origin: grpc-status travels in the body's trailer frame,
    // and the reply carries the CORS headers.
    let (head, _) = curl(&[
        "-H",
        "origin: http://app.test:5173",
        "-H",
        "content-type: application/grpc-web-text",
        "-H",
        "x-grpc-web: 1",
        "--data-binary",
        "AAAAAAMI5AE=",
        &format!("http://{addr}/api.Users/Get"),
    ]);
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(
        head.contains("access-control-allow-origin: http://app.test:5173"),
        "{head}"
    );

    // A Connect GET (no preflight in a browser) keeps working, with the headers.
    let (head, body) = curl(&[
        "-H",
        "origin: http://app.test:5173",
        &format!("http://{addr}/grpc.testing.TestService/EmptyCall?encoding=json&message=%7B%7D"),
    ]);
    let _ = body;
    assert!(head.contains("access-control-allow-origin"), "{head}");

    // The same call from a disallowed origin runs (CORS is the browser's to enforce) but carries
    // no CORS headers, so a browser would not hand the reply to the page.
    let (head, _) = curl(&[
        "-H",
        "origin: http://evil.test",
        "-H",
        "content-type: application/json",
        "-d",
        r#"{"id":228}"#,
        &format!("http://{addr}/api.Users/Get"),
    ]);
    assert!(!head.contains("access-control-"), "{head}");
}

#[test]
fn any_origin_and_no_cors_at_all() {
    let p = VOLLEY.serve(&["--cors-origin", "*"]);
    let (head, _) = preflight(
        &p.addr().to_string(),
        "http://anywhere.test",
        "/api.Users/Get",
    );
    assert!(head.contains("access-control-allow-origin: *"), "{head}");
    assert!(!head.contains("vary: origin"), "{head}");

    // Without --cors-origin nothing changes: no CORS headers on anything.
    let p = VOLLEY.serve(&[]);
    let (head, _) = preflight(
        &p.addr().to_string(),
        "http://anywhere.test",
        "/api.Users/Get",
    );
    assert!(!head.contains("access-control-"), "{head}");
}
