//! Certificates that follow their files: a rustls config whose certificate, key and client CA
//! are read again when the files change on disk (or when asked, as `volley serve` does on
//! SIGHUP), so a long-running server takes a renewed certificate (cert-manager's, certbot's)
//! without a restart. New handshakes get the new certificate; open connections carry on with
//! theirs; files that do not load are logged and the previous certificate stays.

use std::{
    path::{Path, PathBuf},
    sync::{
        Arc, Mutex, RwLock,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, SystemTime},
};

use rustls::{
    DistinguishedName, ServerConfig, SignatureScheme,
    client::danger::HandshakeSignatureValid,
    pki_types::{CertificateDer, UnixTime, pem::PemObject},
    server::{
        ClientHello, ResolvesServerCert,
        danger::{ClientCertVerified, ClientCertVerifier},
    },
    sign::CertifiedKey,
};

use super::{TlsError, load_pem, provider, read};

/// The files of a TLS setup that follows them.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// The PEM certificate chain, leaf first.
    pub cert: PathBuf,
    /// Its PEM private key.
    pub key: PathBuf,
    /// With it, clients must present a certificate this PEM CA signed (mutual TLS).
    pub client_ca: Option<PathBuf>,
}

/// What a (re)load put in place, for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    /// The leaf certificate's serial number, in hex as `openssl x509 -serial` prints it.
    pub serial: String,
    /// The end of its validity (`notAfter`), as `openssl x509 -enddate` prints it.
    pub not_after: String,
}

impl std::fmt::Display for Loaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "serial {}, valid until {}", self.serial, self.not_after)
    }
}

/// A TLS setup that reads its files again on [`Reloading::reload`], or by itself with
/// [`Reloading::watch`]; cheap to clone (the clones share it).
#[derive(Clone)]
pub struct Reloading {
    shared: Arc<Shared>,
}

struct Shared {
    files: TlsFiles,
    key: RwLock<Arc<CertifiedKey>>,
    client: Option<Arc<ClientCheck>>,
    /// The files' size, time and inode when last read, so that a watcher reads them again only
    /// when one changed (a Kubernetes secret volume swaps a symlink: the inode changes).
    seen: Mutex<Vec<Option<Stamp>>>,
}

impl std::fmt::Debug for Reloading {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reloading")
            .field("files", &self.shared.files)
            .finish_non_exhaustive()
    }
}

impl Reloading {
    /// Reads the files and returns the setup with the rustls config to serve (ALPN `h2` and
    /// `http/1.1`), whose certificate and client CA are this setup's current ones at each
    /// handshake.
    pub fn load(files: TlsFiles) -> Result<(Reloading, Arc<ServerConfig>, Loaded), TlsError> {
        let stamps = stamps(&files);
        let (key, loaded) = certified_key(&files)?;
        let client = match &files.client_ca {
            Some(ca) => Some(Arc::new(ClientCheck {
                inner: RwLock::new(client_verifier(ca)?),
            })),
            None => None,
        };
        let shared = Arc::new(Shared {
            files,
            key: RwLock::new(Arc::new(key)),
            client: client.clone(),
            seen: Mutex::new(stamps),
        });
        let builder = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()?;
        let builder = match client {
            Some(check) => builder.with_client_cert_verifier(check),
            None => builder.with_no_client_auth(),
        };
        let mut cfg = builder.with_cert_resolver(Arc::new(Current(shared.clone())));
        cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok((Reloading { shared }, Arc::new(cfg), loaded))
    }

    /// The files this setup reads.
    pub fn files(&self) -> &TlsFiles {
        &self.shared.files
    }

    /// Reads the files again and, when they load, serves them from the next handshake on; when
    /// they do not, the error says why and the previous certificate stays.
    pub fn reload(&self) -> Result<Loaded, TlsError> {
        let s = &self.shared;
        *s.seen.lock().unwrap_or_else(|e| e.into_inner()) = stamps(&s.files);
        let (key, loaded) = certified_key(&s.files)?;
        let verifier = match (&s.files.client_ca, &s.client) {
            (Some(ca), Some(_)) => Some(client_verifier(ca)?),
            _ => None,
        };
        *s.key.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(key);
        if let (Some(v), Some(check)) = (verifier, &s.client) {
            *check.inner.write().unwrap_or_else(|e| e.into_inner()) = v;
        }
        Ok(loaded)
    }

    /// [`reload`](Self::reload) if a file changed since it was last read (`None`: none did).
    pub fn reload_if_changed(&self) -> Option<Result<Loaded, TlsError>> {
        let now = stamps(&self.shared.files);
        let changed = *self.shared.seen.lock().unwrap_or_else(|e| e.into_inner()) != now;
        changed.then(|| self.reload())
    }

    /// Looks at the files every `every` on a thread of its own and reloads when one changed,
    /// logging each reload (or why it failed) in one line; stops when the [`Watcher`] drops.
    pub fn watch(&self, every: Duration) -> std::io::Result<Watcher> {
        let stop = Arc::new(AtomicBool::new(false));
        let (me, halt) = (self.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("volley-tls-watch".into())
            .spawn(move || {
                while !halt.load(Ordering::Relaxed) {
                    std::thread::park_timeout(every);
                    if halt.load(Ordering::Relaxed) {
                        break;
                    }
                    if let Some(r) = me.reload_if_changed() {
                        me.log(&r, "the files changed");
                    }
                }
            })?;
        Ok(Watcher {
            stop,
            thread: Some(thread),
        })
    }

    /// One log line for a reload's outcome; `why` says what started it.
    pub fn log(&self, outcome: &Result<Loaded, TlsError>, why: &str) {
        let cert = self.shared.files.cert.display();
        match outcome {
            Ok(l) => tracing::info!("reloaded the TLS certificate {cert} ({why}): {l}"),
            Err(e) => tracing::warn!(
                "cannot reload the TLS certificate ({why}): {e}; still serving the previous one"
            ),
        }
    }
}

/// The watching thread of [`Reloading::watch`]; dropping it stops the thread.
#[derive(Debug)]
pub struct Watcher {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

/// A file's size, modification time and inode (through symlinks); `None` when it cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    inode: u64,
}

fn stamp(path: &Path) -> Option<Stamp> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some(Stamp {
        len: m.len(),
        modified: m.modified().ok(),
        inode: m.ino(),
    })
}

fn stamps(files: &TlsFiles) -> Vec<Option<Stamp>> {
    [
        Some(&files.cert),
        Some(&files.key),
        files.client_ca.as_ref(),
    ]
    .into_iter()
    .flatten()
    .map(|p| stamp(p))
    .collect()
}

/// The certificate and key, checked to belong together.
fn certified_key(files: &TlsFiles) -> Result<(CertifiedKey, Loaded), TlsError> {
    let (chain, key) = load_pem(&files.cert, &files.key)?;
    let loaded = describe(&chain[0]).map_err(|problem| TlsError::Pem {
        path: files.cert.clone(),
        problem,
    })?;
    let key = CertifiedKey::from_der(chain, key, &provider())?;
    Ok((key, loaded))
}

fn describe(leaf: &CertificateDer<'_>) -> Result<Loaded, String> {
    let (_, cert) = x509_parser::parse_x509_certificate(leaf.as_ref())
        .map_err(|e| format!("not an X.509 certificate: {e}"))?;
    let serial = cert
        .raw_serial()
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect();
    Ok(Loaded {
        serial,
        not_after: cert.validity().not_after.to_string(),
    })
}

fn client_verifier(ca: &Path) -> Result<Arc<dyn ClientCertVerifier>, TlsError> {
    let pem = read("TLS client CA", ca)?;
    let bad = |problem: String| TlsError::Pem {
        path: ca.to_owned(),
        problem,
    };
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(&pem) {
        let c = c.map_err(|e| bad(format!("not a PEM certificate: {e}")))?;
        roots
            .add(c)
            .map_err(|e| bad(format!("unusable as a client CA: {e}")))?;
    }
    if roots.is_empty() {
        return Err(bad("no certificate found in the file".into()));
    }
    rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
        .build()
        .map_err(|e| bad(e.to_string()))
}

/// The certificate of the moment, for each handshake.
#[derive(Debug)]
struct Current(Arc<Shared>);

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("files", &self.files)
            .finish_non_exhaustive()
    }
}

impl ResolvesServerCert for Current {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.key.read().unwrap_or_else(|e| e.into_inner()).clone())
    }
}

/// The client-certificate check of the moment: WebPKI against the client CA file as last read.
/// It names no CA to clients (`root_hint_subjects` is empty: the list would have to outlive a
/// reload); clients then offer the certificate they have, as Go's and rustls' do.
#[derive(Debug)]
struct ClientCheck {
    inner: RwLock<Arc<dyn ClientCertVerifier>>,
}

impl ClientCheck {
    fn now(&self) -> Arc<dyn ClientCertVerifier> {
        self.inner.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl ClientCertVerifier for ClientCheck {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        self.now()
            .verify_client_cert(end_entity, intermediates, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.now().verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.now().verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.now().supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, KeyPair};

    fn write_cert(dir: &Path, serial: u64) {
        let mut params = CertificateParams::new(vec!["localhost".into()]).unwrap();
        params.serial_number = Some(serial.into());
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        std::fs::write(dir.join("cert.pem"), cert.pem()).unwrap();
        std::fs::write(dir.join("key.pem"), key.serialize_pem()).unwrap();
    }

    fn files(dir: &Path) -> TlsFiles {
        TlsFiles {
            cert: dir.join("cert.pem"),
            key: dir.join("key.pem"),
            client_ca: None,
        }
    }

    #[test]
    fn a_changed_file_is_served_and_a_bad_one_keeps_the_previous() {
        let dir = std::env::temp_dir().join(format!("volley-reload-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        write_cert(&dir, 0x1111);
        let (r, _cfg, loaded) = Reloading::load(files(&dir)).unwrap();
        assert_eq!(loaded.serial, "1111");
        let leaf = |r: &Reloading| {
            let k = r.shared.key.read().unwrap().clone();
            describe(&k.cert[0]).unwrap().serial
        };
        assert!(r.reload_if_changed().is_none(), "nothing changed yet");

        write_cert(&dir, 0x2222);
        let got = r.reload_if_changed().expect("the files changed").unwrap();
        assert_eq!(got.serial, "2222");
        assert_eq!(leaf(&r), "2222");

        // A key that is not the certificate's: refused, the previous pair stays.
        let other = KeyPair::generate().unwrap();
        std::fs::write(dir.join("key.pem"), other.serialize_pem()).unwrap();
        let err = r.reload().unwrap_err().to_string();
        assert!(err.contains("do not fit together"), "{err}");
        assert_eq!(leaf(&r), "2222");
        std::fs::write(dir.join("cert.pem"), "not a certificate").unwrap();
        let err = r.reload_if_changed().unwrap().unwrap_err().to_string();
        assert!(err.contains("no certificate found"), "{err}");
        assert_eq!(leaf(&r), "2222");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
