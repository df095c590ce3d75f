//! [`ProviderError`]: why an [`HttpProvider`](super::HttpProvider) could not be built.

use std::{error::Error as StdError, fmt, path::PathBuf};

/// A provider that cannot be built: a CA bundle that cannot be read or holds no usable
/// certificate, or a proxy URI we cannot use. Request-time failures are `RouteError`s, never this.
///
/// ```
/// use switchyard_services::provider::{HttpProvider, ProviderConfig};
///
/// let err = HttpProvider::new(ProviderConfig::default().ca_bundle("/no/such/bundle.pem"))
///     .expect_err("the file does not exist");
/// assert!(err.to_string().contains("/no/such/bundle.pem"));
/// ```
#[derive(Debug)]
pub struct ProviderError {
    kind: Kind,
    source: Option<Box<dyn StdError + Send + Sync>>,
}

#[derive(Debug)]
enum Kind {
    CaBundle(PathBuf, &'static str),
    Proxy(String, &'static str),
    Tls(&'static str),
}

impl ProviderError {
    pub(crate) fn ca_bundle(path: PathBuf, what: &'static str) -> Self {
        Self { kind: Kind::CaBundle(path, what), source: None }
    }

    pub(crate) fn proxy(uri: &http::Uri, what: &'static str) -> Self {
        // The URI may carry proxy credentials: name only the scheme, host and port.
        let shown = match (uri.scheme_str(), uri.host()) {
            (Some(s), Some(h)) => match uri.port_u16() {
                Some(p) => format!("{s}://{h}:{p}"),
                None => format!("{s}://{h}"),
            },
            (None, Some(h)) => h.to_owned(),
            _ => uri.path().to_owned(),
        };
        Self { kind: Kind::Proxy(shown, what), source: None }
    }

    pub(crate) fn tls(what: &'static str) -> Self {
        Self { kind: Kind::Tls(what), source: None }
    }

    pub(crate) fn with_source(mut self, source: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// Whether the CA bundle is at fault.
    pub fn is_ca_bundle(&self) -> bool {
        matches!(self.kind, Kind::CaBundle(..))
    }

    /// Whether the proxy URI is at fault.
    pub fn is_proxy(&self) -> bool {
        matches!(self.kind, Kind::Proxy(..))
    }
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::CaBundle(path, what) => write!(f, "CA bundle `{}`: {what}", path.display())?,
            Kind::Proxy(uri, what) => write!(f, "proxy `{uri}`: {what}")?,
            Kind::Tls(what) => write!(f, "TLS configuration: {what}")?,
        }
        if let Some(source) = &self.source {
            write!(f, ": {source}")?;
        }
        Ok(())
    }
}

impl StdError for ProviderError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn StdError + 'static))
    }
}
