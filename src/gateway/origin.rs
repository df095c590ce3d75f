//! Browsers: a web page must not be able to drive the gateway. A page on another site can send
//! "simple" cross-origin requests without a preflight, and a page on a DNS-rebinding host name
//! is same-origin with the gateway and can read its answers. So:
//!
//! - a request with an `Origin` header is refused (403 `origin_not_allowed`) unless the origin
//!   is the gateway's own (its authority is the request's `Host`) or in
//!   [`GatewayBuilder::allowed_origins`](super::GatewayBuilder::allowed_origins) (or the
//!   config's `general_settings.edge.allowed_origins`);
//! - without a master key, a request whose `Host` is a name other than `localhost` (or
//!   `*.localhost`), an IP address, or one of
//!   [`GatewayBuilder::allowed_hosts`](super::GatewayBuilder::allowed_hosts) (or
//!   `general_settings.edge.allowed_hosts`) is refused (403
//!   `host_not_allowed`): a rebinding attack always names the gateway by the attacker's domain;
//! - CORS headers are sent only for the allowed origins, and only when some are configured
//!   (`tower-http`'s `CorsLayer`); without them, browsers keep other sites' pages from reading
//!   any answer.
//!
//! Bodies must also be `application/json` (415 otherwise: the ingress and the operations
//! endpoints check it), so that a form or `text/plain` post cannot reach the routing stack.

use std::{net::IpAddr, sync::Arc};

use axum::{
    extract::{Request, State},
    middleware::Next,
    response::Response,
};
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use tower_http::cors::{AllowOrigin, CorsLayer};

use super::{GatewayState, error::json_error};
use crate::config::EdgeSettings;

/// What the gateway accepts from browsers; see the [module docs](self).
#[derive(Clone, Debug, Default)]
pub(crate) struct Origins {
    /// Origins besides the gateway's own (`https://app.example.com`, lower case); `*` is any.
    pub(crate) allowed_origins: Vec<String>,
    /// Host names besides `localhost` and IP addresses (lower case, without port); `*` is any.
    pub(crate) allowed_hosts: Vec<String>,
}

impl Origins {
    /// What the config's `general_settings.edge` allows (nothing by default).
    pub(crate) fn configured(edge: &EdgeSettings) -> Self {
        Self {
            allowed_origins: edge.allowed_origins.clone().unwrap_or_default(),
            allowed_hosts: edge.allowed_hosts.clone().unwrap_or_default(),
        }
    }

    fn origin_allowed(&self, origin: &HeaderValue, host: Option<&str>) -> bool {
        let Ok(origin) = origin.to_str() else {
            return false;
        };
        let origin = origin.trim().to_ascii_lowercase();
        if self.allowed_origins.iter().any(|allowed| allowed == "*" || *allowed == origin) {
            return true;
        }
        // Same origin: `scheme://authority` naming the host the request was sent to.
        match (origin.split_once("://"), host) {
            (Some((_, authority)), Some(host)) => !authority.is_empty() && authority.eq_ignore_ascii_case(host),
            _ => false,
        }
    }

    fn host_allowed(&self, host: &str) -> bool {
        let name = host_name(host).to_ascii_lowercase();
        let name = name.trim_end_matches('.');
        name == "localhost"
            || name.ends_with(".localhost")
            || name.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>().is_ok()
            || self.allowed_hosts.iter().any(|allowed| allowed == "*" || allowed == name)
    }

    /// CORS for the configured origins, or `None` when there are none.
    pub(crate) fn cors(&self) -> Option<CorsLayer> {
        if self.allowed_origins.is_empty() {
            return None;
        }
        let allow = if self.allowed_origins.iter().any(|o| o == "*") {
            AllowOrigin::any()
        } else {
            AllowOrigin::list(self.allowed_origins.iter().filter_map(|o| HeaderValue::from_str(o).ok()))
        };
        Some(
            CorsLayer::new()
                .allow_origin(allow)
                .allow_methods([Method::GET, Method::POST, Method::DELETE])
                .allow_headers([
                    header::AUTHORIZATION,
                    header::CONTENT_TYPE,
                    http::HeaderName::from_static("api-key"),
                    http::HeaderName::from_static("x-api-key"),
                    http::HeaderName::from_static("x-litellm-api-key"),
                    http::HeaderName::from_static("x-request-id"),
                    http::HeaderName::from_static("x-switchyard-trail"),
                ])
                .expose_headers([
                    http::HeaderName::from_static("x-request-id"),
                    http::HeaderName::from_static("x-switchyard-model-group"),
                    http::HeaderName::from_static("x-switchyard-deployment"),
                ]),
        )
    }
}

/// The host the request was sent to: `Host`, or the URI's authority (HTTP/2's `:authority`).
fn request_host(req: &Request) -> Option<&str> {
    req.headers().get(header::HOST).and_then(|h| h.to_str().ok()).or_else(|| req.uri().authority().map(|a| a.as_str()))
}

/// `example.com:4000` -> `example.com`; `[::1]:4000` -> `[::1]`.
fn host_name(host: &str) -> &str {
    let host = host.trim();
    if let Some(end) = host.find(']') {
        return &host[..=end];
    }
    host.rsplit_once(':').map_or(host, |(name, _)| name)
}

/// Refuses cross-origin requests and, without a master key, requests to unknown host names.
pub(crate) async fn check(State(shared): State<Arc<GatewayState>>, req: Request, next: Next) -> Response {
    let origins = &shared.origins;
    let host = request_host(&req);
    if let Some(origin) = req.headers().get(header::ORIGIN)
        && !origins.origin_allowed(origin, host)
    {
        return refuse(
            "origin_not_allowed",
            format!(
                "cross-origin request from `{}` refused: the gateway serves browsers only from its own origin or an allowed origin",
                shown(origin)
            ),
        );
    }
    if shared.settings.load().master_key.is_none()
        && let Some(host) = host.filter(|h| !origins.host_allowed(h))
    {
        let shown: String = host.chars().filter(|c| c.is_ascii_graphic()).take(200).collect();
        return refuse(
            "host_not_allowed",
            format!(
                "requests for host `{shown}` are refused: without a master key the gateway answers only requests to localhost, an IP address or an allowed host (DNS rebinding protection)"
            ),
        );
    }
    next.run(req).await
}

fn shown(value: &HeaderValue) -> String {
    String::from_utf8_lossy(value.as_bytes()).chars().filter(|c| c.is_ascii_graphic()).take(200).collect()
}

fn refuse(code: &'static str, message: String) -> Response {
    json_error(StatusCode::FORBIDDEN, "invalid_request_error", code, message)
}

/// Whether a body's declared type is JSON: `application/json` (parameters allowed) or
/// `application/*+json`.
pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    switchyard_services::ingress::is_json_content_type(headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origins(allowed: &[&str], hosts: &[&str]) -> Origins {
        Origins {
            allowed_origins: allowed.iter().map(|s| (*s).to_owned()).collect(),
            allowed_hosts: hosts.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn only_the_gateways_own_origin_and_allowed_ones_pass() {
        let o = origins(&["https://app.example.com"], &[]);
        let v = HeaderValue::from_static;
        assert!(o.origin_allowed(&v("http://127.0.0.1:4000"), Some("127.0.0.1:4000")));
        assert!(o.origin_allowed(&v("https://App.Example.com"), Some("gw.internal")));
        assert!(!o.origin_allowed(&v("https://evil.example"), Some("127.0.0.1:4000")));
        assert!(!o.origin_allowed(&v("null"), Some("127.0.0.1:4000")));
        assert!(!o.origin_allowed(&v("http://127.0.0.1:4000"), None));
        assert!(origins(&["*"], &[]).origin_allowed(&v("https://any.example"), None));
    }

    #[test]
    fn without_a_master_key_only_local_names_ip_addresses_and_allowed_hosts_pass() {
        let o = origins(&[], &["gateway.internal"]);
        for ok in [
            "localhost:4000",
            "LOCALHOST",
            "app.localhost:80",
            "127.0.0.1:4000",
            "[::1]:4000",
            "10.1.2.3",
            "gateway.internal:4000",
        ] {
            assert!(o.host_allowed(ok), "{ok}");
        }
        for refused in
            ["rebind.evil.example:4000", "localhost.evil.example", "gateway.internal.evil", "127.0.0.1.nip.io"]
        {
            assert!(!o.host_allowed(refused), "{refused}");
        }
    }
}
