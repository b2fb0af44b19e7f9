//! The OTLP/HTTP span exporter (opentelemetry-otlp, protobuf encoding) behind a batch processor
//! on its own thread: calls only queue their spans. A collector that cannot be reached is
//! reported once, as one log line, and spans are dropped rather than held.

use std::{
    sync::atomic::{AtomicBool, Ordering},
    time::Duration,
};

use opentelemetry::global;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::{
    Resource,
    error::OTelSdkResult,
    propagation::TraceContextPropagator,
    trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, SpanData, SpanExporter},
};

/// Why the exporter could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ExporterError {
    /// The endpoint is not an http(s) URL.
    #[error("--otlp-endpoint {0:?} is not an http:// or https:// URL")]
    Endpoint(String),
    /// The OTLP exporter refused its configuration.
    #[error("cannot set up the OTLP exporter for {url}: {detail}")]
    Build {
        /// Where spans would go.
        url: String,
        /// What opentelemetry-otlp said.
        detail: String,
    },
}

/// The running exporter; dropping it flushes the spans still queued and stops it.
pub struct Exporter {
    provider: SdkTracerProvider,
    url: String,
}

impl Exporter {
    /// Exports spans of `service_name` to the OTLP/HTTP collector at `endpoint` (its base URL,
    /// as `OTEL_EXPORTER_OTLP_ENDPOINT`: spans go to `<endpoint>/v1/traces`; a URL already
    /// ending in `/v1/traces` is used as it is), and makes it the global tracer provider.
    pub fn start(endpoint: &str, service_name: &str) -> Result<Exporter, ExporterError> {
        if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
            return Err(ExporterError::Endpoint(endpoint.to_owned()));
        }
        let url = if endpoint.trim_end_matches('/').ends_with("/v1/traces") {
            endpoint.to_owned()
        } else {
            format!("{}/v1/traces", endpoint.trim_end_matches('/'))
        };
        let otlp = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(url.clone())
            .with_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| ExporterError::Build {
                url: url.clone(),
                detail: e.to_string(),
            })?;
        let exporter = WarnOnce {
            inner: otlp,
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
            .with_resource(
                Resource::builder()
                    .with_service_name(service_name.to_owned())
                    .build(),
            )
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

    fn shutdown_with_timeout(&mut self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}
