//! Every request gets one id (`x-request-id`: the client's, or a new one), a tracing span that
//! records it with the `traceparent`, and a line in the request metrics; every answer carries
//! the id back.
//!
//! The id itself is tower-http's: [`SetRequestIdLayer`](tower_http::request_id::SetRequestIdLayer)
//! with [`MakeRequestUuid`](tower_http::request_id::MakeRequestUuid) makes a v4 UUID for a request
//! that has none, and [`PropagateRequestIdLayer`](tower_http::request_id::PropagateRequestIdLayer)
//! copies it onto the answer. tower-http keeps whatever `x-request-id` a request already carries,
//! so [`keep_acceptable`] runs first: it keeps the client's first value only when it is
//! [acceptable](acceptable_request_id) and removes every other, so exactly one value goes further.
//!
//! The id is in the request's headers before routing, so the provider, which keeps
//! `x-request-id` and `traceparent` from the inbound request, sends both upstream. With the `otel`
//! feature and an OpenTelemetry layer installed, the span continues the client's trace (its
//! `traceparent` is the span's parent) and the `traceparent` sent upstream names this span.
//!
//! The span is written here rather than with tower-http's `TraceLayer`: continuing the client's
//! trace rewrites the request's `traceparent` before the span is entered (a `MakeSpan` only sees
//! `&Request`), and the span ends at the answer's head, as the request-duration histogram does,
//! where `TraceLayer`'s would stay open to the end of a stream.

use axum::{extract::Request, middleware::Next, response::Response};
use http::HeaderName;
use switchyard_services::ingress::acceptable_request_id;
use tokio::time::Instant;
use tracing::{Instrument, field};

use super::{headers::REQUEST_ID, metrics};

/// W3C trace context header.
const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");

/// Keeps the client's `x-request-id` only when its first value is acceptable, and then only
/// that value; removes it otherwise, so that tower-http's `SetRequestId` makes a new one.
pub(crate) fn keep_acceptable<B>(mut req: http::Request<B>) -> http::Request<B> {
    let first = req.headers().get(&REQUEST_ID).filter(|v| acceptable_request_id(v)).cloned();
    match first {
        // `insert` replaces every value of the header with this one.
        Some(id) => {
            req.headers_mut().insert(REQUEST_ID, id);
        }
        None => {
            req.headers_mut().remove(&REQUEST_ID);
        }
    }
    req
}

/// Runs the request inside its span (with the id tower-http's `SetRequestId` gave it), counts
/// and logs its answer.
// `mut` is used by the `otel` feature only.
#[cfg_attr(not(feature = "otel"), allow(unused_mut))]
pub(crate) async fn track(mut req: Request, next: Next) -> Response {
    let started = Instant::now();
    let id = req.headers().get(&REQUEST_ID).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let endpoint = metrics::endpoint_label(req.uri().path());
    let traceparent = req.headers().get(&TRACEPARENT).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let span = tracing::info_span!(
        "request",
        otel.name = %format_args!("{} {endpoint}", req.method()),
        otel.kind = "server",
        otel.status_code = field::Empty,
        method = %req.method(),
        endpoint,
        request_id = id.as_str(),
        traceparent,
        http.response.status_code = field::Empty,
    );
    #[cfg(feature = "otel")]
    crate::otel::continue_trace(&span, req.headers_mut());
    let resp = next.run(req).instrument(span.clone()).await;
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
    resp
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn with_ids(ids: &[&str]) -> http::Request<()> {
        let mut req = http::Request::new(());
        for id in ids {
            req.headers_mut().append(REQUEST_ID, HeaderValue::from_str(id).expect("header value"));
        }
        req
    }

    fn ids(req: &http::Request<()>) -> Vec<&[u8]> {
        req.headers().get_all(&REQUEST_ID).iter().map(HeaderValue::as_bytes).collect()
    }

    #[test]
    fn only_an_acceptable_first_id_is_kept_and_only_it() {
        let long = "x".repeat(200);
        assert_eq!(ids(&keep_acceptable(with_ids(&["req-1", "req-2"]))), [b"req-1"]);
        assert!(ids(&keep_acceptable(with_ids(&["has space", "req-2"]))).is_empty());
        assert!(ids(&keep_acceptable(with_ids(&[long.as_str()]))).is_empty());
        assert!(ids(&keep_acceptable(with_ids(&[]))).is_empty());
    }
}
