//! OpenTelemetry export of the routing spans (feature `otel`).
//!
//! The router already describes every call as ordinary [`tracing`] spans: a `call` span per routed
//! call (model requested, group and deployment that served, response model, token usage, fallback
//! hops and cooldowns as events) and an `attempt` span per attempt below it, named and attributed
//! after the OpenTelemetry GenAI semantic conventions (`docs/observability.md#traces` lists them).
//! Any `tracing` subscriber sees them; [`layer`] adds one that exports them over OTLP/HTTP
//! (protobuf) to a collector, with a [`OtelGuard`] that flushes what is still buffered when
//! dropped.
//!
//! The endpoint and the service name follow the OpenTelemetry environment variables
//! (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_SERVICE_NAME`,
//! `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TIMEOUT`) unless
//! [`OtelConfig`] sets them. Spans are batched and sent from a background thread, never from a
//! request's task.
//!
//! ```no_run
//! use tracing_subscriber::layer::SubscriberExt;
//! use switchyard::otel::{self, OtelConfig};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // `None` when neither OTEL_EXPORTER_OTLP_ENDPOINT nor OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set.
//! let config = OtelConfig::from_env().unwrap_or_else(|| OtelConfig::new().endpoint("http://127.0.0.1:4318/v1/traces"));
//! let (layer, _guard) = otel::layer(config.service_name("my-gateway"))?;
//! tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer))?;
//! // ... route requests; dropping `_guard` at the end of `main` flushes the last spans.
//! # Ok(()) }
//! ```

use std::{fmt, future::Future, pin::Pin, sync::Arc, time::Duration};

use bytes::Bytes;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{HttpClient, HttpError, hyper::HyperClient};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::{Resource, trace::SdkTracerProvider};
use tracing::Subscriber;
use tracing_subscriber::{Layer, registry::LookupSpan};

/// The instrumentation scope of the exported spans.
const SCOPE: &str = "switchyard";
/// The service name when neither the config nor `OTEL_SERVICE_NAME` gives one.
const DEFAULT_SERVICE_NAME: &str = "switchyard";
/// Each export's deadline, unless `OTEL_EXPORTER_OTLP_TIMEOUT` or the config sets one.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where and how to export; see the [module docs](self).
///
/// Fields left unset follow the OpenTelemetry environment variables.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct OtelConfig {
    /// The full URL spans are posted to (`http://collector:4318/v1/traces`). Unset: the
    /// exporter reads `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (as is), else
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` (plus `/v1/traces`), else `http://localhost:4318/v1/traces`.
    pub endpoint: Option<String>,
    /// `service.name` of the exported resource. Unset: `OTEL_SERVICE_NAME`, else `switchyard`.
    pub service_name: Option<String>,
    /// Each export's deadline. Unset: `OTEL_EXPORTER_OTLP_TIMEOUT`, else 10 s.
    pub timeout: Option<Duration>,
}

impl OtelConfig {
    /// Everything from the environment.
    pub fn new() -> Self {
        Self::default()
    }

    /// A config when the environment names a collector (`OTEL_EXPORTER_OTLP_ENDPOINT` or
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` set and not empty), else `None`: export is opt-in.
    pub fn from_env() -> Option<Self> {
        let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
        (set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")).then(Self::new)
    }

    /// Posts spans to `url` (the full traces URL, `/v1/traces` included).
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoint = Some(url.into());
        self
    }

    /// Sets `service.name`.
    pub fn service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = Some(name.into());
        self
    }

    /// Sets each export's deadline.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

/// Why the exporter could not start, or a flush failed.
#[derive(Debug)]
pub struct OtelError {
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl OtelError {
    fn new(message: impl Into<String>, source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self { message: message.into(), source: Some(source.into()) }
    }
}

impl fmt::Display for OtelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            Some(source) => write!(f, "{}: {source}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for OtelError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// Keeps the exporter running; dropping it flushes the spans still buffered and stops it.
///
/// Dropping blocks the current thread until the last batch is sent (at most the export
/// timeout). The export itself runs on the exporter's own thread, so this is safe inside a Tokio
/// runtime too.
#[derive(Debug)]
pub struct OtelGuard {
    provider: SdkTracerProvider,
}

impl OtelGuard {
    /// Exports every span that has ended so far, and waits until the collector took them.
    pub fn force_flush(&self) -> Result<(), OtelError> {
        self.provider.force_flush().map_err(|e| OtelError::new("flushing the spans failed", e))
    }

    /// The tracer provider, to add processors or build other tracers from it.
    pub fn provider(&self) -> &SdkTracerProvider {
        &self.provider
    }
}

impl Drop for OtelGuard {
    fn drop(&mut self) {
        if let Err(e) = self.provider.shutdown() {
            // The subscriber this guard fed may be gone already: stderr is the one place left.
            eprintln!("switchyard: the last spans could not be exported: {e}");
        }
    }
}

/// A [`tracing_subscriber::Layer`] exporting every span it sees (the router's `call` and `attempt`
/// spans, the gateway's `request` span) to an OTLP/HTTP collector, and the guard that flushes it.
///
/// Combine it with your other layers on a `tracing_subscriber::registry()`; put a filter on it
/// (`layer.with_filter(...)`) to export only some targets or levels. Starts one background thread
/// for batching and one for the HTTP client (hyper), so it needs no Tokio runtime of yours.
pub fn layer<S>(config: OtelConfig) -> Result<(impl Layer<S>, OtelGuard), OtelError>
where
    S: Subscriber + for<'span> LookupSpan<'span>,
{
    let timeout = config.timeout.or_else(timeout_from_env).unwrap_or(DEFAULT_TIMEOUT);
    let client = ExportClient::start(timeout)?;
    let mut exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_http_client(client)
        .with_timeout(timeout);
    if let Some(endpoint) = config.endpoint {
        exporter = exporter.with_endpoint(endpoint);
    }
    let exporter = exporter.build().map_err(|e| OtelError::new("the OTLP exporter could not be built", e))?;
    let mut resource = Resource::builder();
    if let Some(name) = config.service_name {
        resource = resource.with_service_name(name);
    } else if std::env::var_os("OTEL_SERVICE_NAME").is_none_or(|v| v.is_empty()) {
        resource = resource.with_service_name(DEFAULT_SERVICE_NAME);
    }
    let provider = SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource.build()).build();
    let tracer = provider.tracer(SCOPE);
    let layer = tracing_opentelemetry::layer().with_tracer(tracer).with_threads(false).with_location(false);
    Ok((layer, OtelGuard { provider }))
}

/// `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT` or `OTEL_EXPORTER_OTLP_TIMEOUT`, in milliseconds.
fn timeout_from_env() -> Option<Duration> {
    ["OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"]
        .iter()
        .find_map(|name| std::env::var(name).ok()?.trim().parse::<u64>().ok())
        .map(Duration::from_millis)
}

/// Continues the client's trace: `span` (the gateway's `request` span, not yet entered) becomes a
/// child of the W3C `traceparent` in `headers`, and `headers`' `traceparent` is rewritten to
/// `span`, so the upstream requests sent with these headers are children of the gateway's span.
/// Does nothing unless an OpenTelemetry layer records `span`.
#[cfg(feature = "gateway")]
pub(crate) fn continue_trace(span: &tracing::Span, headers: &mut http::HeaderMap) {
    use opentelemetry::{propagation::TextMapPropagator, trace::TraceContextExt};
    use opentelemetry_http::{HeaderExtractor, HeaderInjector};
    use opentelemetry_sdk::propagation::TraceContextPropagator;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    if span.is_disabled() {
        return;
    }
    let propagator = TraceContextPropagator::new();
    let parent = propagator.extract(&HeaderExtractor(headers));
    if parent.span().span_context().is_valid() {
        // Fails only once the span has started; it has not.
        let _ = span.set_parent(parent);
    }
    let own = span.context();
    if own.span().span_context().is_valid() {
        propagator.inject_context(&own, &mut HeaderInjector(headers));
    }
}

/// The OTLP exporter's HTTP client: hyper on a small Tokio runtime of its own.
///
/// The SDK's batch processor exports from a plain thread (`futures::executor::block_on`), where
/// hyper finds no runtime; each request is spawned onto this client's runtime instead, so export
/// works whatever runtime (if any) the program runs, and a flush called on a runtime thread never
/// waits on that same thread.
struct ExportClient {
    inner: Arc<HyperClient>,
    runtime: tokio::runtime::Handle,
    /// Stops the runtime's thread when the exporter (and with it this client) is dropped.
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl fmt::Debug for ExportClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExportClient").finish_non_exhaustive()
    }
}

impl ExportClient {
    fn start(timeout: Duration) -> Result<Self, OtelError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| OtelError::new("the exporter's runtime could not start", e))?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("switchyard-otlp".into())
            .spawn(move || {
                // Runs the spawned exports until the sender is dropped.
                let _ = runtime.block_on(stopped);
            })
            .map_err(|e| OtelError::new("the exporter's thread could not start", e))?;
        let inner = Arc::new(HyperClient::with_default_connector(timeout, None));
        Ok(Self { inner, runtime: handle, _stop: stop })
    }
}

impl HttpClient for ExportClient {
    fn send_bytes<'a, 'f>(
        &'a self,
        request: http::Request<Bytes>,
    ) -> Pin<Box<dyn Future<Output = Result<http::Response<Bytes>, HttpError>> + Send + 'f>>
    where
        'a: 'f,
        Self: 'f,
    {
        let inner = self.inner.clone();
        let task = self.runtime.spawn(async move { inner.send_bytes(request).await });
        Box::pin(async move { task.await.map_err(|e| -> HttpError { Box::new(e) })? })
    }
}
