//! A renewed certificate without a restart: `volley serve --tls-cert/--tls-key` serves new files
//! from the next handshake on (seen by a client as the new serial), connections opened before
//! keep calling, a bad file is logged and the previous certificate stays, SIGHUP rereads the
//! files at once; `--tls-client-ca` asks for client certificates (mutual TLS) and follows its
//! file too.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, pem::PemObject};
use volley_services::pb::api::{GetUserRequest, User};
use volley_testkit::{RawClient, VolleyProcess, frame, volley};
use volley_wire::Code;

fn dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("tls-reload-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A CA that signs certificates with the serials asked for.
struct Ca {
    issuer: Issuer<'static, KeyPair>,
    pem: String,
}

impl Ca {
    fn new(name: &str) -> Ca {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        let pem = params.self_signed(&key).unwrap().pem();
        Ca {
            issuer: Issuer::new(params, key),
            pem,
        }
    }

    /// A certificate for localhost and 127.0.0.1 with `serial`, and its key, as PEM.
    fn sign(&self, serial: u64) -> (String, String) {
        let key = KeyPair::generate().unwrap();
        let mut params =
            CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
        params.serial_number = Some(serial.into());
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}

/// Writes `text` to `path` the way certificate tools do: a new file renamed over the old one.
fn replace(path: &Path, text: &str) {
    let tmp = path.with_extension("new");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn install(d: &Path, (cert, key): (String, String)) {
    replace(&d.join("server.key"), &key);
    replace(&d.join("server.pem"), &cert);
}

/// A client trusting `ca_pem`, with a client certificate when given one.
fn client_config(ca_pem: &str, client: Option<&(String, String)>) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(c.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let b = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let mut cfg = match client {
        None => b.with_no_client_auth(),
        Some((cert, key)) => {
            let chain = CertificateDer::pem_slice_iter(cert.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .unwrap();
            let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap();
            b.with_client_auth_cert(chain, key).unwrap()
        }
    };
    cfg.alpn_protocols = vec![b"h2".to_vec()];
    Arc::new(cfg)
}

/// Connects over TLS; returns the serial of the certificate the server showed, in hex, and an
/// HTTP/2 client on the connection.
async fn dial(server: &VolleyProcess, cfg: Arc<rustls::ClientConfig>) -> (String, RawClient) {
    let tcp = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let tls = tokio_rustls::TlsConnector::from(cfg)
        .connect(name, tcp)
        .await
        .expect("TLS handshake");
    let leaf = tls.get_ref().1.peer_certificates().unwrap()[0].clone();
    let (_, parsed) = x509_parser::parse_x509_certificate(leaf.as_ref()).unwrap();
    let serial = parsed
        .raw_serial()
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect();
    let authority = format!("localhost:{}", server.addr().port());
    (serial, RawClient::over(tls, &authority).await.unwrap())
}

async fn get_user(c: &RawClient) -> Result<User, String> {
    let r = c
        .call(
            "/api.Users/Get",
            &[],
            vec![frame(&GetUserRequest { id: 7 })],
        )
        .await
        .map_err(|e| e.to_string())?;
    if r.code() != Code::Ok {
        return Err(format!("{:?}", r.status()));
    }
    Ok(r.decode::<User>().remove(0))
}

/// Waits (up to 10 s) for a log line holding every one of `words`; returns it.
fn log_line(server: &VolleyProcess, words: &[&str]) -> String {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(l) = server
            .log()
            .lines()
            .find(|l| words.iter().all(|w| l.contains(w)))
        {
            return l.to_owned();
        }
        assert!(
            Instant::now() < until,
            "no log line with {words:?}:\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn serve(d: &Path, extra: &[&str]) -> VolleyProcess {
    let cert = d.join("server.pem").display().to_string();
    let key = d.join("server.key").display().to_string();
    let mut flags = vec!["--tls-cert", &cert, "--tls-key", &key, "--threads", "1"];
    flags.extend_from_slice(extra);
    volley!().serve(&flags)
}

#[tokio::test]
async fn a_changed_certificate_is_served_without_a_restart_or_a_dropped_connection() {
    let d = dir("watch");
    let ca = Ca::new("reload CA");
    install(&d, ca.sign(0x0A01));
    let server = serve(&d, &["--tls-reload-interval", "100ms"]);
    log_line(&server, &["serving the TLS certificate", "serial 0A01"]);
    // A new client each time: a resumed TLS session shows the certificate of the session it
    // resumes.
    let cfg = || client_config(&ca.pem, None);

    let (serial, before) = dial(&server, cfg()).await;
    assert_eq!(serial, "0A01");
    assert_eq!(get_user(&before).await.unwrap().id, 7);

    install(&d, ca.sign(0x0A02));
    log_line(&server, &["reloaded the TLS certificate", "serial 0A02"]);
    let (serial, after) = dial(&server, cfg()).await;
    assert_eq!(serial, "0A02", "a new handshake gets the new certificate");
    assert_eq!(get_user(&after).await.unwrap().id, 7);
    // The connection made before the change carries on.
    for _ in 0..3 {
        assert_eq!(get_user(&before).await.unwrap().id, 7);
    }

    // A broken file: logged once, the previous certificate stays.
    replace(
        &d.join("server.pem"),
        "-----BEGIN CERTIFICATE-----\nnot base64\n",
    );
    let line = log_line(&server, &["cannot reload the TLS certificate"]);
    assert!(
        line.contains("server.pem") && line.contains("still serving the previous one"),
        "{line}"
    );
    std::thread::sleep(Duration::from_millis(400));
    let failures = server.log().matches("cannot reload").count();
    assert_eq!(
        failures,
        1,
        "one line per change, not per look:\n{}",
        server.log()
    );
    let (serial, _) = dial(&server, cfg()).await;
    assert_eq!(serial, "0A02");
    assert_eq!(get_user(&before).await.unwrap().id, 7);

    // Mended: served again.
    install(&d, ca.sign(0x0A03));
    log_line(&server, &["reloaded the TLS certificate", "serial 0A03"]);
    assert_eq!(dial(&server, cfg()).await.0, "0A03");
    assert!(!server.log().contains("panicked"), "{}", server.log());
}

#[tokio::test]
async fn sighup_rereads_the_files_when_watching_is_off() {
    let d = dir("hup");
    let ca = Ca::new("hup CA");
    install(&d, ca.sign(0x0B01));
    let server = serve(&d, &["--tls-reload-interval", "0"]);
    // A new client each time: a resumed TLS session shows the certificate of the session it
    // resumes.
    let cfg = || client_config(&ca.pem, None);
    let (_, before) = dial(&server, cfg()).await;

    install(&d, ca.sign(0x0B02));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(dial(&server, cfg()).await.0, "0B01", "not watching");
    server.signal("HUP");
    log_line(
        &server,
        &["reloaded the TLS certificate", "(SIGHUP)", "serial 0B02"],
    );
    assert_eq!(dial(&server, cfg()).await.0, "0B02");
    assert_eq!(get_user(&before).await.unwrap().id, 7);
}

#[tokio::test]
async fn mutual_tls_asks_for_a_client_certificate_and_follows_the_ca_file() {
    let d = dir("mtls");
    let server_ca = Ca::new("server CA");
    install(&d, server_ca.sign(0x0C01));
    let (one, two) = (Ca::new("client CA one"), Ca::new("client CA two"));
    let client_ca = d.join("clients.pem");
    replace(&client_ca, &one.pem);
    let server = serve(
        &d,
        &[
            "--tls-client-ca",
            &client_ca.display().to_string(),
            "--tls-reload-interval",
            "100ms",
        ],
    );
    log_line(&server, &["mutual TLS"]);
    let (by_one, by_two) = (one.sign(1), two.sign(2));

    let (_, c) = dial(&server, client_config(&server_ca.pem, Some(&by_one))).await;
    assert_eq!(get_user(&c).await.unwrap().id, 7);
    // No certificate, or one the CA did not sign: the handshake is refused (TLS 1.3 reports it
    // on the first read).
    for client in [None, Some(&by_two)] {
        let (_, c) = dial(&server, client_config(&server_ca.pem, client)).await;
        assert!(get_user(&c).await.is_err(), "refused: {client:?}");
    }

    // The client CA file now names the second CA: new handshakes follow it, the connection
    // authenticated before carries on.
    replace(&client_ca, &two.pem);
    log_line(&server, &["reloaded the TLS certificate"]);
    let (_, by_new) = dial(&server, client_config(&server_ca.pem, Some(&by_two))).await;
    assert_eq!(get_user(&by_new).await.unwrap().id, 7);
    let (_, by_old) = dial(&server, client_config(&server_ca.pem, Some(&by_one))).await;
    assert!(get_user(&by_old).await.is_err());
    assert_eq!(get_user(&c).await.unwrap().id, 7);
}

/// `volley bench` with a client certificate (`--cert/--key`, ghz's flags) against a server asking
/// for one; without it, and against a server certificate no known CA signed, one line each.
#[test]
fn bench_presents_its_client_certificate_and_names_an_unknown_signer() {
    let d = dir("bench");
    let (server_ca, client_ca, stranger) = (
        Ca::new("server CA"),
        Ca::new("client CA"),
        Ca::new("stranger"),
    );
    install(&d, server_ca.sign(0x0D01));
    let write = |name: &str, text: &str| {
        let p = d.join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let (cert, key) = client_ca.sign(0x0D02);
    let (cert, key) = (write("client.pem", &cert), write("client.key", &key));
    let cacert = write("server-ca.pem", &server_ca.pem);
    let clients = write("clients.pem", &client_ca.pem);
    let server = serve(&d, &["--tls-client-ca", &clients]);
    let target = format!("localhost:{}", server.addr().port());
    let users = volley_testkit::workspace_file("proto/api/users.proto");
    let bench = |extra: &[&str]| {
        let mut args = vec![
            "bench",
            "--proto",
            &users,
            "--call",
            "api.Users/Get",
            "-n",
            "10",
        ];
        args.extend_from_slice(extra);
        args.push(&target);
        volley!().command(&args)
    };
    let out = volley_testkit::ok_stdout(&mut bench(&[
        "--cacert", &cacert, "--cert", &cert, "--key", &key, "-O", "json",
    ]));
    assert!(out.contains("\"OK\":10"), "{out}");

    // No client certificate: the server refuses the handshake (in TLS 1.3, with an alert after
    // ours completes, as the HTTP/2 preface goes out), and the line says which flags fix it.
    let err = volley_testkit::fails_in_one_line(&mut bench(&["--cacert", &cacert]));
    assert_eq!(
        err,
        format!(
            "volley: error: connection error: HTTP/2 handshake with {target} failed: the server \
             sent TLS alert CertificateRequired after the TLS handshake (it requires a client \
             certificate: give one with --cert and --key)"
        )
    );

    // A server certificate signed by a CA --cacert does not hold.
    let other = write("stranger.pem", &stranger.pem);
    let err = volley_testkit::fails_in_one_line(&mut bench(&["--cacert", &other]));
    assert_eq!(
        err,
        format!(
            "volley: error: connection error: TLS handshake with {target} failed: we refused the \
             server's certificate: it is not signed by a CA we trust; pass its CA (for a \
             self-signed certificate, the certificate itself) with --cacert, or skip the check \
             with --skipTLS"
        )
    );
}
