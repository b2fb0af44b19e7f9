//! TLS for the server: rustls configs from PEM files, ones that follow their files
//! ([`Reloading`]), and a generated local CA plus certificate.

mod reload;

pub use reload::{Loaded, Reloading, TlsFiles, Watcher};

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use rustls::{
    ServerConfig,
    crypto::CryptoProvider,
    pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject},
};

/// What went wrong setting up TLS; each names the file or step.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A PEM file could not be read.
    #[error("cannot read {what} {path}: {error}")]
    Read {
        /// "TLS certificate" or "TLS key".
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The I/O error (in the message, not a `source`, so error chains print it once).
        error: std::io::Error,
    },
    /// A PEM file held nothing usable.
    #[error("{path}: {problem}")]
    Pem {
        /// The file.
        path: PathBuf,
        /// What was wrong with it.
        problem: String,
    },
    /// rustls refused the certificate and key.
    #[error("TLS certificate and key do not fit together: {0}")]
    Config(#[from] rustls::Error),
    /// Certificate generation failed.
    #[error("cannot generate a certificate: {0}")]
    Generate(#[from] rcgen::Error),
    /// Writing generated files failed.
    #[error("cannot write {path}: {error}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error (in the message, not a `source`, so error chains print it once).
        error: std::io::Error,
    },
}

/// The crypto provider volley uses everywhere (ring: no C toolchain beyond `cc` needed).
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn read(what: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|error| TlsError::Read {
        what,
        path: path.to_owned(),
        error,
    })
}

/// Loads a certificate chain and its private key.
pub fn load_pem(
    cert: &Path,
    key: &Path,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsError> {
    let cert_bytes = read("TLS certificate", cert)?;
    let key_bytes = read("TLS key", key)?;
    let chain = CertificateDer::pem_slice_iter(&cert_bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Pem {
            path: cert.to_owned(),
            problem: format!("not a PEM certificate: {e}"),
        })?;
    if chain.is_empty() {
        return Err(TlsError::Pem {
            path: cert.to_owned(),
            problem: "no certificate found in the file".into(),
        });
    }
    let key_der = PrivateKeyDer::from_pem_slice(&key_bytes).map_err(|e| TlsError::Pem {
        path: key.to_owned(),
        problem: format!("no private key found: {e}"),
    })?;
    Ok((chain, key_der))
}

/// A server config from PEM files, offering ALPN `h2` and `http/1.1`.
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<ServerConfig>, TlsError> {
    let (chain, key) = load_pem(cert, key)?;
    config(chain, key, None)
}

/// A server config from PEM text; with `client_ca`, clients must present a certificate that CA
/// signed (mutual TLS).
pub fn server_config_from_pem(
    cert_pem: &[u8],
    key_pem: &[u8],
    client_ca: Option<&[u8]>,
) -> Result<Arc<ServerConfig>, TlsError> {
    let pem_err = |problem: String| TlsError::Pem {
        path: PathBuf::from("<memory>"),
        problem,
    };
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_err(format!("not a PEM certificate: {e}")))?;
    let key = PrivateKeyDer::from_pem_slice(key_pem)
        .map_err(|e| pem_err(format!("no private key found: {e}")))?;
    let roots = match client_ca {
        None => None,
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in CertificateDer::pem_slice_iter(ca) {
                let c = c.map_err(|e| pem_err(format!("not a PEM client CA: {e}")))?;
                roots
                    .add(c)
                    .map_err(|e| pem_err(format!("unusable client CA: {e}")))?;
            }
            Some(roots)
        }
    };
    config(chain, key, roots)
}

fn config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    client_roots: Option<rustls::RootCertStore>,
) -> Result<Arc<ServerConfig>, TlsError> {
    let builder =
        ServerConfig::builder_with_provider(provider()).with_safe_default_protocol_versions()?;
    let builder = match client_roots {
        None => builder.with_no_client_auth(),
        Some(roots) => {
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider(),
            )
            .build()
            .map_err(|e| TlsError::Pem {
                path: PathBuf::from("<memory>"),
                problem: format!("client CA: {e}"),
            })?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut cfg = builder.with_single_cert(chain, key)?;
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

/// Files written by [`generate_self_signed`].
#[derive(Debug, Clone)]
pub struct SelfSigned {
    /// The CA certificate clients should trust (`grpcurl -cacert`, `ghz --cacert`).
    pub ca: PathBuf,
    /// The server certificate, for localhost, 127.0.0.1 and ::1.
    pub cert: PathBuf,
    /// The server's private key.
    pub key: PathBuf,
}

/// Generates a local CA and a server certificate it signs, and writes them as PEM into `dir`.
pub fn generate_self_signed(dir: &Path) -> Result<SelfSigned, TlsError> {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    };
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "volley local CA");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca_params, ca_key);

    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
    ])?;
    params
        .distinguished_name
        .push(DnType::CommonName, "volley server");
    let cert = params.signed_by(&key, &issuer)?;

    std::fs::create_dir_all(dir).map_err(|error| TlsError::Write {
        path: dir.to_owned(),
        error,
    })?;
    let out = SelfSigned {
        ca: dir.join("ca.pem"),
        cert: dir.join("server.pem"),
        key: dir.join("server.key"),
    };
    for (path, text) in [
        (&out.ca, ca_cert.pem()),
        (&out.cert, cert.pem()),
        (&out.key, key.serialize_pem()),
    ] {
        std::fs::write(path, text).map_err(|error| TlsError::Write {
            path: path.clone(),
            error,
        })?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_files_load_into_a_config() {
        let dir = std::env::temp_dir().join(format!("volley-tls-test-{}", std::process::id()));
        let files = generate_self_signed(&dir).unwrap();
        let cfg = server_config(&files.cert, &files.key).unwrap();
        assert_eq!(cfg.alpn_protocols[0], b"h2");
        let err = server_config(&dir.join("missing.pem"), &files.key).unwrap_err();
        assert!(
            err.to_string().starts_with("cannot read TLS certificate"),
            "{err}"
        );
        let err = server_config(&files.key, &files.key).unwrap_err();
        assert!(err.to_string().contains("no certificate"), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
