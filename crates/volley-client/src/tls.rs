//! rustls client configs: trust roots (a CA file or the system's), client certificates for mutual
//! TLS, and the opt-in "skip verification" mode ghz calls `--skipTLS`. A server certificate that
//! is byte for byte one of the `--cacert` certificates is trusted as it is, name and dates still
//! checked, as Go's verifier (ghz, grpcurl) does for the self-signed certificates `openssl req
//! -x509` makes; WebPKI alone refuses them (`CaUsedAsEndEntity`). A client certificate follows
//! its files: a long run presents the renewed one from its next handshake on.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::{Duration, SystemTime},
};

use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
    client::{
        ResolvesClientCert, WebPkiServerVerifier,
        danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier},
        verify_server_name,
    },
    crypto::CryptoProvider,
    pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime, pem::PemObject},
    server::ParsedCertificate,
    sign::CertifiedKey,
};

/// What TLS needs from the command line.
#[derive(Clone, Debug, Default)]
pub struct TlsOptions {
    /// Trust this CA (PEM) instead of the system roots.
    pub ca: Option<std::path::PathBuf>,
    /// Client certificate chain (PEM), for mutual TLS.
    pub cert: Option<std::path::PathBuf>,
    /// Client private key (PEM).
    pub key: Option<std::path::PathBuf>,
    /// Accept any server certificate (ghz `--skipTLS`).
    pub skip_verify: bool,
}

/// A TLS setup problem, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    /// A file could not be read or parsed.
    #[error("{path}: {problem}")]
    File {
        /// The file.
        path: String,
        /// What was wrong.
        problem: String,
    },
    /// rustls refused the configuration.
    #[error("TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
}

fn file_err(path: &Path, problem: impl std::fmt::Display) -> TlsSetupError {
    TlsSetupError::File {
        path: path.display().to_string(),
        problem: problem.to_string(),
    }
}

/// The rustls crypto provider the client uses (ring, as the server).
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Builds a client config offering ALPN `h2`.
pub fn client_config(opts: &TlsOptions) -> Result<Arc<ClientConfig>, TlsSetupError> {
    let provider = crate::tls::provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let builder = if opts.skip_verify {
        let check = CertCheck {
            pinned: None,
            provider: provider.clone(),
        };
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(check))
    } else {
        let mut roots = RootCertStore::empty();
        match &opts.ca {
            Some(ca) => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(CertCheck::of_file(ca, &provider)?)),
            None => {
                for cert in rustls_native_certs::load_native_certs().certs {
                    let _ = roots.add(cert);
                }
                let webpki =
                    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                        .build()
                        .map_err(|e| TlsSetupError::File {
                            path: "the system's CA certificates".into(),
                            problem: e.to_string(),
                        })?;
                let check = CertCheck {
                    pinned: Some((webpki, Vec::new())),
                    provider: provider.clone(),
                };
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(check))
            }
        }
    };
    let mut cfg = match (&opts.cert, &opts.key) {
        (Some(cert), Some(key)) => {
            let files = ClientCertFiles::load(cert, key, provider)?;
            builder.with_client_cert_resolver(Arc::new(files))
        }
        (None, None) => builder.with_no_client_auth(),
        (Some(_), None) | (None, Some(_)) => {
            return Err(TlsSetupError::File {
                path: "--cert/--key".into(),
                problem: "a client certificate needs both --cert and --key".into(),
            });
        }
    };
    cfg.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(cfg))
}

/// The client certificate of `--cert`/`--key`, read again at a handshake when either file changed
/// (size, time or inode: a renewed certificate, a Kubernetes secret's swapped symlink), so a long
/// run presents the renewed certificate on its next connection. Looking costs two `stat` calls
/// per handshake, nothing per call. Files that do not load then are logged once per change and
/// the previous certificate is kept.
#[derive(Debug)]
struct ClientCertFiles {
    cert: PathBuf,
    key: PathBuf,
    provider: Arc<CryptoProvider>,
    now: Mutex<(Stamps, Arc<CertifiedKey>)>,
}

type Stamps = [Option<(u64, Option<SystemTime>, u64)>; 2];

impl ClientCertFiles {
    fn load(
        cert: &Path,
        key: &Path,
        provider: Arc<CryptoProvider>,
    ) -> Result<ClientCertFiles, TlsSetupError> {
        let stamps = Self::stamps(cert, key);
        let loaded = Self::read(cert, key, &provider)?;
        Ok(ClientCertFiles {
            cert: cert.to_owned(),
            key: key.to_owned(),
            provider,
            now: Mutex::new((stamps, Arc::new(loaded))),
        })
    }

    fn read(
        cert: &Path,
        key: &Path,
        provider: &CryptoProvider,
    ) -> Result<CertifiedKey, TlsSetupError> {
        let cert_bytes = std::fs::read(cert).map_err(|e| file_err(cert, e))?;
        let chain = CertificateDer::pem_slice_iter(&cert_bytes)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| file_err(cert, format!("not a PEM certificate: {e}")))?;
        if chain.is_empty() {
            return Err(file_err(cert, "no certificate found in the file"));
        }
        let key_bytes = std::fs::read(key).map_err(|e| file_err(key, e))?;
        let key_der = PrivateKeyDer::from_pem_slice(&key_bytes)
            .map_err(|e| file_err(key, format!("no private key found: {e}")))?;
        CertifiedKey::from_der(chain, key_der, provider).map_err(|e| {
            file_err(
                key,
                format!("does not fit the certificate {}: {e}", cert.display()),
            )
        })
    }

    fn stamps(cert: &Path, key: &Path) -> Stamps {
        use std::os::unix::fs::MetadataExt;
        [cert, key].map(|p| {
            let m = std::fs::metadata(p).ok()?;
            Some((m.len(), m.modified().ok(), m.ino()))
        })
    }
}

impl ResolvesClientCert for ClientCertFiles {
    fn resolve(&self, _: &[&[u8]], _: &[SignatureScheme]) -> Option<Arc<CertifiedKey>> {
        let mut now = self.now.lock().unwrap_or_else(|e| e.into_inner());
        let stamps = Self::stamps(&self.cert, &self.key);
        if stamps != now.0 {
            now.0 = stamps;
            match Self::read(&self.cert, &self.key, &self.provider) {
                Ok(k) => {
                    tracing::info!("reloaded the client certificate {}", self.cert.display());
                    now.1 = Arc::new(k);
                }
                Err(e) => tracing::warn!(
                    "cannot reload the client certificate: {e}; still using the previous one"
                ),
            }
        }
        Some(now.1.clone())
    }

    fn has_certs(&self) -> bool {
        true
    }
}

/// The server-certificate check of a `--cacert` file or the system's roots, or none at all
/// (`--skipTLS`).
///
/// With roots: the server name first, then WebPKI (Go's order: a certificate for the wrong host
/// is reported as that even when no known CA signed it, as ghz and grpcurl report it), then Go's
/// rule for a certificate the user named: when WebPKI refuses a server certificate that is byte
/// for byte one of the file's, it is accepted if it is valid for the server name and for today.
/// Without (`pinned: None`): every certificate is accepted.
/// Handshake signatures are checked either way, with the provider's algorithms (as WebPKI's
/// verifier checks them), so the handshake stays well-formed.
#[derive(Debug)]
struct CertCheck {
    pinned: Option<(Arc<WebPkiServerVerifier>, Vec<CertificateDer<'static>>)>,
    provider: Arc<CryptoProvider>,
}

impl CertCheck {
    /// The check of a `--cacert` file: its certificates as roots, and as the pinned ones.
    fn of_file(ca: &Path, provider: &Arc<CryptoProvider>) -> Result<CertCheck, TlsSetupError> {
        let bytes = std::fs::read(ca).map_err(|e| file_err(ca, e))?;
        let (mut roots, mut pinned) = (RootCertStore::empty(), Vec::new());
        for cert in CertificateDer::pem_slice_iter(&bytes) {
            let cert = cert.map_err(|e| file_err(ca, format!("not a PEM certificate: {e}")))?;
            roots.add(cert.clone()).map_err(|e| file_err(ca, e))?;
            pinned.push(cert);
        }
        if pinned.is_empty() {
            return Err(file_err(ca, "no certificate found in the file"));
        }
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(|e| file_err(ca, e))?;
        Ok(CertCheck {
            pinned: Some((webpki, pinned)),
            provider: provider.clone(),
        })
    }
}

impl ServerCertVerifier for CertCheck {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some((webpki, pinned)) = &self.pinned else {
            return Ok(ServerCertVerified::assertion());
        };
        verify_server_name(&ParsedCertificate::try_from(end_entity)?, server_name)?;
        match webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(_) if pinned.iter().any(|p| p.as_ref() == end_entity.as_ref()) => {
                verify_pinned(end_entity, server_name, now)?;
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// A pinned certificate still has to name the server and be within its dates.
fn verify_pinned(
    cert: &CertificateDer<'_>,
    name: &ServerName<'_>,
    now: UnixTime,
) -> Result<(), rustls::Error> {
    verify_server_name(&ParsedCertificate::try_from(cert)?, name)?;
    let bad = || rustls::Error::InvalidCertificate(CertificateError::BadEncoding);
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref()).map_err(|_| bad())?;
    let validity = parsed.validity();
    let at = |t: i64| UnixTime::since_unix_epoch(Duration::from_secs(t.max(0) as u64));
    let now_secs = now.as_secs() as i64;
    if now_secs > validity.not_after.timestamp() {
        return Err(rustls::Error::InvalidCertificate(
            CertificateError::ExpiredContext {
                time: now,
                not_after: at(validity.not_after.timestamp()),
            },
        ));
    }
    if now_secs < validity.not_before.timestamp() {
        return Err(rustls::Error::InvalidCertificate(
            CertificateError::NotValidYetContext {
                time: now,
                not_before: at(validity.not_before.timestamp()),
            },
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};

    fn scratch(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("volley-client-tls-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// A certificate for `names` with `serial`, valid from `from` to `to` days from today,
    /// marked CA:TRUE as `openssl req -x509` marks its self-signed ones when `ca`.
    fn params(names: &[&str], serial: u64, from: i64, to: i64, ca: bool) -> CertificateParams {
        let mut p = CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .unwrap();
        p.serial_number = Some(serial.into());
        let day = |d: i64| {
            let now = std::time::SystemTime::now();
            let span = Duration::from_secs(86_400 * d.unsigned_abs());
            if d < 0 { now - span } else { now + span }
        };
        p.not_before = day(from).into();
        p.not_after = day(to).into();
        if ca {
            p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        }
        p
    }

    fn verify(check: &CertCheck, cert: &[u8], name: &str) -> Result<(), rustls::Error> {
        let name = ServerName::try_from(name.to_owned()).unwrap();
        check
            .verify_server_cert(
                &CertificateDer::from(cert),
                &[],
                &name,
                &[],
                UnixTime::now(),
            )
            .map(|_| ())
    }

    fn check_of(dir: &Path, pem: &str) -> CertCheck {
        let path = dir.join("ca.pem");
        std::fs::write(&path, pem).unwrap();
        CertCheck::of_file(&path, &provider()).unwrap()
    }

    #[test]
    fn only_the_very_certificate_of_cacert_is_trusted_as_its_own_ca() {
        let d = scratch("pinned");
        for ca in [true, false] {
            let key = KeyPair::generate().unwrap();
            let leaf = params(&["localhost"], 1, -1, 30, ca)
                .self_signed(&key)
                .unwrap();
            let check = check_of(&d, &leaf.pem());
            verify(&check, leaf.der(), "localhost").expect("the very certificate");

            // The same name, subject, dates and serial with another key: a look-alike, not the
            // one named. (With the same key it would be signed by the trusted key itself, and
            // trusted by the ordinary chain check, as by Go's.)
            let again = params(&["localhost"], 1, -1, 30, ca)
                .self_signed(&KeyPair::generate().unwrap())
                .unwrap();
            let err = verify(&check, again.der(), "localhost").unwrap_err();
            assert!(
                matches!(err, rustls::Error::InvalidCertificate(_)),
                "ca={ca}: {err:?}"
            );
            // One byte changed in the signature: not the same certificate either.
            let mut bent = leaf.der().to_vec();
            let last = bent.len() - 1;
            bent[last] ^= 1;
            assert!(verify(&check, &bent, "localhost").is_err(), "ca={ca}");

            // The name is still checked.
            let err = verify(&check, leaf.der(), "api.example.com").unwrap_err();
            assert!(
                matches!(
                    err,
                    rustls::Error::InvalidCertificate(
                        CertificateError::NotValidForNameContext { .. }
                    )
                ),
                "ca={ca}: {err:?}"
            );
        }

        // The dates are still checked: the very certificate, expired or not yet valid.
        let key = KeyPair::generate().unwrap();
        for (from, to, want) in [(-30, -2, "Expired"), (2, 30, "NotValidYet")] {
            let cert = params(&["localhost"], 3, from, to, true)
                .self_signed(&key)
                .unwrap();
            let check = check_of(&d, &cert.pem());
            let err = verify(&check, cert.der(), "localhost").unwrap_err();
            assert!(format!("{err:?}").contains(want), "{want}: {err:?}");
        }

        // A certificate signed by a CA the file does not hold: unknown, whatever it names.
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = params(&[], 4, -1, 30, true);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "a CA of its own");
        let ca_cert = ca_params.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca_params, ca_key);
        let leaf_key = KeyPair::generate().unwrap();
        let signed = params(&["localhost"], 5, -1, 30, false)
            .signed_by(&leaf_key, &issuer)
            .unwrap();
        let other = params(&["localhost"], 6, -1, 30, true)
            .self_signed(&KeyPair::generate().unwrap())
            .unwrap();
        let err = verify(&check_of(&d, &other.pem()), signed.der(), "localhost").unwrap_err();
        assert_eq!(
            err,
            rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer)
        );
        // With its CA in the file, it is trusted the usual way.
        verify(&check_of(&d, &ca_cert.pem()), signed.der(), "localhost").unwrap();
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn a_client_certificate_follows_its_files() {
        let d = scratch("client");
        let (cert, key) = (d.join("client.pem"), d.join("client.key"));
        let write = |serial: u64| {
            let k = KeyPair::generate().unwrap();
            let c = params(&["client"], serial, -1, 30, false)
                .self_signed(&k)
                .unwrap();
            // As certificate tools do: new files renamed over the old ones.
            for (path, text) in [(&key, k.serialize_pem()), (&cert, c.pem())] {
                std::fs::write(path.with_extension("new"), text).unwrap();
                std::fs::rename(path.with_extension("new"), path).unwrap();
            }
            c.der().to_vec()
        };
        let first = write(1);
        let files = ClientCertFiles::load(&cert, &key, provider()).unwrap();
        let shown = || files.resolve(&[], &[]).unwrap().cert[0].as_ref().to_vec();
        assert_eq!(shown(), first);
        let second = write(2);
        assert_eq!(
            shown(),
            second,
            "the next handshake presents the new certificate"
        );

        // A key that is not the certificate's: logged, the previous pair kept.
        std::fs::write(&key, KeyPair::generate().unwrap().serialize_pem()).unwrap();
        assert_eq!(shown(), second);
        let err = ClientCertFiles::read(&cert, &key, &provider()).unwrap_err();
        assert!(
            err.to_string().contains("does not fit the certificate"),
            "{err}"
        );
        std::fs::remove_dir_all(d).unwrap();
    }
}
