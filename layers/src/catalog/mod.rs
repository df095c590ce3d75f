//! The model catalog: built-in facts about provider models (context window, output limit,
//! prices, capabilities), looked up by a deployment's `litellm_params.model`.
//!
//! The figures come from LiteLLM's published `model_prices_and_context_window_backup.json`
//! ([`source`] names the version), filtered to the chat, completion and embedding models of the
//! providers Switchyard speaks or will speak, and written to an embedded data file of our own
//! format by `scripts/gen-catalog` (see `docs/catalog.md`). The file is parsed once, on the
//! first lookup, into a hash map keyed by the lowercased model name: a lookup costs at most five
//! hash probes, never a scan.
//!
//! [`lookup`] follows LiteLLM's `get_model_info`: the model as given, then without its provider
//! prefix (with the provider checked against the entry's), then without a version or
//! fine-tune suffix; case does not matter; unknown models have no entry. A [`Deployment`] takes
//! every value its `model_info` (or `litellm_params`) does not declare from the catalog when it
//! is [built](crate::DeploymentBuilder::build), looking up `model_info.base_model` when set (Azure
//! deployment names say nothing about the model behind them), so the context-window check, cost
//! routing, budgets and the capability filter read the effective values on the deployment.
//!
//! ```
//! use switchyard_layers::{Deployment, catalog};
//!
//! let facts = catalog::lookup("anthropic/claude-sonnet-4-5").expect("in the catalog");
//! assert_eq!(facts.max_input_tokens, Some(200_000));
//! assert_eq!(facts.capabilities.vision, Some(true));
//! assert!(catalog::lookup("openai/my-own-finetune").is_none());
//!
//! // `model_info` wins; the rest comes from the catalog.
//! let d = Deployment::builder("gpt-4o", "azure/gpt-4o").max_input_tokens(8_000).build()?;
//! assert_eq!(d.max_input_tokens, Some(8_000));
//! assert_eq!(d.max_output_tokens, Some(16_384));
//! assert_eq!(d.input_cost_per_token, Some(2.5e-6));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`Deployment`]: crate::Deployment

mod data;
mod lookup;

use std::sync::LazyLock;

use rustc_hash::FxHashMap;

pub use crate::deployment::Capabilities;

/// What the catalog knows about one model. Every figure is `None` when the source does not
/// give it.
///
/// ```
/// let gpt = switchyard_layers::catalog::lookup("gpt-4o").expect("in the catalog");
/// assert_eq!((gpt.key, gpt.provider), ("gpt-4o", "openai"));
/// assert_eq!(gpt.cost(1_000_000, 0), Some(2.5));
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ModelFacts {
    /// The catalog key that matched (LiteLLM's model-map key, e.g. `azure/gpt-4o`).
    pub key: &'static str,
    /// LiteLLM's `litellm_provider` for the entry (`openai`, `vertex_ai-anthropic_models`, ...).
    pub provider: &'static str,
    /// What the model serves.
    pub mode: ModelMode,
    /// Context window: the most input tokens a request may carry.
    pub max_input_tokens: Option<u32>,
    /// The most tokens one completion may produce.
    pub max_output_tokens: Option<u32>,
    /// USD per input token.
    pub input_cost_per_token: Option<f64>,
    /// USD per output token.
    pub output_cost_per_token: Option<f64>,
    /// USD per input token read from the provider's prompt cache.
    pub cache_read_input_token_cost: Option<f64>,
    /// USD per input token written to the provider's prompt cache.
    pub cache_creation_input_token_cost: Option<f64>,
    /// What the model supports. The source lists most flags only where they hold, so a flag it
    /// does not give is `None` (unknown), not `false`: only an explicit `false` is known
    /// unsupported.
    pub capabilities: Capabilities,
}

impl ModelFacts {
    /// The price of `input` prompt tokens plus `output` completion tokens, when both prices are
    /// known (cache prices aside).
    pub fn cost(&self, input: u64, output: u64) -> Option<f64> {
        Some(self.input_cost_per_token? * input as f64 + self.output_cost_per_token? * output as f64)
    }
}

/// The kind of requests a catalog model serves (LiteLLM's `mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ModelMode {
    /// Chat completions.
    Chat,
    /// Legacy text completions.
    Completion,
    /// Embeddings.
    Embedding,
}

struct Catalog {
    models: Vec<ModelFacts>,
    /// Lowercased key → index in `models`.
    by_key: FxHashMap<String, u32>,
}

static CATALOG: LazyLock<Catalog> = LazyLock::new(|| {
    // The file is checked in and every line of it parsed by `tests::every_line_parses`.
    let models = data::parse(data::TEXT).unwrap_or_else(|e| panic!("the embedded model catalog is broken: {e}"));
    let by_key = models.iter().enumerate().map(|(i, m)| (m.key.to_ascii_lowercase(), i as u32)).collect();
    Catalog { models, by_key }
});

impl Catalog {
    fn get(&self, name: &str) -> Option<&ModelFacts> {
        let i = if name.bytes().any(|b| b.is_ascii_uppercase()) {
            self.by_key.get(&name.to_ascii_lowercase())
        } else {
            self.by_key.get(name)
        };
        i.map(|&i| &self.models[i as usize])
    }
}

/// The catalog's facts for a `litellm_params.model` (`gpt-4o`, `azure/gpt-4o`,
/// `anthropic/claude-sonnet-4-5`, `openrouter/anthropic/claude-3.5-sonnet`,
/// `bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0`), by LiteLLM's rules (module docs);
/// `None` for a model the catalog does not know.
///
/// ```
/// use switchyard_layers::catalog::lookup;
///
/// assert_eq!(lookup("anthropic/claude-sonnet-4-5").and_then(|f| f.max_output_tokens), Some(64_000));
/// assert_eq!(lookup("GPT-4o").map(|f| f.key), Some("gpt-4o"));
/// // The prefix is checked against the entry's provider: Azure deployment names are not models.
/// assert!(lookup("azure/my-gpt-4o-eu").is_none());
/// ```
pub fn lookup(model: &str) -> Option<&'static ModelFacts> {
    let catalog = &*CATALOG;
    lookup::candidates(model).into_iter().find_map(|(name, provider)| {
        let facts = catalog.get(&name)?;
        provider.is_none_or(|p| lookup::provider_matches(p, facts.provider)).then_some(facts)
    })
}

/// The facts for a deployment of `model` whose `model_info.base_model` is `base_model`, as
/// LiteLLM's router reads them: the base model, prefixed with the deployment's provider unless
/// it names one (`gpt-4o` on `azure/my-eu-name` is `azure/gpt-4o`). Without a base model,
/// [`lookup`] of the model.
///
/// ```
/// use switchyard_layers::catalog::lookup_deployment;
///
/// let facts = lookup_deployment("azure/prod-eu-1", Some("gpt-4o")).expect("in the catalog");
/// assert_eq!(facts.key, "azure/gpt-4o");
/// assert!(lookup_deployment("azure/prod-eu-1", None).is_none());
/// ```
pub fn lookup_deployment(model: &str, base_model: Option<&str>) -> Option<&'static ModelFacts> {
    let Some(base) = base_model.map(str::trim).filter(|b| !b.is_empty()) else { return lookup(model) };
    match (lookup::split_provider(base), lookup::split_provider(model)) {
        (None, Some((provider, _))) => lookup(&format!("{provider}/{base}")),
        _ => lookup(base),
    }
}

/// Every model in the catalog, sorted by key.
///
/// ```
/// let n = switchyard_layers::catalog::models().filter(|m| m.provider == "anthropic").count();
/// assert!(n > 10);
/// ```
pub fn models() -> impl ExactSizeIterator<Item = &'static ModelFacts> {
    CATALOG.models.iter()
}

/// Where the figures come from: the data file's first line (the source package, its version and
/// the sha256 of the source file).
///
/// ```
/// assert!(switchyard_layers::catalog::source().contains("litellm 1.100.0"));
/// ```
pub fn source() -> &'static str {
    data::source(data::TEXT)
}

#[cfg(test)]
mod tests;
