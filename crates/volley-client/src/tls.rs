//! rustls client configs: trust roots (a CA file or the system's), client certificates for mutual
//! TLS, and the opt-in "skip verification" mode ghz calls `--skipTLS`.

use std::{path::Path, sync::Arc};

use rustls::{
    ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
    client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier},
    crypto::CryptoProvider,
    pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime, pem::PemObject},
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
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
    } else {
        let mut roots = RootCertStore::empty();
        match &opts.ca {
            Some(ca) => {
                let bytes = std::fs::read(ca).map_err(|e| file_err(ca, e))?;
                let mut n = 0;
                for cert in CertificateDer::pem_slice_iter(&bytes) {
                    let cert =
                        cert.map_err(|e| file_err(ca, format!("not a PEM certificate: {e}")))?;
                    roots.add(cert).map_err(|e| file_err(ca, e))?;
                    n += 1;
                }
                if n == 0 {
                    return Err(file_err(ca, "no certificate found in the file"));
                }
            }
            None => {
                for cert in rustls_native_certs::load_native_certs().certs {
                    let _ = roots.add(cert);
                }
            }
        }
        builder.with_root_certificates(roots)
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

/// Accepts every certificate; signatures are still checked so the handshake stays well-formed.
#[derive(Debug)]
struct NoVerify(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
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
            &self.0.signature_verification_algorithms,
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
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
