use std::{fmt, sync::Arc, time::Duration};

use secrecy::{ExposeSecret, SecretString};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::DeploymentId;
use crate::catalog::{self, ModelFacts};

/// An API key. Its `Debug` output never shows the key and it has no `Display`; read it with
/// [`ApiKey::expose`] only where it is sent upstream.
///
/// ```
/// use switchyard_layers::ApiKey;
/// let key = ApiKey::new("sk-live-123");
/// assert!(!format!("{key:?}").contains("sk-live"));
/// assert_eq!(key.expose(), "sk-live-123");
/// ```
#[derive(Clone)]
pub struct ApiKey(SecretString);

impl ApiKey {
    /// Wraps a secret.
    pub fn new(key: impl Into<String>) -> Self {
        Self(SecretString::from(key.into()))
    }

    /// The secret itself; call this only to put it on the wire.
    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

impl PartialEq for ApiKey {
    fn eq(&self, other: &Self) -> bool {
        self.expose() == other.expose()
    }
}

/// What a deployment's model supports (`model_info.supports_*`); `None` means "not declared".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Capabilities {
    /// `supports_function_calling`
    pub function_calling: Option<bool>,
    /// `supports_parallel_function_calling`
    pub parallel_function_calling: Option<bool>,
    /// `supports_tool_choice`
    pub tool_choice: Option<bool>,
    /// `supports_vision`
    pub vision: Option<bool>,
    /// `supports_response_schema` (structured output, `response_format`)
    pub response_schema: Option<bool>,
    /// `supports_web_search`
    pub web_search: Option<bool>,
    /// `supports_reasoning`
    pub reasoning: Option<bool>,
    /// `supports_prompt_caching`
    pub prompt_caching: Option<bool>,
    /// `supports_audio_input`
    pub audio_input: Option<bool>,
    /// `supports_audio_output`
    pub audio_output: Option<bool>,
    /// `supports_pdf_input`
    pub pdf_input: Option<bool>,
}

impl Capabilities {
    /// Each flag of `self`, or `fallback`'s where `self` has none (declared flags over the
    /// catalog's).
    ///
    /// ```
    /// use switchyard_layers::deployment::Capabilities;
    /// let mut declared = Capabilities::default();
    /// declared.set("supports_vision", false);
    /// let mut catalog = Capabilities::default();
    /// catalog.set("supports_vision", true);
    /// catalog.set("supports_function_calling", true);
    /// let effective = declared.or(&catalog);
    /// assert_eq!((effective.vision, effective.function_calling), (Some(false), Some(true)));
    /// ```
    pub fn or(&self, fallback: &Capabilities) -> Capabilities {
        Capabilities {
            function_calling: self.function_calling.or(fallback.function_calling),
            parallel_function_calling: self.parallel_function_calling.or(fallback.parallel_function_calling),
            tool_choice: self.tool_choice.or(fallback.tool_choice),
            vision: self.vision.or(fallback.vision),
            response_schema: self.response_schema.or(fallback.response_schema),
            web_search: self.web_search.or(fallback.web_search),
            reasoning: self.reasoning.or(fallback.reasoning),
            prompt_caching: self.prompt_caching.or(fallback.prompt_caching),
            audio_input: self.audio_input.or(fallback.audio_input),
            audio_output: self.audio_output.or(fallback.audio_output),
            pdf_input: self.pdf_input.or(fallback.pdf_input),
        }
    }

    /// Sets a flag by its LiteLLM name (`supports_vision`, ...). Returns `false` for an unknown name.
    pub fn set(&mut self, name: &str, value: bool) -> bool {
        let slot = match name.strip_prefix("supports_").unwrap_or(name) {
            "function_calling" => &mut self.function_calling,
            "parallel_function_calling" => &mut self.parallel_function_calling,
            "tool_choice" => &mut self.tool_choice,
            "vision" => &mut self.vision,
            "response_schema" => &mut self.response_schema,
            "web_search" => &mut self.web_search,
            "reasoning" => &mut self.reasoning,
            "prompt_caching" => &mut self.prompt_caching,
            "audio_input" => &mut self.audio_input,
            "audio_output" => &mut self.audio_output,
            "pdf_input" => &mut self.pdf_input,
            _ => return false,
        };
        *slot = Some(value);
        true
    }
}

/// One entry of a model group: a provider model behind an endpoint, with credentials and limits.
///
/// Built with [`Deployment::builder`]; the fields are public to read (layers and strategies look
/// at them), and the struct is `#[non_exhaustive]` so new fields are not breaking changes.
///
/// `Debug` never shows the key, nor the values of `params` (which may hold provider credentials):
/// only their names.
#[derive(Clone)]
#[non_exhaustive]
pub struct Deployment {
    /// Stable id, shared by every replica.
    pub id: DeploymentId,
    /// The model group (`model_name`) this deployment serves.
    pub group: Arc<str>,
    /// The provider model (`litellm_params.model`), e.g. `azure/gpt-4o-eu` or `openai/gpt-4o`.
    pub model: Arc<str>,
    /// Endpoint base URL: an absolute `http://` or `https://` URL with a host and without
    /// user-info when built by [`DeploymentBuilder::build`] (see [`ApiBaseProblem`]).
    pub api_base: Option<String>,
    /// Credential sent upstream; never logged.
    pub api_key: Option<ApiKey>,
    /// Azure `api-version`.
    pub api_version: Option<String>,
    /// Requests per minute this deployment accepts (a limit, also a weight for simple-shuffle).
    pub rpm: Option<u64>,
    /// Tokens per minute this deployment accepts.
    pub tpm: Option<u64>,
    /// Relative traffic share for simple-shuffle.
    pub weight: Option<f64>,
    /// Priority tier; the lowest order among the candidates serves first.
    pub order: Option<u32>,
    /// Tags for tag routing.
    pub tags: Vec<String>,
    /// Region for `allowed_model_region`.
    pub region: Option<String>,
    /// Concurrent requests this replica may send to the deployment.
    pub max_parallel_requests: Option<u32>,
    /// Per-attempt timeout.
    pub timeout: Option<Duration>,
    /// Per-attempt timeout for streaming requests.
    pub stream_timeout: Option<Duration>,
    /// Cooldown for this deployment (`litellm_params.cooldown_time`); `Some(ZERO)` means it is
    /// never cooled down.
    pub cooldown_time: Option<Duration>,
    /// `model_info.cooldown_time`: the cooldown with the highest precedence, above a request's
    /// own `cooldown_time`, [`cooldown_time`](Self::cooldown_time) and the upstream's
    /// Retry-After (LiteLLM 1.100 reads `model_info` first); `Some(ZERO)` means never.
    pub info_cooldown_time: Option<Duration>,
    /// Retries after a failure of this deployment (overrides the router's `num_retries`).
    pub num_retries: Option<u32>,
    /// Price of one input token.
    pub input_cost_per_token: Option<f64>,
    /// Price of one output token.
    pub output_cost_per_token: Option<f64>,
    /// Spend limit in USD per [`budget_duration`](Self::budget_duration) (`max_budget`); a
    /// deployment whose spend reached it is skipped by the pre-call layer's budget check. Applies
    /// only with a `budget_duration`.
    pub max_budget: Option<f64>,
    /// The period of [`max_budget`](Self::max_budget) (`budget_duration`): the spend resets this
    /// long after the first spend of a period.
    pub budget_duration: Option<Duration>,
    /// Context window for inputs.
    pub max_input_tokens: Option<u32>,
    /// Maximum completion tokens.
    pub max_output_tokens: Option<u32>,
    /// Capabilities: the declared flags (`model_info.supports_*`), and the catalog's where none
    /// is declared.
    pub capabilities: Capabilities,
    /// `model_info.base_model`: the model to look up in the [catalog](crate::catalog) instead of
    /// [`model`](Self::model) (an Azure deployment's name says nothing about its model).
    pub base_model: Option<String>,
    /// A blocked deployment is never selected.
    pub blocked: bool,
    /// Other provider parameters, passed to the provider as defaults (e.g. `temperature`).
    pub params: Map<String, Value>,
    /// What [`DeploymentBuilder::build`] took from the catalog.
    from_catalog: FromCatalog,
}

/// The catalog entry a deployment was built with, and which of its values came from it (so
/// that [`Deployment::to_builder`] gives back the declared values only).
#[derive(Clone, Debug, Default)]
struct FromCatalog {
    facts: Option<&'static ModelFacts>,
    max_input_tokens: bool,
    max_output_tokens: bool,
    input_cost_per_token: bool,
    output_cost_per_token: bool,
    declared_capabilities: Capabilities,
}

impl fmt::Debug for Deployment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Deployment")
            .field("id", &self.id)
            .field("group", &self.group)
            .field("model", &self.model)
            .field("api_base", &self.api_base)
            .field("api_key", &self.api_key)
            .field("api_version", &self.api_version)
            .field("rpm", &self.rpm)
            .field("tpm", &self.tpm)
            .field("weight", &self.weight)
            .field("order", &self.order)
            .field("tags", &self.tags)
            .field("region", &self.region)
            .field("max_parallel_requests", &self.max_parallel_requests)
            .field("timeout", &self.timeout)
            .field("stream_timeout", &self.stream_timeout)
            .field("cooldown_time", &self.cooldown_time)
            .field("info_cooldown_time", &self.info_cooldown_time)
            .field("num_retries", &self.num_retries)
            .field("input_cost_per_token", &self.input_cost_per_token)
            .field("output_cost_per_token", &self.output_cost_per_token)
            .field("max_budget", &self.max_budget)
            .field("budget_duration", &self.budget_duration)
            .field("max_input_tokens", &self.max_input_tokens)
            .field("max_output_tokens", &self.max_output_tokens)
            .field("capabilities", &self.capabilities)
            .field("base_model", &self.base_model)
            .field("catalog", &self.from_catalog.facts.map(|f| f.key))
            .field("blocked", &self.blocked)
            .field("params", &self.params.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Deployment {
    /// Starts a deployment of `group` served by the provider model `model`.
    pub fn builder(group: impl Into<Arc<str>>, model: impl Into<Arc<str>>) -> DeploymentBuilder {
        DeploymentBuilder::new(group, model)
    }

    /// A builder holding this deployment's fields, to derive a changed copy. The id is kept
    /// unless the builder is given another one. Values the catalog filled in are left out (the
    /// builder holds what was declared), so a changed model or base model is looked up afresh.
    pub fn to_builder(&self) -> DeploymentBuilder {
        let mut d = self.clone();
        let filled = std::mem::take(&mut d.from_catalog);
        if filled.max_input_tokens {
            d.max_input_tokens = None;
        }
        if filled.max_output_tokens {
            d.max_output_tokens = None;
        }
        if filled.input_cost_per_token {
            d.input_cost_per_token = None;
        }
        if filled.output_cost_per_token {
            d.output_cost_per_token = None;
        }
        d.capabilities = filled.declared_capabilities;
        DeploymentBuilder { d, explicit_id: true }
    }

    /// The [catalog](crate::catalog) entry of this deployment's model (or base model), if the
    /// catalog knows it; its values fill every field the deployment does not declare.
    ///
    /// ```
    /// use switchyard_layers::Deployment;
    /// let d = Deployment::builder("claude", "anthropic/claude-sonnet-4-5").build()?;
    /// assert_eq!(d.catalog().map(|f| f.key), Some("claude-sonnet-4-5"));
    /// assert_eq!(d.max_output_tokens, Some(64_000));
    /// assert!(Deployment::builder("g", "openai/my-model").build()?.catalog().is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn catalog(&self) -> Option<&'static ModelFacts> {
        self.from_catalog.facts
    }

    /// The provider prefix of [`Deployment::model`] (`azure` for `azure/gpt-4o`), or `openai`
    /// when the model has none, as LiteLLM does.
    pub fn provider(&self) -> &str {
        self.model.split_once('/').map_or("openai", |(p, _)| p)
    }

    /// The price of `input` prompt tokens plus `output` completion tokens, when both prices are known.
    pub fn cost(&self, input: u64, output: u64) -> Option<f64> {
        Some(self.input_cost_per_token? * input as f64 + self.output_cost_per_token? * output as f64)
    }
}

/// A deployment that cannot be built.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum DeploymentError {
    /// The group name is empty.
    EmptyGroup,
    /// The provider model is empty.
    EmptyModel {
        /// The group of the deployment.
        group: String,
    },
    /// A numeric field is negative, NaN or infinite.
    InvalidNumber {
        /// The field (`weight`, `input_cost_per_token`, ...).
        field: &'static str,
        /// The value given.
        value: f64,
    },
    /// [`Deployment::api_base`] is not a URL the HTTP provider can call. Neither this error nor
    /// its `Display` shows the URL (it may carry a password).
    InvalidApiBase {
        /// The group of the deployment.
        group: String,
        /// What is wrong with it.
        problem: ApiBaseProblem,
    },
}

/// Why an `api_base` cannot be called; see [`DeploymentError::InvalidApiBase`].
///
/// An `api_base` must be an absolute `http://` or `https://` URL with a host and without
/// user-info: the provider's transport speaks HTTP(S) over TCP only, and never sends
/// `user:password@` (which would instead show in the connection pool's debug logs). An empty or
/// blank `api_base` is no `api_base` (the provider's default base URL applies).
///
/// ```
/// use switchyard_layers::{Deployment, deployment::{ApiBaseProblem, DeploymentError}};
///
/// let err = Deployment::builder("g", "openai/x").api_base("http://u:pw@vllm:8000").build().unwrap_err();
/// assert!(matches!(err, DeploymentError::InvalidApiBase { problem: ApiBaseProblem::UserInfo, .. }));
/// assert!(!err.to_string().contains("pw"));
/// assert!(Deployment::builder("g", "openai/x").api_base("http://vllm:8000").build().is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApiBaseProblem {
    /// It does not parse as a URL (a space, a bad character, a bad port, ...).
    NotAUrl,
    /// It has no scheme: a path (`/v1`) or a bare `host:port` (`localhost:8000`).
    NotAbsolute,
    /// Its scheme is not `http` or `https` (`file`, `unix`, `ftp`, ...).
    Scheme(String),
    /// It names no host (`http://`, `http:///v1`, `https://:8443`).
    NoHost,
    /// It carries user-info (`user:password@host`).
    UserInfo,
}

impl fmt::Display for ApiBaseProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotAUrl => f.write_str("is not a URL"),
            Self::NotAbsolute => f.write_str(
                "has no scheme; write an absolute URL with the scheme and the host, e.g. `http://localhost:8000/v1`",
            ),
            Self::Scheme(scheme) => write!(
                f,
                "has the scheme `{scheme}`; only http:// and https:// are served (no file://, unix:// or other transports)"
            ),
            Self::NoHost => f.write_str("names no host"),
            Self::UserInfo => f.write_str(
                "carries user-info (`user:password@`), which is never sent upstream (and would show in debug logs); \
                 put the credential in `api_key` or `extra_headers`",
            ),
        }
    }
}

/// Checks an `api_base` as the HTTP provider will use it: trimmed, blank meaning none.
fn check_api_base(base: &str) -> Result<(), ApiBaseProblem> {
    let base = base.trim();
    if base.is_empty() {
        return Ok(());
    }
    let Some((scheme, rest)) = base.split_once("://") else {
        return Err(ApiBaseProblem::NotAbsolute);
    };
    let valid_scheme = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !valid_scheme {
        return Err(ApiBaseProblem::NotAUrl);
    }
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return Err(ApiBaseProblem::Scheme(scheme));
    }
    // User-info first: whatever else is wrong, the answer must say why without the password.
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    if authority.contains('@') {
        return Err(ApiBaseProblem::UserInfo);
    }
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split_once(']').map_or(v6, |(h, _)| h),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    if host.is_empty() {
        return Err(ApiBaseProblem::NoHost);
    }
    let uri: http::Uri = base.parse().map_err(|_| ApiBaseProblem::NotAUrl)?;
    match uri.authority() {
        Some(a) if !a.host().is_empty() => Ok(()),
        _ => Err(ApiBaseProblem::NoHost),
    }
}

impl fmt::Display for DeploymentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::EmptyGroup => f.write_str("deployment has an empty model group name"),
            Self::EmptyModel { group } => write!(f, "deployment of group `{group}` has an empty provider model"),
            Self::InvalidNumber { field, value } => {
                write!(f, "`{field}` must be a finite number >= 0, got {value}")
            }
            Self::InvalidApiBase { group, problem } => {
                write!(f, "`api_base` of a deployment of group `{group}` {problem}")
            }
        }
    }
}

impl std::error::Error for DeploymentError {}

/// Builds a [`Deployment`]; see [`Deployment::builder`].
#[derive(Clone, Debug)]
pub struct DeploymentBuilder {
    d: Deployment,
    explicit_id: bool,
}

macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident : $ty:ty),* $(,)?) => {$(
        $(#[$doc])*
        pub fn $name(mut self, v: $ty) -> Self {
            self.d.$name = Some(v);
            self
        }
    )*};
}

impl DeploymentBuilder {
    fn new(group: impl Into<Arc<str>>, model: impl Into<Arc<str>>) -> Self {
        Self {
            d: Deployment {
                id: DeploymentId::new(""),
                group: group.into(),
                model: model.into(),
                api_base: None,
                api_key: None,
                api_version: None,
                rpm: None,
                tpm: None,
                weight: None,
                order: None,
                tags: Vec::new(),
                region: None,
                max_parallel_requests: None,
                timeout: None,
                stream_timeout: None,
                cooldown_time: None,
                info_cooldown_time: None,
                num_retries: None,
                input_cost_per_token: None,
                output_cost_per_token: None,
                max_budget: None,
                budget_duration: None,
                max_input_tokens: None,
                max_output_tokens: None,
                capabilities: Capabilities::default(),
                base_model: None,
                blocked: false,
                params: Map::new(),
                from_catalog: FromCatalog::default(),
            },
            explicit_id: false,
        }
    }

    /// Uses this id (`model_info.id`) instead of the derived one.
    pub fn id(mut self, id: impl Into<DeploymentId>) -> Self {
        self.d.id = id.into();
        self.explicit_id = true;
        self
    }

    /// Endpoint base URL: an absolute `http://` or `https://` URL with a host and without
    /// user-info, checked by [`build`](Self::build).
    pub fn api_base(mut self, v: impl Into<String>) -> Self {
        self.d.api_base = Some(v.into());
        self
    }

    /// Credential.
    pub fn api_key(mut self, v: ApiKey) -> Self {
        self.d.api_key = Some(v);
        self
    }

    /// Azure `api-version`.
    pub fn api_version(mut self, v: impl Into<String>) -> Self {
        self.d.api_version = Some(v.into());
        self
    }

    /// Region for `allowed_model_region`.
    pub fn region(mut self, v: impl Into<String>) -> Self {
        self.d.region = Some(v.into());
        self
    }

    /// `model_info.base_model`: the model the [catalog](crate::catalog) is asked about instead
    /// of the deployment's own (`gpt-4o` for the Azure deployment `azure/prod-eu-1`).
    pub fn base_model(mut self, v: impl Into<String>) -> Self {
        self.d.base_model = Some(v.into());
        self
    }

    setters! {
        /// Requests-per-minute limit (and simple-shuffle weight when no `weight` is set).
        rpm: u64,
        /// Tokens-per-minute limit.
        tpm: u64,
        /// Simple-shuffle weight.
        weight: f64,
        /// Priority tier (lowest serves first).
        order: u32,
        /// Concurrent requests per replica.
        max_parallel_requests: u32,
        /// Per-attempt timeout.
        timeout: Duration,
        /// Per-attempt timeout for streams.
        stream_timeout: Duration,
        /// Cooldown time (`ZERO` = never cool down), `litellm_params.cooldown_time`.
        cooldown_time: Duration,
        /// `model_info.cooldown_time`: wins over every other cooldown time (`ZERO` = never).
        info_cooldown_time: Duration,
        /// Retries after this deployment fails.
        num_retries: u32,
        /// Input token price.
        input_cost_per_token: f64,
        /// Output token price.
        output_cost_per_token: f64,
        /// Spend limit in USD per `budget_duration`.
        max_budget: f64,
        /// The budget period.
        budget_duration: Duration,
        /// Context window.
        max_input_tokens: u32,
        /// Completion limit.
        max_output_tokens: u32,
    }

    /// Tags for tag routing.
    pub fn tags<I, T>(mut self, tags: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: Into<String>,
    {
        self.d.tags = tags.into_iter().map(Into::into).collect();
        self
    }

    /// Declared capabilities.
    pub fn capabilities(mut self, v: Capabilities) -> Self {
        self.d.capabilities = v;
        self
    }

    /// Blocks (or unblocks) the deployment.
    pub fn blocked(mut self, v: bool) -> Self {
        self.d.blocked = v;
        self
    }

    /// Adds a provider default parameter (e.g. `temperature`).
    pub fn param(mut self, key: impl Into<String>, value: Value) -> Self {
        self.d.params.insert(key.into(), value);
        self
    }

    /// Validates and builds the deployment: a non-empty group and model, numbers that are finite
    /// and >= 0, and an `api_base` the HTTP provider can call ([`ApiBaseProblem`]).
    ///
    /// Then every value not declared (context window, output limit, prices, each capability
    /// flag) is taken from the [catalog](crate::catalog) entry of the base model, else of the
    /// model, when there is one: declared values always win. The id depends on declared values
    /// only.
    ///
    /// Without an explicit [`id`](Self::id), the id is the first 32 hex digits of
    /// `sha256(group, provider parameters)`: the same group and parameters always give the same
    /// id, on every replica and across restarts, and two entries that differ in any provider
    /// parameter (endpoint, key, limits, ...) get different ids. Ids are not LiteLLM's own hashes.
    ///
    /// ```
    /// use switchyard_layers::Deployment;
    /// let a = Deployment::builder("gpt-4o", "openai/gpt-4o").rpm(10).build()?;
    /// let b = Deployment::builder("gpt-4o", "openai/gpt-4o").rpm(10).build()?;
    /// let c = Deployment::builder("gpt-4o", "openai/gpt-4o").rpm(20).build()?;
    /// assert_eq!(a.id, b.id);
    /// assert_ne!(a.id, c.id);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build(mut self) -> Result<Deployment, DeploymentError> {
        let d = &mut self.d;
        if d.group.is_empty() {
            return Err(DeploymentError::EmptyGroup);
        }
        if d.model.is_empty() {
            return Err(DeploymentError::EmptyModel { group: d.group.to_string() });
        }
        for (field, value) in [
            ("weight", d.weight),
            ("input_cost_per_token", d.input_cost_per_token),
            ("output_cost_per_token", d.output_cost_per_token),
            ("max_budget", d.max_budget),
        ] {
            if let Some(v) = value
                && !(v.is_finite() && v >= 0.0)
            {
                return Err(DeploymentError::InvalidNumber { field, value: v });
            }
        }
        if let Some(base) = &d.api_base {
            check_api_base(base)
                .map_err(|problem| DeploymentError::InvalidApiBase { group: d.group.to_string(), problem })?;
        }
        if !self.explicit_id || d.id.as_str().is_empty() {
            d.id = derive_id(d);
        }
        fill_from_catalog(d);
        Ok(self.d)
    }
}

/// Fills what `d` does not declare from its catalog entry, remembering what was filled.
fn fill_from_catalog(d: &mut Deployment) {
    let facts = catalog::lookup_deployment(&d.model, d.base_model.as_deref());
    let mut filled = FromCatalog { facts, declared_capabilities: d.capabilities.clone(), ..FromCatalog::default() };
    if let Some(f) = facts {
        fn fill<T: Copy>(slot: &mut Option<T>, value: Option<T>, filled: &mut bool) {
            if slot.is_none() && value.is_some() {
                *slot = value;
                *filled = true;
            }
        }
        fill(&mut d.max_input_tokens, f.max_input_tokens, &mut filled.max_input_tokens);
        fill(&mut d.max_output_tokens, f.max_output_tokens, &mut filled.max_output_tokens);
        fill(&mut d.input_cost_per_token, f.input_cost_per_token, &mut filled.input_cost_per_token);
        fill(&mut d.output_cost_per_token, f.output_cost_per_token, &mut filled.output_cost_per_token);
        d.capabilities = d.capabilities.or(&f.capabilities);
    }
    d.from_catalog = filled;
}

/// `sha256` over the group and a canonical rendering of every provider parameter.
fn derive_id(d: &Deployment) -> DeploymentId {
    let mut h = Sha256::new();
    let mut put = |k: &str, v: &str| {
        h.update(k.as_bytes());
        h.update([0x1f]);
        h.update(v.as_bytes());
        h.update([0x1e]);
    };
    put("model_name", &d.group);
    put("model", &d.model);
    let opt = |v: Option<String>| v.unwrap_or_default();
    put("api_base", d.api_base.as_deref().unwrap_or(""));
    put("api_key", d.api_key.as_ref().map_or("", ApiKey::expose));
    put("api_version", d.api_version.as_deref().unwrap_or(""));
    put("rpm", &opt(d.rpm.map(|v| v.to_string())));
    put("tpm", &opt(d.tpm.map(|v| v.to_string())));
    put("weight", &opt(d.weight.map(|v| v.to_string())));
    put("order", &opt(d.order.map(|v| v.to_string())));
    put("tags", &d.tags.join("\u{1f}"));
    put("region", d.region.as_deref().unwrap_or(""));
    put("max_parallel_requests", &opt(d.max_parallel_requests.map(|v| v.to_string())));
    put("timeout", &opt(d.timeout.map(|v| v.as_secs_f64().to_string())));
    put("stream_timeout", &opt(d.stream_timeout.map(|v| v.as_secs_f64().to_string())));
    put("cooldown_time", &opt(d.cooldown_time.map(|v| v.as_secs_f64().to_string())));
    put("num_retries", &opt(d.num_retries.map(|v| v.to_string())));
    put("input_cost_per_token", &opt(d.input_cost_per_token.map(|v| v.to_string())));
    put("output_cost_per_token", &opt(d.output_cost_per_token.map(|v| v.to_string())));
    // Added after the first release: hashed only when set, so the ids of deployments without a
    // budget do not change.
    if let Some(v) = d.max_budget {
        put("max_budget", &v.to_string());
    }
    if let Some(v) = d.budget_duration {
        put("budget_duration", &v.as_secs_f64().to_string());
    }
    let mut params = String::new();
    canonical_json(&Value::Object(d.params.clone()), &mut params);
    put("params", &params);
    let digest = h.finalize();
    let mut id = String::with_capacity(32);
    for b in &digest[..16] {
        use fmt::Write;
        let _ = write!(id, "{b:02x}");
    }
    DeploymentId::new(id)
}

/// Appends `v` to `out` as canonical JSON: object members sorted by key at every depth, no
/// whitespace, whatever map ordering serde_json was built with. Two values that differ only in
/// member order render the same (what deployment ids and cache keys are derived from).
///
/// ```
/// use serde_json::json;
/// use switchyard_layers::deployment::canonical_json;
///
/// let (mut a, mut b) = (String::new(), String::new());
/// canonical_json(&json!({"b": [1, {"d": 2, "c": 3}], "a": "x"}), &mut a);
/// canonical_json(&json!({"a": "x", "b": [1, {"c": 3, "d": 2}]}), &mut b);
/// assert_eq!(a, r#"{"a":"x","b":[1,{"c":3,"d":2}]}"#);
/// assert_eq!(a, b);
/// ```
pub fn canonical_json(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical_json(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_of_deployments_without_a_budget_did_not_change() {
        // The id this deployment derived before budgets were added to `Deployment`.
        let d = Deployment::builder("gpt-4o", "openai/gpt-4o").rpm(10).build().unwrap();
        assert_eq!(d.id.as_str(), "98f9511818156b28be7f025d30055f0e");
        let budgeted = Deployment::builder("gpt-4o", "openai/gpt-4o").rpm(10).max_budget(5.0).build().unwrap();
        assert_ne!(budgeted.id, d.id);
    }

    #[test]
    fn a_negative_budget_is_refused() {
        let err = Deployment::builder("g", "openai/m").max_budget(-1.0).build().unwrap_err();
        assert_eq!(err, DeploymentError::InvalidNumber { field: "max_budget", value: -1.0 });
    }
}
