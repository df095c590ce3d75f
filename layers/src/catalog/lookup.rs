//! LiteLLM's lookup rules (`litellm/utils.py`, `_get_model_info_helper` and
//! `_get_potential_model_names`), on a hash map keyed by the lowercased catalog key.

use std::borrow::Cow;

/// Provider prefixes of `litellm_params.model`: a first path segment that is one of these is the
/// provider, anything else is part of the model name (`meta-llama/Llama-3-8B` has none).
const PROVIDERS: &[&str] = &[
    "openai",
    "text-completion-openai",
    "custom_openai",
    "openai_like",
    "azure",
    "azure_text",
    "azure_ai",
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
    "text-completion-codestral",
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
    "vertex_ai",
    "vertex_ai_beta",
    "bedrock",
    "bedrock_converse",
    "cohere",
    "cohere_chat",
];

/// The provider of `model` and the rest, when its first segment is a provider.
pub(super) fn split_provider(model: &str) -> Option<(&str, &str)> {
    let (prefix, rest) = model.split_once('/')?;
    PROVIDERS.iter().any(|p| p.eq_ignore_ascii_case(prefix)).then_some((prefix, rest))
}

/// `_check_provider_match`: may an entry of `entry` (its `litellm_provider`) describe a model
/// addressed through `provider`?
pub(super) fn provider_matches(provider: &str, entry: &str) -> bool {
    entry == provider
        || (provider == "vertex_ai" && entry.starts_with("vertex_ai"))
        || (provider == "fireworks_ai" && entry.starts_with("fireworks_ai"))
        || (provider.starts_with("bedrock") && entry.starts_with("bedrock"))
        || provider == "litellm_proxy"
        || (provider == "azure_ai" && (entry == "azure" || entry == "openai"))
        || provider == "github"
}

/// The names to try for `model`, most specific first, each with the provider an entry must
/// match (`None`: any). `get_model_info`'s order:
///
/// 1. the model as given (`openrouter/anthropic/claude-3.5-sonnet`, `azure/gpt-4o`);
/// 2. the model without its provider prefix (`anthropic/claude-sonnet-4-5` → `claude-sonnet-4-5`),
///    for Bedrock also without routing prefixes (`bedrock/converse/…`);
/// 3. the provider and the stripped model (`gemini/gemini-1.5-flash-001` → `gemini/gemini-1.5-flash`);
/// 4. the stripped model (`ft:gpt-4o-mini:org:suffix:id` → `ft:gpt-4o-mini`);
/// 5. the provider prefixed once more (`perplexity/perplexity/…`, where the provider's own ids
///    repeat its name).
///
/// A model without a provider prefix is looked up as given, then stripped, whatever provider
/// its entry names (LiteLLM infers the provider from the entry itself).
pub(super) fn candidates(model: &str) -> Vec<(Cow<'_, str>, Option<&str>)> {
    let Some((provider, rest)) = split_provider(model) else {
        let stripped = strip(model, None);
        let mut out = vec![(Cow::Borrowed(model), None)];
        if stripped != model {
            out.push((Cow::Owned(stripped), None));
        }
        return out;
    };
    let provider_lower = provider.to_ascii_lowercase();
    let provider_lower = match provider_lower.as_str() {
        "vertex_ai_beta" => "vertex_ai",
        _ => PROVIDERS.iter().find(|p| **p == provider_lower).copied().unwrap_or("openai"),
    };
    let split = if provider_lower.starts_with("bedrock") { strip_bedrock_routing(rest) } else { rest };
    let stripped = strip(split, Some(provider_lower));
    let p = Some(provider_lower);
    vec![
        (Cow::Borrowed(model), p),
        (Cow::Borrowed(split), p),
        (Cow::Owned(format!("{provider_lower}/{stripped}")), p),
        (Cow::Owned(stripped), p),
        (Cow::Owned(format!("{provider_lower}/{model}")), p),
    ]
}

/// `_strip_model_name`: Bedrock's base model, Vertex AI's and Gemini's version suffix, or an
/// OpenAI fine-tune's organisation and id.
fn strip(model: &str, provider: Option<&str>) -> String {
    match provider {
        Some("bedrock" | "bedrock_converse") => bedrock_base_model(model).to_owned(),
        Some("vertex_ai" | "gemini") => strip_version(model).to_owned(),
        _ if model.contains("ft:") => strip_finetune(model).to_owned(),
        _ => model.to_owned(),
    }
}

/// `-\d+$` removed (`gemini-1.5-pro-002` → `gemini-1.5-pro`).
fn strip_version(model: &str) -> &str {
    let digits = model.bytes().rev().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return model;
    }
    let head = &model[..model.len() - digits];
    head.strip_suffix('-').unwrap_or(model)
}

/// `(:[^:]+){3}$` removed (`ft:gpt-3.5-turbo:my-org:custom_suffix:id` → `ft:gpt-3.5-turbo`).
fn strip_finetune(model: &str) -> &str {
    let mut end = model.len();
    for _ in 0..3 {
        let Some(colon) = model[..end].rfind(':') else { return model };
        if colon + 1 == end {
            return model;
        }
        end = colon;
    }
    &model[..end]
}

/// `strip_bedrock_routing_prefix`.
fn strip_bedrock_routing(mut model: &str) -> &str {
    for prefix in ["bedrock/", "converse/", "invoke/", "openai/", "nova-2/", "nova/"] {
        if let Some(rest) = model.strip_prefix(prefix) {
            model = rest;
        }
    }
    model
}

/// `get_bedrock_base_model`: without routing prefixes, an ARN's path, a throughput or context
/// suffix, a cross-region inference prefix (`us.`) or a region path (`us-east-1/`).
fn bedrock_base_model(model: &str) -> &str {
    let mut model = strip_bedrock_routing(model);
    if model.to_ascii_lowercase().contains("arn") {
        model = model.rsplit('/').next().unwrap_or(model);
    }
    model = strip_throughput(model);
    if let Some(head) = model.strip_suffix(']')
        && let Some(open) = head.rfind('[')
        && head[open + 1..].bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    {
        model = &head[..open];
    }
    if let Some((region, rest)) = model.split_once('.')
        && ["global", "us", "eu", "apac", "jp", "au", "us-gov"].contains(&region)
    {
        return rest;
    }
    if let Some((region, rest)) = model.split_once('/')
        && is_aws_region(region)
    {
        return rest;
    }
    model
}

/// `(:\d+):\d+k$` → `$1` (`…-v2:0:51k` → `…-v2:0`).
fn strip_throughput(model: &str) -> &str {
    let Some(head) = model.strip_suffix('k') else { return model };
    let Some((head, tier)) = head.rsplit_once(':') else { return model };
    let Some((_, version)) = head.rsplit_once(':') else { return model };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if digits(tier) && digits(version) { head } else { model }
}

/// `us-east-1`, `eu-central-2`, `us-gov-west-1`, ...
fn is_aws_region(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    let (Some(first), Some(last)) = (parts.first(), parts.last()) else { return false };
    parts.len() >= 3
        && first.len() == 2
        && first.bytes().all(|b| b.is_ascii_lowercase())
        && last.bytes().all(|b| b.is_ascii_digit())
        && parts[1..parts.len() - 1].iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_as_litellm_does() {
        assert_eq!(strip_version("gemini-1.5-pro-002"), "gemini-1.5-pro");
        assert_eq!(strip_version("gemini-1.5-pro"), "gemini-1.5-pro");
        assert_eq!(strip_version("model002"), "model002");
        assert_eq!(strip_finetune("ft:gpt-3.5-turbo:my-org:custom_suffix:id"), "ft:gpt-3.5-turbo");
        assert_eq!(strip_finetune("ft:gpt-3.5-turbo:org"), "ft:gpt-3.5-turbo:org");
        assert_eq!(bedrock_base_model("us.meta.llama3-2-11b-instruct-v1:0"), "meta.llama3-2-11b-instruct-v1:0");
        assert_eq!(
            bedrock_base_model("anthropic.claude-3-5-sonnet-20241022-v2:0:51k"),
            "anthropic.claude-3-5-sonnet-20241022-v2:0"
        );
        assert_eq!(bedrock_base_model("us.anthropic.claude-opus-4-6-v1[1m]"), "anthropic.claude-opus-4-6-v1");
        assert_eq!(bedrock_base_model("converse/us-east-1/anthropic.claude-v2"), "anthropic.claude-v2");
        assert_eq!(
            bedrock_base_model("arn:aws:bedrock:us-east-1:123:foundation-model/anthropic.claude-v2"),
            "anthropic.claude-v2"
        );
        assert!(is_aws_region("us-gov-west-1") && is_aws_region("eu-central-2") && !is_aws_region("anthropic"));
    }

    #[test]
    fn a_prefix_is_a_provider_only_when_it_is_one() {
        assert_eq!(split_provider("anthropic/claude-sonnet-4-5"), Some(("anthropic", "claude-sonnet-4-5")));
        assert_eq!(split_provider("meta-llama/Llama-3-8B"), None);
        assert_eq!(split_provider("gpt-4o"), None);
    }

    #[test]
    fn providers_match_as_in_check_provider_match() {
        assert!(provider_matches("vertex_ai", "vertex_ai-anthropic_models"));
        assert!(provider_matches("bedrock", "bedrock_converse"));
        assert!(provider_matches("azure_ai", "openai"));
        assert!(!provider_matches("azure", "openai"));
        assert!(!provider_matches("openai", "anthropic"));
    }
}
