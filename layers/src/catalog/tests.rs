use std::collections::HashSet;

use super::{data, *};

#[test]
fn every_line_parses_and_no_key_repeats() {
    let models = data::parse(data::TEXT).unwrap_or_else(|e| panic!("{e}"));
    let lines = data::TEXT.lines().filter(|l| !l.starts_with('#')).count();
    assert_eq!(models.len(), lines - 1, "one model per line after the header");
    assert!(models.len() > 1_000, "{} models", models.len());
    let mut seen = HashSet::new();
    for m in &models {
        assert!(seen.insert(m.key.to_ascii_lowercase()), "`{}` repeats (ignoring case)", m.key);
        assert!(m.key.is_ascii(), "`{}`", m.key);
    }
    let keys: Vec<&str> = models.iter().map(|m| m.key).collect();
    let mut sorted = keys.clone();
    sorted.sort_by_key(|k| k.to_ascii_lowercase());
    assert_eq!(keys, sorted, "sorted by key");
    assert_eq!(models.len(), super::models().len());
}

#[test]
fn the_header_names_the_source_and_its_version() {
    assert!(source().starts_with("Switchyard model catalog. Source: litellm 1.100.0 wheel"), "{}", source());
    assert!(source().contains("sha256 "));
}

#[test]
fn a_broken_line_is_reported_with_its_number() {
    let text = concat!("# src\n", "model\tprovider\tmode\tmax_input_tokens\tmax_output_tokens\tinput_cost_per_token\t");
    assert!(data::parse(text).is_err());
    let header = data::HEADER;
    let bad: &'static str =
        Box::leak(format!("# s\n{header}\nm\topenai\tchat\tx\t\t\t\t\t\t-----------\n").into_boxed_str());
    let err = data::parse(bad).unwrap_err();
    assert_eq!(err.line, 3);
    assert!(err.problem.contains("max_input_tokens"), "{err}");
    let bad: &'static str = Box::leak(format!("# s\n{header}\nm\topenai\tchat\t\t\t\t\t\t\t--x\n").into_boxed_str());
    assert!(data::parse(bad).is_err());
}

#[test]
fn an_exact_key_matches() {
    let f = lookup("gpt-4o").expect("gpt-4o");
    assert_eq!(f.key, "gpt-4o");
    assert_eq!((f.max_input_tokens, f.max_output_tokens), (Some(128_000), Some(16_384)));
    assert_eq!((f.input_cost_per_token, f.output_cost_per_token), (Some(2.5e-6), Some(1e-5)));
    assert_eq!(f.cache_read_input_token_cost, Some(1.25e-6));
    assert_eq!(f.capabilities.vision, Some(true));
    assert_eq!(f.capabilities.function_calling, Some(true));
    assert_eq!(f.mode, ModelMode::Chat);
    assert_eq!(lookup("azure/gpt-4o").map(|f| f.key), Some("azure/gpt-4o"));
    assert_eq!(
        lookup("openrouter/anthropic/claude-3.5-sonnet").map(|f| f.key),
        Some("openrouter/anthropic/claude-3.5-sonnet")
    );
    assert_eq!(lookup("text-embedding-3-small").map(|f| f.mode), Some(ModelMode::Embedding));
}

#[test]
fn a_provider_prefix_is_stripped_when_the_entry_is_that_providers() {
    let f = lookup("anthropic/claude-sonnet-4-5").expect("claude");
    assert_eq!((f.key, f.provider), ("claude-sonnet-4-5", "anthropic"));
    assert_eq!(f.max_output_tokens, Some(64_000));
    assert_eq!(f.cache_creation_input_token_cost, Some(3.75e-6));
    assert_eq!(lookup("openai/gpt-4o").map(|f| f.key), Some("gpt-4o"));
    let bedrock = lookup("bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0").expect("bedrock");
    assert_eq!(bedrock.key, "anthropic.claude-3-5-sonnet-20240620-v1:0");
    assert_eq!(
        lookup("bedrock/converse/anthropic.claude-3-5-sonnet-20240620-v1:0").map(|f| f.key),
        Some("anthropic.claude-3-5-sonnet-20240620-v1:0")
    );
    // Vertex AI's entries belong to `vertex_ai-*` sub-providers.
    assert_eq!(lookup("vertex_ai/gemini-2.5-pro").map(|f| f.provider), Some("vertex_ai-language-models"));
    // The same name under another provider is not this model: Anthropic's entry is no
    // OpenAI model, and OpenAI's `gpt-4o` says nothing about an Azure deployment.
    assert!(lookup("openai/claude-sonnet-4-5").is_none());
    assert!(lookup("groq/gpt-4o").is_none());
}

#[test]
fn a_version_or_fine_tune_suffix_is_stripped() {
    // `_strip_model_name`: Gemini's `-NNN` version, a fine-tune's `:org:suffix:id`.
    let gemini = lookup("gemini/gemini-2.0-flash-009").expect("gemini");
    assert_eq!(gemini.key, "gemini/gemini-2.0-flash");
    let ft = lookup("ft:gpt-4o-mini-2024-07-18:my-org:custom:abc123").expect("fine-tune");
    assert_eq!(ft.key, "ft:gpt-4o-mini-2024-07-18");
    // A Bedrock cross-region profile is priced as its base model.
    let profile = lookup("bedrock/xx.anthropic.claude-3-5-sonnet-20240620-v1:0");
    assert!(profile.is_none(), "`xx` is no inference region");
}

#[test]
fn case_does_not_matter() {
    assert_eq!(lookup("Anthropic/Claude-Sonnet-4-5").map(|f| f.key), Some("claude-sonnet-4-5"));
    assert_eq!(lookup("GPT-4O").map(|f| f.key), Some("gpt-4o"));
}

#[test]
fn unknown_models_have_no_entry() {
    for model in ["", "my-model", "openai/my-finetune", "azure/gpt-4o-eu", "hosted_vllm/llama", "gpt-4o/extra", "/"] {
        assert!(lookup(model).is_none(), "{model}");
    }
}

#[test]
fn a_base_model_is_read_with_the_deployments_provider() {
    assert_eq!(lookup_deployment("azure/prod-eu", Some("gpt-4o")).map(|f| f.key), Some("azure/gpt-4o"));
    assert_eq!(lookup_deployment("azure/prod-eu", Some("azure/gpt-4o-mini")).map(|f| f.key), Some("azure/gpt-4o-mini"));
    assert_eq!(lookup_deployment("azure/gpt-4o", None).map(|f| f.key), Some("azure/gpt-4o"));
    assert_eq!(lookup_deployment("azure/gpt-4o", Some(" ")).map(|f| f.key), Some("azure/gpt-4o"));
    // A base model is authoritative: no second guess from the deployment's model.
    assert!(lookup_deployment("azure/gpt-4o", Some("not-a-model")).is_none());
}

// Ported from LiteLLM's tests of `get_model_info` (tests/test_litellm/test_utils.py and
// tests/local_testing/test_get_model_info.py), where the cases apply to the catalog's subset.
#[test]
fn litellm_get_model_info_cases() {
    // test_get_model_info_simple_model_name / _custom_llm_with_model_name
    assert!(lookup("gpt-3.5-turbo").is_some());
    assert!(lookup("anthropic/claude-3-opus-20240229").is_some());
    // test_get_model_info_shows_correct_supports_vision
    assert_eq!(lookup("gemini/gemini-2.0-flash").map(|f| f.capabilities.vision), Some(Some(true)));
    // test_get_model_info_gemini: a Gemini model's window
    assert_eq!(lookup("gemini/gemini-2.5-pro").and_then(|f| f.max_input_tokens), Some(1_048_576));
    // test_get_model_info_bedrock_region / cross-region inference profiles
    assert_eq!(
        lookup("bedrock/us.anthropic.claude-3-5-sonnet-20240620-v1:0").and_then(|f| f.input_cost_per_token),
        lookup("bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0").and_then(|f| f.input_cost_per_token)
    );
    // test_get_model_info_finetuned_models
    assert!(lookup("ft:gpt-3.5-turbo:my-org:custom_suffix:id").is_some());
}
