//! OpenTelemetry GenAI semantic-convention names for routing spans, shared by the `attempt` span
//! (the select layer) and the facade's `call` span, so that both name operations and providers
//! the same way.
//!
//! ```
//! use switchyard_layers::{ctx::Endpoint, semconv};
//!
//! assert_eq!(semconv::operation(Endpoint::Embedding), "embeddings");
//! assert_eq!(semconv::provider_and_model("azure/gpt-4o-eu"), ("azure.ai.openai", "gpt-4o-eu"));
//! ```

use crate::ctx::Endpoint;

/// `gen_ai.operation.name` of an endpoint.
pub fn operation(endpoint: Endpoint) -> &'static str {
    match endpoint {
        Endpoint::Completion => "text_completion",
        Endpoint::Embedding => "embeddings",
        _ => "chat",
    }
}

/// `gen_ai.provider.name` of a LiteLLM-style model (`azure/gpt-4o-eu`: `azure.ai.openai`) under
/// the GenAI conventions' names (other prefixes as they are; none means `openai`), and the model
/// without its prefix.
pub fn provider_and_model(model: &str) -> (&str, &str) {
    let (prefix, name) = model.split_once('/').unwrap_or(("openai", model));
    let provider = match prefix {
        "azure" => "azure.ai.openai",
        "azure_ai" => "azure.ai.inference",
        "bedrock" => "aws.bedrock",
        "vertex_ai" => "gcp.vertex_ai",
        "gemini" => "gcp.gemini",
        "mistral" => "mistral_ai",
        "xai" => "x_ai",
        other => other,
    };
    (provider, name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn providers_follow_the_genai_names() {
        assert_eq!(provider_and_model("azure/gpt-4o-eu"), ("azure.ai.openai", "gpt-4o-eu"));
        assert_eq!(provider_and_model("openai/gpt-4o"), ("openai", "gpt-4o"));
        assert_eq!(provider_and_model("gpt-4o"), ("openai", "gpt-4o"));
        assert_eq!(provider_and_model("hosted_vllm/meta/llama-3"), ("hosted_vllm", "meta/llama-3"));
    }
}
