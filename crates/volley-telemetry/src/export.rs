//! The OTLP span exporter behind a batch processor on its own thread: calls only queue their
//! spans. OTLP/HTTP (protobuf, opentelemetry-otlp with volley's HTTP client, so `https://` works)
//! or OTLP/gRPC (volley's own gRPC client), chosen by `OTEL_EXPORTER_OTLP_PROTOCOL` as the
//! OpenTelemetry specification names it; the service name from `OTEL_SERVICE_NAME` (or
//! `service.name` in `OTEL_RESOURCE_ATTRIBUTES`) when set. A collector that cannot be reached is
//! reported once, as one log line, and spans are dropped rather than held.

use std::{
    path::PathBuf,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use opentelemetry::global;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::{
    Resource,
    error::OTelSdkResult,
    propagation::TraceContextPropagator,
    trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, SpanData, SpanExporter},
};

use crate::{background::Background, grpc_exporter, http_client::VolleyHttp};

/// Why the exporter could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ExporterError {
    /// The endpoint is not an http(s) URL.
    #[error("--otlp-endpoint {0:?} is not an http:// or https:// URL")]
    Endpoint(String),
    /// The protocol is not one volley speaks.
    #[error(
        "OTEL_EXPORTER_OTLP_PROTOCOL={0:?} is not supported: use grpc or http/protobuf (the default)"
    )]
    Protocol(String),
    /// The OTLP exporter refused its configuration.
    #[error("cannot set up the OTLP exporter for {url}: {detail}")]
    Build {
        /// Where spans would go.
        url: String,
        /// What went wrong.
        detail: String,
    },
}

/// OTLP's two transports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OtlpProtocol {
    /// Protobuf over HTTP, `POST <endpoint>/v1/traces` (port 4318 by convention).
    HttpProtobuf,
    /// gRPC, `TraceService/Export` (port 4317 by convention).
    Grpc,
}

impl OtlpProtocol {
    /// The specification's names: `grpc`, `http/protobuf`.
    pub fn parse(s: &str) -> Result<OtlpProtocol, ExporterError> {
        match s.trim() {
            "grpc" => Ok(OtlpProtocol::Grpc),
            "http/protobuf" | "" => Ok(OtlpProtocol::HttpProtobuf),
            other => Err(ExporterError::Protocol(other.to_owned())),
        }
    }
}

/// Where and how spans go.
#[derive(Clone, Debug)]
pub struct ExportOptions {
    /// The collector's base URL (`http://host:4318`, `https://...`, `http://host:4317` for gRPC).
    pub endpoint: String,
    /// The service name, unless the environment names one.
    pub service_name: String,
    /// The transport.
    pub protocol: OtlpProtocol,
    /// A PEM CA for an https collector (default: the system's roots).
    pub cacert: Option<PathBuf>,
}

impl ExportOptions {
    /// Options for `endpoint`, the rest from the environment as the OpenTelemetry
    /// specification names it: `OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL` and
    /// `OTEL_EXPORTER_OTLP_[TRACES_]CERTIFICATE`.
    pub fn from_env(endpoint: &str, service_name: &str) -> Result<ExportOptions, ExporterError> {
        let var = |names: [&str; 2]| names.iter().find_map(|n| std::env::var(n).ok());
        let protocol = var([
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ])
        .map_or(Ok(OtlpProtocol::HttpProtobuf), |p| OtlpProtocol::parse(&p))?;
        let cacert = var([
            "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
            "OTEL_EXPORTER_OTLP_CERTIFICATE",
        ])
        .filter(|c| !c.is_empty())
        .map(PathBuf::from);
        Ok(ExportOptions {
            endpoint: endpoint.to_owned(),
            service_name: service_name.to_owned(),
            protocol,
            cacert,
        })
    }
}

/// The running exporter; dropping it flushes the spans still queued and stops it.
pub struct Exporter {
    provider: SdkTracerProvider,
    url: String,
}

impl Exporter {
    /// Exports spans of `service_name` to the collector at `endpoint` (its base URL, as
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`: for OTLP/HTTP spans go to `<endpoint>/v1/traces`, a URL
    /// already ending in `/v1/traces` is used as it is), with the protocol and CA the
    /// environment names, and makes it the global tracer provider.
    pub fn start(endpoint: &str, service_name: &str) -> Result<Exporter, ExporterError> {
        Exporter::start_with(ExportOptions::from_env(endpoint, service_name)?)
    }

    /// [`Exporter::start`] with every choice given.
    pub fn start_with(opts: ExportOptions) -> Result<Exporter, ExporterError> {
        let endpoint = opts.endpoint.as_str();
        if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
            return Err(ExporterError::Endpoint(endpoint.to_owned()));
        }
        let build_err = |url: &str, detail: String| ExporterError::Build {
            url: url.to_owned(),
            detail,
        };
        let bg = Arc::new(Background::new().map_err(|e| build_err(endpoint, e.to_string()))?);
        let (exporter, url) = match opts.protocol {
            OtlpProtocol::HttpProtobuf => {
                let url = if endpoint.trim_end_matches('/').ends_with("/v1/traces") {
                    endpoint.to_owned()
                } else {
                    format!("{}/v1/traces", endpoint.trim_end_matches('/'))
                };
                let otlp = opentelemetry_otlp::SpanExporter::builder()
                    .with_http()
                    .with_http_client(VolleyHttp::new(opts.cacert.clone(), bg))
                    .with_protocol(Protocol::HttpBinary)
                    .with_endpoint(url.clone())
                    .with_timeout(Duration::from_secs(5))
                    .build()
                    .map_err(|e| build_err(&url, e.to_string()))?;
                (Otlp::Http(otlp), url)
            }
            OtlpProtocol::Grpc => {
                let g = grpc_exporter::build(endpoint, opts.cacert.clone(), bg)
                    .map_err(|e| build_err(endpoint, e))?;
                (Otlp::Grpc(g), format!("{endpoint} (OTLP/gRPC)"))
            }
        };
        let exporter = WarnOnce {
            inner: exporter,
            url: url.clone(),
            warned: AtomicBool::new(false),
        };
        // Spans leave within a second (the SDK's default is 5 s) unless OTEL_BSP_SCHEDULE_DELAY
        // says otherwise.
        let mut config = BatchConfigBuilder::default();
        if std::env::var_os("OTEL_BSP_SCHEDULE_DELAY").is_none() {
            config = config.with_scheduled_delay(Duration::from_secs(1));
        }
        let processor = BatchSpanProcessor::builder(exporter)
            .with_batch_config(config.build())
            .build();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_resource(resource(&opts.service_name))
            .build();
        global::set_tracer_provider(provider.clone());
        global::set_text_map_propagator(TraceContextPropagator::new());
        Ok(Exporter { provider, url })
    }

    /// Where spans go.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Sends the spans still queued (waits for the collector, up to the export timeout).
    pub fn flush(&self) {
        let _ = self.provider.force_flush();
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.provider.shutdown();
    }
}

/// The SDK's resource (which reads `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES`), named
/// `default_name` only when the environment names no service. `OTEL_SERVICE_NAME` wins over a
/// `service.name` in `OTEL_RESOURCE_ATTRIBUTES`, as the SDK specification orders them; the
/// Rust SDK's detectors apply the attributes last, so the name is set again after them.
fn resource(default_name: &str) -> Resource {
    let builder = Resource::builder();
    let service_name = std::env::var("OTEL_SERVICE_NAME").ok();
    let attributes = std::env::var("OTEL_RESOURCE_ATTRIBUTES").ok();
    match naming(service_name.as_deref(), attributes.as_deref()) {
        Naming::ServiceName(name) => builder.with_service_name(name.to_owned()).build(),
        Naming::Attributes => builder.build(),
        Naming::Default => builder.with_service_name(default_name.to_owned()).build(),
    }
}

/// What names the service.
#[derive(Debug, PartialEq)]
enum Naming<'a> {
    /// `OTEL_SERVICE_NAME`.
    ServiceName(&'a str),
    /// A `service.name` in `OTEL_RESOURCE_ATTRIBUTES`.
    Attributes,
    /// Nothing in the environment: the program's own name.
    Default,
}

fn naming<'a>(service_name: Option<&'a str>, attributes: Option<&str>) -> Naming<'a> {
    if let Some(name) = service_name.map(str::trim).filter(|s| !s.is_empty()) {
        return Naming::ServiceName(name);
    }
    let in_attributes = attributes.is_some_and(|a| {
        a.split(',').any(|kv| {
            kv.split_once('=')
                .is_some_and(|(k, _)| k.trim() == "service.name")
        })
    });
    match in_attributes {
        true => Naming::Attributes,
        false => Naming::Default,
    }
}

/// The exporter for the protocol chosen.
#[derive(Debug)]
enum Otlp {
    Http(opentelemetry_otlp::SpanExporter),
    Grpc(grpc_exporter::GrpcExporter),
}

impl SpanExporter for Otlp {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        match self {
            Otlp::Http(e) => e.export(batch).await,
            Otlp::Grpc(e) => e.export(batch).await,
        }
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        match self {
            Otlp::Http(e) => e.shutdown_with_timeout(timeout),
            Otlp::Grpc(e) => e.shutdown_with_timeout(timeout),
        }
    }

    fn set_resource(&mut self, resource: &Resource) {
        match self {
            Otlp::Http(e) => e.set_resource(resource),
            Otlp::Grpc(e) => e.set_resource(resource),
        }
    }
}

/// The OTLP exporter, logging its first failure (and its first success after one) once.
#[derive(Debug)]
struct WarnOnce<E> {
    inner: E,
    url: String,
    warned: AtomicBool,
}

impl<E: SpanExporter> SpanExporter for WarnOnce<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let n = batch.len();
        let r = self.inner.export(batch).await;
        match &r {
            Err(e) if !self.warned.swap(true, Ordering::Relaxed) => {
                tracing::warn!(
                    "cannot export spans to {}: {e}; {n} span(s) dropped (calls are not slowed; \
                     later failures are not logged)",
                    self.url
                );
            }
            Ok(()) if self.warned.swap(false, Ordering::Relaxed) => {
                tracing::info!("exporting spans to {} again", self.url);
            }
            _ => {}
        }
        r
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_names_the_service() {
        assert_eq!(naming(Some("shop"), None), Naming::ServiceName("shop"));
        assert_eq!(naming(Some(" "), None), Naming::Default);
        assert_eq!(
            naming(None, Some("deployment=prod, service.name=shop")),
            Naming::Attributes
        );
        // OTEL_SERVICE_NAME wins over the attributes' service.name.
        assert_eq!(
            naming(Some("shop"), Some("service.name=other")),
            Naming::ServiceName("shop")
        );
        assert_eq!(naming(None, Some("service.namespace=x")), Naming::Default);
        assert_eq!(naming(None, None), Naming::Default);
    }

    #[test]
    fn protocols_by_their_specification_names() {
        assert_eq!(OtlpProtocol::parse("grpc").unwrap(), OtlpProtocol::Grpc);
        assert_eq!(
            OtlpProtocol::parse("http/protobuf").unwrap(),
            OtlpProtocol::HttpProtobuf
        );
        let e = OtlpProtocol::parse("http/json").unwrap_err().to_string();
        assert!(e.contains("use grpc or http/protobuf"), "{e}");
    }
}
