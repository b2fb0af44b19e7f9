//! HTTP/2 conformance: h2spec (v2.2.1, 145 cases) against `volley serve`, plaintext and TLS,
//! at `/` and at real methods (`-P /api.Users/Get`, a unary one; `-P /api.Users/List`, a server
//! stream), on one server thread and on four. The two cases that raced there (5.1/9: HEADERS
//! after RST_STREAM; 6.9.1/3: a stream's window raised past 2^31-1) are run 20 more times per
//! path and server, so a race shows. The one case we fail, and why it is not ours to fix without giving something up:
//! 3.5/2 "Sends invalid connection preface": the port also speaks HTTP/1.1 (gRPC-Web, Connect,
//! REST, `GET /`), so a preface that is not HTTP/2's is read as an HTTP/1.1 request and answered
//! (400, as RFC 9112 section 3 asks) instead of the connection being closed; docs/limits.md
//! says why that is kept. (grpc-go's server passes 113 of 145.)

use std::{path::Path, process::Command};

use volley_testkit::{VolleyProcess, tool};

const KNOWN_FAILURES: &[&str] = &["2: Sends invalid connection preface"];

/// The paths h2spec's requests name.
const PATHS: [&str; 3] = ["/", "/api.Users/Get", "/api.Users/List"];

/// The cases that raced at a real method, and how often each run repeats them.
const RACED: [&str; 2] = ["http2/5.1/9", "http2/6.9.1/3"];
const REPEATS: usize = 20;

fn h2spec(port: u16, tls: bool, path: &str, cases: &[&str]) -> (usize, usize, Vec<String>) {
    let mut cmd = Command::new(tool("h2spec"));
    cmd.args([
        "-h",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "-o",
        "2",
        "-P",
        path,
    ]);
    if tls {
        cmd.args(["-t", "-k"]);
    }
    cmd.args(cases);
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
fn h2spec_passes_all_but_the_known_case_plaintext_and_tls_at_real_methods() {
    let bin = Path::new(env!("CARGO_BIN_EXE_volley"));
    let dir = std::env::temp_dir().join(format!("volley-h2spec-{}", std::process::id()));
    let serve = |extra: &[&str]| {
        let mut args = vec!["serve", "--addr", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        VolleyProcess::start(bin, &args)
    };
    let one = serve(&["--threads", "1"]);
    let four = serve(&["--threads", "4"]);
    let tls = serve(&[
        "--threads",
        "1",
        "--tls-self-signed",
        "--tls-dir",
        dir.to_str().unwrap(),
    ]);
    for (p, name, is_tls) in [
        (&one, "1 thread", false),
        (&four, "4 threads", false),
        (&tls, "TLS", true),
    ] {
        for path in PATHS {
            let (total, passed, failures) = h2spec(p.addr().port(), is_tls, path, &[]);
            assert_eq!(total, 145);
            for f in &failures {
                assert!(
                    KNOWN_FAILURES.contains(&f.as_str()),
                    "{name} -P {path}: unexpected h2spec failure {f:?} ({passed}/{total} passed)"
                );
            }
            assert!(
                passed >= 144,
                "{name} -P {path}: {passed}/{total} passed: {failures:?}"
            );
            println!("h2spec {name} -P {path}: {passed}/{total} passed, failures {failures:?}");
            if path == "/" {
                continue;
            }
            for run in 0..REPEATS {
                let (total, passed, failures) = h2spec(p.addr().port(), is_tls, path, &RACED);
                assert_eq!(
                    (total, passed),
                    (2, 2),
                    "{name} -P {path}, repeat {run}: {failures:?}"
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}
