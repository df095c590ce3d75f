use std::time::Duration;

use super::{AffinityConfig, BudgetConfig};
use crate::state::EnforcedLimits;

/// Settings of the [`PreCallLayer`](super::PreCallLayer). `Default` is LiteLLM's default router.
///
/// | check | default | LiteLLM switch |
/// |---|---|---|
/// | blocked deployments | always | — |
/// | tags | off | `enable_tag_filtering` ([`tag_filtering`](Self::tag_filtering)) |
/// | region, params, context window | off | `enable_pre_call_checks` ([`pre_call_checks`](Self::pre_call_checks)) |
/// | capabilities (images → vision, tools → function calling) | on | — (LiteLLM has no such filter; [`capabilities`](Self::capabilities)) |
/// | RPM limits | with `enable_pre_call_checks` | `enable_pre_call_checks` ([`pre_call_checks`](Self::pre_call_checks)) |
/// | RPM and TPM limits, every strategy | off | `enforce_rate_limits` ([`enforce_rate_limits`](Self::enforce_rate_limits); LiteLLM's `enforce_model_rate_limits` pre-call check) |
/// | parallel requests | always | — (the select layer enforces them anyway) |
/// | order tiers | on | newer LiteLLM applies `order` whatever `enable_pre_call_checks` says |
/// | budgets | when a provider budget is set or a deployment has `max_budget` + `budget_duration` | `provider_budget_config` ([`budgets`](Self::budgets)) |
/// | affinity | off | `session_affinity` / `deployment_affinity` ([`affinity`](Self::affinity)) |
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct PreCallConfig {
    /// Drop deployments whose `max_input_tokens` the prompt exceeds.
    pub context_window: bool,
    /// Drop deployments outside the request's `allowed_model_region`.
    pub region: bool,
    /// Drop deployments that declare they do not support a parameter the request uses.
    pub params: bool,
    /// Enforce declared `rpm` limits (LiteLLM's RPM pre-call check, part of
    /// `enable_pre_call_checks`).
    pub rpm: bool,
    /// Enforce declared `rpm` and `tpm` limits under every strategy (`enforce_rate_limits`;
    /// LiteLLM's `enforce_model_rate_limits`). Without it, and without [`rpm`](Self::rpm), limits
    /// are enforced only by the strategies that read usage (usage-, latency- and cost-based
    /// routing), as LiteLLM does; simple-shuffle weighs by them.
    pub enforce_rate_limits: bool,
    /// Drop deployments known (declared, else from the catalog) not to support vision when the
    /// request carries images, or function calling when it carries tools.
    pub capabilities: bool,
    /// Route by request tags (`enable_tag_filtering`).
    pub tags: bool,
    /// `tag_filtering_match_any`: a deployment matches when it carries any of the request's tags
    /// (default); `false`: when it carries all of them.
    pub tag_match_any: bool,
    /// Keep only the lowest `order` tier among the remaining candidates.
    pub order: bool,
    /// Parallel-request limit for deployments that set no `max_parallel_requests`.
    pub default_max_parallel_requests: Option<u32>,
    /// When every candidate is at its parallel-request limit, wait up to this long for a slot
    /// (`wait_for_parallel_slot`, ours) instead of failing at once.
    pub wait_for_parallel_slot: Option<Duration>,
    /// Bodies larger than this (bytes) are parsed and counted on a blocking thread, off the async
    /// executor (default 4 KB: about 1k tokens, ~0.1 ms of tiktoken time).
    pub offload_counting_above: usize,
    /// Provider budgets (deployment budgets are read from each deployment).
    pub budgets: BudgetConfig,
    /// Sticky routing by session or caller key; `None`: off.
    pub affinity: Option<AffinityConfig>,
    /// Prompt-cache affinity: a request with a cacheable prefix
    /// ([`RequestFacts::prompt_prefix`](crate::RequestFacts::prompt_prefix)) prefers the
    /// deployment that served that prefix within this long (default 300 s, the prompt caches'
    /// own lifetime); `None`: off.
    pub prompt_cache_affinity: Option<Duration>,
    /// How long the gateway remembers which deployment holds a Responses API conversation
    /// (default 30 days, as long as OpenAI stores responses).
    pub conversation_ttl: Duration,
    /// When the deployment holding a conversation (`previous_response_id`) cannot serve: `false`
    /// (default) answers a typed error (`conversation_unavailable`); `true` routes the request
    /// as a new conversation, without `previous_response_id` (the history is lost).
    pub conversation_fallback: bool,
}

impl Default for PreCallConfig {
    fn default() -> Self {
        Self {
            context_window: false,
            region: false,
            params: false,
            rpm: false,
            enforce_rate_limits: false,
            capabilities: true,
            tags: false,
            tag_match_any: true,
            order: true,
            default_max_parallel_requests: None,
            wait_for_parallel_slot: None,
            offload_counting_above: Self::DEFAULT_OFFLOAD_COUNTING_ABOVE,
            budgets: BudgetConfig::default(),
            affinity: None,
            prompt_cache_affinity: Some(Self::DEFAULT_PROMPT_CACHE_TTL),
            conversation_ttl: Self::DEFAULT_CONVERSATION_TTL,
            conversation_fallback: false,
        }
    }
}

impl PreCallConfig {
    /// Body size (bytes) above which tokens are counted off the executor: ~1k tokens at ~4 bytes
    /// a token. tiktoken counts about 8.6M o200k tokens a second on one core
    /// (`cargo bench --bench precall`), so 1k tokens take ~0.1 ms, tokio's rule of thumb for the
    /// longest stretch between two `.await`s; larger prompts would stall the executor (100k
    /// tokens: ~12 ms).
    pub const DEFAULT_OFFLOAD_COUNTING_ABOVE: usize = 4_096;

    /// How long a prompt prefix sticks to the deployment that served it: Anthropic's and OpenAI's
    /// prompt caches keep an entry about five minutes after its last use.
    pub const DEFAULT_PROMPT_CACHE_TTL: Duration = Duration::from_secs(300);

    /// How long a Responses API conversation is known to live on its deployment (OpenAI keeps
    /// stored responses 30 days).
    pub const DEFAULT_CONVERSATION_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

    /// Prompt-cache affinity for `ttl`, or off.
    pub fn prompt_cache_affinity(mut self, ttl: Option<Duration>) -> Self {
        self.prompt_cache_affinity = ttl;
        self
    }

    /// How long a conversation's deployment is remembered.
    pub fn conversation_ttl(mut self, ttl: Duration) -> Self {
        self.conversation_ttl = ttl;
        self
    }

    /// Route a continued conversation whose deployment cannot serve as a new one (`true`), or
    /// refuse it (`false`, default).
    pub fn conversation_fallback(mut self, on: bool) -> Self {
        self.conversation_fallback = on;
        self
    }

    /// Defaults (see the type docs).
    pub fn new() -> Self {
        Self::default()
    }

    /// `enable_pre_call_checks`: the context-window, region, params and RPM checks together.
    pub fn pre_call_checks(mut self, on: bool) -> Self {
        self.rpm = on;
        self.context_window(on).region(on).params(on)
    }

    /// `enforce_rate_limits`: declared `rpm` and `tpm` limits refuse requests under every
    /// strategy (LiteLLM's `enforce_model_rate_limits` pre-call check).
    pub fn enforce_rate_limits(mut self, on: bool) -> Self {
        self.enforce_rate_limits = on;
        self
    }

    /// The limits this layer enforces: both with `enforce_rate_limits`, `rpm` with the pre-call
    /// checks, else none.
    pub fn enforced_limits(&self) -> EnforcedLimits {
        if self.enforce_rate_limits {
            EnforcedLimits::ALL
        } else if self.rpm {
            EnforcedLimits::RPM
        } else {
            EnforcedLimits::NONE
        }
    }

    /// The context-window check.
    pub fn context_window(mut self, on: bool) -> Self {
        self.context_window = on;
        self
    }

    /// The region check.
    pub fn region(mut self, on: bool) -> Self {
        self.region = on;
        self
    }

    /// The params check.
    pub fn params(mut self, on: bool) -> Self {
        self.params = on;
        self
    }

    /// The capability filter (default on): images skip deployments known not to support vision,
    /// tools those known not to support function calling.
    pub fn capabilities(mut self, on: bool) -> Self {
        self.capabilities = on;
        self
    }

    /// `enable_tag_filtering`.
    pub fn tag_filtering(mut self, on: bool) -> Self {
        self.tags = on;
        self
    }

    /// `tag_filtering_match_any` (default `true`).
    pub fn tag_match_any(mut self, any: bool) -> Self {
        self.tag_match_any = any;
        self
    }

    /// Order tiers (default on).
    pub fn order(mut self, on: bool) -> Self {
        self.order = on;
        self
    }

    /// `default_max_parallel_requests` (a limit of 0 admits nothing; the config reader refuses it).
    pub fn default_max_parallel_requests(mut self, limit: Option<u32>) -> Self {
        self.default_max_parallel_requests = limit;
        self
    }

    /// `wait_for_parallel_slot`: the longest wait for a parallel-request slot (`None`: fail fast).
    pub fn wait_for_parallel_slot(mut self, max: Option<Duration>) -> Self {
        self.wait_for_parallel_slot = max;
        self
    }

    /// Body size above which counting moves to a blocking thread.
    pub fn offload_counting_above(mut self, bytes: usize) -> Self {
        self.offload_counting_above = bytes;
        self
    }

    /// Provider budgets (`provider_budget_config`); deployment budgets need no setting.
    pub fn budgets(mut self, budgets: BudgetConfig) -> Self {
        self.budgets = budgets;
        self
    }

    /// Sticky routing by session or caller key (`None`: off, the default).
    pub fn affinity(mut self, affinity: Option<AffinityConfig>) -> Self {
        self.affinity = affinity;
        self
    }
}
