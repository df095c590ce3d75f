//! Every request gets an id (`x-request-id`: the client's, or a new one), a tracing span that
//! records it with the `traceparent`, and a line in the request metrics; every answer carries
//! the id back.
//!
//! The id is written into the request's headers before routing, so the provider, which keeps
//! `x-request-id` and `traceparent` from the inbound request, sends both upstream. With the `otel`
//! feature and an OpenTelemetry layer installed, the span continues the client's trace (its
//! `traceparent` is the span's parent) and the `traceparent` sent upstream names this span.

use std::{
    collections::hash_map::RandomState,
    hash::{BuildHasher, Hasher},
    sync::{
        OnceLock,
        atomic::{AtomicU64, Ordering},
    },
};

use axum::{extract::Request, middleware::Next, response::Response};
use http::{HeaderName, HeaderValue};
use switchyard_services::ingress::acceptable_request_id;
use tokio::time::Instant;
use tracing::{Instrument, field};

use super::{headers::REQUEST_ID, metrics};

/// W3C trace context header.
const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");

/// Tags the request with its id, runs it inside its span, counts and logs its answer.
pub(crate) async fn track(mut req: Request, next: Next) -> Response {
    let started = Instant::now();
    // Exactly one value goes further: the client's first when acceptable, else a new one.
    let id = match req.headers().get(&REQUEST_ID).filter(|v| acceptable_request_id(v)) {
        Some(v) => v.clone(),
        None => HeaderValue::from_str(&new_request_id()).unwrap_or(HeaderValue::from_static("unknown")),
    };
    req.headers_mut().insert(REQUEST_ID, id.clone());
    let endpoint = metrics::endpoint_label(req.uri().path());
    let traceparent = req.headers().get(&TRACEPARENT).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let span = tracing::info_span!(
        "request",
        otel.name = %format_args!("{} {endpoint}", req.method()),
        otel.kind = "server",
        otel.status_code = field::Empty,
        method = %req.method(),
        endpoint,
        request_id = id.to_str().unwrap_or_default(),
        traceparent,
        http.response.status_code = field::Empty,
    );
    #[cfg(feature = "otel")]
    crate::otel::continue_trace(&span, req.headers_mut());
    let mut resp = next.run(req).instrument(span.clone()).await;
    let elapsed = started.elapsed();
    let status = resp.status();
    metrics::record_request(endpoint, status.as_u16(), elapsed);
    span.record("http.response.status_code", status.as_u16());
    if status.is_server_error() {
        span.record("otel.status_code", "error");
    }
    span.in_scope(|| {
        let ms = elapsed.as_secs_f64() * 1000.0;
        if endpoint.starts_with("/health") || endpoint == "/metrics" {
            tracing::debug!(status = status.as_u16(), ms, "answered");
        } else if status.is_server_error() {
            tracing::warn!(status = status.as_u16(), ms, "answered");
        } else {
            tracing::info!(status = status.as_u16(), ms, "answered");
        }
    });
    resp.headers_mut().insert(REQUEST_ID, id);
    resp
}

/// A random-looking, unique-per-process id in UUID layout (not a security token).
fn new_request_id() -> String {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    static KEYS: OnceLock<RandomState> = OnceLock::new();
    let keys = KEYS.get_or_init(RandomState::new);
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    let mut h = keys.build_hasher();
    h.write_u64(n);
    let hi = h.finish();
    h.write_u64(n);
    let lo = h.finish();
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xffff,
        hi & 0x0fff,
        ((lo >> 48) & 0x3fff) | 0x8000,
        lo & 0xffff_ffff_ffff
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_are_unique_and_uuid_shaped() {
        let a = new_request_id();
        let b = new_request_id();
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(a.matches('-').count(), 4);
        assert!(HeaderValue::from_str(&a).is_ok());
    }
}
