//! Errors in the words Go prints them, for grpcurl's messages: OS errors as `syscall.Errno`
//! spells them (`no such file or directory`) and TLS failures as `crypto/tls` and `crypto/x509`
//! do (`tls: failed to verify certificate: x509: certificate signed by unknown authority`).

use rustls::{AlertDescription, CertificateError, pki_types::ServerName};

/// An OS error as Go prints it: the C library's text, lower-case, without Rust's `(os error N)`.
pub(crate) fn io(e: &std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        return "EOF".into();
    }
    let text = e.to_string();
    let text = match text.find(" (os error") {
        Some(i) => &text[..i],
        None => &text,
    };
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// A failed TLS handshake as Go's client reports it.
pub(crate) fn tls(e: &std::io::Error, name: &ServerName<'_>) -> String {
    let Some(inner) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) else {
        return io(e);
    };
    match inner {
        rustls::Error::InvalidCertificate(c) => {
            format!("tls: failed to verify certificate: {}", x509(c, name))
        }
        rustls::Error::AlertReceived(a) => format!("remote error: tls: {}", alert(*a)),
        rustls::Error::InvalidMessage(_) => {
            "tls: first record does not look like a TLS handshake".into()
        }
        other => format!("tls: {other}"),
    }
}

fn x509(c: &CertificateError, name: &ServerName<'_>) -> String {
    match c {
        CertificateError::UnknownIssuer => "x509: certificate signed by unknown authority".into(),
        CertificateError::NotValidForNameContext { presented, .. } => {
            let host = match name {
                ServerName::DnsName(d) => d.as_ref().to_owned(),
                ServerName::IpAddress(ip) => std::net::IpAddr::from(*ip).to_string(),
                other => format!("{other:?}"),
            };
            let is_ip = matches!(name, ServerName::IpAddress(_));
            let valid: Vec<&str> = presented
                .iter()
                .filter_map(|p| {
                    if is_ip {
                        p.strip_prefix("IpAddress(")?.strip_suffix(')')
                    } else {
                        p.strip_prefix("DnsName(\"")?.strip_suffix("\")")
                    }
                })
                .collect();
            if is_ip && valid.is_empty() {
                format!(
                    "x509: cannot validate certificate for {host} because it doesn't contain any IP SANs"
                )
            } else if valid.is_empty() {
                format!("x509: certificate is not valid for any names, but wanted to match {host}")
            } else {
                format!(
                    "x509: certificate is valid for {}, not {host}",
                    valid.join(", ")
                )
            }
        }
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
            "x509: certificate has expired or is not yet valid".into()
        }
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            "x509: certificate has expired or is not yet valid".into()
        }
        other => format!("x509: {other:?}"),
    }
}

/// Go's names for TLS alerts.
fn alert(a: AlertDescription) -> String {
    match a {
        AlertDescription::HandshakeFailure => "handshake failure".into(),
        AlertDescription::BadCertificate => "bad certificate".into(),
        AlertDescription::UnsupportedCertificate => "unsupported certificate".into(),
        AlertDescription::CertificateRevoked => "revoked certificate".into(),
        AlertDescription::CertificateExpired => "expired certificate".into(),
        AlertDescription::CertificateUnknown => "unknown certificate".into(),
        AlertDescription::UnknownCA => "unknown certificate authority".into(),
        AlertDescription::AccessDenied => "access denied".into(),
        AlertDescription::DecryptError => "error decrypting message".into(),
        AlertDescription::ProtocolVersion => "protocol version not supported".into(),
        AlertDescription::InternalError => "internal error".into(),
        AlertDescription::CertificateRequired => "certificate required".into(),
        AlertDescription::NoApplicationProtocol => "no application protocol".into(),
        other => format!("{other:?}").to_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_errors_as_go() {
        let e = std::io::Error::from_raw_os_error(2);
        assert_eq!(io(&e), "no such file or directory");
        let e = std::io::Error::from_raw_os_error(111);
        assert_eq!(io(&e), "connection refused");
    }

    #[test]
    fn certificate_errors_as_go() {
        let name = ServerName::try_from("foo").unwrap();
        let c = CertificateError::NotValidForNameContext {
            expected: name.clone(),
            presented: vec![
                "DnsName(\"localhost\")".into(),
                "IpAddress(127.0.0.1)".into(),
            ],
        };
        assert_eq!(
            x509(&c, &name),
            "x509: certificate is valid for localhost, not foo"
        );
        let ip = ServerName::try_from("10.0.0.1").unwrap();
        assert_eq!(
            x509(&c, &ip),
            "x509: certificate is valid for 127.0.0.1, not 10.0.0.1"
        );
    }
}
