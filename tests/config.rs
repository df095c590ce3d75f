//! The LiteLLM config reader: what a LiteLLM `config.yaml` loads into, and every rule that
//! rejects one, with the path the error names.

use std::{collections::HashMap, time::Duration};

use switchyard::config::{Alias, Config, ConfigError, ConfigErrorKind, EdgeSettings};
use switchyard::layers::{
    Deployment, DeploymentId,
    select::{RoutingGroup, RoutingStrategy},
};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/litellm.yaml");

/// The environment the fixture expects.
fn fixture_env(name: &str) -> Option<String> {
    let vars: HashMap<&str, &str> = [
        ("AZURE_EU_KEY", "sk-azure-SECRET-eu"),
        ("OPENAI_API_KEY", "sk-openai-SECRET-1"),
        ("ANTHROPIC_API_KEY", "sk-ant-SECRET-2"),
        ("AWS_SECRET", "aws-SECRET-access"),
        ("REDIS_HOST", "cache.internal"),
        ("REDIS_PORT", "6379"),
        ("REDIS_PASSWORD", "redis-SECRET-pw"),
        ("LITELLM_MASTER_KEY", "sk-master-SECRET-key"),
    ]
    .into_iter()
    .collect();
    vars.get(name).map(|v| (*v).to_owned())
}

fn fixture() -> Config {
    let yaml = std::fs::read_to_string(FIXTURE).expect("fixture is readable");
    Config::from_yaml_str_with_env(&yaml, &fixture_env).expect("fixture loads")
}

fn load(yaml: &str) -> Result<Config, ConfigError> {
    Config::from_yaml_str_with_env(yaml, &|_| None)
}

fn load_err(yaml: &str) -> ConfigError {
    match load(yaml) {
        Ok(c) => panic!("expected an error, loaded {c:?}"),
        Err(e) => e,
    }
}

#[track_caller]
fn assert_err(yaml: &str, kind: ConfigErrorKind, path: &str, fragment: &str) {
    let err = load_err(yaml);
    assert_eq!(err.kind(), kind, "{err}");
    assert_eq!(err.path(), path, "{err}");
    assert!(err.to_string().contains(fragment), "`{err}` does not contain `{fragment}`");
    assert!(err.to_string().starts_with(path), "{err}");
}

/// One deployment per entry: `model_list: [{model_name: <name>, litellm_params: {model: <model>}}]`.
fn models(entries: &[(&str, &str)]) -> String {
    let mut yaml = String::from("model_list:\n");
    for (name, model) in entries {
        yaml.push_str(&format!("  - model_name: \"{name}\"\n    litellm_params: {{ model: \"{model}\" }}\n"));
    }
    yaml
}

// ---- the full config ---------------------------------------------------------------------

#[test]
fn full_litellm_config_loads_deployments_in_order_with_their_params() {
    let c = fixture();
    let groups: Vec<&str> = c.deployments.iter().map(|d| &*d.group).collect();
    assert_eq!(groups, ["gpt-4o", "gpt-4o", "gpt-4o-mini", "claude-sonnet", "openai/*"]);

    let eu = &c.deployments[0];
    assert_eq!(eu.id, DeploymentId::from("azure-eu-1"));
    assert_eq!(&*eu.model, "azure/gpt-4o-eu");
    assert_eq!(eu.provider(), "azure");
    assert_eq!(eu.api_base.as_deref(), Some("https://eu.example.openai.azure.com"));
    assert_eq!(eu.api_key.as_ref().map(|k| k.expose()), Some("sk-azure-SECRET-eu"));
    assert_eq!(eu.api_version.as_deref(), Some("2024-10-21"));
    assert_eq!((eu.rpm, eu.tpm, eu.weight), (Some(600), Some(200_000), Some(3.0)));
    assert_eq!(eu.region.as_deref(), Some("eu"));
    assert_eq!(eu.tags, ["eu", "paid"]);
    assert_eq!(eu.timeout, Some(Duration::from_secs(30)));
    assert_eq!(eu.stream_timeout, Some(Duration::from_secs(10)));
    assert_eq!((eu.max_input_tokens, eu.max_output_tokens), (Some(128_000), Some(16_384)));
    assert_eq!(eu.capabilities.vision, Some(true));
    assert_eq!(eu.capabilities.function_calling, Some(true));
    assert_eq!(eu.capabilities.reasoning, None);
    assert!(eu.params.is_empty(), "{:?}", eu.params.keys());

    let oa = &c.deployments[1];
    assert_eq!(oa.id.as_str().len(), 32, "derived ids are 32 hex digits");
    assert_eq!((oa.rpm, oa.weight, oa.order), (Some(300), Some(1.0), Some(2)));
    assert_eq!(oa.max_parallel_requests, Some(20));
    assert_eq!(oa.cooldown_time, Some(Duration::from_secs(30)));
    assert_eq!(oa.num_retries, Some(1));
    assert_eq!(oa.params.get("temperature"), Some(&serde_json::json!(0.2)));
    assert_eq!(oa.params.get("aws_secret_access_key"), Some(&serde_json::json!("aws-SECRET-access")));

    let mini = &c.deployments[2];
    assert_eq!((mini.rpm, mini.tpm), (Some(10_000), Some(1_000_000)));
    assert_eq!(mini.input_cost_per_token, Some(0.000_000_15));
    assert_eq!(mini.output_cost_per_token, Some(0.000_000_6));

    let claude = &c.deployments[3];
    assert!(!claude.params.contains_key("max_budget"), "budgets are not provider parameters");
}

/// `model_info.base_model` names the catalog entry of an Azure deployment; what `model_info`
/// declares wins over the catalog, the rest comes from it.
#[test]
fn base_model_picks_the_catalog_entry_and_model_info_wins() {
    let c = fixture();
    let eu = &c.deployments[0];
    assert_eq!(eu.base_model.as_deref(), Some("azure/gpt-4o"));
    assert_eq!(eu.catalog().map(|f| f.key), Some("azure/gpt-4o"));
    assert_eq!((eu.input_cost_per_token, eu.output_cost_per_token), (Some(2.5e-6), Some(1e-5)), "from the catalog");
    let c = load(
        "model_list:\n  - model_name: gpt-4o\n    litellm_params: { model: openai/gpt-4o }\n    \
         model_info: { max_output_tokens: 1000, supports_vision: false }\n",
    )
    .expect("loads");
    let gpt = &c.deployments[0];
    assert_eq!((gpt.max_input_tokens, gpt.max_output_tokens), (Some(128_000), Some(1_000)));
    assert_eq!((gpt.capabilities.vision, gpt.capabilities.function_calling), (Some(false), Some(true)));
}

#[test]
fn full_litellm_config_loads_strategy_aliases_fallbacks_and_settings() {
    let c = fixture();
    assert_eq!(c.routing_strategy, RoutingStrategy::UsageBased);
    assert_eq!(c.strategy_args.lowest_latency_buffer, 0.5);
    assert_eq!(c.latency.sample_ttl, Duration::from_secs(120));
    assert_eq!(c.latency.max_samples, 20);
    assert_eq!(
        c.routing_groups.groups(),
        [RoutingGroup::new("cheap", vec!["gpt-4o-mini".to_owned()], RoutingStrategy::CostBased)]
    );
    assert_eq!(c.aliases, [Alias::new("gpt-4", "gpt-4o", false), Alias::new("internal-mini", "gpt-4o-mini", true)]);

    let f = &c.fallbacks;
    assert_eq!(f.general_for("gpt-4o"), ["claude-sonnet".to_owned(), "gpt-4o-mini".to_owned()]);
    assert_eq!(f.general_for("claude-sonnet"), ["gpt-4o".to_owned()]);
    assert_eq!(f.general_for("anything-else"), ["gpt-4o-mini".to_owned()]);
    assert_eq!(f.context_window.get("gpt-4o-mini"), Some(&vec!["gpt-4o".to_owned()]));
    assert_eq!(f.content_policy.get("claude-sonnet"), Some(&vec!["gpt-4o".to_owned()]));
    assert_eq!(f.max_fallbacks, 3);

    assert_eq!(c.retry.num_retries, 3);
    assert_eq!(c.timeout, Some(Duration::from_secs(60)));
    assert_eq!(c.stream_timeout, None);
    assert_eq!(c.retry.retry_after, Duration::from_secs(1));
    assert_eq!(c.cooldown.allowed_fails, Some(2));
    assert_eq!(c.cooldown.cooldown_time, Duration::from_secs(10));
    assert!(c.precall.context_window && c.precall.region && c.precall.params, "enable_pre_call_checks");
    assert!(!c.precall.tags && !c.cooldown.disabled);
    let afp = c.cooldown.allowed_fails_policy.as_ref().expect("allowed_fails_policy");
    assert_eq!(afp.rate_limit, Some(5), "RateLimitErrorAllowedFails");
    let rp = c.retry.retry_policy.as_ref().expect("retry_policy");
    assert_eq!(
        (rp.rate_limit, rp.authentication),
        (Some(4), Some(0)),
        "RateLimitErrorRetries, AuthenticationErrorRetries"
    );
    let redis = c.redis.as_ref().expect("redis");
    assert_eq!(redis.host.as_deref(), Some("cache.internal"));
    assert_eq!(redis.port, Some(6380), "environment_variables wins over the process environment");
    assert_eq!(redis.password.as_ref().map(|p| p.expose()), Some("redis-SECRET-pw"));
    assert_eq!(c.master_key.as_ref().map(|k| k.expose()), Some("sk-master-SECRET-key"));
    assert_eq!(c.seed, Some(42));
}

#[test]
fn config_debug_never_shows_an_api_key_a_master_key_or_a_password() {
    let c = fixture();
    let debug = format!("{c:?}");
    assert!(!debug.contains("SECRET"), "{debug}");
    assert!(debug.contains("azure-eu-1") && debug.contains("temperature"), "Debug still shows the rest");
    let debug = format!(
        "{:?}",
        Config::from_yaml_str_with_env("router_settings: { redis_url: 'redis://:hunter2@cache:6379/0' }", &|_| None,)
            .expect("loads")
    );
    assert!(!debug.contains("hunter2"), "{debug}");
}

#[test]
fn from_path_reads_a_file_and_an_unreadable_file_is_an_io_error() {
    // The fixture's references are not all set in the test process, so the load fails on the
    // first one, after reading the file.
    let err = Config::from_path(FIXTURE).expect_err("AZURE_EU_KEY is not set in tests");
    assert_eq!(err.kind(), ConfigErrorKind::Env, "{err}");
    let err = Config::from_path("/nonexistent/config.yaml").expect_err("no file");
    assert_eq!(err.kind(), ConfigErrorKind::Io);
    assert!(err.to_string().contains("/nonexistent/config.yaml"), "{err}");
    assert!(std::error::Error::source(&err).is_some());
}

// ---- ids (census §3.1 row 10) ------------------------------------------------------------

#[test]
fn same_group_and_params_derive_the_same_id_and_different_params_different_ids() {
    let yaml = |rpm: u32| {
        format!(
            "model_list:\n  - model_name: gpt-4o\n    litellm_params: {{ model: openai/gpt-4o, api_key: k, rpm: {rpm} }}\n"
        )
    };
    let a = load(&yaml(10)).expect("loads");
    let b = load(&yaml(10)).expect("loads");
    let c = load(&yaml(20)).expect("loads");
    assert_eq!(a.deployments[0].id, b.deployments[0].id);
    assert_ne!(a.deployments[0].id, c.deployments[0].id);
    let built = Deployment::builder("gpt-4o", "openai/gpt-4o")
        .api_key(switchyard::layers::ApiKey::new("k"))
        .rpm(10)
        .build()
        .expect("builds");
    assert_eq!(a.deployments[0].id, built.id, "the config derives ids as the builder does");
}

#[test]
fn two_identical_entries_are_rejected_naming_both_indexes() {
    let yaml = models(&[("a", "openai/x"), ("b", "openai/y"), ("a", "openai/x")]);
    assert_err(&yaml, ConfigErrorKind::Invalid, "model_list[2]", "model_list[0]");
}

#[test]
fn an_explicit_id_used_twice_is_rejected_naming_both_indexes() {
    let yaml = "model_list:
  - { model_name: a, litellm_params: { model: openai/x }, model_info: { id: dup } }
  - { model_name: b, litellm_params: { model: openai/y }, model_info: { id: dup } }";
    assert_err(yaml, ConfigErrorKind::Invalid, "model_list[1]", "deployment id `dup` is also the id of model_list[0]");
}

#[test]
fn a_numeric_id_is_read_as_a_string() {
    let c = load("model_list: [{ model_name: a, litellm_params: { model: openai/x }, model_info: { id: 7 } }]")
        .expect("loads");
    assert_eq!(c.deployments[0].id.as_str(), "7");
}

// ---- model_list rules --------------------------------------------------------------------

#[test]
fn an_empty_model_name_is_rejected() {
    let yaml = "model_list: [{ model_name: '', litellm_params: { model: openai/x } }]";
    assert_err(yaml, ConfigErrorKind::Invalid, "model_list[0].model_name", "must not be empty");
}

#[test]
fn a_missing_model_name_is_rejected() {
    let yaml = "model_list: [{ litellm_params: { model: openai/x } }]";
    assert_err(yaml, ConfigErrorKind::Invalid, "model_list[0].model_name", "is required");
}

#[test]
fn a_missing_provider_model_is_rejected() {
    let yaml = "model_list:\n  - { model_name: a, litellm_params: { model: openai/x } }\n  - { model_name: b, litellm_params: { api_key: k } }";
    assert_err(yaml, ConfigErrorKind::Invalid, "model_list[1].litellm_params.model", "is required");
    let yaml = "model_list: [{ model_name: b }]";
    assert_err(yaml, ConfigErrorKind::Invalid, "model_list[0].litellm_params", "is required");
}

#[test]
fn negative_limits_are_rejected_with_their_path() {
    let entry = |params: &str| {
        format!(
            "model_list:\n  - {{ model_name: a, litellm_params: {{ model: openai/x }} }}\n  - {{ model_name: b, litellm_params: {{ model: openai/y }} }}\n  - {{ model_name: c, litellm_params: {{ model: openai/z, {params} }} }}\n"
        )
    };
    for key in [
        "rpm",
        "tpm",
        "max_parallel_requests",
        "weight",
        "order",
        "input_cost_per_token",
        "output_cost_per_token",
        "timeout",
        "stream_timeout",
        "cooldown_time",
        "num_retries",
    ] {
        let yaml = entry(&format!("{key}: -5"));
        assert_err(
            &yaml,
            ConfigErrorKind::Invalid,
            &format!("model_list[2].litellm_params.{key}"),
            "must be >= 0, got -5",
        );
    }
    let err = load_err(&entry("rpm: -5"));
    assert_eq!(err.to_string(), "model_list[2].litellm_params.rpm: must be >= 0, got -5");
    assert_err(
        "model_list: [{ model_name: a, litellm_params: { model: openai/x }, tpm: -1 }]",
        ConfigErrorKind::Invalid,
        "model_list[0].tpm",
        "must be >= 0",
    );
    for key in
        ["num_retries", "timeout", "stream_timeout", "cooldown_time", "retry_after", "max_fallbacks", "allowed_fails"]
    {
        let yaml = format!("router_settings: {{ {key}: -1 }}");
        assert_err(&yaml, ConfigErrorKind::Invalid, &format!("router_settings.{key}"), "must be >= 0, got -1");
    }
    assert_err(
        "litellm_settings: { max_fallbacks: -2 }",
        ConfigErrorKind::Invalid,
        "litellm_settings.max_fallbacks",
        "got -2",
    );
}

#[test]
fn fractional_counts_and_zero_timeouts_are_rejected() {
    let yaml = "model_list: [{ model_name: a, litellm_params: { model: openai/x, rpm: 2.5 } }]";
    assert_err(yaml, ConfigErrorKind::Invalid, "model_list[0].litellm_params.rpm", "whole number");
    assert_err("router_settings: { timeout: 0 }", ConfigErrorKind::Invalid, "router_settings.timeout", "must be > 0");
}

#[test]
fn quoted_numbers_are_read_as_numbers_and_words_are_type_errors() {
    let c = load("model_list: [{ model_name: a, litellm_params: { model: openai/x, rpm: '100', weight: ' 2.5 ' } }]")
        .expect("loads");
    assert_eq!((c.deployments[0].rpm, c.deployments[0].weight), (Some(100), Some(2.5)));
    let yaml = "model_list: [{ model_name: a, litellm_params: { model: openai/x, rpm: lots } }]";
    assert_err(yaml, ConfigErrorKind::Type, "model_list[0].litellm_params.rpm", "expected a number");
}

#[test]
fn a_value_of_the_wrong_type_is_a_type_error_naming_its_path() {
    let yaml = "model_list: [{ model_name: a, litellm_params: { model: openai/x, tags: 5 } }]";
    assert_err(yaml, ConfigErrorKind::Type, "model_list[0].litellm_params.tags", "invalid type");
    assert_err("model_list: 3", ConfigErrorKind::Type, "model_list", "invalid type");
    assert_err("- a\n- b", ConfigErrorKind::Type, "", "mapping");
}

#[test]
fn a_yaml_syntax_error_names_line_and_column() {
    let err = load_err("model_list:\n  - model_name: [a,\n");
    assert_eq!(err.kind(), ConfigErrorKind::Yaml);
    assert!(err.to_string().contains("line 2"), "{err}");
}

#[test]
fn top_level_rpm_tpm_are_copied_but_litellm_params_wins() {
    let c = load("model_list: [{ model_name: a, rpm: 5, tpm: 7, litellm_params: { model: openai/x, rpm: 9 } }]")
        .expect("loads");
    assert_eq!((c.deployments[0].rpm, c.deployments[0].tpm), (Some(9), Some(7)));
}

#[test]
fn region_and_region_name_are_both_accepted() {
    let c = load("model_list: [{ model_name: a, litellm_params: { model: openai/x, region: us } }]").expect("loads");
    assert_eq!(c.deployments[0].region.as_deref(), Some("us"));
    let yaml = "model_list: [{ model_name: a, litellm_params: { model: openai/x, region: us, region_name: eu } }]";
    assert_err(yaml, ConfigErrorKind::Invalid, "model_list[0].litellm_params.region_name", "differs");
}

// ---- os.environ ----------------------------------------------------------------------------

#[test]
fn os_environ_references_resolve_in_litellm_params_including_provider_params() {
    let yaml = "model_list:
  - model_name: a
    litellm_params:
      model: openai/x
      api_key: os.environ/KEY
      rpm: os.environ/RPM
      extra_headers: { X-Team: os.environ/TEAM }";
    let env = |name: &str| match name {
        "KEY" => Some("sk-1".to_owned()),
        "RPM" => Some("120".to_owned()),
        "TEAM" => Some("search".to_owned()),
        _ => None,
    };
    let c = Config::from_yaml_str_with_env(yaml, &env).expect("loads");
    let d = &c.deployments[0];
    assert_eq!(d.api_key.as_ref().map(|k| k.expose()), Some("sk-1"));
    assert_eq!(d.rpm, Some(120));
    assert_eq!(d.params.get("extra_headers"), Some(&serde_json::json!({"X-Team": "search"})));
}

#[test]
fn a_missing_environment_variable_is_an_error_naming_the_path_and_the_variable() {
    let yaml = "model_list:\n  - { model_name: a, litellm_params: { model: openai/x, api_key: os.environ/NOPE_KEY } }";
    assert_err(yaml, ConfigErrorKind::Env, "model_list[0].litellm_params.api_key", "`NOPE_KEY` is not set");
    let yaml = "general_settings: { master_key: os.environ/NOPE_MASTER }";
    assert_err(yaml, ConfigErrorKind::Env, "general_settings.master_key", "NOPE_MASTER");
}

#[test]
fn a_secret_in_the_wrong_place_is_not_echoed_by_the_error() {
    let yaml = "model_list: [{ model_name: a, litellm_params: { model: openai/x, rpm: os.environ/KEY } }]";
    let err = Config::from_yaml_str_with_env(yaml, &|_| Some("sk-live-SECRET".to_owned())).expect_err("not a number");
    assert_eq!(err.path(), "model_list[0].litellm_params.rpm");
    assert!(!err.to_string().contains("SECRET") && !format!("{err:?}").contains("SECRET"), "{err}");
}

#[test]
fn environment_variables_section_feeds_os_environ_references() {
    let yaml = "environment_variables: { KEY: from-config }
model_list: [{ model_name: a, litellm_params: { model: openai/x, api_key: os.environ/KEY } }]";
    let c = Config::from_yaml_str_with_env(yaml, &|_| Some("from-env".to_owned())).expect("loads");
    assert_eq!(c.deployments[0].api_key.as_ref().map(|k| k.expose()), Some("from-config"));
}

#[test]
fn from_yaml_str_reads_the_process_environment() {
    // PATH is set in every test environment.
    let c = Config::from_yaml_str(
        "model_list: [{ model_name: a, litellm_params: { model: openai/x, api_version: os.environ/PATH } }]",
    )
    .expect("loads");
    assert_eq!(c.deployments[0].api_version, std::env::var("PATH").ok());
}

// ---- warnings ------------------------------------------------------------------------------

#[test]
fn unknown_keys_are_warned_once_each_and_never_fail_the_load() {
    let c = fixture();
    for key in [
        "litellm_settings.drop_params",
        "litellm_settings.set_verbose",
        "litellm_settings.success_callback",
        "litellm_settings.callbacks",
        "general_settings.database_url",
        "general_settings.alerting",
        "include",
        "litellm_settings.num_retries",
        "litellm_settings.request_timeout",
    ] {
        let key = format!("`{}`", key.trim_matches('`'));
        let n = c.warnings.iter().filter(|w| w.contains(&key)).count();
        assert_eq!(n, 1, "one warning for {key}: {:#?}", c.warnings);
    }
    // The response cache is read: `cache: true` with a Redis `cache_params` whose server comes
    // from REDIS_HOST / REDIS_PORT, as LiteLLM's `_redis.py` reads them.
    assert!(!c.warnings.iter().any(|w| w.contains("`litellm_settings.cache")), "{:#?}", c.warnings);
    match c.cache.as_ref().map(|s| &s.backend) {
        Some(switchyard::cache::CacheBackend::Redis(r)) => {
            // `environment_variables` sets REDIS_PORT, and wins over the process environment.
            assert_eq!((r.host.as_deref(), r.port), (Some("cache.internal"), Some(6380)));
            assert_eq!(r.password.as_ref().map(|p| p.expose()), Some("redis-SECRET-pw"));
        }
        other => panic!("a Redis cache: {other:?}"),
    }
    assert!(
        !c.warnings.iter().any(|w| w.contains("model_info.base_model") || w.contains("model_info.mode")),
        "LiteLLM metadata is accepted silently: {:#?}",
        c.warnings
    );
}

#[test]
fn a_key_repeated_in_every_model_list_entry_warns_once() {
    let yaml = "model_list:
  - { model_name: a, litellm_params: { model: openai/x, max_budget: 1 }, model_info: { color: red } }
  - { model_name: b, litellm_params: { model: openai/y, max_budget: 2 }, model_info: { color: blue } }";
    let c = load(yaml).expect("loads");
    assert_eq!(c.warnings.len(), 2, "{:#?}", c.warnings);
}

// ---- router_settings and litellm_settings --------------------------------------------------

#[test]
fn router_settings_win_over_litellm_settings_which_apply_alone() {
    let c = load(
        &(models(&[("y", "openai/y")])
            + "router_settings: { num_retries: 1, cooldown_time: 0 }
litellm_settings: { num_retries: 4, allowed_fails: 7, request_timeout: 90, cooldown_time: 9,
                    model_group_alias: { x: y } }"),
    )
    .expect("loads");
    assert_eq!(c.aliases, [Alias::new("x", "y", false)], "`y` is a name, not YAML 1.1 `true`");
    assert_eq!(c.retry.num_retries, 1);
    assert_eq!(c.cooldown.cooldown_time, Duration::ZERO, "0 is kept, not turned into 5 s");
    assert_eq!(c.cooldown.allowed_fails, Some(7));
    assert_eq!(c.timeout, Some(Duration::from_secs(90)));
    assert!(c.warnings.iter().any(|w| w.contains("litellm_settings.num_retries")), "{:#?}", c.warnings);
}

#[test]
fn defaults_are_litellm_defaults() {
    let c = load("model_list: []").expect("loads");
    assert_eq!(c.retry.num_retries, 2);
    assert_eq!(c.cooldown.cooldown_time, Duration::from_secs(5));
    assert_eq!(c.cooldown.allowed_fails, None);
    assert_eq!(c.fallbacks.max_fallbacks, 5);
    assert_eq!(c.routing_strategy, RoutingStrategy::SimpleShuffle);
    assert!(c.warnings.is_empty());
    assert!(load("").expect("an empty document is an empty config").deployments.is_empty());
}

#[test]
fn unknown_routing_strategy_is_rejected_listing_the_valid_ones() {
    let err = load_err("router_settings: { routing_strategy: fastest }");
    assert_eq!((err.kind(), err.path()), (ConfigErrorKind::Invalid, "router_settings.routing_strategy"));
    for (name, _) in RoutingStrategy::ALL {
        assert!(err.to_string().contains(name), "{err}");
    }
}

#[test]
fn usage_based_routing_v2_is_accepted() {
    let c = load("router_settings: { routing_strategy: usage-based-routing-v2 }").expect("loads");
    assert_eq!(c.routing_strategy, RoutingStrategy::UsageBased);
}

#[test]
fn unknown_policy_fields_are_rejected_listing_the_valid_ones() {
    assert_err(
        "router_settings: { retry_policy: { RateLimitRetries: 1 } }",
        ConfigErrorKind::Invalid,
        "router_settings.retry_policy.RateLimitRetries",
        "RateLimitErrorRetries",
    );
    assert_err(
        "router_settings: { allowed_fails_policy: { RateLimitErrorAllowedFails: -1 } }",
        ConfigErrorKind::Invalid,
        "router_settings.allowed_fails_policy.RateLimitErrorAllowedFails",
        "must be >= 0",
    );
}

#[test]
fn latency_arguments_out_of_range_are_rejected() {
    let at = "router_settings.routing_strategy_args.";
    assert_err(
        "router_settings: { routing_strategy_args: { lowest_latency_buffer: -0.5 } }",
        ConfigErrorKind::Invalid,
        &format!("{at}lowest_latency_buffer"),
        "got -0.5",
    );
    assert_err(
        "router_settings: { routing_strategy_args: { max_latency_list_size: 0 } }",
        ConfigErrorKind::Invalid,
        &format!("{at}max_latency_list_size"),
        ">= 1",
    );
    assert_err(
        "router_settings: { routing_strategy_args: { ttl: -3 } }",
        ConfigErrorKind::Invalid,
        &format!("{at}ttl"),
        "got -3",
    );
}

// ---- aliases -------------------------------------------------------------------------------

#[test]
fn hidden_alias_is_parsed_and_a_plain_alias_is_visible() {
    let yaml = models(&[("gpt-4o", "openai/gpt-4o")])
        + "router_settings:\n  model_group_alias:\n    gpt-4: gpt-4o\n    secret-4: { model: gpt-4o, hidden: true }\n";
    let c = load(&yaml).expect("loads");
    assert_eq!(c.aliases, [Alias::new("gpt-4", "gpt-4o", false), Alias::new("secret-4", "gpt-4o", true)]);
}

#[test]
fn alias_pointing_at_an_unknown_group_is_rejected() {
    let yaml = models(&[("gpt-4o", "openai/gpt-4o")]) + "router_settings: { model_group_alias: { gpt-4: gpt-5 } }\n";
    assert_err(
        &yaml,
        ConfigErrorKind::Invalid,
        "router_settings.model_group_alias.gpt-4",
        "`gpt-5` is not a model group",
    );
    let yaml = models(&[("gpt-4o", "openai/gpt-4o")]) + "router_settings: { model_group_alias: { a: gpt-4o, b: a } }\n";
    assert_err(&yaml, ConfigErrorKind::Invalid, "router_settings.model_group_alias.b", "is an alias");
    let yaml =
        models(&[("gpt-4o", "openai/gpt-4o")]) + "router_settings: { model_group_alias: { a: { hidden: true } } }\n";
    assert_err(&yaml, ConfigErrorKind::Invalid, "router_settings.model_group_alias.a.model", "is required");
}

// ---- fallbacks -----------------------------------------------------------------------------

fn with_groups(settings: &str) -> String {
    models(&[("a", "openai/a"), ("b", "openai/b"), ("c", "openai/c"), ("d", "openai/d"), ("openai/*", "openai/*")])
        + settings
}

#[test]
fn fallback_entry_with_two_keys_is_rejected_with_its_path() {
    let yaml = with_groups("router_settings:\n  fallbacks: [{a: [b]}, {c: [d], b: [a]}]\n");
    assert_err(&yaml, ConfigErrorKind::Invalid, "router_settings.fallbacks[1]", "exactly one key");
    let yaml = with_groups("litellm_settings:\n  context_window_fallbacks: [{}]\n");
    assert_err(&yaml, ConfigErrorKind::Invalid, "litellm_settings.context_window_fallbacks[0]", "found 0");
    let yaml = with_groups("router_settings:\n  fallbacks: [a]\n");
    assert_err(&yaml, ConfigErrorKind::Type, "router_settings.fallbacks[0]", "mapping");
    let yaml = with_groups("router_settings:\n  fallbacks: {a: [b]}\n");
    assert_err(&yaml, ConfigErrorKind::Type, "router_settings.fallbacks", "list");
}

#[test]
fn fallback_values_may_be_a_group_or_a_list_of_groups() {
    let c = load(&with_groups("router_settings:\n  fallbacks: [{a: b}, {b: [c, d]}]\n")).expect("loads");
    assert_eq!(c.fallbacks.general_for("a"), ["b".to_owned()]);
    assert_eq!(c.fallbacks.general_for("b"), ["c".to_owned(), "d".to_owned()]);
    let yaml = with_groups("router_settings:\n  fallbacks: [{a: [b, 3]}]\n");
    assert_err(&yaml, ConfigErrorKind::Type, "router_settings.fallbacks[0].a[1]", "model group");
}

#[test]
fn star_key_in_fallbacks_is_the_default_list() {
    let c = load(&with_groups("router_settings:\n  fallbacks: [{a: [b]}, {'*': [c, d]}]\n")).expect("loads");
    assert_eq!(c.fallbacks.default, ["c", "d"]);
    assert!(!c.fallbacks.general.contains_key("*"));
    assert_eq!(c.fallbacks.general_for("b"), ["c".to_owned(), "d".to_owned()]);
    let c = load(&with_groups("router_settings:\n  default_fallbacks: d\n")).expect("loads");
    assert_eq!(c.fallbacks.default, ["d"]);
}

#[test]
fn fallbacks_naming_an_unknown_group_are_rejected_at_the_key_or_the_target() {
    let yaml = with_groups("router_settings:\n  fallbacks: [{a: [b]}, {zzz: [a]}]\n");
    assert_err(&yaml, ConfigErrorKind::Invalid, "router_settings.fallbacks[1]", "`zzz` is not a model group");
    let yaml = with_groups("router_settings:\n  fallbacks: [{a: [b, zzz]}]\n");
    assert_err(&yaml, ConfigErrorKind::Invalid, "router_settings.fallbacks[0].a[1]", "`zzz`");
    let yaml = with_groups("router_settings:\n  fallbacks: [{a: zzz}]\n");
    assert_err(&yaml, ConfigErrorKind::Invalid, "router_settings.fallbacks[0].a", "`zzz`");
    let yaml = with_groups("litellm_settings:\n  content_policy_fallbacks: [{a: [zzz]}]\n");
    assert_err(&yaml, ConfigErrorKind::Invalid, "litellm_settings.content_policy_fallbacks[0].a[0]", "`zzz`");
    let yaml = with_groups("router_settings:\n  default_fallbacks: [b, zzz]\n");
    assert_err(&yaml, ConfigErrorKind::Invalid, "router_settings.default_fallbacks[1]", "`zzz`");
}

#[test]
fn fallbacks_may_name_aliases_and_names_a_wildcard_group_matches() {
    let yaml = with_groups(
        "router_settings:\n  model_group_alias: { fast: a }\n  fallbacks: [{fast: [openai/gpt-4o]}, {'*': [b]}]\n",
    );
    let c = load(&yaml).expect("loads");
    assert_eq!(c.fallbacks.general_for("fast"), ["openai/gpt-4o".to_owned()]);
}

#[test]
fn a_group_listed_twice_in_fallbacks_keeps_its_first_entry_and_warns() {
    let c = load(&with_groups("router_settings:\n  fallbacks: [{a: [b]}, {a: [c]}]\n")).expect("loads");
    assert_eq!(c.fallbacks.general_for("a"), ["b".to_owned()]);
    assert!(c.warnings.iter().any(|w| w.contains("router_settings.fallbacks[1]")), "{:#?}", c.warnings);
}

// ---- routing groups ------------------------------------------------------------------------

#[test]
fn routing_group_rules_are_enforced_with_their_path() {
    let group = |name: &str, models: &str| {
        format!("    - {{ group_name: {name}, models: [{models}], routing_strategy: least-busy }}\n")
    };
    let yaml = with_groups(&format!("router_settings:\n  routing_groups:\n{}{}", group("x", "a"), group("x", "b")));
    assert_err(&yaml, ConfigErrorKind::Invalid, "router_settings.routing_groups[1].group_name", "used twice");
    let yaml = with_groups(&format!("router_settings:\n  routing_groups:\n{}", group("default", "a")));
    assert_err(&yaml, ConfigErrorKind::Invalid, "router_settings.routing_groups[0].group_name", "reserved");
    let yaml = with_groups(&format!("router_settings:\n  routing_groups:\n{}{}", group("x", "a, b"), group("y", "b")));
    assert_err(
        &yaml,
        ConfigErrorKind::Invalid,
        "router_settings.routing_groups[1].models",
        "`b` is in routing groups `x` and `y`",
    );
    let yaml =
        with_groups("router_settings:\n  routing_groups: [{ group_name: x, models: [a], routing_strategy: lar1 }]\n");
    assert_err(&yaml, ConfigErrorKind::Invalid, "router_settings.routing_groups[0].routing_strategy", "simple-shuffle");
}

#[test]
fn a_routing_group_naming_an_unknown_model_only_warns() {
    let c = load(&with_groups("router_settings:\n  routing_groups: [{ group_name: x, models: [a, nope], routing_strategy: cost-based-routing }]\n"))
        .expect("loads");
    assert!(c.warnings.iter().any(|w| w.contains("`nope`")), "{:#?}", c.warnings);
}

// ---- a config built in code ----------------------------------------------------------------

#[test]
fn validate_checks_a_config_built_in_code_and_names_its_fields() {
    let d = |group: &str, id: &str| Deployment::builder(group, "openai/x").id(id).build().expect("builds");
    let mut c = Config::default();
    c.deployments = vec![d("a", "1"), d("b", "2")];
    c.aliases.push(Alias::new("fast", "a", false));
    c.fallbacks.general.insert("a".into(), vec!["b".into(), "fast".into()]);
    assert!(c.validate().is_ok());

    let mut dup = c.clone();
    dup.deployments.push(d("c", "1"));
    let err = dup.validate().expect_err("duplicate id");
    assert_eq!(err.path(), "deployments[2]");
    assert!(err.to_string().contains("deployments[0]"), "{err}");

    let mut unknown = c.clone();
    unknown.fallbacks.general.insert("b".into(), vec!["zzz".into()]);
    assert_eq!(unknown.validate().expect_err("unknown target").path(), "fallbacks.general.b[0]");

    let mut alias = c.clone();
    alias.aliases.push(Alias::new("slow", "nope", false));
    assert_eq!(alias.validate().expect_err("unknown alias target").path(), "aliases[1]");
}

// ---- robustness ----------------------------------------------------------------------------

#[test]
fn odd_documents_are_errors_not_panics() {
    let deep = "[".repeat(10_000);
    for yaml in [
        "42",
        "~",
        "model_list: [~]",
        "model_list: [{ model_name: a, litellm_params: ~ }]",
        "model_list: [{ model_name: a, litellm_params: { model: x, rpm: 1e300 } }]",
        "model_list: [{ model_name: a, litellm_params: { model: x, rpm: 99999999999999999999999 } }]",
        "model_list: [{ model_name: a, litellm_params: { model: x, timeout: 1e300 } }]",
        "router_settings: { redis_port: 70000 }",
        "router_settings: ~\nlitellm_settings: ~\ngeneral_settings: ~",
        "router_settings: { fallbacks: ~, model_group_alias: ~ }",
        "environment_variables: { A: [1] }",
        "model_list: [{ model_name: a, litellm_params: { model: os.environ/ } }]",
        "a: &x [*x]",
        deep.as_str(),
    ] {
        let _ = load(yaml);
    }
}

#[test]
fn a_provider_not_served_natively_is_refused_at_load_naming_the_deployment() {
    let yaml = r#"
model_list:
  - { model_name: gpt-4o, litellm_params: { model: openai/gpt-4o } }
  - { model_name: claude, litellm_params: { model: sagemaker/claude-endpoint }, model_info: { id: claude-1 } }
"#;
    let err = Config::from_yaml_str(yaml).expect_err("sagemaker is not served natively");
    assert_eq!(err.path(), "model_list[1].litellm_params.model");
    let msg = err.to_string();
    assert!(
        msg.contains("`sagemaker`") && msg.contains("`claude-1`") && msg.contains("skip_unsupported_providers"),
        "{msg}"
    );
}

#[test]
fn unsupported_providers_are_skipped_with_one_warning_when_the_config_says_so() {
    let yaml = r#"
model_list:
  - { model_name: gpt-4o, litellm_params: { model: openai/gpt-4o } }
  - { model_name: claude, litellm_params: { model: sagemaker/claude-endpoint }, model_info: { id: claude-1 } }
router_settings:
  skip_unsupported_providers: true
"#;
    let config = Config::from_yaml_str(yaml).expect("skipped, not refused");
    assert_eq!(config.deployments.len(), 1);
    assert_eq!(config.warnings.iter().filter(|w| w.contains("`sagemaker`") && w.contains("skipped")).count(), 1);
}

#[test]
fn pre_call_settings_read_tag_matching_parallel_default_and_slot_wait() {
    let c = load(&format!(
        "{}router_settings: {{ enable_tag_filtering: true, tag_filtering_match_any: false, \
         default_max_parallel_requests: 8, wait_for_parallel_slot: 2.5 }}\n",
        models(&[("gpt-4o", "openai/gpt-4o")])
    ))
    .expect("loads");
    let p = &c.precall;
    assert!(p.tags && !p.tag_match_any);
    assert_eq!(p.default_max_parallel_requests, Some(8));
    assert_eq!(p.wait_for_parallel_slot, Some(Duration::from_millis(2500)));
    assert!(!c.warnings.iter().any(|w| w.contains("tag_filtering_match_any")), "{:#?}", c.warnings);

    let defaults = load(&models(&[("gpt-4o", "openai/gpt-4o")])).expect("loads");
    assert!(defaults.precall.tag_match_any, "LiteLLM's default: match any");
    assert_eq!(defaults.precall.wait_for_parallel_slot, None);
}

#[test]
fn a_parallel_request_limit_of_zero_is_rejected() {
    let yaml = format!("{}router_settings: {{ default_max_parallel_requests: 0 }}\n", models(&[("g", "openai/x")]));
    assert_err(&yaml, ConfigErrorKind::Invalid, "router_settings.default_max_parallel_requests", "must be >= 1");
    let yaml = "model_list:\n  - model_name: g\n    litellm_params: { model: openai/x, max_parallel_requests: 0 }\n";
    assert_err(yaml, ConfigErrorKind::Invalid, "model_list[0].litellm_params.max_parallel_requests", "must be >= 1");
}

// ---- budgets and affinity ------------------------------------------------------------------

#[test]
fn deployment_budgets_read_max_budget_and_budget_duration() {
    let c = fixture();
    let claude = &c.deployments[3];
    assert_eq!(claude.max_budget, Some(100.0));
    assert_eq!(claude.budget_duration, Some(Duration::from_secs(30 * 86_400)));

    let yaml = "model_list:
  - { model_name: a, litellm_params: { model: openai/x, max_budget: 2.5, budget_duration: 30m } }
  - { model_name: b, litellm_params: { model: openai/y, max_budget: 1, budget_duration: 3600 } }
  - { model_name: c, litellm_params: { model: openai/z, max_budget: 1 } }";
    let c = load(yaml).expect("loads");
    assert_eq!(
        (c.deployments[0].max_budget, c.deployments[0].budget_duration),
        (Some(2.5), Some(Duration::from_secs(1800)))
    );
    assert_eq!(c.deployments[1].budget_duration, Some(Duration::from_secs(3600)));
    assert_eq!(c.deployments[2].max_budget, None, "no period, no budget (as in LiteLLM)");
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("model_list[2].litellm_params.max_budget") && w.contains("budget_duration"))
    );
}

#[test]
fn bad_deployment_budgets_are_rejected_naming_the_path() {
    let yaml = "model_list:\n  - { model_name: a, litellm_params: { model: openai/x, max_budget: -1, budget_duration: 1d } }\n";
    assert_err(yaml, ConfigErrorKind::Invalid, "model_list[0].litellm_params.max_budget", "must be >= 0");
    let yaml =
        "model_list:\n  - { model_name: a, litellm_params: { model: openai/x, max_budget: 1, budget_duration: 1y } }\n";
    assert_err(yaml, ConfigErrorKind::Invalid, "model_list[0].litellm_params.budget_duration", "got `1y`");
}

#[test]
fn provider_budget_config_reads_litellm_and_alternate_names() {
    let c = load(&format!(
        "{}router_settings:
  provider_budget_config:
    openai: {{ budget_limit: 100, time_period: 1d }}
    azure: {{ max_budget: 0.5, budget_duration: 30s }}
    anthropic: {{ budget_limit: null, time_period: 1d }}
",
        models(&[("g", "openai/x")])
    ))
    .expect("loads");
    let b = &c.precall.budgets;
    let openai = b.provider_budget("openai").expect("openai budget");
    assert_eq!((openai.limit, openai.period), (100.0, Duration::from_secs(86_400)));
    let azure = b.provider_budget("azure").expect("azure budget");
    assert_eq!((azure.limit, azure.period), (0.5, Duration::from_secs(30)));
    assert!(b.provider_budget("anthropic").is_none(), "no limit: no budget, not a dropped provider");
    assert!(c.warnings.iter().any(|w| w.contains("provider_budget_config.anthropic")), "{:#?}", c.warnings);
    assert!(!c.warnings.iter().any(|w| w.contains("`router_settings.provider_budget_config`")));
}

#[test]
fn bad_provider_budgets_are_rejected_naming_the_path() {
    let m = models(&[("g", "openai/x")]);
    let yaml = format!(
        "{m}router_settings: {{ provider_budget_config: {{ openai: {{ budget_limit: -5, time_period: 1d }} }} }}\n"
    );
    assert_err(&yaml, ConfigErrorKind::Invalid, "router_settings.provider_budget_config.openai.budget_limit", ">= 0");
    let yaml = format!(
        "{m}router_settings: {{ provider_budget_config: {{ openai: {{ budget_limit: 5, time_period: soon }} }} }}\n"
    );
    assert_err(&yaml, ConfigErrorKind::Invalid, "router_settings.provider_budget_config.openai.time_period", "`soon`");
    let yaml = format!("{m}router_settings: {{ provider_budget_config: {{ openai: {{ budget_limit: 5 }} }} }}\n");
    assert_err(
        &yaml,
        ConfigErrorKind::Invalid,
        "router_settings.provider_budget_config.openai.time_period",
        "required",
    );
}

#[test]
fn deployment_affinity_is_off_by_default_and_read_in_both_spellings() {
    let m = models(&[("g", "openai/x")]);
    assert_eq!(load(&m).expect("loads").precall.affinity, None);

    let c = load(&format!("{m}router_settings: {{ deployment_affinity: {{ ttl: 600, api_key: true }} }}\n"))
        .expect("loads");
    let a = c.precall.affinity.expect("on");
    assert_eq!((a.ttl, a.by_session, a.by_api_key), (Duration::from_secs(600), true, true));

    let c = load(&format!("{m}router_settings: {{ deployment_affinity: true }}\n")).expect("loads");
    assert_eq!(c.precall.affinity.map(|a| (a.ttl.as_secs(), a.by_session, a.by_api_key)), Some((3600, true, false)));
    assert_eq!(
        load(&format!("{m}router_settings: {{ deployment_affinity: false }}\n")).expect("loads").precall.affinity,
        None
    );

    // LiteLLM's newer flags.
    let c = load(&format!(
        "{m}router_settings: {{ optional_pre_call_checks: [session_affinity, prompt_caching], \
         deployment_affinity_ttl_seconds: 120 }}\n"
    ))
    .expect("loads");
    let a = c.precall.affinity.expect("on");
    assert_eq!((a.ttl, a.by_session, a.by_api_key), (Duration::from_secs(120), true, false));
    assert!(c.warnings.iter().any(|w| w.contains("optional_pre_call_checks.prompt_caching")), "{:#?}", c.warnings);
}

#[test]
fn bad_affinity_settings_are_rejected_naming_the_path() {
    let m = models(&[("g", "openai/x")]);
    let yaml = format!("{m}router_settings: {{ deployment_affinity: {{ ttl: 0 }} }}\n");
    assert_err(&yaml, ConfigErrorKind::Invalid, "router_settings.deployment_affinity.ttl", "> 0");
    let yaml = format!("{m}router_settings: {{ deployment_affinity: {{ sticky: true }} }}\n");
    assert_err(&yaml, ConfigErrorKind::Invalid, "router_settings.deployment_affinity.sticky", "unknown key");
    let yaml = format!("{m}router_settings: {{ deployment_affinity: 5 }}\n");
    assert_err(&yaml, ConfigErrorKind::Type, "router_settings.deployment_affinity", "must be true");
}

// ---- Redis ---------------------------------------------------------------------------------

#[test]
fn every_redis_key_parses() {
    let c = load(
        "router_settings:
  redis_url: 'redis://:url-pw@cache:6380/2'
  redis_password: pw
  redis_namespace: prod-gateway
  redis_ssl: false
  redis_budgets_fail_closed: yes
  redis_response_timeout: 0.5
",
    )
    .expect("loads");
    let r = c.redis.as_ref().expect("redis");
    assert_eq!(r.url.as_deref(), Some("redis://:url-pw@cache:6380/2"));
    assert_eq!(r.password.as_ref().map(|p| p.expose()), Some("pw"));
    assert_eq!(r.namespace.as_deref(), Some("prod-gateway"));
    assert!(!r.ssl);
    assert!(r.budgets_fail_closed);
    assert_eq!(r.response_timeout, Some(Duration::from_millis(500)));
    assert!(r.startup_nodes.is_empty());
    assert!(c.warnings.is_empty(), "{:#?}", c.warnings);

    let c = load(
        "router_settings:
  redis_startup_nodes:
    - { host: node-a, port: 7000 }
    - { host: node-b, port: '7001' }
    - { host: node-c }
    - 'redis://:pw@node-d:7003'
  redis_ssl: 'off'
  redis_response_timeout: '2'
",
    )
    .expect("loads");
    let r = c.redis.as_ref().expect("redis");
    assert_eq!(
        r.startup_nodes,
        ["redis://node-a:7000", "redis://node-b:7001", "redis://node-c:6379", "redis://:pw@node-d:7003"]
    );
    assert_eq!(r.response_timeout, Some(Duration::from_secs(2)));
    assert!(!r.ssl && !r.budgets_fail_closed);
    assert_eq!((r.url.as_deref(), r.host.as_deref(), r.port, r.namespace.as_deref()), (None, None, None, None));

    // Every key resolves `os.environ/NAME`, nested startup nodes included.
    let env = |name: &str| match name {
        "NS" => Some("from-env".to_owned()),
        "NODE_HOST" => Some("node-env".to_owned()),
        "NODE_PORT" => Some("7100".to_owned()),
        "SSL" => Some("true".to_owned()),
        "FAIL_CLOSED" => Some("true".to_owned()),
        "TIMEOUT" => Some("3".to_owned()),
        _ => None,
    };
    let c = Config::from_yaml_str_with_env(
        "router_settings:
  redis_startup_nodes: [{ host: os.environ/NODE_HOST, port: os.environ/NODE_PORT }]
  redis_namespace: os.environ/NS
  redis_ssl: os.environ/SSL
  redis_budgets_fail_closed: os.environ/FAIL_CLOSED
  redis_response_timeout: os.environ/TIMEOUT
",
        &env,
    )
    .expect("loads");
    let r = c.redis.as_ref().expect("redis");
    assert_eq!(r.startup_nodes, ["rediss://node-env:7100"]);
    assert_eq!(r.namespace.as_deref(), Some("from-env"));
    assert!(r.ssl && r.budgets_fail_closed);
    assert_eq!(r.response_timeout, Some(Duration::from_secs(3)));

    assert!(load("router_settings: { num_retries: 1 }").expect("loads").redis.is_none());
}

#[test]
fn redis_url_wins_over_host_and_port_which_are_warned_about() {
    let c = load("router_settings: { redis_url: 'redis://cache:6379', redis_host: other, redis_port: 7000 }")
        .expect("loads");
    let r = c.redis.as_ref().expect("redis");
    assert_eq!(r.url.as_deref(), Some("redis://cache:6379"));
    for key in ["redis_host", "redis_port"] {
        let expected = format!("`router_settings.{key}` is ignored: `router_settings.redis_url` is set and wins");
        assert!(c.warnings.contains(&expected), "{:#?}", c.warnings);
    }
}

#[test]
fn redis_startup_nodes_mean_a_cluster_and_win_over_host_and_port() {
    let c =
        load("router_settings: { redis_startup_nodes: [{ host: a, port: 7000 }], redis_host: other }").expect("loads");
    assert_eq!(c.redis.as_ref().expect("redis").startup_nodes, ["redis://a:7000"]);
    assert!(
        c.warnings.iter().any(|w| w.contains("`router_settings.redis_host` is ignored")
            && w.contains("`router_settings.redis_startup_nodes` is set and wins")),
        "{:#?}",
        c.warnings
    );
    // A URL is one server, startup nodes a cluster: both is a contradiction.
    assert_err(
        "router_settings: { redis_startup_nodes: ['redis://a:7000'], redis_url: 'redis://b:6379' }",
        ConfigErrorKind::Invalid,
        "router_settings.redis_startup_nodes",
        "not both",
    );
    // Keys of a node Switchyard does not read are warned about, once.
    let c = load("router_settings: { redis_startup_nodes: [{ host: a, role: primary }, { host: b, role: replica }] }")
        .expect("loads");
    let node_warnings: Vec<&String> = c.warnings.iter().filter(|w| w.contains(".role")).collect();
    assert_eq!(node_warnings.len(), 1, "{:#?}", c.warnings);
    assert!(node_warnings[0].contains("router_settings.redis_startup_nodes[0].role"), "{node_warnings:?}");
}

#[test]
fn redis_ssl_selects_rediss_for_urls_built_from_parts_and_a_port_defaults_to_6379() {
    let c = load("router_settings: { redis_host: cache, redis_ssl: true, redis_startup_nodes: [{ host: '::1' }] }")
        .expect("loads");
    let r = c.redis.as_ref().expect("redis");
    assert!(r.ssl);
    assert_eq!(r.startup_nodes, ["rediss://[::1]:6379"]);

    let c = load("router_settings: { redis_host: cache }").expect("loads");
    let r = c.redis.as_ref().expect("redis");
    assert_eq!((r.host.as_deref(), r.port, r.ssl), (Some("cache"), None, false));

    // `redis_ssl` does not rewrite a URL the config spells out: a redis:// URL with it is refused.
    assert_err(
        "router_settings: { redis_url: 'redis://cache', redis_ssl: true }",
        ConfigErrorKind::Invalid,
        "router_settings.redis_url",
        "rediss://",
    );
    assert_err(
        "router_settings: { redis_startup_nodes: ['rediss://a:7000', 'redis://b:7000'], redis_ssl: true }",
        ConfigErrorKind::Invalid,
        "router_settings.redis_startup_nodes[1]",
        "rediss://",
    );
    assert!(load("router_settings: { redis_url: 'rediss://cache', redis_ssl: true }").is_ok());
}

#[test]
fn redis_errors_name_their_paths() {
    use ConfigErrorKind::{Invalid, Type};
    let cases: [(&str, ConfigErrorKind, &str, &str); 20] = [
        (
            "redis_url: r, redis_namespace: 'a{b}'",
            Invalid,
            "router_settings.redis_namespace",
            "must not contain braces",
        ),
        ("redis_url: r, redis_namespace: 'a b'", Invalid, "router_settings.redis_namespace", "whitespace"),
        ("redis_url: r, redis_namespace: ''", Invalid, "router_settings.redis_namespace", "must not be empty"),
        ("redis_url: r, redis_namespace: [a]", Type, "router_settings.redis_namespace", "string"),
        ("redis_startup_nodes: 'redis://a:7000'", Type, "router_settings.redis_startup_nodes", "must be a list"),
        ("redis_startup_nodes: { host: a }", Type, "router_settings.redis_startup_nodes", "must be a list"),
        ("redis_startup_nodes: []", Invalid, "router_settings.redis_startup_nodes", "at least one node"),
        (
            "redis_startup_nodes: [{ host: a, port: 70000 }]",
            Invalid,
            "router_settings.redis_startup_nodes[0].port",
            "65535",
        ),
        (
            "redis_startup_nodes: [{ host: a }, { host: b, port: 0 }]",
            Invalid,
            "router_settings.redis_startup_nodes[1].port",
            "between 1 and 65535",
        ),
        (
            "redis_startup_nodes: [{ host: a, port: lots }]",
            Type,
            "router_settings.redis_startup_nodes[0].port",
            "port number",
        ),
        (
            "redis_startup_nodes: [{ port: 7000 }]",
            Invalid,
            "router_settings.redis_startup_nodes[0].host",
            "is required",
        ),
        (
            "redis_startup_nodes: [{ host: '' }]",
            Invalid,
            "router_settings.redis_startup_nodes[0].host",
            "must not be empty",
        ),
        ("redis_startup_nodes: [7000]", Type, "router_settings.redis_startup_nodes[0]", "mapping or a redis:// URL"),
        (
            "redis_startup_nodes: ['a:7000']",
            Invalid,
            "router_settings.redis_startup_nodes[0]",
            "must start with redis://",
        ),
        ("redis_url: 'http://cache:6379'", Invalid, "router_settings.redis_url", "must start with redis://"),
        ("redis_url: 'redis://'", Invalid, "router_settings.redis_url", "names no host"),
        ("redis_host: 'redis://cache'", Invalid, "router_settings.redis_host", "not a URL"),
        ("redis_port: 6379", Invalid, "router_settings.redis_port", "needs `redis_host`"),
        ("redis_host: cache, redis_response_timeout: 0", Invalid, "router_settings.redis_response_timeout", "> 0"),
        ("redis_host: cache, redis_ssl: maybe", Type, "router_settings.redis_ssl", "true or false"),
    ];
    for (settings, kind, path, fragment) in cases {
        let settings = settings.replace("redis_url: r,", "redis_url: 'redis://cache',");
        assert_err(&format!("router_settings: {{ {settings} }}"), kind, path, fragment);
    }
    assert_err(
        "router_settings: { redis_password: pw }",
        Invalid,
        "router_settings.redis_password",
        "to say where Redis is",
    );
    assert_err("router_settings: { redis_host: cache, redis_port: 0 }", Invalid, "router_settings.redis_port", "got 0");
}

#[test]
fn config_debug_never_shows_a_redis_password_wherever_it_is_written() {
    for settings in [
        "{ redis_host: cache, redis_password: hunter2 }",
        "{ redis_url: 'redis://:hunter2@cache:6379/0' }",
        "{ redis_url: 'rediss://user:hunter2@cache:6379/0', redis_password: hunter2 }",
        "{ redis_startup_nodes: ['redis://:hunter2@a:7000', 'redis://user:hunter2@b:7001'] }",
        "{ redis_startup_nodes: [{ host: a }], redis_password: hunter2 }",
    ] {
        let c = load(&format!("router_settings: {settings}")).expect("loads");
        let debug = format!("{c:?}");
        assert!(!debug.contains("hunter2"), "{debug}");
        assert!(debug.contains("RedisSettings"), "{debug}");
        let debug = format!("{:#?}", c.redis);
        assert!(!debug.contains("hunter2"), "{debug}");
    }
    let c = load("router_settings: { redis_startup_nodes: ['redis://:hunter2@a:7000'] }").expect("loads");
    assert!(format!("{c:?}").contains("redis://***@a:7000"), "the rest of the URL is still shown");
    // An error about a URL does not echo its credentials either.
    let err = load_err("router_settings: { redis_url: 'http://:hunter2@cache' }");
    assert!(!err.to_string().contains("hunter2"), "{err}");
}

#[cfg(feature = "redis")]
mod redis_backend {
    use super::*;
    use switchyard::layers::state::{RedisConfig, Topology};
    use switchyard::{Router, RouterError, services::sim::SimProvider};

    fn redis_config(settings: &str) -> RedisConfig {
        let c = load(&format!("router_settings: {settings}")).expect("loads");
        c.redis.as_ref().expect("redis").to_redis_config().expect("a backend config")
    }

    #[test]
    fn to_redis_config_carries_every_setting() {
        let r = redis_config(
            "{ redis_url: 'redis://:url-pw@cache:6380/2', redis_host: ignored, redis_password: pw, \
             redis_namespace: prod, redis_budgets_fail_closed: true, redis_response_timeout: 0.1 }",
        );
        let defaults = RedisConfig::new("redis://x");
        assert_eq!(r.topology, Topology::Single("redis://:url-pw@cache:6380/2".to_owned()));
        assert_eq!(r.password.as_ref().map(|p| p.expose()), Some("pw"), "redis_password overrides the URL's");
        assert_eq!(r.namespace, "prod");
        assert!(r.key_prefix().starts_with("prod:v"), "{}", r.key_prefix());
        assert_eq!(r.response_timeout, Duration::from_millis(100));
        assert!(r.budgets_fail_closed);
        // What the config does not set keeps the backend's defaults.
        assert_eq!(r.connect_timeout, defaults.connect_timeout);
        assert_eq!(r.sync_interval, defaults.sync_interval);
        assert_eq!(r.resync_interval, defaults.resync_interval);
        assert_eq!(r.warn_interval, defaults.warn_interval);
        assert_eq!(r.half_open_linger, defaults.half_open_linger);
        assert_eq!(r.write_queue, defaults.write_queue);
        assert!(r.validate().is_ok());

        let r = redis_config("{ redis_host: cache }");
        assert_eq!(r.topology, Topology::Single("redis://cache:6379".to_owned()));
        assert!(r.password.is_none());
        assert_eq!(r.namespace, defaults.namespace);
        assert_eq!(r.response_timeout, defaults.response_timeout);
        assert!(!r.budgets_fail_closed);

        let r = redis_config("{ redis_host: cache, redis_port: 6380, redis_ssl: true }");
        assert_eq!(r.topology, Topology::Single("rediss://cache:6380".to_owned()));

        let r = redis_config(
            "{ redis_startup_nodes: [{ host: a, port: 7000 }, 'redis://b:7001'], redis_host: x, redis_password: pw }",
        );
        assert_eq!(r.topology, Topology::Cluster(vec!["redis://a:7000".to_owned(), "redis://b:7001".to_owned()]));
        assert_eq!(r.password.as_ref().map(|p| p.expose()), Some("pw"));
    }

    #[test]
    fn a_private_ca_is_read_from_redis_ssl_ca_certs() {
        let dir = std::env::temp_dir().join(format!("switchyard-ca-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let pem = dir.join("ca.pem");
        std::fs::write(&pem, "-----BEGIN CERTIFICATE-----\n").expect("written");
        let r =
            redis_config(&format!("{{ redis_host: cache, redis_ssl: true, redis_ssl_ca_certs: '{}' }}", pem.display()));
        assert_eq!(r.ca_cert_pem.as_deref(), Some(&b"-----BEGIN CERTIFICATE-----\n"[..]));

        let c = load("router_settings: { redis_host: cache, redis_ssl_ca_certs: /no/such/ca.pem }").expect("loads");
        let err = c.redis.as_ref().expect("redis").to_redis_config().expect_err("unreadable");
        assert_eq!(err.path(), "router_settings.redis_ssl_ca_certs", "{err}");
        assert!(err.to_string().contains("/no/such/ca.pem"), "{err}");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn to_redis_config_checks_settings_built_in_code_naming_the_key() {
        let c = load("router_settings: { redis_host: cache }").expect("loads");
        let mut settings = c.redis.clone().expect("redis");
        settings.namespace = Some("{tag}".to_owned());
        let err = settings.to_redis_config().expect_err("braces");
        assert_eq!(err.path(), "router_settings.redis_namespace", "{err}");

        let mut settings = c.redis.clone().expect("redis");
        settings.response_timeout = Some(Duration::ZERO);
        let err = settings.to_redis_config().expect_err("zero timeout");
        assert_eq!(err.path(), "router_settings.redis_response_timeout", "{err}");

        let mut settings = c.redis.clone().expect("redis");
        settings.host = None;
        let err = settings.to_redis_config().expect_err("no server");
        assert_eq!(err.path(), "router_settings.redis_url", "{err}");
    }

    const ROUTER: &str = "model_list: [{ model_name: g, litellm_params: { model: openai/x } }]
router_settings: { redis_url: 'redis://127.0.0.1:1', redis_namespace: config-test }
";

    #[test]
    fn a_router_with_redis_settings_and_no_runtime_is_an_error_not_a_panic() {
        let config = load(ROUTER).expect("loads");
        let err = Router::from_config(&config, SimProvider::new(1)).expect_err("no runtime");
        assert!(matches!(err, RouterError::Store(_)), "{err:?}");
        assert!(err.to_string().contains("Tokio runtime"), "{err}");
    }

    #[tokio::test]
    async fn a_router_with_redis_settings_uses_the_redis_backend_even_when_redis_is_down() {
        let config = load(ROUTER).expect("loads");
        let router = Router::from_config(&config, SimProvider::new(1)).expect("builds degraded");
        assert_eq!(router.store().backend_name(), "redis");
        assert!(router.store().is_degraded());
        let memory =
            Router::from_config(&load("router_settings: { num_retries: 1 }").expect("loads"), SimProvider::new(1))
                .expect("builds");
        assert_eq!(memory.store().backend_name(), "memory");
    }
}

#[cfg(not(feature = "redis"))]
#[test]
fn without_the_redis_feature_a_router_with_redis_settings_is_refused_naming_the_key() {
    use switchyard::{Router, RouterError, services::sim::SimProvider};
    let config = load("router_settings: { redis_startup_nodes: [{ host: a }] }").expect("loads");
    match Router::from_config(&config, SimProvider::new(1)) {
        Err(RouterError::Config(e)) => {
            assert_eq!(e.path(), "router_settings.redis_startup_nodes");
            assert!(e.message().contains("enable the `redis` feature"), "{e}");
        }
        other => panic!("expected a config error, got {other:?}"),
    }
}

// ---- secrets and unusable deployments ------------------------------------------------------

/// Neither `Display` nor `Debug` of `err` shows `secret`.
#[track_caller]
fn assert_not_echoed(err: &ConfigError, secret: &str) {
    assert!(!err.to_string().contains(secret), "`{err}` echoes `{secret}`");
    assert!(!format!("{err:?}").contains(secret), "`{err:?}` echoes `{secret}`");
}

#[test]
fn secrets_written_as_numbers_are_read_as_their_digits() {
    let yaml = r#"
model_list:
  - model_name: a
    litellm_params:
      model: openai/x
      api_key: 918273645546
      organization: 424242424242
      extra_headers: { x-tenant: 77778888 }
  - model_name: b
    litellm_params: { model: azure/x, api_base: "https://b.example.com", azure_ad_token: 313131313131 }
router_settings: { redis_host: cache, redis_password: 123456789012 }
general_settings: { master_key: 5566778899001122 }
"#;
    let c = load(yaml).expect("numbers are read as strings");
    let a = &c.deployments[0];
    assert_eq!(a.api_key.as_ref().map(|k| k.expose()), Some("918273645546"));
    assert_eq!(a.params.get("organization"), Some(&serde_json::json!("424242424242")));
    assert_eq!(a.params.get("extra_headers"), Some(&serde_json::json!({ "x-tenant": "77778888" })));
    assert_eq!(c.deployments[1].params.get("azure_ad_token"), Some(&serde_json::json!("313131313131")));
    assert_eq!(c.master_key.as_ref().map(|k| k.expose()), Some("5566778899001122"));
    let redis = c.redis.as_ref().expect("redis is set");
    assert_eq!(redis.password.as_ref().map(|k| k.expose()), Some("123456789012"));
}

#[test]
fn a_secret_field_of_the_wrong_type_is_refused_naming_it_without_echoing_the_value() {
    // Each secret field with each shape a string cannot take; the value carries a marker.
    let shapes = ["9182736455.46", "[sk-SECRET-918273]", "{ k: sk-SECRET-918273 }", "true"];
    let fields: [(&str, &str); 9] = [
        (
            "model_list[0].litellm_params.api_key",
            "model_list: [{ model_name: a, litellm_params: { model: openai/x, api_key: V } }]",
        ),
        (
            "model_list[0].litellm_params.azure_ad_token",
            "model_list: [{ model_name: a, litellm_params: { model: azure/x, api_base: 'https://h', azure_ad_token: V } }]",
        ),
        (
            "model_list[0].litellm_params.organization",
            "model_list: [{ model_name: a, litellm_params: { model: openai/x, organization: V } }]",
        ),
        (
            "model_list[0].litellm_params.extra_headers.x-tenant",
            "model_list: [{ model_name: a, litellm_params: { model: openai/x, extra_headers: { x-tenant: V } } }]",
        ),
        (
            "model_list[0].litellm_params.api_base",
            "model_list: [{ model_name: a, litellm_params: { model: openai/x, api_base: V } }]",
        ),
        ("general_settings.master_key", "general_settings: { master_key: V }"),
        ("router_settings.redis_password", "router_settings: { redis_host: cache, redis_password: V }"),
        ("router_settings.redis_url", "router_settings: { redis_url: V }"),
        ("router_settings.redis_startup_nodes[0]", "router_settings: { redis_startup_nodes: [V] }"),
    ];
    for (path, template) in fields {
        for shape in shapes {
            // A startup node may be a mapping (`{host, port}`); its wrong shapes are the others.
            if path.ends_with("redis_startup_nodes[0]") && shape.starts_with('{') {
                continue;
            }
            // A list of organizations expands the deployment (tests/config_names.rs).
            if path.ends_with("organization") && shape.starts_with('[') {
                continue;
            }
            let err = load_err(&template.replace('V', shape));
            assert_eq!(err.kind(), ConfigErrorKind::Type, "{path} = {shape}: {err}");
            assert_eq!(err.path(), path, "{shape}: {err}");
            for secret in ["SECRET", "918273", "9182736455"] {
                assert_not_echoed(&err, secret);
            }
        }
    }
}

#[test]
fn a_numeric_secret_resolved_from_the_environment_is_not_echoed_either() {
    let yaml = "model_list: [{ model_name: a, litellm_params: { model: openai/x, tags: os.environ/KEY } }]";
    let err = Config::from_yaml_str_with_env(yaml, &|_| Some("918273645546".to_owned())).expect_err("not a list");
    assert_eq!(err.path(), "model_list[0].litellm_params.tags");
    assert_not_echoed(&err, "918273645546");
}

#[test]
fn api_base_user_info_is_refused_naming_the_field_without_echoing_the_password() {
    for base in ["http://user:SECRET-pw@vllm:8000/v1", "https://SECRET-token@h.example.com", "http://u:SECRET@[::1]:80"]
    {
        let yaml = format!(
            "model_list:\n  - {{ model_name: a, litellm_params: {{ model: openai/x }} }}\n  - {{ model_name: b, \
             litellm_params: {{ model: openai/x, api_base: '{base}' }}, model_info: {{ id: b-1 }} }}"
        );
        let err = load_err(&yaml);
        assert_eq!(err.kind(), ConfigErrorKind::Invalid, "{err}");
        assert_eq!(err.path(), "model_list[1].litellm_params.api_base", "{err}");
        assert!(err.message().contains("user-info"), "{err}");
        assert!(err.message().contains("`b`") && err.message().contains("`b-1`"), "names the deployment: {err}");
        assert_not_echoed(&err, "SECRET");
    }
}

#[test]
fn a_master_key_with_surrounding_whitespace_or_nothing_in_it_is_refused_without_echoing_it() {
    let yaml = "general_settings: { master_key: os.environ/KEY }";
    for key in ["sk-SECRET-x\n", " sk-SECRET-x", "sk-SECRET-x\t", "sk-SECRET-\u{7}x", "", "  \n"] {
        let err = Config::from_yaml_str_with_env(yaml, &|_| Some(key.to_owned())).expect_err("refused");
        assert_eq!(err.kind(), ConfigErrorKind::Invalid, "{key:?}: {err}");
        assert_eq!(err.path(), "general_settings.master_key", "{err}");
        assert_not_echoed(&err, "SECRET");
    }
    let c = Config::from_yaml_str_with_env(yaml, &|_| Some("sk-x".to_owned())).expect("a clean key loads");
    assert_eq!(c.master_key.as_ref().map(|k| k.expose()), Some("sk-x"));
}

#[test]
fn an_api_base_the_http_provider_cannot_call_is_refused_naming_the_deployment_and_the_field() {
    let cases = [
        ("file:///var/models", "`file`"),
        ("unix:///var/run/vllm.sock", "`unix`"),
        ("ftp://h.example.com/v1", "`ftp`"),
        ("/v1", "absolute"),
        ("localhost:8000", "absolute"),
        ("vllm:8000/v1", "absolute"),
        ("http://", "no host"),
        ("http:///v1", "no host"),
        ("https://:8443/v1", "no host"),
        ("http://h.example.com/a b", "not a URL"),
    ];
    for (base, fragment) in cases {
        let yaml = format!(
            "model_list:\n  - {{ model_name: a, litellm_params: {{ model: openai/x }} }}\n  - {{ model_name: b, \
             litellm_params: {{ model: openai/x, api_base: '{base}' }}, model_info: {{ id: b-1 }} }}"
        );
        let err = load_err(&yaml);
        assert_eq!(err.kind(), ConfigErrorKind::Invalid, "{base}: {err}");
        assert_eq!(err.path(), "model_list[1].litellm_params.api_base", "{base}: {err}");
        assert!(err.message().contains(fragment), "{base}: `{err}` does not say {fragment}");
        assert!(err.message().contains("`b`") && err.message().contains("`b-1`"), "names the deployment: {err}");
    }
    for base in ["http://vllm:8000", "https://eu.example.com/openai/", "HTTP://h:80/v1?x=1", "http://[::1]:8000", " "] {
        let yaml =
            format!("model_list: [{{ model_name: a, litellm_params: {{ model: openai/x, api_base: '{base}' }} }}]");
        load(&yaml).unwrap_or_else(|e| panic!("{base}: {e}"));
    }
}

#[test]
fn extra_headers_that_cannot_be_sent_are_refused_naming_the_header() {
    let at = |h: &str| format!("model_list[0].litellm_params.extra_headers{h}");
    let cases: [(&str, ConfigErrorKind, String, &str); 8] = [
        ("x-tenant", ConfigErrorKind::Type, at(""), "mapping"),
        ("[x-tenant]", ConfigErrorKind::Type, at(""), "mapping"),
        ("{ x-tenant: true }", ConfigErrorKind::Type, at(".x-tenant"), "string"),
        ("{ x-tenant: 1.5 }", ConfigErrorKind::Type, at(".x-tenant"), "string"),
        ("{ x-tenant: [a] }", ConfigErrorKind::Type, at(".x-tenant"), "string"),
        ("{ 'x tenant': a }", ConfigErrorKind::Invalid, at(".x tenant"), "header name"),
        ("{ x-tenant: \"SECRET\\nx\" }", ConfigErrorKind::Invalid, at(".x-tenant"), "header value"),
        ("{ Host: h.example.com }", ConfigErrorKind::Invalid, at(".Host"), "connection"),
    ];
    for (headers, kind, path, fragment) in cases {
        let yaml = format!(
            "model_list: [{{ model_name: a, litellm_params: {{ model: openai/x, extra_headers: {headers} }}, \
             model_info: {{ id: a-1 }} }}]"
        );
        let err = load_err(&yaml);
        assert_eq!(err.kind(), kind, "{headers}: {err}");
        assert_eq!(err.path(), path, "{headers}: {err}");
        assert!(err.message().contains(fragment), "{headers}: `{err}` does not say {fragment}");
        assert_not_echoed(&err, "SECRET");
    }
    let yaml = "model_list: [{ model_name: a, litellm_params: { model: openai/x, api_key: os.environ/KEY } }]";
    let err = Config::from_yaml_str_with_env(yaml, &|_| Some("sk-SECRET\n".to_owned())).expect_err("a newline");
    assert_eq!(err.path(), "model_list[0].litellm_params.api_key", "{err}");
    assert!(err.message().contains("header value"), "{err}");
    assert_not_echoed(&err, "SECRET");
}

#[test]
fn a_deployment_built_in_code_with_an_unusable_api_base_is_refused() {
    use switchyard::layers::deployment::{ApiBaseProblem, DeploymentError};
    let build = |base: &str| Deployment::builder("g", "openai/x").api_base(base).build();
    let problem = |base: &str| match build(base) {
        Err(DeploymentError::InvalidApiBase { problem, .. }) => problem,
        other => panic!("{base}: expected InvalidApiBase, got {other:?}"),
    };
    assert_eq!(problem("http://u:SECRET@h"), ApiBaseProblem::UserInfo);
    assert_eq!(problem("file:///x"), ApiBaseProblem::Scheme("file".to_owned()));
    assert_eq!(problem("localhost:8000"), ApiBaseProblem::NotAbsolute);
    assert_eq!(problem("http://:80"), ApiBaseProblem::NoHost);
    let err = build("http://u:SECRET@h").expect_err("refused");
    assert!(!err.to_string().contains("SECRET") && !format!("{err:?}").contains("SECRET"), "{err}");
    assert!(build("http://127.0.0.1:9/v1").is_ok());
}

// ---- general_settings.edge ----

#[test]
fn edge_settings_are_read_from_general_settings_and_default_to_unset() {
    assert_eq!(load("model_list: []").expect("loads").edge, EdgeSettings::default());
    let c = load(
        r#"
general_settings:
  edge:
    header_read_timeout: 5
    idle_timeout: "30.5"
    max_connections: 512
    max_header_bytes: 32768
    max_headers: 50
    http2_keep_alive_interval: 10
    http2_keep_alive_timeout: 2.5
    http2_max_concurrent_streams: 64
    allowed_origins: ["https://Chat.Example.com/", "*"]
    allowed_hosts: [Gateway.Internal., "*"]
"#,
    )
    .expect("loads");
    let e = &c.edge;
    assert_eq!(e.header_read_timeout, Some(Duration::from_secs(5)));
    assert_eq!(e.idle_timeout, Some(Duration::from_millis(30_500)));
    assert_eq!((e.max_connections, e.max_header_bytes, e.max_headers), (Some(512), Some(32768), Some(50)));
    assert_eq!(e.http2_keep_alive_interval, Some(Duration::from_secs(10)));
    assert_eq!(e.http2_keep_alive_timeout, Some(Duration::from_millis(2500)));
    assert_eq!(e.http2_max_concurrent_streams, Some(64));
    assert_eq!(e.allowed_origins, Some(vec!["https://chat.example.com".to_owned(), "*".to_owned()]));
    assert_eq!(e.allowed_hosts, Some(vec!["gateway.internal".to_owned(), "*".to_owned()]));
    assert!(c.warnings.is_empty(), "{:#?}", c.warnings);
}

#[test]
fn edge_settings_resolve_os_environ_references() {
    let yaml = "general_settings: { edge: { idle_timeout: os.environ/IDLE, allowed_hosts: [os.environ/HOST] } }";
    let env = |name: &str| match name {
        "IDLE" => Some("12".to_owned()),
        "HOST" => Some("gw.internal".to_owned()),
        _ => None,
    };
    let c = Config::from_yaml_str_with_env(yaml, &env).expect("loads");
    assert_eq!(c.edge.idle_timeout, Some(Duration::from_secs(12)));
    assert_eq!(c.edge.allowed_hosts, Some(vec!["gw.internal".to_owned()]));
}

#[test]
fn edge_settings_that_cannot_be_served_are_refused_naming_the_path() {
    use ConfigErrorKind::{Invalid, Type};
    let edge = |body: &str| format!("general_settings: {{ edge: {{ {body} }} }}");
    let at = |key: &str| format!("general_settings.edge.{key}");
    let cases = [
        ("idle_timeout: 0", Invalid, at("idle_timeout"), "must be > 0"),
        ("header_read_timeout: -1", Invalid, at("header_read_timeout"), ">= 0"),
        ("idle_timeout: 1e15", Invalid, at("idle_timeout"), "at most 86400 seconds"),
        ("http2_keep_alive_interval: soon", Type, at("http2_keep_alive_interval"), "number of seconds"),
        ("http2_keep_alive_timeout: 0", Invalid, at("http2_keep_alive_timeout"), "must be > 0"),
        ("max_connections: 0", Invalid, at("max_connections"), "between 1 and"),
        ("max_connections: 2.5", Invalid, at("max_connections"), "whole number"),
        ("max_header_bytes: 1024", Invalid, at("max_header_bytes"), "between 8192 and 1048576"),
        ("max_header_bytes: 99999999", Invalid, at("max_header_bytes"), "between 8192 and 1048576"),
        ("max_headers: 0", Invalid, at("max_headers"), "between 1 and 10000"),
        ("http2_max_concurrent_streams: 0", Invalid, at("http2_max_concurrent_streams"), "between 1 and"),
        ("allowed_origins: https://a.example", Type, at("allowed_origins"), "list of strings"),
        ("allowed_origins: [5]", Type, at("allowed_origins[0]"), "must be a string"),
        (
            "allowed_origins: ['https://a.example', 'https://b.example/app']",
            Invalid,
            at("allowed_origins[1]"),
            "no path",
        ),
        ("allowed_origins: [a.example]", Invalid, at("allowed_origins[0]"), "scheme"),
        ("allowed_hosts: ['gw.internal:4000']", Invalid, at("allowed_hosts[0]"), "without scheme or port"),
        ("allowed_hosts: ['']", Invalid, at("allowed_hosts[0]"), "host name"),
        ("idle_timout: 5", Invalid, at("idle_timout"), "unknown key; valid: header_read_timeout"),
    ];
    for (body, kind, path, fragment) in cases {
        assert_err(&edge(body), kind, &path, fragment);
    }
    assert_err("general_settings: { edge: [idle_timeout] }", Type, "general_settings.edge", "mapping");
}

// ---- include -------------------------------------------------------------------------------

/// A directory of config files, removed when the test ends.
struct ConfigDir(std::path::PathBuf);

impl ConfigDir {
    fn new(files: &[(&str, &str)]) -> Self {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = Self(std::env::temp_dir().join(format!("switchyard-include-{}-{n}", std::process::id())));
        std::fs::create_dir_all(dir.0.join("conf.d")).expect("create the directory");
        for (name, yaml) in files {
            std::fs::write(dir.0.join(name), yaml).expect("write a config file");
        }
        dir
    }

    fn load(&self) -> Result<Config, ConfigError> {
        Config::from_path(self.0.join("config.yaml"))
    }
}

impl Drop for ConfigDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn include_extends_lists_and_replaces_other_keys_in_file_order() {
    let dir = ConfigDir::new(&[
        (
            "config.yaml",
            "include: [conf.d/models.yaml, conf.d/router.yaml]\n\
             model_list:\n  - { model_name: a, litellm_params: { model: openai/a }, model_info: { id: a1 } }\n\
             router_settings: { num_retries: 7, routing_strategy: least-busy }\n",
        ),
        (
            "conf.d/models.yaml",
            "model_list:\n  - { model_name: b, litellm_params: { model: openai/b }, model_info: { id: b1 } }\n",
        ),
        // A mapping replaces the main file's whole: `num_retries` goes back to its default.
        ("conf.d/router.yaml", "router_settings: { fallbacks: [{ a: [b] }] }\n"),
    ]);
    let c = dir.load().expect("loads");
    let ids: Vec<&str> = c.deployments.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, ["a1", "b1"]);
    assert_eq!(c.fallbacks.general_for("a"), ["b".to_owned()]);
    assert_eq!(c.retry.num_retries, 2);
    assert_eq!(c.routing_strategy, RoutingStrategy::SimpleShuffle);
    assert!(!c.warnings.iter().any(|w| w.contains("include")), "{:#?}", c.warnings);
}

#[test]
fn include_sets_a_list_the_main_file_lacks_and_reads_nested_includes_from_the_main_directory() {
    let dir = ConfigDir::new(&[
        ("config.yaml", "include: [conf.d/first.yaml]\nmodel_list:\n"),
        (
            "conf.d/first.yaml",
            "include: [conf.d/second.yaml]\n\
             model_list:\n  - { model_name: a, litellm_params: { model: openai/a }, model_info: { id: a1 } }\n",
        ),
        (
            "conf.d/second.yaml",
            "model_list:\n  - { model_name: b, litellm_params: { model: openai/b }, model_info: { id: b1 } }\n",
        ),
        ("conf.d/empty.yaml", ""),
    ]);
    let ids: Vec<String> = dir.load().expect("loads").deployments.iter().map(|d| d.id.to_string()).collect();
    assert_eq!(ids, ["a1", "b1"]);
}

#[test]
fn include_errors_name_the_included_file() {
    let missing = ConfigDir::new(&[("config.yaml", "include: [conf.d/nope.yaml]\n")]);
    let err = missing.load().expect_err("missing file");
    assert_eq!(err.kind(), ConfigErrorKind::Io, "{err}");
    assert_eq!(err.path(), "include[0]");
    assert!(err.to_string().contains("nope.yaml"), "{err}");

    let broken = ConfigDir::new(&[("config.yaml", "include: [conf.d/x.yaml]\n"), ("conf.d/x.yaml", "model_list: [\n")]);
    let err = broken.load().expect_err("not YAML");
    assert_eq!(err.kind(), ConfigErrorKind::Yaml, "{err}");
    assert!(err.to_string().starts_with("include[0]: included file `conf.d/x.yaml`"), "{err}");

    let clash = ConfigDir::new(&[
        ("config.yaml", "include: [conf.d/x.yaml]\nrouter_settings: { num_retries: 1 }\n"),
        ("conf.d/x.yaml", "router_settings: [1, 2]\n"),
    ]);
    let err = clash.load().expect_err("a list into a mapping");
    assert_eq!(err.path(), "include[0]");
    assert!(err.to_string().contains("extends `router_settings`, which the config sets to a mapping"), "{err}");

    let bad_entry = ConfigDir::new(&[
        (
            "config.yaml",
            "include: [conf.d/x.yaml]\nmodel_list:\n  - { model_name: a, litellm_params: { model: openai/a } }\n",
        ),
        ("conf.d/x.yaml", "model_list:\n  - { model_name: b, litellm_params: { model: openai/b, rpm: -1 } }\n"),
    ]);
    let err = bad_entry.load().expect_err("a bad entry");
    assert!(err.path().starts_with("model_list[1]"), "{err}");
    assert!(err.to_string().ends_with("(from `conf.d/x.yaml`)"), "{err}");

    let not_a_list = ConfigDir::new(&[("config.yaml", "include: conf.d/x.yaml\n")]);
    assert_eq!(not_a_list.load().expect_err("not a list").path(), "include");

    let cycle = ConfigDir::new(&[("config.yaml", "include: [config.yaml]\n")]);
    assert!(cycle.load().expect_err("a cycle").to_string().contains("cycle"));
}

#[test]
fn include_in_a_config_read_from_a_string_is_ignored_with_a_warning() {
    let c = load("include: [models.yaml]\nmodel_list: []\n").expect("loads");
    assert!(c.warnings.iter().any(|w| w.contains("`include`") && w.contains("Config::from_path")), "{:#?}", c.warnings);
}

// ---- pre-router entries (`auto_router/...`) ------------------------------------------------

const TWO_GROUPS: &str = "model_list:
  - { model_name: mini, litellm_params: { model: openai/gpt-4o-mini } }
  - { model_name: big, litellm_params: { model: openai/gpt-4o } }
";

/// `TWO_GROUPS` and one more `model_list` entry (index 2), written as YAML flow lines.
fn with_entry(entry: &str) -> String {
    format!("{TWO_GROUPS}  - {entry}\n")
}

#[test]
fn a_complexity_router_entry_is_a_virtual_name_not_a_deployment() {
    let c = load(&with_entry(
        "{ model_name: smart, litellm_params: { model: auto_router/complexity_router, \
         complexity_router_config: { tiers: { SIMPLE: mini, MEDIUM: mini, COMPLEX: big, REASONING: big }, \
         tier_boundaries: { simple_medium: 0.2 }, tier_labels: { SIMPLE: cheap } } } }",
    ))
    .expect("loads");
    assert_eq!(c.deployments.len(), 2, "the entry is no deployment");
    assert_eq!(c.pre_routers.len(), 1);
    assert_eq!(c.pre_routers[0].name, "smart");
    let switchyard::config::AutoRouter::Complexity(config) = &c.pre_routers[0].router else {
        panic!("a complexity router: {:?}", c.pre_routers[0]);
    };
    // Without `complexity_router_default_model`: the MEDIUM group, as LiteLLM derives it.
    assert_eq!(config.default_model.as_deref(), Some("mini"));
    assert_eq!(config.tier_boundaries.simple_medium, 0.2);
    assert!(
        c.warnings.iter().any(|w| w.contains("model_list[2].litellm_params.complexity_router_config.tier_labels")),
        "{:#?}",
        c.warnings
    );
    assert_eq!(c.build_pre_routers().expect("builds").names().collect::<Vec<_>>(), ["smart"]);
}

#[test]
fn a_complexity_tier_naming_an_unknown_group_fails_the_load_naming_the_path_and_the_groups() {
    assert_err(
        &with_entry(
            "{ model_name: smart, litellm_params: { model: auto_router/complexity_router, \
             complexity_router_default_model: mini, complexity_router_config: { tiers: { SIMPLE: mini, COMPLEX: gpt-5 } } } }",
        ),
        ConfigErrorKind::Invalid,
        "model_list[2].litellm_params.complexity_router_config.tiers.COMPLEX",
        "`gpt-5` is not a model group, an alias, or a name a wildcard `model_name` matches (known: big, mini)",
    );
    assert_err(
        &with_entry(
            "{ model_name: smart, litellm_params: { model: auto_router/complexity_router, \
             complexity_router_default_model: nowhere, complexity_router_config: { tiers: { SIMPLE: mini } } } }",
        ),
        ConfigErrorKind::Invalid,
        "model_list[2].litellm_params.complexity_router_default_model",
        "`nowhere` is not a model group",
    );
}

#[test]
fn a_tier_may_name_an_alias_or_a_name_a_pattern_matches() {
    let yaml = "model_list:
  - { model_name: \"openai/*\", litellm_params: { model: \"openai/*\" } }
  - { model_name: mini, litellm_params: { model: openai/gpt-4o-mini } }
  - model_name: smart
    litellm_params:
      model: auto_router/complexity_router
      complexity_router_config: { tiers: { SIMPLE: small, MEDIUM: openai/gpt-4o } }
router_settings: { model_group_alias: { small: mini } }
";
    let c = load(yaml).expect("loads");
    assert_eq!(c.pre_routers.len(), 1);
}

#[test]
fn invalid_pre_router_entries_are_refused_with_their_path() {
    let complexity = |config: &str| {
        with_entry(&format!(
            "{{ model_name: smart, litellm_params: {{ model: auto_router/complexity_router, complexity_router_config: {config} }} }}"
        ))
    };
    // No default model can be derived: no MEDIUM or SIMPLE tier and no default.
    assert_err(
        &complexity("{ tiers: { COMPLEX: big } }"),
        ConfigErrorKind::Invalid,
        "model_list[2].litellm_params.complexity_router_config",
        "complexity_router_default_model is required",
    );
    // A typo inside a strict section, a tier that is no tier.
    for (config, word) in [
        ("{ tiers: { SIMPLE: mini }, tier_boundaries: { simple_medum: 0.2 } }", "simple_medum"),
        ("{ tiers: { HARD: big } }", "HARD"),
    ] {
        let err = load_err(&complexity(config));
        assert_eq!(err.kind(), ConfigErrorKind::Type, "{err}");
        assert!(err.path().starts_with("model_list[2].litellm_params.complexity_router_config"), "{err}");
        assert!(err.to_string().contains(word), "{err}");
    }
    // A setting that would route differently from LiteLLM.
    assert_err(
        &complexity("{ tiers: { SIMPLE: mini }, classifier_type: llm }"),
        ConfigErrorKind::Invalid,
        "model_list[2].litellm_params.complexity_router_config",
        "`classifier_type: \"llm\"` is not supported",
    );
    // The semantic router is not implemented; the adaptive one needs its config.
    assert_err(
        &with_entry(
            "{ model_name: semantic, litellm_params: { model: auto_router/my-router, auto_router_config: '{}', \
             auto_router_default_model: mini, auto_router_embedding_model: mini } }",
        ),
        ConfigErrorKind::Invalid,
        "model_list[2].litellm_params.model",
        "semantic auto router",
    );
    assert_err(
        &with_entry("{ model_name: a, litellm_params: { model: auto_router/adaptive_router } }"),
        ConfigErrorKind::Invalid,
        "model_list[2].litellm_params.adaptive_router_config",
        "is required",
    );
    // A virtual name must be its own.
    assert_err(
        &with_entry(
            "{ model_name: big, litellm_params: { model: auto_router/complexity_router, complexity_router_default_model: mini } }",
        ),
        ConfigErrorKind::Invalid,
        "model_list[2].model_name",
        "is a model group or an alias already",
    );
    let twice = format!(
        "{}  - {{ model_name: smart, litellm_params: {{ model: auto_router/complexity_router, complexity_router_config: {{ tiers: {{ SIMPLE: big }} }} }} }}\n",
        with_entry(
            "{ model_name: smart, litellm_params: { model: auto_router/complexity_router, complexity_router_config: { tiers: { SIMPLE: mini } } } }"
        )
    );
    assert_err(
        &twice,
        ConfigErrorKind::Invalid,
        "model_list[3].model_name",
        "also the name of the pre-router of model_list[2]",
    );
}

#[test]
fn a_pre_router_entry_ignores_provider_keys_with_a_warning() {
    let c = load(&with_entry(
        "{ model_name: smart, rpm: 9, litellm_params: { model: auto_router/complexity_router, api_key: sk-x, rpm: 5, timeout: 3, \
         complexity_router_default_model: mini, quality_router_default_model: big, \
         complexity_router_config: { tiers: { SIMPLE: mini, COMPLEX: big } } } }",
    ))
    .expect("loads");
    for key in [
        "rpm",
        "litellm_params.api_key",
        "litellm_params.rpm",
        "litellm_params.timeout",
        "litellm_params.quality_router_default_model",
    ] {
        let path = format!("model_list[2].{key}");
        assert!(c.warnings.iter().any(|w| w.contains(&path)), "{path}: {:#?}", c.warnings);
    }
}

/// Groups with quality tiers and a quality router over them.
fn quality(prefs: [&str; 2], router: &str) -> String {
    format!(
        "model_list:
  - {{ model_name: mini, litellm_params: {{ model: openai/gpt-4o-mini }}, model_info: {{ {} }} }}
  - {{ model_name: big, litellm_params: {{ model: openai/gpt-4o }}, model_info: {{ {} }} }}
  - {{ model_name: q, litellm_params: {{ model: auto_router/quality_router, {router} }} }}
",
        prefs[0], prefs[1]
    )
}

#[test]
fn quality_tiers_are_read_from_routing_preferences_or_the_shorthand() {
    let c = load(&quality(
        ["litellm_routing_preferences: { quality_tier: 1, keywords: [hi], order: 2 }", "quality_tier: 3"],
        "quality_router_config: { available_models: [mini, big] }, quality_router_default_model: big",
    ))
    .expect("loads");
    assert_eq!(c.routing_preferences["mini"].quality_tier, 1);
    assert_eq!(c.routing_preferences["mini"].keywords, ["hi"]);
    assert_eq!(c.routing_preferences["big"].quality_tier, 3);
    assert!(c.warnings.is_empty(), "{:#?}", c.warnings);
    assert_eq!(c.build_pre_routers().expect("builds").names().collect::<Vec<_>>(), ["q"]);
}

#[test]
fn invalid_quality_router_settings_are_refused_with_their_path() {
    let tiers = ["quality_tier: 1", "quality_tier: 2"];
    assert_err(
        &quality(tiers, "quality_router_config: { available_models: [mini, big] }"),
        ConfigErrorKind::Invalid,
        "model_list[2].litellm_params.quality_router_default_model",
        "is required",
    );
    assert_err(
        &quality(
            tiers,
            "quality_router_config: { available_models: [mini, gpt-5] }, quality_router_default_model: mini",
        ),
        ConfigErrorKind::Invalid,
        "model_list[2].litellm_params.quality_router_config.available_models[1]",
        "`gpt-5` is not a model group in `model_list`",
    );
    assert_err(
        &quality(
            ["quality_tier: 1", "blocked: false"],
            "quality_router_config: { available_models: [mini, big] }, quality_router_default_model: mini",
        ),
        ConfigErrorKind::Invalid,
        "model_list[2].litellm_params.quality_router_config.available_models[1]",
        "model group `big` declares no quality tier",
    );
    assert_err(
        &quality(
            tiers,
            "quality_router_config: { available_models: [mini], complexity_to_quality: { SIMPLE: 1 } }, quality_router_default_model: mini",
        ),
        ConfigErrorKind::Invalid,
        "model_list[2].litellm_params.quality_router_config.complexity_to_quality",
        "has no quality tier for MEDIUM",
    );
    assert_err(
        &quality(["quality_tier: -1", "quality_tier: 2"], "quality_router_default_model: mini"),
        ConfigErrorKind::Invalid,
        "model_list[0].model_info.quality_tier",
        "must be >= 0",
    );
    assert_err(
        &quality(
            ["quality_tier: 1, litellm_routing_preferences: { quality_tier: 2 }", "quality_tier: 2"],
            "quality_router_default_model: mini",
        ),
        ConfigErrorKind::Invalid,
        "model_list[0].model_info.quality_tier",
        "differs from `litellm_routing_preferences.quality_tier` (2)",
    );
    assert_err(
        &quality(
            ["litellm_routing_preferences: { keywords: [a] }", "quality_tier: 2"],
            "quality_router_default_model: mini",
        ),
        ConfigErrorKind::Type,
        "model_list[0].model_info.litellm_routing_preferences",
        "quality_tier",
    );
    let split = "model_list:
  - { model_name: g, litellm_params: { model: openai/a }, model_info: { quality_tier: 1 } }
  - { model_name: g, litellm_params: { model: openai/b }, model_info: { quality_tier: 2 } }
";
    assert_err(
        split,
        ConfigErrorKind::Invalid,
        "model_list[1].model_info.litellm_routing_preferences.quality_tier",
        "a group has one quality tier",
    );
}

#[test]
fn a_pre_router_built_in_code_is_checked_by_validate() {
    use switchyard::config::{AutoRouter, PreRouterEntry};
    use switchyard::layers::preroute::complexity::{ComplexityRouterConfig, Tier};

    let mut c = load(TWO_GROUPS).expect("loads");
    c.pre_routers.push(PreRouterEntry::new(
        "smart",
        AutoRouter::Complexity(Box::new(ComplexityRouterConfig::with_tiers([
            (Tier::Simple, "mini"),
            (Tier::Medium, "typo"),
        ]))),
    ));
    let err = c.validate().expect_err("an unknown group");
    assert_eq!(err.path(), "pre_routers[0].complexity_router_config.tiers.MEDIUM", "{err}");
}
