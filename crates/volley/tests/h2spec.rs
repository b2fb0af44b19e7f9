//! HTTP/2 conformance: h2spec (v2.2.1, 145 cases) against `volley serve`, plaintext and TLS.
//! The one case we fail, and why it is not ours to fix without giving something up:
//! 3.5/2 "Sends invalid connection preface": the port also speaks HTTP/1.1 (gRPC-Web, Connect,
//! REST, `GET /`), so a preface that is not HTTP/2's is read as an HTTP/1.1 request and answered
//! (400, as RFC 9112 section 3 asks) instead of the connection being closed; docs/limits.md
//! says why that is kept. (grpc-go's server passes 113 of 145.)

use std::{path::Path, process::Command};

use volley_testkit::{VolleyProcess, tool};

const KNOWN_FAILURES: &[&str] = &["2: Sends invalid connection preface"];

fn h2spec(port: u16, tls: bool) -> (usize, usize, Vec<String>) {
    let mut cmd = Command::new(tool("h2spec"));
    cmd.args(["-h", "127.0.0.1", "-p", &port.to_string(), "-o", "2"]);
    if tls {
        cmd.args(["-t", "-k"]);
    }
    let out = cmd.output().expect("run h2spec");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let summary = text
        .lines()
        .rev()
        .find(|l| l.contains(" tests, ") && l.contains(" passed"))
        .unwrap_or_else(|| panic!("no h2spec summary:\n{text}"));
    let n: Vec<usize> = summary
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    let failures = text
        .split("Failures:")
        .nth(1)
        .unwrap_or("")
        .lines()
        .filter_map(|l| l.trim().strip_prefix("× "))
        .map(str::to_owned)
        .collect();
    (n[0], n[1], failures)
}

#[test]
fn h2spec_passes_all_but_the_known_case_plaintext_and_tls() {
    let bin = Path::new(env!("CARGO_BIN_EXE_volley"));
    let dir = std::env::temp_dir().join(format!("volley-h2spec-{}", std::process::id()));
    let plain = VolleyProcess::start(bin, &["serve", "--addr", "127.0.0.1:0", "--threads", "1"]);
    let tls = VolleyProcess::start(
        bin,
        &[
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--threads",
            "1",
            "--tls-self-signed",
            "--tls-dir",
            dir.to_str().unwrap(),
        ],
    );
    for (p, is_tls) in [(&plain, false), (&tls, true)] {
        let (total, passed, failures) = h2spec(p.addr().port(), is_tls);
        assert_eq!(total, 145);
        for f in &failures {
            assert!(
                KNOWN_FAILURES.contains(&f.as_str()),
                "tls={is_tls}: unexpected h2spec failure {f:?} ({passed}/{total} passed)"
            );
        }
        assert!(
            passed >= 144,
            "tls={is_tls}: {passed}/{total} passed: {failures:?}"
        );
        println!("h2spec tls={is_tls}: {passed}/{total} passed, failures {failures:?}");
    }
    let _ = std::fs::remove_dir_all(dir);
}
