//! A failed dial in words a user can act on: which side refused a TLS handshake and why, what
//! is wrong with a server certificate and which flag changes it, and why an HTTP/2 handshake
//! failed, told from what the server sent (`witness`).

use volley_wire::h2::{FRAME_HEADER_LEN, Head, kind};

use super::witness::Seen;
use crate::endpoint::Endpoint;

/// Says which side refused a TLS handshake.
#[cfg(feature = "tls")]
pub(super) fn explain_tls(e: &std::io::Error) -> String {
    let inner = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
    match inner {
        Some(rustls::Error::InvalidCertificate(c)) => {
            format!(
                "we refused the server's certificate: {}",
                explain_certificate(c)
            )
        }
        Some(rustls::Error::AlertReceived(a)) => {
            format!("the server refused the handshake with alert {a:?} (check --cert/--key)")
        }
        Some(rustls::Error::InvalidMessage(m)) => {
            format!("the server did not speak TLS ({m:?}); is it plaintext? then use --insecure")
        }
        Some(other) => other.to_string(),
        None => format!("{e} (is the server plaintext? then use --insecure)"),
    }
}

#[cfg(feature = "tls")]
/// What is wrong with a server certificate, and which flag changes it, in one sentence.
fn explain_certificate(c: &rustls::CertificateError) -> String {
    use rustls::CertificateError as E;
    const SKIP: &str = "or skip the check with --skipTLS";
    let days = |from: rustls::pki_types::UnixTime, to: rustls::pki_types::UnixTime| {
        to.as_secs().abs_diff(from.as_secs()) / 86_400
    };
    match c {
        E::UnknownIssuer => format!(
            "it is not signed by a CA we trust; pass its CA (for a self-signed certificate, the \
             certificate itself) with --cacert, {SKIP}"
        ),
        E::NotValidForNameContext {
            expected,
            presented,
        } if presented.is_empty() => format!(
            "it names no host (no subjectAltName), so it is not valid for {}; make it with \
             -addext \"subjectAltName=DNS:{0}\", {SKIP}",
            name_of(expected)
        ),
        E::NotValidForNameContext {
            expected,
            presented,
        } => format!(
            "it is for {}, not {}; connect by one of those names or set --cname, {SKIP}",
            presented
                .iter()
                .map(|p| presented_name(p))
                .collect::<Vec<_>>()
                .join(", "),
            name_of(expected)
        ),
        E::NotValidForName => {
            format!("it is not valid for the name we connected to; set --cname, {SKIP}")
        }
        E::ExpiredContext { time, not_after } => format!(
            "it expired {} day(s) ago; renew it on the server, {SKIP}",
            days(*not_after, *time)
        ),
        E::Expired => format!("it has expired; renew it on the server, {SKIP}"),
        E::NotValidYetContext { time, not_before } => format!(
            "it is not valid for another {} day(s) (check the clocks), {SKIP}",
            days(*time, *not_before)
        ),
        E::NotValidYet => format!("it is not valid yet (check the clocks), {SKIP}"),
        E::BadSignature => format!("its signature does not verify, {SKIP}"),
        // rustls passes this webpki error on boxed in `Other`.
        E::Other(o)
            if matches!(
                o.0.downcast_ref::<webpki::Error>(),
                Some(webpki::Error::CaUsedAsEndEntity)
            ) =>
        {
            format!(
                "it is a CA certificate that --cacert does not hold; pass this very certificate \
             with --cacert (a self-signed one), or give the server a certificate signed by a CA \
             in --cacert, {SKIP}"
            )
        }
        other => format!("{other:?}; check --cacert and --cname, {SKIP}"),
    }
}

#[cfg(feature = "tls")]
/// A name from the certificate as rustls lists it (`DnsName("localhost")`, `IpAddress(::1)`),
/// without the wrapping.
fn presented_name(p: &str) -> &str {
    p.strip_prefix("DnsName(\"")
        .and_then(|r| r.strip_suffix("\")"))
        .or_else(|| {
            p.strip_prefix("IpAddress(")
                .and_then(|r| r.strip_suffix(')'))
        })
        .unwrap_or(p)
}

#[cfg(feature = "tls")]
/// A server name as the user typed it (`localhost`, `127.0.0.1`), not its Debug form.
fn name_of(name: &rustls::pki_types::ServerName<'_>) -> String {
    match name {
        rustls::pki_types::ServerName::DnsName(d) => d.as_ref().to_owned(),
        rustls::pki_types::ServerName::IpAddress(ip) => std::net::IpAddr::from(*ip).to_string(),
        other => format!("{other:?}"),
    }
}

/// What the server's first bytes were.
#[derive(Debug, PartialEq, Eq)]
enum Said {
    /// Nothing: it closed (or failed) first.
    Nothing,
    /// A TLS record (an alert, most likely): it speaks TLS.
    Tls,
    /// An HTTP/1 status line.
    Http1(String),
    /// HTTP/2 frames, SETTINGS first, and among them a GOAWAY with this code and debug data.
    GoAway(h2::Reason, String),
    /// HTTP/2 frames, SETTINGS first, no GOAWAY among those kept.
    Http2,
    /// Something else.
    Other,
}

fn said(b: &[u8]) -> Said {
    if b.is_empty() {
        return Said::Nothing;
    }
    // A TLS record: content type 20-23, version 3.x. As an HTTP/2 frame header it would
    // announce a frame over 1.3 MB, which no server opens with.
    if (0x14..=0x17).contains(&b[0]) && b.get(1).is_none_or(|v| *v == 3) {
        return Said::Tls;
    }
    if b.starts_with(b"HTTP/") {
        let line = b.split(|c| *c == b'\r' || *c == b'\n').next().unwrap_or(b);
        return Said::Http1(String::from_utf8_lossy(line).into_owned());
    }
    if b.len() < FRAME_HEADER_LEN || Head::read(b).kind != kind::SETTINGS {
        return Said::Other;
    }
    let mut at = 0;
    while b.len() >= at + FRAME_HEADER_LEN {
        let h = Head::read(&b[at..]);
        let p = &b[(at + FRAME_HEADER_LEN).min(b.len())..];
        if h.kind == kind::GOAWAY && h.len >= 8 && p.len() >= 8 {
            let code = u32::from_be_bytes([p[4], p[5], p[6], p[7]]);
            let debug = &p[8..h.len.min(p.len())];
            return Said::GoAway(code.into(), String::from_utf8_lossy(debug).into_owned());
        }
        at += FRAME_HEADER_LEN + h.len;
    }
    Said::Http2
}

/// Why the HTTP/2 handshake failed, in the words the evidence allows: what the server said
/// when it spoke HTTP/2; the TLS hint over plaintext only when it sent nothing, or a TLS
/// record; over TLS without a client certificate, that the server may want one.
pub(super) fn explain_handshake(ep: &Endpoint, e: &h2::Error, seen: &Seen) -> String {
    let said = said(&seen.bytes);
    #[cfg(feature = "tls")]
    if let Some(cfg) = &ep.tls {
        const GIVE_ONE: &str = "give one with --cert and --key";
        let no_cert = !cfg.client_auth_cert_resolver.has_certs();
        match seen.alert {
            Some(rustls::AlertDescription::CertificateRequired) => {
                return format!(
                    "the server sent TLS alert CertificateRequired after the TLS handshake (it \
                     requires a client certificate: {GIVE_ONE})"
                );
            }
            Some(a) if no_cert => {
                return format!(
                    "the server sent TLS alert {a:?} after the TLS handshake (the server may \
                     require a client certificate: {GIVE_ONE})"
                );
            }
            Some(a) => {
                return format!(
                    "the server sent TLS alert {a:?} after the TLS handshake (check --cert/--key)"
                );
            }
            None if no_cert && said == Said::Nothing && e.reason().is_none() => {
                return format!("{e} (the server may require a client certificate: {GIVE_ONE})");
            }
            None => {}
        }
    }
    match said {
        Said::GoAway(reason, debug) if debug.is_empty() => {
            format!("the server sent GOAWAY ({reason:?}) during the handshake")
        }
        Said::GoAway(reason, debug) => {
            format!("the server sent GOAWAY ({reason:?}, {debug:?}) during the handshake")
        }
        Said::Http2 if e.reason().is_none() => {
            format!("the connection failed after the server's SETTINGS: {e}")
        }
        Said::Http1(line) => format!("the server answered in HTTP/1, not HTTP/2: {line:?}"),
        Said::Nothing | Said::Tls if !ep.is_tls() => {
            format!("{e} (the server may want TLS: drop --insecure)")
        }
        Said::Other => format!("{e} (the server's first bytes are not HTTP/2)"),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use volley_wire::h2::write;

    #[test]
    fn the_servers_first_bytes_are_told_apart() {
        let mut h2 = Vec::new();
        write(&mut h2, kind::SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 100]);
        assert_eq!(said(&h2), Said::Http2);
        let mut goaway = 0u32.to_be_bytes().to_vec();
        goaway.extend_from_slice(&0u32.to_be_bytes());
        write(&mut h2, kind::GOAWAY, 0, 0, &goaway);
        assert_eq!(said(&h2), Said::GoAway(h2::Reason::NO_ERROR, String::new()));
        assert_eq!(said(&[]), Said::Nothing);
        // A TLS alert record (fatal, decode_error).
        assert_eq!(said(&[0x15, 3, 3, 0, 2, 2, 50]), Said::Tls);
        assert_eq!(
            said(b"HTTP/1.1 400 Bad Request\r\n\r\n"),
            Said::Http1("HTTP/1.1 400 Bad Request".into())
        );
        assert_eq!(said(b"SSH-2.0-OpenSSH_9.6\r\n"), Said::Other);
    }
}
