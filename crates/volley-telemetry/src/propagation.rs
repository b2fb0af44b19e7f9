//! W3C Trace Context in gRPC metadata: `traceparent` (and `tracestate`) read from a call's
//! headers and written into an attempt's, with OpenTelemetry's own propagator.

use http::HeaderMap;
use opentelemetry::{Context, propagation::TextMapPropagator};
use opentelemetry_http::{HeaderExtractor, HeaderInjector};
use opentelemetry_sdk::propagation::TraceContextPropagator;

/// The caller's context; an empty one (a new trace) when `traceparent` is absent or malformed.
pub(crate) fn extract(headers: &HeaderMap) -> Context {
    TraceContextPropagator::new().extract(&HeaderExtractor(headers))
}

/// Writes `cx`'s `traceparent` into `headers`.
pub(crate) fn inject(cx: &Context, headers: &mut HeaderMap) {
    TraceContextPropagator::new().inject_context(cx, &mut HeaderInjector(headers));
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::TraceContextExt;

    fn headers(traceparent: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("traceparent", traceparent.parse().unwrap());
        h
    }

    #[test]
    fn a_valid_traceparent_is_continued_and_a_malformed_one_ignored() {
        let cx = extract(&headers(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ));
        assert_eq!(
            cx.span().span_context().trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        for bad in [
            "garbage",
            "00-zzf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "",
        ] {
            let cx = extract(&headers(bad));
            assert!(!cx.span().span_context().is_valid(), "{bad:?}");
        }
    }

    #[test]
    fn what_is_injected_is_extracted() {
        let cx = extract(&headers(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ));
        let mut out = HeaderMap::new();
        inject(&cx, &mut out);
        assert_eq!(
            out["traceparent"],
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        );
    }
}
