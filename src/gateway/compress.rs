//! Response compression: tower-http's [`CompressionLayer`] (gzip, as the client's
//! `accept-encoding` allows) for JSON answers of at least [`MIN_BYTES`], and for nothing else.
//!
//! A stream (`text/event-stream`, the routed streams and `/router/events/stream`) is never
//! compressed: a compressor holds bytes back until it has enough to emit, which would delay each
//! event, and a client reading events as they come would see them late. The dashboard's files
//! and the Prometheus text are left as they are too; small JSON answers are not worth the
//! `content-encoding` and the CPU.

use tower_http::compression::{
    CompressionLayer, Predicate,
    predicate::{NotForContentType, SizeAbove},
};

use super::origin::is_json;

/// Smallest JSON answer compressed, in bytes (its announced or exact length; a JSON body of
/// unknown length is compressed).
pub(crate) const MIN_BYTES: u16 = 1024;

/// The gateway's predicate: JSON, at least [`MIN_BYTES`], never a stream.
pub(crate) type JsonAbove = tower_http::compression::predicate::And<
    tower_http::compression::predicate::And<SizeAbove, NotForContentType>,
    JsonOnly,
>;

/// [`CompressionLayer`] compressing what [`JsonAbove`] allows.
pub(crate) fn layer() -> CompressionLayer<JsonAbove> {
    // `NotForContentType::SSE` is implied by `JsonOnly`; it is kept so that the rule "never a
    // stream" survives a wider content-type rule.
    CompressionLayer::new().compress_when(SizeAbove::new(MIN_BYTES).and(NotForContentType::SSE).and(JsonOnly))
}

/// Answers declared `application/json` (or `application/*+json`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct JsonOnly;

impl Predicate for JsonOnly {
    fn should_compress<B>(&self, response: &http::Response<B>) -> bool
    where
        B: http_body::Body,
    {
        is_json(response.headers())
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use http_body_util::Full;

    use super::*;

    fn answer(content_type: &str, len: usize) -> http::Response<Full<Bytes>> {
        http::Response::builder()
            .header("content-type", content_type)
            .body(Full::new(Bytes::from(vec![b' '; len])))
            .expect("response")
    }

    #[test]
    fn only_json_of_at_least_the_minimum_is_compressed() {
        let p = SizeAbove::new(MIN_BYTES).and(NotForContentType::SSE).and(JsonOnly);
        let min = usize::from(MIN_BYTES);
        assert!(p.should_compress(&answer("application/json", min)));
        assert!(p.should_compress(&answer("application/json; charset=utf-8", min * 4)));
        assert!(!p.should_compress(&answer("application/json", min - 1)));
        assert!(!p.should_compress(&answer("text/event-stream", min * 4)));
        assert!(!p.should_compress(&answer("text/event-stream; charset=utf-8", min * 4)));
        assert!(!p.should_compress(&answer("text/plain; version=0.0.4", min * 4)));
        assert!(!p.should_compress(&answer("text/javascript", min * 4)));
    }
}
