use std::sync::Arc;

use switchyard_layers::{ctx::Endpoint, seed::SeedSource};
use tower_layer::Layer;

use super::Ingress;

/// Applies [`Ingress`]: turns any `http::Request<B>` into a routable `http::Request<Bytes>` and
/// every failure into an OpenAI-style answer. See the [module docs](super).
///
/// ```
/// use switchyard_layers::ctx::Endpoint;
/// use switchyard_services::ingress::IngressLayer;
///
/// assert_eq!(IngressLayer::default().max_body_bytes(), 8 * 1024 * 1024);
/// // Mounted at a path that names no endpoint: say which one it serves.
/// let layer = IngressLayer::new(1 << 20).endpoint(Endpoint::Embedding);
/// # let _ = layer;
/// ```
#[derive(Clone, Debug)]
pub struct IngressLayer {
    pub(super) max_body_bytes: usize,
    pub(super) endpoint: Option<Endpoint>,
    pub(super) seeds: Arc<SeedSource>,
}

impl Default for IngressLayer {
    fn default() -> Self {
        Self::new(Self::DEFAULT_MAX_BODY_BYTES)
    }
}

impl IngressLayer {
    /// The default body limit, 8 MiB.
    pub const DEFAULT_MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

    /// An ingress buffering bodies of at most `max_body_bytes` (413 beyond).
    pub fn new(max_body_bytes: usize) -> Self {
        Self { max_body_bytes, endpoint: None, seeds: Arc::new(SeedSource::from_os()) }
    }

    /// Serves `endpoint` whatever the path (by default the end of the path names it:
    /// `/chat/completions`, `/completions`, `/embeddings`).
    pub fn endpoint(mut self, endpoint: Endpoint) -> Self {
        self.endpoint = Some(endpoint);
        self
    }

    /// The body limit in bytes.
    pub fn max_body_bytes(&self) -> usize {
        self.max_body_bytes
    }
}

impl<S> Layer<S> for IngressLayer {
    type Service = Ingress<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Ingress::new(inner, self.clone())
    }
}
