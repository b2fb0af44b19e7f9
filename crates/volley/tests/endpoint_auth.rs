//! One access policy for every endpoint on a port, tried with curl: under `volley serve
//! --require-token`, every page mounted beside the calls (the stubs' admin API, each of its
//! routes, `GET /metrics`, `GET /`) answers 401 without the token and serves with it, over every
//! form the port takes (HTTP/1.1 and h2c in plaintext, HTTP/1.1 and h2 over TLS), and so does
//! the admin API on `--admin-addr`; `--open-endpoint` opens one page by its exact path;
//! a client certificate (`--tls-client-ca`, with `--tls-self-signed` too) covers every page as
//! it covers the calls;
//! `volley mock --admin-token` guards GripMock's admin port; and the start says, in one line,
//! when an admin API or a calls' port is open to other hosts with no auth.

use std::{path::PathBuf, process::Command};

use volley_testkit::{Volley, VolleyProcess, tool, volley};

const VOLLEY: Volley = volley!();

const TOKEN: &str = "s3cret";

const SHOP: &str = r#"syntax = "proto3";
package shop.v1;
message Item { string sku = 1; int32 count = 2; }
message Query { string prefix = 1; }
service Catalog { rpc Get(Query) returns (Item); }
"#;

/// The stub an attacker tries to plant: it would answer every `Get`.
const PLANTED: &str = r#"{"service": "shop.v1.Catalog", "method": "Get",
  "input": {"contains": {}}, "output": {"data": {"sku": "planted"}}}"#;

/// Every page `volley serve --proto --metrics` mounts beside the calls: method, path, body.
const PAGES: &[(&str, &str, &str)] = &[
    ("GET", "/api/stubs", ""),
    ("POST", "/api/stubs", PLANTED),
    ("DELETE", "/api/stubs", ""),
    (
        "POST",
        "/api/stubs/search",
        r#"{"service":"shop.v1.Catalog","method":"Get","data":{}}"#,
    ),
    ("POST", "/api/stubs/batchDelete", "[]"),
    ("POST", "/api/stubs/validate", PLANTED),
    ("GET", "/api/stubs/used", ""),
    ("GET", "/api/stubs/unused", ""),
    ("GET", "/api/history", ""),
    ("DELETE", "/api/history", ""),
    (
        "POST",
        "/api/verify",
        r#"{"service":"shop.v1.Catalog","method":"Get","expectedCount":0}"#,
    ),
    ("GET", "/api/health/liveness", ""),
    ("GET", "/api/health/readiness", ""),
    ("GET", "/api/scenarios", ""),
    ("POST", "/api/scenarios/reset", ""),
    ("POST", "/add", PLANTED),
    (
        "POST",
        "/find",
        r#"{"service":"shop.v1.Catalog","method":"Get","data":{}}"#,
    ),
    ("GET", "/clear", ""),
    ("GET", "/metrics", ""),
    ("GET", "/", ""),
];

fn project(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "volley-endpoint-auth-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("shop.proto"), SHOP).unwrap();
    dir
}

/// How curl reaches the port.
#[derive(Clone, Copy, Debug)]
enum Form {
    Http1,
    H2c,
    TlsHttp1,
    TlsH2,
}

/// `curl` of `method path` with `body` on `addr` in `form`, with the token when `token`: the
/// HTTP status and the protocol version curl saw.
fn curl(
    addr: &str,
    form: Form,
    ca: Option<&PathBuf>,
    page: (&str, &str, &str),
    token: Option<&str>,
) -> (u16, String) {
    curl_with(&[], addr, form, ca, page, token)
}

/// [`curl`] with `extra` arguments first (a client certificate, say). A connection that never
/// got to HTTP (a refused handshake) is status 0, as curl writes it ("000").
fn curl_with(
    extra: &[&str],
    addr: &str,
    form: Form,
    ca: Option<&PathBuf>,
    (method, path, body): (&str, &str, &str),
    token: Option<&str>,
) -> (u16, String) {
    let mut cmd = Command::new(tool("curl"));
    cmd.args(extra);
    cmd.args([
        "-s",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code} %{http_version}",
        "-X",
        method,
    ]);
    let scheme = match form {
        Form::Http1 => {
            cmd.arg("--http1.1");
            "http"
        }
        Form::H2c => {
            cmd.arg("--http2-prior-knowledge");
            "http"
        }
        Form::TlsHttp1 => {
            cmd.arg("--http1.1");
            "https"
        }
        Form::TlsH2 => {
            cmd.arg("--http2");
            "https"
        }
    };
    if let Some(ca) = ca {
        cmd.arg("--cacert").arg(ca);
    }
    if !body.is_empty() {
        cmd.args([
            "-H",
            "content-type: application/json",
            "--data-binary",
            body,
        ]);
    }
    if let Some(t) = token {
        cmd.args(["-H", &format!("authorization: Bearer {t}")]);
    }
    cmd.arg(format!("{scheme}://{addr}{path}"));
    let out = cmd.output().expect("run curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (code, version) = text.split_once(' ').unwrap_or((&text, ""));
    (
        code.parse()
            .unwrap_or_else(|_| panic!("curl {form:?} {method} {path}: {text:?} {out:?}")),
        version.to_owned(),
    )
}

/// grpcurl's `shop.v1.Catalog/Get` with the token: what it printed.
fn get_with_token(addr: &str, dir: &std::path::Path) -> String {
    let out = Command::new(tool("grpcurl"))
        .current_dir(dir)
        .args([
            "-plaintext",
            "-import-path",
            ".",
            "-proto",
            "shop.proto",
            "-H",
            &format!("authorization: Bearer {TOKEN}"),
            "-d",
            r#"{"prefix":"x"}"#,
            addr,
            "shop.v1.Catalog/Get",
        ])
        .output()
        .expect("run grpcurl");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The admin API's own address, from its start line.
fn admin_addr(p: &VolleyProcess, marker: &str) -> String {
    let log = p.log();
    let line = log
        .lines()
        .find(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("no {marker:?} line in:\n{log}"));
    let rest = line.split("http://").nth(1).expect("an http:// address");
    rest.split('/').next().unwrap().to_owned()
}

/// The page's own answer, not the access check's: GripMock's admin API answers some of these
/// requests 404 (a search that finds nothing) or 400 (verify with the history off), which is
/// theirs to say once the token is right. The pages every test relies on are checked for 200.
fn served(code: u16) -> bool {
    (200..500).contains(&code) && code != 401 && code != 403
}

/// Every page, every form: 401 without the token (and with a wrong one), anything but 401 with it.
fn every_page_answers_to_the_token(addr: &str, forms: &[Form], ca: Option<&PathBuf>) {
    for &form in forms {
        for &page in PAGES {
            let (code, version) = curl(addr, form, ca, page, None);
            assert_eq!(
                code, 401,
                "{form:?} {} {} without the token",
                page.0, page.1
            );
            let expect_version = match form {
                Form::Http1 | Form::TlsHttp1 => "1.1",
                Form::H2c | Form::TlsH2 => "2",
            };
            assert_eq!(version, expect_version, "{form:?} {} {}", page.0, page.1);
            let (code, _) = curl(addr, form, ca, page, Some("wrong"));
            assert_eq!(
                code, 401,
                "{form:?} {} {} with a wrong token",
                page.0, page.1
            );
            // With it, the page's own answer (a search that finds nothing is GripMock's 404).
            let (code, _) = curl(addr, form, ca, page, Some(TOKEN));
            assert!(
                served(code),
                "{form:?} {} {} with the token: {code}",
                page.0,
                page.1
            );
        }
    }
}

#[test]
fn require_token_covers_every_page_on_the_calls_port_and_the_admin_port() {
    let dir = project("plain");
    let p = VOLLEY.serve(&[
        "--no-builtin",
        "--proto",
        dir.join("shop.proto").to_str().unwrap(),
        "--metrics",
        "--admin-addr",
        "127.0.0.1:0",
        "--require-token",
        TOKEN,
    ]);
    let addr = p.addr().to_string();
    // The reported hole: a stub planted without the token must not answer the next call.
    for form in [Form::Http1, Form::H2c] {
        let (code, _) = curl(&addr, form, None, ("POST", "/api/stubs", PLANTED), None);
        assert_eq!(code, 401);
    }
    let admin = admin_addr(&p, "stubs admin API on");
    let (code, _) = curl(&admin, Form::Http1, None, ("POST", "/add", PLANTED), None);
    assert_eq!(code, 401);
    let reply = get_with_token(&addr, &dir);
    assert!(
        !reply.contains("planted"),
        "a stub planted with no token answered: {reply}"
    );

    every_page_answers_to_the_token(&addr, &[Form::Http1, Form::H2c], None);
    for page in [
        ("GET", "/api/stubs", ""),
        ("GET", "/metrics", ""),
        ("GET", "/", ""),
    ] {
        assert_eq!(
            curl(&addr, Form::H2c, None, page, Some(TOKEN)).0,
            200,
            "{page:?}"
        );
    }
    // The admin port is HTTP/1.1 (GripMock's); /metrics and `/` are the calls' port's alone.
    for &page in &PAGES[..PAGES.len() - 2] {
        assert_eq!(
            curl(&admin, Form::Http1, None, page, None).0,
            401,
            "{page:?}"
        );
        assert_eq!(
            curl(&admin, Form::Http1, None, page, Some("wrong")).0,
            401,
            "{page:?}"
        );
        let code = curl(&admin, Form::Http1, None, page, Some(TOKEN)).0;
        assert!(served(code), "admin port {page:?}: {code}");
    }
    // The admin port's own route beyond the exact paths: a scenario's state.
    let set_state = (
        "PUT",
        "/api/scenarios/none/state",
        r#"{"state": "Started"}"#,
    );
    assert_eq!(curl(&admin, Form::Http1, None, set_state, None).0, 401);
    assert_eq!(
        curl(&admin, Form::Http1, None, set_state, Some("wrong")).0,
        401
    );
    let code = curl(&admin, Form::Http1, None, set_state, Some(TOKEN)).0;
    assert!(served(code), "admin port {set_state:?}: {code}");
    // With the token, the stub added answers.
    let (code, _) = curl(
        &addr,
        Form::H2c,
        None,
        ("POST", "/api/stubs", PLANTED),
        Some(TOKEN),
    );
    assert_eq!(code, 200);
    assert!(get_with_token(&addr, &dir).contains("planted"));
    // A loopback port, a token: no warning.
    assert!(!p.log().contains("other hosts can reach"), "{}", p.log());
    let _ = std::fs::remove_dir_all(dir);
}

/// `volley serve` of the project in `dir` with `--metrics` over self-signed TLS, with `extra`
/// flags: the process and the CA that signed its certificate.
fn serve_tls(dir: &std::path::Path, extra: &[&str]) -> (VolleyProcess, PathBuf) {
    let tls_dir = dir.join("tls");
    let proto = dir.join("shop.proto");
    let mut args = vec![
        "--no-builtin",
        "--proto",
        proto.to_str().unwrap(),
        "--metrics",
        "--tls-self-signed",
        "--tls-dir",
        tls_dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    (VOLLEY.serve(&args), tls_dir.join("ca.pem"))
}

#[test]
fn require_token_covers_every_page_over_tls_and_the_h2c_beside_it() {
    let dir = project("tls");
    let (p, ca) = serve_tls(&dir, &["--also-plaintext", "--require-token", TOKEN]);
    let addr = p.addr().to_string();
    every_page_answers_to_the_token(&addr, &[Form::TlsHttp1, Form::TlsH2], Some(&ca));
    every_page_answers_to_the_token(&addr, &[Form::Http1, Form::H2c], None);
    let _ = std::fs::remove_dir_all(dir);
}

/// A CA of clients and a certificate it signed, as files: (CA, client certificate, its key).
fn client_ca(dir: &std::path::Path) -> (PathBuf, PathBuf, PathBuf) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "clients");
    let ca_pem = ca.self_signed(&ca_key).unwrap().pem();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().unwrap();
    let params = CertificateParams::new(vec!["client".into()]).unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    let paths = (
        dir.join("clients-ca.pem"),
        dir.join("client.pem"),
        dir.join("client.key"),
    );
    std::fs::write(&paths.0, ca_pem).unwrap();
    std::fs::write(&paths.1, cert.pem()).unwrap();
    std::fs::write(&paths.2, key.serialize_pem()).unwrap();
    paths
}

#[test]
fn client_certificates_cover_every_page_on_the_tls_port() {
    let dir = project("mtls");
    let (clients, cert, key) = client_ca(&dir);
    let (p, ca) = serve_tls(&dir, &["--tls-client-ca", clients.to_str().unwrap()]);
    let addr = p.addr().to_string();
    let with_cert = [
        "--cert",
        cert.to_str().unwrap(),
        "--key",
        key.to_str().unwrap(),
    ];
    for form in [Form::TlsHttp1, Form::TlsH2] {
        for &page in PAGES {
            // No client certificate: the handshake is refused before any page is asked.
            let (code, _) = curl(&addr, form, Some(&ca), page, None);
            assert_eq!(
                code, 0,
                "{form:?} {} {} without a client certificate",
                page.0, page.1
            );
            let (code, _) = curl_with(&with_cert, &addr, form, Some(&ca), page, None);
            assert!(
                served(code),
                "{form:?} {} {} with a client certificate: {code}",
                page.0,
                page.1
            );
        }
    }
    // A client CA with no TLS to ask with is refused, not ignored.
    let out = VOLLEY
        .command(&[
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--tls-client-ca",
            clients.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("--tls-client-ca needs TLS"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn open_endpoint_opens_one_page_by_its_exact_path() {
    let dir = project("open");
    let p = VOLLEY.serve(&[
        "--no-builtin",
        "--proto",
        dir.join("shop.proto").to_str().unwrap(),
        "--metrics",
        "--require-token",
        TOKEN,
        "--open-endpoint",
        "/metrics",
    ]);
    let addr = p.addr().to_string();
    for form in [Form::Http1, Form::H2c] {
        assert_eq!(
            curl(&addr, form, None, ("GET", "/metrics", ""), None).0,
            200
        );
        assert_eq!(
            curl(&addr, form, None, ("GET", "/api/stubs", ""), None).0,
            401
        );
        assert_eq!(curl(&addr, form, None, ("GET", "/", ""), None).0, 401);
    }
    // Without --require-token, --open-endpoint has nothing to open: refused in one line.
    let out = VOLLEY
        .command(&["serve", "--open-endpoint", "/metrics"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--require-token"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}

/// `volley mock` on free ports, with `extra` flags: the process and its admin address.
fn mock(dir: &std::path::Path, admin_host: &str, extra: &[&str]) -> (VolleyProcess, String) {
    let mut args = vec![
        "mock",
        "--grpc-listen",
        "127.0.0.1",
        "--grpc-port",
        "0",
        "--admin-listen",
        admin_host,
        "--admin-port",
        "0",
    ];
    args.extend_from_slice(extra);
    let proto = dir.join("shop.proto");
    args.push(proto.to_str().unwrap());
    let p = VolleyProcess::start(VOLLEY.bin(), &args);
    let admin = admin_addr(&p, "admin API on");
    (p, admin.replace("0.0.0.0", "127.0.0.1"))
}

#[test]
fn mock_admin_token_guards_gripmock_s_admin_port_and_an_open_one_says_so() {
    let dir = project("mock");
    let (p, admin) = mock(&dir, "127.0.0.1", &["--admin-token", TOKEN]);
    for &page in &PAGES[..PAGES.len() - 2] {
        assert_eq!(
            curl(&admin, Form::Http1, None, page, None).0,
            401,
            "{page:?}"
        );
        let code = curl(&admin, Form::Http1, None, page, Some(TOKEN)).0;
        assert!(served(code), "{page:?}: {code}");
    }
    assert!(!p.log().contains("other hosts can reach"), "{}", p.log());
    drop(p);

    // GripMock's default: open, on every interface; said at start, once.
    let (p, admin) = mock(&dir, "0.0.0.0", &[]);
    assert_eq!(
        curl(&admin, Form::Http1, None, ("GET", "/api/stubs", ""), None).0,
        200
    );
    let log = p.log();
    let warned: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("other hosts can reach"))
        .collect();
    assert_eq!(warned.len(), 1, "{log}");
    assert!(
        warned[0].contains("--admin-listen 127.0.0.1 or --admin-token"),
        "{}",
        warned[0]
    );
    drop(p);

    // On loopback without a token: open to this host only, no warning.
    let (p, admin) = mock(&dir, "127.0.0.1", &[]);
    assert_eq!(
        curl(&admin, Form::Http1, None, ("GET", "/api/stubs", ""), None).0,
        200
    );
    assert!(!p.log().contains("other hosts can reach"), "{}", p.log());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_calls_port_open_to_other_hosts_without_auth_says_so_at_start() {
    let p = VolleyProcess::start(VOLLEY.bin(), &["serve", "--addr", "0.0.0.0:0"]);
    let log = p.log();
    let warned: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("other hosts can reach"))
        .collect();
    assert_eq!(warned.len(), 1, "{log}");
    assert!(warned[0].contains("--require-token"), "{}", warned[0]);
    drop(p);
    let p = VolleyProcess::start(
        VOLLEY.bin(),
        &["serve", "--addr", "0.0.0.0:0", "--require-token", TOKEN],
    );
    assert!(!p.log().contains("other hosts can reach"), "{}", p.log());
}
