//! The Connect conformance suite (connectconformance v1.0.7, server mode) against volley-server:
//! its Go reference client calls our ConformanceService over Connect, gRPC and gRPC-Web, HTTP/1.1
//! and HTTP/2, plaintext, TLS and TLS with client certificates, proto and JSON, identity and gzip,
//! every stream type. Every case must pass; there is no known-failing list.

use std::{path::Path, process::Command};

use volley_testkit::tool;

#[test]
fn connect_conformance_suite_passes_for_connect_grpc_and_grpc_web() {
    let runner = tool("connectconformance");
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/config.yaml");
    let out = Command::new(runner)
        .args(["--mode", "server", "--conf"])
        .arg(&config)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_volley-conformance-server"))
        .output()
        .expect("run connectconformance");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let summary = stdout
        .lines()
        .chain(stderr.lines())
        .find(|l| l.contains(" passed, ") && l.ends_with(" failed"))
        .unwrap_or_else(|| panic!("no summary line\nstdout:\n{stdout}\nstderr:\n{stderr}"));
    let numbers: Vec<usize> = summary
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    let (passed, failed) = (numbers[0], numbers[1]);
    assert!(
        out.status.success() && failed == 0,
        "{summary}\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    // The config enables 3 protocols x 2 HTTP versions x 2 codecs x 2 compressions x TLS on/off
    // (plus client-cert cases): thousands of cases. Far fewer means the config stopped matching.
    assert!(passed >= 3000, "only {passed} cases ran: {summary}");
    println!("connect conformance: {summary}");
}
