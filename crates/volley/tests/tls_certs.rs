//! TLS as users make it: certificates from the openssl CLI, with seed 004's command
//! (`openssl req -x509 -sha256 -nodes -days 365 -newkey rsa:4096 ...`, here with -subj and the
//! subjectAltName Go also requires, and 2048-bit keys for speed). `volley bench` and `volley
//! orders` accept such a self-signed certificate given as `--cacert` (as ghz and grpcurl do), and
//! each way a certificate can be wrong gives its own one-line error naming the flag that changes it.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use volley_testkit::{fails_in_one_line, ok_stdout, volley, workspace_file};

/// A scratch directory for this test's certificates.
fn dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("tls-certs-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `openssl req -x509` as the seed runs it; `extra` adds options (the subjectAltName).
fn openssl_self_signed(dir: &Path, name: &str, days: &str, extra: &[&str]) -> (String, String) {
    let crt = dir.join(format!("{name}.crt")).display().to_string();
    let key = dir.join(format!("{name}.key")).display().to_string();
    let mut cmd = Command::new("openssl");
    cmd.args(["req", "-x509", "-sha256", "-nodes", "-days", days])
        .args(["-newkey", "rsa:2048", "-keyout", &key, "-out", &crt])
        .args(["-subj", "/CN=localhost"])
        .args(extra);
    let out = cmd
        .output()
        .expect("openssl (scripts/install-test-tools installs it)");
    assert!(
        out.status.success(),
        "openssl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (crt, key)
}

const SAN: &[&str] = &["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"];

fn bench(cacert: &str, target: &str, extra: &[&str]) -> Command {
    let users = workspace_file("proto/api/users.proto");
    let mut args = vec![
        "bench",
        "--cacert",
        cacert,
        "--proto",
        &users,
        "--call",
        "api.Users/Get",
        "-n",
        "20",
        "-c",
        "2",
        "-O",
        "json",
    ];
    args.extend_from_slice(extra);
    args.push(target);
    volley!().command(&args)
}

#[test]
fn a_self_signed_openssl_certificate_works_with_cacert() {
    let d = dir("ok");
    let (crt, key) = openssl_self_signed(&d, "server", "365", SAN);
    let server = volley!().serve(&["--tls-cert", &crt, "--tls-key", &key]);
    let port = server.addr().port();

    let json = ok_stdout(&mut bench(&crt, &format!("localhost:{port}"), &[]));
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(report["count"], 20, "{json}");
    assert_eq!(report["statusCodeDistribution"]["OK"], 20, "{json}");
    // By IP address too: the certificate names 127.0.0.1.
    let json = ok_stdout(&mut bench(&crt, &format!("127.0.0.1:{port}"), &[]));
    assert!(json.contains("\"OK\":20"), "{json}");

    let out = ok_stdout(&mut volley!().command(&[
        "lab",
        "orders",
        "--addr",
        &format!("localhost:{port}"),
        "--cacert",
        &crt,
        "--clients",
        "2",
        "--count",
        "20",
        "--json",
    ]));
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["orders"], 20, "{out}");
    assert_eq!(report["tls"], true, "{out}");
}

#[test]
fn each_wrong_certificate_says_what_is_wrong() {
    let d = dir("bad");
    let (crt, key) = openssl_self_signed(&d, "server", "365", SAN);
    let (other, _) = openssl_self_signed(&d, "other", "365", SAN);
    let (no_san, no_san_key) = openssl_self_signed(&d, "nosan", "365", &[]);
    let server = volley!().serve(&["--tls-cert", &crt, "--tls-key", &key]);
    let target = format!("localhost:{}", server.addr().port());
    let prefix = format!(
        "volley: error: connection error: TLS handshake with {target} failed: we refused the \
         server's certificate: "
    );

    // Another self-signed certificate as --cacert (`openssl req -x509` marks them CA:TRUE).
    let err = fails_in_one_line(&mut bench(&other, &target, &[]));
    assert_eq!(
        err,
        format!(
            "{prefix}it is a CA certificate that --cacert does not hold; pass this very \
             certificate with --cacert (a self-signed one), or give the server a certificate \
             signed by a CA in --cacert, or skip the check with --skipTLS"
        )
    );

    // The right certificate, checked against another name.
    let err = fails_in_one_line(&mut bench(&crt, &target, &["--cname", "api.example.com"]));
    assert_eq!(
        err,
        format!(
            "{prefix}it is for localhost, 127.0.0.1, not api.example.com; connect by one of \
             those names or set --cname, or skip the check with --skipTLS"
        )
    );

    // The seed's command as printed (no subjectAltName): no name at all.
    let server = volley!().serve(&["--tls-cert", &no_san, "--tls-key", &no_san_key]);
    let target = format!("localhost:{}", server.addr().port());
    let err = fails_in_one_line(&mut bench(&no_san, &target, &[]));
    assert_eq!(
        err,
        format!(
            "volley: error: connection error: TLS handshake with {target} failed: we refused the \
             server's certificate: it names no host (no subjectAltName), so it is not valid for \
             localhost; make it with -addext \"subjectAltName=DNS:localhost\", or skip the check \
             with --skipTLS"
        )
    );
}

#[test]
fn an_expired_certificate_says_so() {
    let d = dir("expired");
    // A self-signed certificate whose validity ended two days ago, given as --cacert: made with
    // rcgen, as OpenSSL 3.0's `req` cannot backdate (`-not_before`/`-not_after` came in 3.4).
    let mut params = rcgen::CertificateParams::new(vec!["localhost".into()]).unwrap();
    let now = std::time::SystemTime::now();
    let day = std::time::Duration::from_secs(86_400);
    params.not_before = (now - 30 * day).into();
    params.not_after = (now - 2 * day).into();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    let crt = d.join("expired.crt");
    let key_path = d.join("expired.key");
    std::fs::write(&crt, cert.pem()).unwrap();
    std::fs::write(&key_path, key.serialize_pem()).unwrap();
    let crt = crt.display().to_string();
    let server = volley!().serve(&[
        "--tls-cert",
        &crt,
        "--tls-key",
        &key_path.display().to_string(),
    ]);
    let target = format!("localhost:{}", server.addr().port());
    let err = fails_in_one_line(&mut bench(&crt, &target, &[]));
    assert_eq!(
        err,
        format!(
            "volley: error: connection error: TLS handshake with {target} failed: we refused the \
             server's certificate: it expired 2 day(s) ago; renew it on the server, or skip the \
             check with --skipTLS"
        )
    );
}
