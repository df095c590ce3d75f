//! Facts about a request, read once at the edge: the endpoint, the stream flag, tags, limits the
//! caller set, and the body for checks that read it lazily.

use std::{
    collections::BTreeMap,
    sync::{Arc, OnceLock},
    time::Duration,
};

use super::MockHooks;
use crate::error_class::{PerErrorClass, Retries};

/// The kind of endpoint a request is for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Endpoint {
    /// `/v1/chat/completions`
    #[default]
    Chat,
    /// `/v1/completions`
    Completion,
    /// `/v1/embeddings`
    Embedding,
    /// `/v1/messages`: Anthropic's Messages API (the ingress dialect is Anthropic's).
    Messages,
    /// `/v1/responses`: OpenAI's Responses API.
    Responses,
    /// `GET` / `DELETE /v1/responses/{id}`, `POST /v1/responses/{id}/cancel`: an operation on a
    /// stored response ([`RequestFacts::previous_response`] holds the id), at the deployment
    /// that holds it.
    ResponseOp(ResponseOp),
    /// `/v1/messages/count_tokens`: Anthropic's token counter, asked of a deployment that has
    /// one (Anthropic, Claude or Gemini on Vertex AI); the gateway answers it locally unless
    /// configured otherwise.
    CountTokens,
}

/// An operation on a stored Responses API response.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ResponseOp {
    /// `GET /v1/responses/{id}`: read it.
    Get,
    /// `DELETE /v1/responses/{id}`: delete it.
    Delete,
    /// `POST /v1/responses/{id}/cancel`: cancel a background response.
    Cancel,
}

impl Endpoint {
    /// Whether the request is a conversation turn (chat completions, Anthropic messages, OpenAI
    /// responses): the kinds every chat-capable deployment can serve, translated when needed.
    pub fn is_conversation(self) -> bool {
        matches!(self, Self::Chat | Self::Messages | Self::Responses)
    }
}

/// Facts about the request, read once at the edge and shared by every attempt.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct RequestFacts {
    /// The endpoint.
    pub endpoint: Endpoint,
    /// The client asked for a stream.
    pub stream: bool,
    /// `metadata.tags` (or `tags`).
    pub tags: Vec<String>,
    /// `allowed_model_region`.
    pub region: Option<String>,
    /// `metadata.session_id` (or the session header).
    pub session: Option<String>,
    /// Who is calling: an API key or an opaque caller id (a 64-hex-digit value is taken as an
    /// already-hashed key, LiteLLM's `user_api_key_hash`). Read by caller-key affinity, which only
    /// ever keeps its sha256. The HTTP ingress does not set it; embedders that authenticate
    /// callers can. Never shown by `Debug`.
    pub caller: Option<crate::ApiKey>,
    /// Parameters the deployment must support (`response_format`, `tools`, ...).
    pub required_params: Vec<String>,
    /// The request carries images (`image_url` content parts): deployments known not to support
    /// vision are skipped (the pre-call layer's capability filter).
    pub images: bool,
    /// The request carries `tools`: deployments known not to support function calling are
    /// skipped (the pre-call layer's capability filter).
    pub tools: bool,
    /// Input tokens, counted at most once per request by whichever layer needs them first.
    pub input_tokens: OnceLock<u64>,
    /// Per-request `num_retries` (overrides every configured value).
    pub num_retries: Option<u32>,
    /// Per-request `fallbacks`: groups to try, in order, instead of the configured general table.
    pub fallbacks: Option<Vec<String>>,
    /// Per-request `disable_fallbacks`.
    pub disable_fallbacks: bool,
    /// Per-request `model_group_retry_policy`: retry policies per group, replacing the configured
    /// `model_group_retry_policy` for this request (the configured `retry_policy` still applies to
    /// groups it does not name).
    pub retry_policies: Option<Arc<BTreeMap<String, PerErrorClass<Retries>>>>,
    /// Per-request `cooldown_time`: how long a deployment that fails this request is benched,
    /// when its failure benches it. It may only shorten the configured bench (zero: never bench);
    /// a request cannot bench a deployment shared with other callers for longer than the
    /// operator chose.
    pub cooldown_time: Option<Duration>,
    /// `specific_deployment: true`: the requested name is a deployment's provider model
    /// (`litellm_params.model`), and only the deployments with that model serve.
    pub specific_deployment: bool,
    /// LiteLLM's testing hooks (`mock_response`, `mock_testing_fallbacks`, ...).
    pub mock: MockHooks,
    /// Per-request `timeout` (or `request_timeout`): bounds each attempt's whole answer, and a
    /// stream's when no stream timeout is set anywhere; wins over the deployment's and the
    /// router's.
    pub timeout: Option<Duration>,
    /// Per-request `stream_timeout`: bounds a streaming attempt's first content chunk, then each
    /// gap between chunks; wins over the deployment's and the router's.
    pub stream_timeout: Option<Duration>,
    /// The request body as received (a cheap reference-counted handle on the ingress buffer), for
    /// checks that read more of it lazily (input tokens for context windows).
    pub body: Option<bytes::Bytes>,
    /// A Responses API request's `previous_response_id`: the conversation lives on the deployment
    /// that created that response, so the request must go there (response affinity).
    pub previous_response: Option<String>,
    /// A digest of the request's cacheable prefix (the tools, system prompt and messages up to
    /// the last `cache_control` marker, or a long system prompt): requests sharing it prefer the
    /// deployment that served it last, where the provider's prompt cache is warm.
    pub prompt_prefix: Option<[u8; 32]>,
    /// The lowest quality tier the caller accepts (`metadata.min_quality_tier` or the
    /// `x-switchyard-min-quality-tier` header, the larger when both are given): the quality
    /// pre-router ([`QualityRouter`](crate::preroute::quality::QualityRouter)) routes to no group
    /// of a lower `quality_tier`.
    pub min_quality_tier: Option<u32>,
}

impl RequestFacts {
    /// Facts for a non-streaming chat request.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the stream flag.
    pub fn streaming(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    /// Sets the endpoint.
    pub fn endpoint(mut self, endpoint: Endpoint) -> Self {
        self.endpoint = endpoint;
        self
    }

    /// Sets the request tags.
    pub fn tags(mut self, tags: Vec<String>) -> Self {
        self.tags = tags;
        self
    }

    /// Sets `allowed_model_region`.
    pub fn region(mut self, region: Option<String>) -> Self {
        self.region = region;
        self
    }

    /// Sets the parameters the deployment must support (`response_format`, `tools`).
    pub fn required_params(mut self, params: Vec<String>) -> Self {
        self.required_params = params;
        self
    }

    /// Marks the request as carrying images (see [`RequestFacts::images`]).
    pub fn images(mut self, images: bool) -> Self {
        self.images = images;
        self
    }

    /// Marks the request as carrying tools (see [`RequestFacts::tools`]).
    pub fn tools(mut self, tools: bool) -> Self {
        self.tools = tools;
        self
    }

    /// Sets the session id.
    pub fn session(mut self, session: Option<String>) -> Self {
        self.session = session;
        self
    }

    /// Sets the caller's key or id (see [`RequestFacts::caller`]).
    pub fn caller(mut self, caller: Option<crate::ApiKey>) -> Self {
        self.caller = caller;
        self
    }

    /// Sets the per-request retry count.
    pub fn num_retries(mut self, n: Option<u32>) -> Self {
        self.num_retries = n;
        self
    }

    /// Sets the per-request fallback groups.
    pub fn fallbacks(mut self, groups: Option<Vec<String>>) -> Self {
        self.fallbacks = groups;
        self
    }

    /// Disables fallbacks for this request.
    pub fn disable_fallbacks(mut self, disable: bool) -> Self {
        self.disable_fallbacks = disable;
        self
    }

    /// Sets the per-request retry policies per group (see [`RequestFacts::retry_policies`]).
    pub fn retry_policies(mut self, policies: Option<BTreeMap<String, PerErrorClass<Retries>>>) -> Self {
        self.retry_policies = policies.map(Arc::new);
        self
    }

    /// Sets the per-request cooldown time (see [`RequestFacts::cooldown_time`]).
    pub fn cooldown_time(mut self, cooldown: Option<Duration>) -> Self {
        self.cooldown_time = cooldown;
        self
    }

    /// Routes by provider model (see [`RequestFacts::specific_deployment`]).
    pub fn specific_deployment(mut self, specific: bool) -> Self {
        self.specific_deployment = specific;
        self
    }

    /// Sets LiteLLM's testing hooks (see [`MockHooks`]).
    pub fn mock(mut self, hooks: MockHooks) -> Self {
        self.mock = hooks;
        self
    }

    /// Sets the per-request attempt timeout (see [`RequestFacts::timeout`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// use switchyard_layers::RequestFacts;
    ///
    /// let facts = RequestFacts::new().streaming(true).timeout(Some(Duration::from_secs(30)));
    /// assert_eq!(facts.timeout, Some(Duration::from_secs(30)));
    /// assert_eq!(facts.stream_timeout, None);
    /// ```
    pub fn timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the per-request stream timeout (see [`RequestFacts::stream_timeout`]).
    pub fn stream_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.stream_timeout = timeout;
        self
    }

    /// Keeps a handle on the request body for checks that read it lazily.
    pub fn with_body(mut self, body: bytes::Bytes) -> Self {
        self.body = Some(body);
        self
    }

    /// With the lowest quality tier the caller accepts.
    pub fn min_quality_tier(mut self, tier: Option<u32>) -> Self {
        self.min_quality_tier = tier;
        self
    }

    /// Records a known input-token count.
    pub fn with_input_tokens(self, tokens: u64) -> Self {
        let _ = self.input_tokens.set(tokens);
        self
    }
}
