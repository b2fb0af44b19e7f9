//! rustls client configs: trust roots (a CA file or the system's), client certificates for mutual
//! TLS, and the opt-in "skip verification" mode ghz calls `--skipTLS`. A server certificate that
//! is byte for byte one of the `--cacert` certificates is trusted as it is, name and dates still
//! checked, as Go's verifier (ghz, grpcurl) does for the self-signed certificates `openssl req
//! -x509` makes; WebPKI alone refuses them (`CaUsedAsEndEntity`).

use std::{path::Path, sync::Arc, time::Duration};

use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
    client::{
        WebPkiServerVerifier,
        danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier},
        verify_server_name,
    },
    crypto::CryptoProvider,
    pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime, pem::PemObject},
    server::ParsedCertificate,
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
            Some(ca) => {
                let bytes = std::fs::read(ca).map_err(|e| file_err(ca, e))?;
                let mut pinned = Vec::new();
                for cert in CertificateDer::pem_slice_iter(&bytes) {
                    let cert =
                        cert.map_err(|e| file_err(ca, format!("not a PEM certificate: {e}")))?;
                    roots.add(cert.clone()).map_err(|e| file_err(ca, e))?;
                    pinned.push(cert);
                }
                if pinned.is_empty() {
                    return Err(file_err(ca, "no certificate found in the file"));
                }
                let webpki =
                    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                        .build()
                        .map_err(|e| file_err(ca, e))?;
                let check = CertCheck {
                    pinned: Some((webpki, pinned)),
                    provider: provider.clone(),
                };
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(check))
            }
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
            let cert_bytes = std::fs::read(cert).map_err(|e| file_err(cert, e))?;
            let chain = CertificateDer::pem_slice_iter(&cert_bytes)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| file_err(cert, format!("not a PEM certificate: {e}")))?;
            let key_bytes = std::fs::read(key).map_err(|e| file_err(key, e))?;
            let key_der = PrivateKeyDer::from_pem_slice(&key_bytes)
                .map_err(|e| file_err(key, format!("no private key found: {e}")))?;
            builder.with_client_auth_cert(chain, key_der)?
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
