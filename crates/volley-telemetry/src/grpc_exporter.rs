//! OTLP over gRPC through volley's own client: each batch becomes one
//! `opentelemetry.proto.collector.trace.v1.TraceService/Export` call on a volley-client
//! channel (plaintext, or TLS with the system's roots or `OTEL_EXPORTER_OTLP_CERTIFICATE`),
//! the spans grouped by resource and scope with opentelemetry-proto's own transform.

use std::{path::PathBuf, sync::Arc, time::Duration};

use bytes::{BufMut, Bytes, BytesMut};
use opentelemetry_proto::{
    tonic::collector::trace::v1::ExportTraceServiceRequest,
    transform::{
        common::tonic::ResourceAttributesWithSchema,
        trace::tonic::group_spans_by_resource_and_scope,
    },
};
use opentelemetry_sdk::{
    Resource,
    error::{OTelSdkError, OTelSdkResult},
    trace::{SpanData, SpanExporter},
};
use prost::Message;
use volley_client::{
    CallHead, Channel, Endpoint, Strategy, Target,
    tls::{TlsOptions, client_config},
};

use crate::background::Background;

const EXPORT: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

/// The exporter for `endpoint` (`http://host:4317` or `https://...`), not yet connected.
pub(crate) fn build(
    endpoint: &str,
    cacert: Option<PathBuf>,
    bg: Arc<Background>,
) -> Result<GrpcExporter, String> {
    let uri: http::Uri = endpoint.parse().map_err(|e| format!("{e}"))?;
    let https = uri.scheme_str() == Some("https");
    let host = uri.host().ok_or("no host")?.to_owned();
    let port = uri.port_u16().unwrap_or(4317);
    let hostport = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let mut ep = Endpoint::new(Target::parse(&hostport).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    ep.connect_timeout = Duration::from_secs(5);
    if https {
        let opts = TlsOptions {
            ca: cacert,
            ..TlsOptions::default()
        };
        ep = ep.tls(client_config(&opts).map_err(|e| e.to_string())?);
    }
    let scheme = if https { "https" } else { "http" };
    let head = CallHead::new(
        scheme,
        &hostport,
        EXPORT,
        &[],
        Some(Duration::from_secs(10)),
        false,
    )?;
    Ok(GrpcExporter {
        channel: Channel::new(ep, Strategy::Single),
        head,
        bg,
        resource: ResourceAttributesWithSchema::default(),
    })
}

/// The exporter.
pub(crate) struct GrpcExporter {
    channel: Channel,
    head: CallHead,
    bg: Arc<Background>,
    resource: ResourceAttributesWithSchema,
}

impl std::fmt::Debug for GrpcExporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcExporter").finish_non_exhaustive()
    }
}

impl SpanExporter for GrpcExporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let request = ExportTraceServiceRequest {
            resource_spans: group_spans_by_resource_and_scope(batch, &self.resource),
        };
        let payload = request.encode_to_vec();
        let mut framed = BytesMut::with_capacity(5 + payload.len());
        framed.put_u8(0);
        framed.put_u32(payload.len() as u32);
        framed.put_slice(&payload);
        let body: Bytes = framed.freeze();
        let (channel, head) = (self.channel.clone(), self.head.clone());
        match self
            .bg
            .run(async move { channel.unary(&head, body).await })
            .await
        {
            Some(Ok(_)) => Ok(()),
            Some(Err(status)) => Err(OTelSdkError::InternalFailure(status.to_string())),
            None => Err(OTelSdkError::InternalFailure(
                "the exporter's runtime has stopped".into(),
            )),
        }
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.resource = resource.into();
    }
}
