//! The master key: with `general_settings.master_key` set, a client presents it as
//! `Authorization: Bearer <key>` (or in `api-key`, `x-api-key`, `x-litellm-api-key`, as the
//! LiteLLM proxy accepts), compared in constant time: both keys are hashed with SHA-256 and the
//! digests compared with `subtle`, so neither where the keys differ nor how long the expected key
//! is shows in the time taken.
//!
//! Whatever the client sent as a key is removed from the request before it goes further, so it
//! can never reach an upstream, with or without a master key.

use std::sync::Arc;

use axum::{
    extract::{Request, State},
    middleware::Next,
    response::Response,
};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::{GatewayState, error::json_error};
use crate::cache::CacheScope;

/// The headers a client key may come in, besides `Authorization`.
const KEY_HEADERS: [HeaderName; 3] = [
    HeaderName::from_static("api-key"),
    HeaderName::from_static("x-api-key"),
    HeaderName::from_static("x-litellm-api-key"),
];

/// Checks the master key (when one is configured) and strips client credentials.
pub(crate) async fn require_key(State(shared): State<Arc<GatewayState>>, mut req: Request, next: Next) -> Response {
    let (granted, scope) = match &shared.settings.load().master_key {
        None => (true, CacheScope::open()),
        Some(key) => (
            presented_key(req.headers()).is_some_and(|presented| matches(key.expose(), presented)),
            CacheScope::of_key(key.expose()),
        ),
    };
    strip_credentials(req.headers_mut());
    if !granted {
        return unauthorized();
    }
    // Cached answers are shared only inside the credential's scope (`crate::cache::key`).
    req.extensions_mut().insert(scope);
    next.run(req).await
}

/// The key in `Authorization: Bearer <key>`, else in the first key header present.
fn presented_key(headers: &HeaderMap) -> Option<&[u8]> {
    if let Some(value) = headers.get(header::AUTHORIZATION) {
        let value = value.as_bytes();
        let (scheme, token) = value.split_at(value.len().min(7));
        if scheme.eq_ignore_ascii_case(b"bearer ") {
            return Some(token.trim_ascii());
        }
    }
    KEY_HEADERS.iter().find_map(|name| headers.get(name)).map(|v| v.as_bytes().trim_ascii())
}

/// Constant-time comparison of the SHA-256 digests: the time taken depends neither on where the
/// keys differ nor on the expected key's length (`ct_eq` on the raw bytes would return early on a
/// length mismatch). Hashing the presented key takes time linear in its length, which the client
/// already knows.
fn matches(expected: &str, presented: &[u8]) -> bool {
    let expected = Sha256::digest(expected.as_bytes());
    let presented = Sha256::digest(presented);
    expected.as_slice().ct_eq(presented.as_slice()).into()
}

fn strip_credentials(headers: &mut HeaderMap) {
    headers.remove(header::AUTHORIZATION);
    for name in &KEY_HEADERS {
        headers.remove(name);
    }
}

fn unauthorized() -> Response {
    let mut resp = json_error(
        StatusCode::UNAUTHORIZED,
        "invalid_request_error",
        "invalid_api_key",
        "missing or invalid API key: send the gateway's master key as `Authorization: Bearer <key>`",
    );
    resp.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        pairs.iter().map(|(k, v)| (HeaderName::from_static(k), HeaderValue::from_static(v))).collect()
    }

    #[test]
    fn the_key_is_read_from_bearer_or_the_litellm_key_headers() {
        assert_eq!(presented_key(&headers(&[("authorization", "Bearer sk-1")])), Some(&b"sk-1"[..]));
        assert_eq!(presented_key(&headers(&[("authorization", "bearer  sk-1 ")])), Some(&b"sk-1"[..]));
        assert_eq!(presented_key(&headers(&[("api-key", "sk-2")])), Some(&b"sk-2"[..]));
        assert_eq!(presented_key(&headers(&[("x-api-key", "sk-3")])), Some(&b"sk-3"[..]));
        assert_eq!(presented_key(&headers(&[("authorization", "Basic abc")])), None);
        assert_eq!(presented_key(&headers(&[])), None);
    }

    #[test]
    fn keys_compare_whole() {
        assert!(matches("sk-master", b"sk-master"));
        assert!(!matches("sk-master", b"sk-maste"));
        assert!(!matches("sk-master", b"sk-master2"));
        assert!(!matches("sk-master", b""));
    }

    #[test]
    fn client_credentials_are_stripped() {
        let mut h = headers(&[("authorization", "Bearer x"), ("x-api-key", "y"), ("x-request-id", "r")]);
        strip_credentials(&mut h);
        assert_eq!(h.len(), 1);
        assert!(h.contains_key("x-request-id"));
    }
}
