//! [`ProviderConfig`]: router-level timeouts, response limits and egress options of an
//! [`HttpProvider`](super::HttpProvider).

use std::{fmt, path::PathBuf, time::Duration};

/// Settings shared by every attempt an [`HttpProvider`](super::HttpProvider) sends.
///
/// Every attempt has a timeout. A request's own value (`RequestFacts::timeout`,
/// `RequestFacts::stream_timeout`) may shorten the operator's bound, never lengthen it; the
/// deployment's (`Deployment::timeout`, `Deployment::stream_timeout`) wins over the router-level
/// ones here
/// ([`timeout`](Self::timeout), [`stream_timeout`](Self::stream_timeout)); with none set, a
/// non-streaming attempt gets [`DEFAULT_TIMEOUT`] (600 s) and a stream [`DEFAULT_STREAM_TIMEOUT`]
/// (60 s to its first content chunk, then between two chunks). A stream with no stream timeout
/// anywhere uses the attempt timeout when one is set (LiteLLM's order). Every attempt is also
/// capped by the call's deadline (`RouteCtx::deadline`).
///
/// ```
/// use std::time::Duration;
/// use switchyard_services::provider::ProviderConfig;
///
/// let config = ProviderConfig::default()
///     .timeout(Duration::from_secs(60))
///     .stream_timeout(Duration::from_secs(10))
///     .proxy("http://proxy.internal:3128".parse()?);
/// assert_eq!(config.connect_timeout, Duration::from_secs(10));
/// assert_eq!(config.max_response_bytes, 32 * 1024 * 1024);
/// # Ok::<(), http::uri::InvalidUri>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProviderConfig {
    /// Per-attempt timeout (the whole answer of a non-streaming request); a deployment's or a
    /// request's own `timeout` wins. `None`: [`DEFAULT_TIMEOUT`].
    pub timeout: Option<Duration>,
    /// For streams: the time to the first content chunk, and after it the longest gap between
    /// two chunks; a deployment's or a request's own `stream_timeout` wins. When no stream
    /// timeout is set anywhere, the per-attempt timeout plays this role if one is set, else
    /// [`DEFAULT_STREAM_TIMEOUT`].
    pub stream_timeout: Option<Duration>,
    /// Non-streaming bodies, error bodies and single server-sent events larger than this fail
    /// the attempt (default 32 MiB).
    pub max_response_bytes: usize,
    /// A PEM file of extra root certificates, trusted in addition to the webpki (Mozilla) roots.
    pub ca_bundle: Option<PathBuf>,
    /// An `http://` proxy for egress: `http://` targets are sent to it in absolute form,
    /// `https://` targets through a `CONNECT` tunnel. `user:password@` in the URI is sent as
    /// `Proxy-Authorization: Basic`.
    pub proxy: Option<http::Uri>,
    /// Bound on establishing a TCP connection (default 10 s); expiry is a connect failure.
    pub connect_timeout: Duration,
}

/// Default for [`ProviderConfig::max_response_bytes`]: 32 MiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 32 * 1024 * 1024;

/// The timeout of a non-streaming attempt when none is set ([`ProviderConfig::timeout`]):
/// 600 seconds, OpenAI's client default and LiteLLM's `completion()` default (LiteLLM's Router
/// passes its `request_timeout`, 6000 s, instead; see `docs/litellm.md`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// The bound on a stream's first content chunk, then on each gap between two chunks, when no
/// timeout is set ([`ProviderConfig::stream_timeout`]): 60 seconds. A live upstream sends its
/// first chunk (often just the role) within seconds and then chunks far more often than this;
/// a dead one is left within a minute instead of ten.
pub const DEFAULT_STREAM_TIMEOUT: Duration = Duration::from_secs(60);

/// Default for [`ProviderConfig::connect_timeout`]: 10 seconds.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

impl fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The proxy URI may carry credentials (`user:password@`): show its host and port only.
        let proxy = self.proxy.as_ref().map(|p| match (p.host(), p.port_u16()) {
            (Some(h), Some(port)) => format!("{h}:{port}"),
            (Some(h), None) => h.to_owned(),
            _ => "(invalid)".to_owned(),
        });
        f.debug_struct("ProviderConfig")
            .field("timeout", &self.timeout)
            .field("stream_timeout", &self.stream_timeout)
            .field("max_response_bytes", &self.max_response_bytes)
            .field("ca_bundle", &self.ca_bundle)
            .field("proxy", &proxy)
            .field("connect_timeout", &self.connect_timeout)
            .finish()
    }
}

impl Default for ProviderConfig {
    fn default() -> Self {
        Self {
            timeout: None,
            stream_timeout: None,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            ca_bundle: None,
            proxy: None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
        }
    }
}

impl ProviderConfig {
    /// The defaults: no router-level timeouts (attempts get [`DEFAULT_TIMEOUT`], streams
    /// [`DEFAULT_STREAM_TIMEOUT`]), 32 MiB responses, webpki roots, no proxy, 10 s connect
    /// timeout.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the router-level per-attempt timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sets the router-level stream timeout (first chunk, then the gap between chunks).
    pub fn stream_timeout(mut self, timeout: Duration) -> Self {
        self.stream_timeout = Some(timeout);
        self
    }

    /// Sets the response size limit.
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// Trusts the certificates of a PEM file in addition to the webpki roots.
    pub fn ca_bundle(mut self, path: impl Into<PathBuf>) -> Self {
        self.ca_bundle = Some(path.into());
        self
    }

    /// Sends egress through an `http://` proxy.
    pub fn proxy(mut self, proxy: http::Uri) -> Self {
        self.proxy = Some(proxy);
        self
    }

    /// Sets the TCP connect timeout.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }
}
