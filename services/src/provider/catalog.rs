//! The providers served natively: LiteLLM's names for APIs that speak OpenAI's chat
//! completions / completions / embeddings, Azure OpenAI and Anthropic's Messages API, and their
//! default base URLs.

use switchyard_layers::ctx::Endpoint;

/// How a provider is addressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flavor {
    /// `{base}/chat/completions`, `Authorization: Bearer {key}`.
    OpenAi,
    /// `{base}/openai/deployments/{name}/chat/completions?api-version=..`, `api-key: {key}`.
    Azure,
    /// `{base}/v1/messages`, `x-api-key: {key}`, `anthropic-version`; chat completions are
    /// translated to and from the Messages API (`switchyard_dialects::anthropic`).
    Anthropic,
    /// `{base}/v1beta/models/{model}:generateContent`, `x-goog-api-key: {key}`: Google's Gemini
    /// API (`switchyard_dialects::gemini`).
    Gemini,
    /// `{base}/v2/chat`, `Authorization: Bearer {key}`: Cohere's v2 API
    /// (`switchyard_dialects::cohere`).
    Cohere,
    /// `https://bedrock-runtime.{region}.amazonaws.com/model/{id}/converse`, SigV4: AWS Bedrock's
    /// Converse API (`switchyard_dialects::bedrock`; feature `bedrock`).
    #[cfg_attr(not(feature = "bedrock"), allow(dead_code, reason = "no provider names it without the feature"))]
    Bedrock,
    /// `https://{location}-aiplatform.googleapis.com/v1/projects/{project}/locations/{location}/
    /// publishers/{google|anthropic}/models/{model}:{method}`, `Authorization: Bearer` with a
    /// Google OAuth2 access token: Gemini (`generateContent`) or Claude (`rawPredict`) on Vertex
    /// AI, by model name (`super::vertex`; feature `vertex`).
    Vertex,
}

/// A wire format an attempt is read or written in: the client's (ingress) or the deployment's
/// (egress). Equal means passthrough; different means translation through the chat hub.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wire {
    /// OpenAI chat completions (the hub), completions and embeddings.
    OpenAi,
    /// Anthropic's Messages API.
    Anthropic,
    /// OpenAI's Responses API.
    Responses,
    /// Google's Gemini API (`generateContent`).
    Gemini,
    /// Cohere's v2 chat and embed API.
    Cohere,
    /// AWS Bedrock's Converse API (and `InvokeModel` for embeddings).
    Bedrock,
}

/// The client's dialect and the deployment's for one attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Route {
    pub(crate) ingress: Wire,
    pub(crate) egress: Wire,
}

impl Route {
    /// The dialects of an attempt at a `info` deployment of provider model `model` for a request
    /// to `endpoint`.
    pub(crate) fn of(info: &ProviderInfo, model: &str, endpoint: Endpoint) -> Self {
        let ingress = match endpoint {
            Endpoint::Messages | Endpoint::CountTokens => Wire::Anthropic,
            Endpoint::Responses | Endpoint::ResponseOp(_) => Wire::Responses,
            _ => Wire::OpenAi,
        };
        let egress = match info.flavor {
            Flavor::Anthropic => Wire::Anthropic,
            Flavor::Gemini => Wire::Gemini,
            Flavor::Cohere => Wire::Cohere,
            Flavor::Bedrock => Wire::Bedrock,
            Flavor::Vertex => super::vertex::wire(upstream_model(model)),
            Flavor::OpenAi | Flavor::Azure if ingress == Wire::Responses && info.responses => Wire::Responses,
            Flavor::OpenAi | Flavor::Azure => Wire::OpenAi,
        };
        Self { ingress, egress }
    }

    /// The request passes through in its own dialect.
    pub(crate) fn is_passthrough(self) -> bool {
        self.ingress == self.egress
    }
}

/// One provider prefix of `litellm_params.model`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ProviderInfo {
    /// The LiteLLM prefix (`groq` in `groq/llama-3.1-8b-instant`).
    pub(crate) name: &'static str,
    pub(crate) flavor: Flavor,
    /// The base URL used when the deployment has no `api_base`; `None` means `api_base` is
    /// required (Azure, self-hosted servers).
    pub(crate) default_base: Option<&'static str>,
    /// Serves OpenAI's Responses API (`/responses`): a Responses request passes through; to any
    /// other provider it is translated to chat completions.
    pub(crate) responses: bool,
}

const fn openai(name: &'static str, default_base: Option<&'static str>) -> ProviderInfo {
    ProviderInfo { name, flavor: Flavor::OpenAi, default_base, responses: false }
}

/// Every provider served natively, in the order of [`SUPPORTED_PROVIDERS`].
const CATALOG: &[ProviderInfo] = &[
    ProviderInfo {
        name: "openai",
        flavor: Flavor::OpenAi,
        default_base: Some("https://api.openai.com/v1"),
        responses: true,
    },
    openai("text-completion-openai", Some("https://api.openai.com/v1")),
    openai("custom_openai", None),
    openai("openai_like", None),
    ProviderInfo { name: "azure", flavor: Flavor::Azure, default_base: None, responses: true },
    openai("hosted_vllm", None),
    openai("vllm", None),
    openai("ollama", Some("http://localhost:11434/v1")),
    openai("ollama_chat", Some("http://localhost:11434/v1")),
    openai("lm_studio", Some("http://localhost:1234/v1")),
    openai("llamafile", Some("http://127.0.0.1:8080/v1")),
    openai("litellm_proxy", None),
    openai("groq", Some("https://api.groq.com/openai/v1")),
    openai("together_ai", Some("https://api.together.xyz/v1")),
    openai("openrouter", Some("https://openrouter.ai/api/v1")),
    openai("deepseek", Some("https://api.deepseek.com/beta")),
    openai("mistral", Some("https://api.mistral.ai/v1")),
    openai("codestral", Some("https://codestral.mistral.ai/v1")),
    openai("fireworks_ai", Some("https://api.fireworks.ai/inference/v1")),
    openai("perplexity", Some("https://api.perplexity.ai")),
    openai("xai", Some("https://api.x.ai/v1")),
    openai("deepinfra", Some("https://api.deepinfra.com/v1/openai")),
    openai("nvidia_nim", Some("https://integrate.api.nvidia.com/v1")),
    openai("cerebras", Some("https://api.cerebras.ai/v1")),
    openai("sambanova", Some("https://api.sambanova.ai/v1")),
    openai("github", Some("https://models.inference.ai.azure.com")),
    ProviderInfo {
        name: "anthropic",
        flavor: Flavor::Anthropic,
        default_base: Some("https://api.anthropic.com"),
        responses: false,
    },
    ProviderInfo {
        name: "gemini",
        flavor: Flavor::Gemini,
        default_base: Some("https://generativelanguage.googleapis.com"),
        responses: false,
    },
    ProviderInfo {
        name: "cohere",
        flavor: Flavor::Cohere,
        default_base: Some("https://api.cohere.com"),
        responses: false,
    },
    ProviderInfo {
        name: "cohere_chat",
        flavor: Flavor::Cohere,
        default_base: Some("https://api.cohere.com"),
        responses: false,
    },
    // The regional endpoint is made from the deployment's region (`url.rs`).
    #[cfg(feature = "bedrock")]
    ProviderInfo { name: "bedrock", flavor: Flavor::Bedrock, default_base: None, responses: false },
    // The regional host is made from the deployment's `vertex_location` (`vertex/mod.rs`).
    #[cfg(feature = "vertex")]
    ProviderInfo { name: "vertex_ai", flavor: Flavor::Vertex, default_base: None, responses: false },
];

/// The `litellm_params.model` prefixes served natively by [`HttpProvider`](super::HttpProvider):
/// providers whose API is OpenAI's (chat completions, completions, embeddings), Azure OpenAI,
/// Anthropic (its Messages API), Google's Gemini API, Cohere's v2 API and, with the `bedrock`
/// feature, AWS Bedrock's Converse API (chat and embeddings translated through the chat hub) and,
/// with the `vertex` feature, Vertex AI (`vertex_ai`: Gemini models, and Claude through Anthropic's
/// Messages API). A model without a prefix is `openai`, as in LiteLLM.
///
/// `ollama` / `ollama_chat` are served through Ollama's OpenAI-compatible `/v1` API, and `vllm`
/// like `hosted_vllm` (an OpenAI-compatible vLLM server; LiteLLM's in-process vLLM does not
/// apply to a gateway). See `docs/providers.md` for the default base URLs.
pub const SUPPORTED_PROVIDERS: &[&str] = &[
    "openai",
    "text-completion-openai",
    "custom_openai",
    "openai_like",
    "azure",
    "hosted_vllm",
    "vllm",
    "ollama",
    "ollama_chat",
    "lm_studio",
    "llamafile",
    "litellm_proxy",
    "groq",
    "together_ai",
    "openrouter",
    "deepseek",
    "mistral",
    "codestral",
    "fireworks_ai",
    "perplexity",
    "xai",
    "deepinfra",
    "nvidia_nim",
    "cerebras",
    "sambanova",
    "github",
    "anthropic",
    "gemini",
    "cohere",
    "cohere_chat",
    #[cfg(feature = "bedrock")]
    "bedrock",
    #[cfg(feature = "vertex")]
    "vertex_ai",
];

/// Whether [`HttpProvider`](super::HttpProvider) serves the provider model `model`
/// (`litellm_params.model`): its prefix is one of [`SUPPORTED_PROVIDERS`], or it has none.
///
/// ```
/// use switchyard_services::provider::supports_provider;
///
/// assert!(supports_provider("gpt-4o"));
/// assert!(supports_provider("azure/gpt-4o-eu"));
/// assert!(supports_provider("groq/llama-3.1-8b-instant"));
/// assert!(supports_provider("openrouter/anthropic/claude-3.5-sonnet"));
/// assert!(supports_provider("anthropic/claude-sonnet-4-5"));
/// assert!(supports_provider("gemini/gemini-2.5-flash"));
/// assert!(!supports_provider("sagemaker/my-endpoint"));
/// ```
pub fn supports_provider(model: &str) -> bool {
    lookup(provider_of(model)).is_some()
}

/// The provider prefix of `model`, `openai` when it has none (as `Deployment::provider`).
pub(crate) fn provider_of(model: &str) -> &str {
    model.split_once('/').map_or("openai", |(p, _)| p)
}

/// The model as the provider knows it: without the provider prefix.
pub(crate) fn upstream_model(model: &str) -> &str {
    model.split_once('/').map_or(model, |(_, m)| m)
}

pub(crate) fn lookup(provider: &str) -> Option<&'static ProviderInfo> {
    CATALOG.iter().find(|p| p.name == provider)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_public_list_matches_the_catalog() {
        let names: Vec<&str> = CATALOG.iter().map(|p| p.name).collect();
        assert_eq!(names, SUPPORTED_PROVIDERS);
    }

    #[test]
    fn prefixes_are_split_once() {
        assert_eq!(provider_of("gpt-4o"), "openai");
        assert_eq!(upstream_model("gpt-4o"), "gpt-4o");
        assert_eq!(provider_of("openrouter/meta-llama/llama-3"), "openrouter");
        assert_eq!(upstream_model("openrouter/meta-llama/llama-3"), "meta-llama/llama-3");
    }
}
