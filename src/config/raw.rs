//! The serde shapes of a LiteLLM proxy config, as loose as LiteLLM reads them. Every struct
//! keeps the keys it does not know in `extra`, so the conversion can warn about each of them.
//!
//! Shapes that need a path-named error of their own (fallback lists, aliases) stay
//! [`Value`]s here and are parsed by the conversion.

use std::{collections::BTreeMap, fmt};

use serde::{
    Deserialize, Deserializer,
    de::{self, Visitor},
};
use serde_json::Value;

/// Keys a section does not declare.
pub(crate) type Extra = BTreeMap<String, Value>;

/// A number as LiteLLM accepts it: an integer, a float, or a string holding either (`"100"`,
/// which is what `os.environ/NAME` references and quoted YAML give). Range and sign are
/// checked by the conversion, which knows the path.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Num {
    Int(i128),
    Float(f64),
}

impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Int(i) => write!(f, "{i}"),
            Self::Float(x) => write!(f, "{x}"),
        }
    }
}

impl Num {
    pub(crate) fn is_negative(self) -> bool {
        match self {
            Self::Int(i) => i < 0,
            Self::Float(x) => x < 0.0,
        }
    }

    pub(crate) fn as_f64(self) -> f64 {
        match self {
            Self::Int(i) => i as f64,
            Self::Float(x) => x,
        }
    }

    fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        if let Ok(i) = s.parse::<i128>() {
            return Some(Self::Int(i));
        }
        // `f64::from_str` also takes `inf` and `NaN`, which no limit means.
        s.parse::<f64>().ok().filter(|x| x.is_finite()).map(Self::Float)
    }
}

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct NumVisitor;

        impl Visitor<'_> for NumVisitor {
            type Value = Num;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number or a string holding a number")
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Num, E> {
                Ok(Num::Int(v.into()))
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Num, E> {
                Ok(Num::Int(v.into()))
            }

            fn visit_i128<E: de::Error>(self, v: i128) -> Result<Num, E> {
                Ok(Num::Int(v))
            }

            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Num, E> {
                if v.is_finite() { Ok(Num::Float(v)) } else { Err(E::invalid_value(de::Unexpected::Float(v), &self)) }
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Num, E> {
                Num::parse(v).ok_or_else(|| E::invalid_value(de::Unexpected::Str(v), &self))
            }
        }

        d.deserialize_any(NumVisitor)
    }
}

/// A boolean as LiteLLM's YAML 1.1 reader accepts it: `true`/`false`, or the words `yes`, `no`,
/// `on`, `off`, `y`, `n` in any case. The document is read with YAML 1.2 booleans so that a
/// model group named `no` or `y` stays a string; the words are accepted here, where a boolean
/// is expected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Flag(pub(crate) bool);

impl Flag {
    pub(crate) fn parse(v: &Value) -> Option<bool> {
        match v {
            Value::Bool(b) => Some(*b),
            Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
                "true" | "yes" | "on" | "y" => Some(true),
                "false" | "no" | "off" | "n" => Some(false),
                _ => None,
            },
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Self::parse(&v).map(Flag).ok_or_else(|| de::Error::custom(format!("expected true or false, got {v}")))
    }
}

/// A string or an integer, for ids (`model_info.id: 1` is `"1"` in LiteLLM).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(untagged)]
pub(crate) enum IdValue {
    Str(String),
    Int(i64),
    UInt(u64),
}

impl IdValue {
    pub(crate) fn into_string(self) -> String {
        match self {
            Self::Str(s) => s,
            Self::Int(i) => i.to_string(),
            Self::UInt(u) => u.to_string(),
        }
    }
}

/// The whole document.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct RawConfig {
    pub(crate) model_list: Option<Vec<RawModel>>,
    pub(crate) router_settings: Option<RawRouterSettings>,
    pub(crate) litellm_settings: Option<RawLitellmSettings>,
    pub(crate) general_settings: Option<RawGeneralSettings>,
    /// Read before anything else, as a source for `os.environ/NAME`.
    pub(crate) environment_variables: Option<BTreeMap<String, Value>>,
    #[serde(flatten)]
    pub(crate) extra: Extra,
}

/// One `model_list` entry.
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct RawModel {
    #[serde(default)]
    pub(crate) model_name: Option<String>,
    #[serde(default)]
    pub(crate) litellm_params: Option<RawParams>,
    #[serde(default)]
    pub(crate) model_info: Option<RawModelInfo>,
    #[serde(default)]
    pub(crate) rpm: Option<Num>,
    #[serde(default)]
    pub(crate) tpm: Option<Num>,
    #[serde(flatten)]
    pub(crate) extra: Extra,
}

/// `model_list[].litellm_params`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct RawParams {
    pub(crate) model: Option<String>,
    pub(crate) api_key: Option<String>,
    pub(crate) api_base: Option<String>,
    pub(crate) api_version: Option<String>,
    pub(crate) rpm: Option<Num>,
    pub(crate) tpm: Option<Num>,
    pub(crate) weight: Option<Num>,
    pub(crate) order: Option<Num>,
    pub(crate) tags: Option<Vec<String>>,
    pub(crate) region: Option<String>,
    pub(crate) region_name: Option<String>,
    pub(crate) max_parallel_requests: Option<Num>,
    pub(crate) timeout: Option<Num>,
    pub(crate) request_timeout: Option<Num>,
    pub(crate) stream_timeout: Option<Num>,
    pub(crate) cooldown_time: Option<Num>,
    pub(crate) num_retries: Option<Num>,
    pub(crate) input_cost_per_token: Option<Num>,
    pub(crate) output_cost_per_token: Option<Num>,
    pub(crate) max_budget: Option<Num>,
    /// `"1d"`, `"30m"`, ... or seconds.
    pub(crate) budget_duration: Option<Value>,
    /// Every other key: a provider parameter.
    #[serde(flatten)]
    pub(crate) extra: Extra,
}

/// `model_list[].model_info`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct RawModelInfo {
    pub(crate) id: Option<IdValue>,
    pub(crate) max_input_tokens: Option<Num>,
    pub(crate) max_output_tokens: Option<Num>,
    pub(crate) input_cost_per_token: Option<Num>,
    pub(crate) output_cost_per_token: Option<Num>,
    pub(crate) blocked: Option<Flag>,
    /// LiteLLM 1.100 reads it before `litellm_params.cooldown_time`.
    pub(crate) cooldown_time: Option<Num>,
    /// LiteLLM 1.100 reads it when `litellm_params.order` is absent (`_get_deployment_order`).
    pub(crate) order: Option<Num>,
    /// `supports_*` flags, metadata, and anything else.
    #[serde(flatten)]
    pub(crate) extra: Extra,
}

/// `router_settings`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct RawRouterSettings {
    pub(crate) routing_strategy: Option<String>,
    pub(crate) routing_strategy_args: Option<RawStrategyArgs>,
    pub(crate) routing_groups: Option<Vec<RawRoutingGroup>>,
    pub(crate) num_retries: Option<Num>,
    pub(crate) timeout: Option<Num>,
    pub(crate) stream_timeout: Option<Num>,
    pub(crate) retry_after: Option<Num>,
    pub(crate) allowed_fails: Option<Num>,
    pub(crate) allowed_fails_policy: Option<BTreeMap<String, Option<Num>>>,
    pub(crate) retry_policy: Option<BTreeMap<String, Option<Num>>>,
    pub(crate) cooldown_time: Option<Num>,
    pub(crate) disable_cooldowns: Option<Flag>,
    pub(crate) enable_pre_call_checks: Option<Flag>,
    /// Ours: declared `rpm` / `tpm` limits refuse requests under every strategy.
    pub(crate) enforce_rate_limits: Option<Flag>,
    pub(crate) enable_tag_filtering: Option<Flag>,
    pub(crate) tag_filtering_match_any: Option<Flag>,
    pub(crate) default_max_parallel_requests: Option<Num>,
    pub(crate) wait_for_parallel_slot: Option<Num>,
    pub(crate) max_fallbacks: Option<Num>,
    pub(crate) fallbacks: Option<Value>,
    pub(crate) context_window_fallbacks: Option<Value>,
    pub(crate) content_policy_fallbacks: Option<Value>,
    pub(crate) default_fallbacks: Option<Value>,
    pub(crate) model_group_alias: Option<BTreeMap<String, Value>>,
    pub(crate) redis_url: Option<String>,
    pub(crate) redis_host: Option<String>,
    pub(crate) redis_port: Option<Num>,
    pub(crate) redis_password: Option<String>,
    pub(crate) redis_namespace: Option<String>,
    /// `[{host, port}, ...]` or `["redis://host:port", ...]`: a Redis Cluster.
    pub(crate) redis_startup_nodes: Option<Value>,
    pub(crate) redis_ssl: Option<Flag>,
    pub(crate) redis_ssl_ca_certs: Option<String>,
    pub(crate) redis_budgets_fail_closed: Option<Flag>,
    pub(crate) redis_response_timeout: Option<Num>,
    pub(crate) seed: Option<Num>,
    pub(crate) cooldown_probe: Option<Value>,
    pub(crate) skip_unsupported_providers: Option<Flag>,
    pub(crate) model_group_retry_policy: Option<BTreeMap<String, Option<RawPolicy>>>,
    pub(crate) retry_budget: Option<RawRetryBudget>,
    pub(crate) wait_for_cooldown: Option<Num>,
    pub(crate) deadline: Option<Num>,
    /// Ours: `true` or `{enabled, max_continuations, max_partial_bytes}`.
    pub(crate) stream_continuation: Option<Value>,
    /// `{provider: {budget_limit, time_period}}` (or `max_budget`, `budget_duration`).
    pub(crate) provider_budget_config: Option<BTreeMap<String, Value>>,
    /// Ours: `true`, or `{ttl, session, api_key}`.
    pub(crate) deployment_affinity: Option<Value>,
    /// LiteLLM's optional checks (`session_affinity`, `deployment_affinity`, ...).
    pub(crate) optional_pre_call_checks: Option<Vec<String>>,
    pub(crate) deployment_affinity_ttl_seconds: Option<Num>,
    /// Ours: seconds a cacheable prompt prefix sticks to its deployment (0: off).
    pub(crate) prompt_cache_affinity_ttl: Option<Num>,
    /// Ours: seconds the deployment holding a Responses API conversation is remembered.
    pub(crate) conversation_ttl: Option<Num>,
    /// Ours: route a continued conversation whose deployment cannot serve as a new one.
    pub(crate) conversation_fallback: Option<bool>,
    pub(crate) enable_health_check_routing: Option<Flag>,
    pub(crate) health_check_staleness_threshold: Option<Num>,
    pub(crate) health_check_ignore_transient_errors: Option<Flag>,
    pub(crate) background_health_check_model_groups: Option<Vec<String>>,
    #[serde(flatten)]
    pub(crate) extra: Extra,
}

/// A `retry_policy` / `allowed_fails_policy` mapping as written.
pub(crate) type RawPolicy = BTreeMap<String, Option<Num>>;

/// `router_settings.retry_budget` (ours).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRetryBudget {
    pub(crate) ratio: Option<Num>,
    pub(crate) min_per_sec: Option<Num>,
}

/// `litellm_settings`: only its routing keys are read; `router_settings` wins over each.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct RawLitellmSettings {
    pub(crate) num_retries: Option<Num>,
    pub(crate) request_timeout: Option<Num>,
    pub(crate) allowed_fails: Option<Num>,
    pub(crate) cooldown_time: Option<Num>,
    pub(crate) max_fallbacks: Option<Num>,
    pub(crate) fallbacks: Option<Value>,
    pub(crate) context_window_fallbacks: Option<Value>,
    pub(crate) content_policy_fallbacks: Option<Value>,
    pub(crate) default_fallbacks: Option<Value>,
    pub(crate) model_group_alias: Option<BTreeMap<String, Value>>,
    /// `litellm.model_alias_map`: `{name: model}`, the request's model renamed before routing.
    pub(crate) model_alias_map: Option<BTreeMap<String, Value>>,
    #[serde(flatten)]
    pub(crate) extra: Extra,
}

/// `router_settings.routing_strategy_args`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct RawStrategyArgs {
    pub(crate) ttl: Option<Num>,
    pub(crate) lowest_latency_buffer: Option<Num>,
    pub(crate) max_latency_list_size: Option<Num>,
    #[serde(flatten)]
    pub(crate) extra: Extra,
}

/// One `router_settings.routing_groups` entry.
#[derive(Debug, Deserialize)]
pub(crate) struct RawRoutingGroup {
    pub(crate) group_name: String,
    #[serde(default)]
    pub(crate) models: Vec<String>,
    pub(crate) routing_strategy: String,
    #[serde(flatten)]
    pub(crate) extra: Extra,
}

/// `general_settings` (only `master_key` and our `edge` and `count_tokens` are read).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct RawGeneralSettings {
    pub(crate) master_key: Option<String>,
    /// Ours: the gateway's connection limits and browser rules, read by `http_server::edge`.
    pub(crate) edge: Option<Value>,
    /// Ours: `estimate` (default) or `upstream`, how `/v1/messages/count_tokens` counts.
    pub(crate) count_tokens: Option<String>,
    pub(crate) background_health_checks: Option<Flag>,
    pub(crate) health_check_interval: Option<Num>,
    pub(crate) health_check_concurrency: Option<Num>,
    pub(crate) background_health_check_model_groups: Option<Vec<String>>,
    /// Accepted: probe results are always shared through the state store (Redis when set).
    pub(crate) use_shared_health_check: Option<Flag>,
    /// Accepted: `/health` always answers with the endpoints' model and id.
    pub(crate) health_check_details: Option<Flag>,
    #[serde(flatten)]
    pub(crate) extra: Extra,
}
