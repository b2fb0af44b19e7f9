//! The OTLP/HTTP exporter's HTTP client: volley's own HTTP/1.1 connection (hyper) over volley's
//! rustls set-up, so an `https://` collector works with the system's roots or a private CA
//! (`OTEL_EXPORTER_OTLP_CERTIFICATE`), where the SDK's default client had no TLS at all. One
//! connection is kept and dialled again after a failure.

use std::{path::PathBuf, sync::Arc, time::Duration};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use opentelemetry_http::{HttpClient, HttpError};
use rustls_config::tls_for_http1;
use tokio::sync::Mutex;
use volley_client::{Endpoint, Target, load::http1::Http1Connection};

use crate::background::Background;

/// The connection kept between exports, with the `scheme://host:port` it goes to.
type Slot = Arc<Mutex<Option<(String, Arc<Http1Connection>)>>>;

/// An [`HttpClient`] on volley's client.
#[derive(Clone)]
pub(crate) struct VolleyHttp {
    cacert: Option<PathBuf>,
    bg: Arc<Background>,
    conn: Slot,
}

impl VolleyHttp {
    /// A client trusting `cacert` (PEM) for https, or the system's roots.
    pub(crate) fn new(cacert: Option<PathBuf>, bg: Arc<Background>) -> VolleyHttp {
        VolleyHttp {
            cacert,
            bg,
            conn: Arc::new(Mutex::new(None)),
        }
    }
}

impl std::fmt::Debug for VolleyHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VolleyHttp")
            .field("cacert", &self.cacert)
            .finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl HttpClient for VolleyHttp {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (cacert, slot) = (self.cacert.clone(), self.conn.clone());
        self.bg
            .run(async move { send(cacert, slot, request).await })
            .await
            .unwrap_or_else(|| Err("the exporter's runtime has stopped".into()))
    }
}

async fn send(
    cacert: Option<PathBuf>,
    slot: Slot,
    request: Request<Bytes>,
) -> Result<Response<Bytes>, HttpError> {
    let uri = request.uri().clone();
    let https = uri.scheme_str() == Some("https");
    let host = uri
        .host()
        .ok_or("the collector URL has no host")?
        .to_owned();
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    let key = format!("{}://{host}:{port}", uri.scheme_str().unwrap_or("http"));
    let mut guard = slot.lock().await;
    let conn = match guard.as_ref() {
        Some((k, c)) if *k == key => c.clone(),
        _ => {
            let target = if host.contains(':') {
                format!("[{host}]:{port}")
            } else {
                format!("{host}:{port}")
            };
            let mut ep = Endpoint::new(Target::parse(&target)?)?;
            ep.connect_timeout = Duration::from_secs(5);
            if https {
                ep = ep.tls(tls_for_http1(cacert.as_deref())?);
            }
            let c = Arc::new(Http1Connection::connect(&ep).await?);
            *guard = Some((key, c.clone()));
            c
        }
    };
    let (mut parts, body) = request.into_parts();
    parts.uri = uri
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/")
        .parse()?;
    let authority = uri
        .authority()
        .map(|a| a.as_str().to_owned())
        .unwrap_or(host);
    parts.headers.insert(http::header::HOST, authority.parse()?);
    match conn
        .fetch(Request::from_parts(parts, Full::new(body)))
        .await
    {
        Ok((status, body)) => Ok(Response::builder().status(status).body(body)?),
        Err(e) => {
            // The next export dials again.
            *guard = None;
            Err(e.into())
        }
    }
}

/// TLS for HTTP/1.1 on volley's client config (its ALPN offers h2 alone otherwise).
mod rustls_config {
    use std::{path::Path, sync::Arc};

    use volley_client::tls::{TlsOptions, client_config};

    pub(super) fn tls_for_http1(
        cacert: Option<&Path>,
    ) -> Result<Arc<rustls::ClientConfig>, volley_client::tls::TlsSetupError> {
        let opts = TlsOptions {
            ca: cacert.map(Path::to_path_buf),
            ..TlsOptions::default()
        };
        let mut cfg = (*client_config(&opts)?).clone();
        cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(cfg))
    }
}
