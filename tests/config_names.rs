//! The LiteLLM config keys of name resolution and deployments (issue 23): `organization` lists,
//! `model_info.supported_environments` with `LITELLM_ENVIRONMENT`,
//! `litellm_settings.model_alias_map`, `provider-budget-routing`, and the newer `RetryPolicy`
//! fields. Ported from LiteLLM's `test_router.py` (organization expansion,
//! `test_deployment_is_active_for_environment`) and `test_router_retries.py` (retry policies).

use std::collections::HashMap;

use switchyard::config::{Alias, Config, ConfigError, ConfigErrorKind};
use switchyard::layers::{Outcome, select::RoutingStrategy};

fn load_with(yaml: &str, vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
    let vars: HashMap<String, String> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    Config::from_yaml_str_with_env(yaml, &|name| vars.get(name).cloned())
}

fn load(yaml: &str) -> Result<Config, ConfigError> {
    load_with(yaml, &[])
}

#[track_caller]
fn assert_err(result: Result<Config, ConfigError>, kind: ConfigErrorKind, path: &str, fragment: &str) {
    let err = match result {
        Ok(c) => panic!("expected an error, loaded {c:?}"),
        Err(e) => e,
    };
    assert_eq!((err.kind(), err.path()), (kind, path), "{err}");
    assert!(err.to_string().contains(fragment), "`{err}` does not contain `{fragment}`");
}

// ===== organization =====

#[test]
fn an_organization_list_expands_into_one_deployment_per_organization() {
    let c = load(
        "model_list:\n  - model_name: gpt-4o\n    litellm_params: { model: openai/gpt-4o, organization: [org-a, org-b] }\n",
    )
    .expect("loads");
    let orgs: Vec<&str> = c.deployments.iter().map(|d| d.params["organization"].as_str().expect("a string")).collect();
    assert_eq!(orgs, ["org-a", "org-b"]);
    assert!(c.deployments.iter().all(|d| &*d.group == "gpt-4o"));
    assert_ne!(c.deployments[0].id, c.deployments[1].id, "ids derived from each deployment's parameters");
    let again = load(
        "model_list:\n  - model_name: gpt-4o\n    litellm_params: { model: openai/gpt-4o, organization: [org-a, org-b] }\n",
    )
    .expect("loads");
    assert_eq!(again.deployments[1].id, c.deployments[1].id, "and stable across loads");
}

#[test]
fn expanded_deployments_with_an_explicit_id_are_numbered_and_never_carry_the_organization() {
    let c = load(
        "model_list:\n  - model_name: gpt-4o\n    litellm_params: { model: openai/gpt-4o, organization: [org-secret-a, org-secret-b] }\n    model_info: { id: main }\n",
    )
    .expect("loads");
    let ids: Vec<&str> = c.deployments.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, ["main-1", "main-2"]);
    // An entry after the expansion is still named by its own index.
    let yaml = "model_list:\n  - model_name: gpt-4o\n    litellm_params: { model: openai/gpt-4o, organization: [a, b] }\n    model_info: { id: main }\n  - model_name: mini\n    litellm_params: { model: openai/gpt-4o-mini }\n    model_info: { id: main-2 }\n";
    assert_err(load(yaml), ConfigErrorKind::Invalid, "model_list[1]", "model_list[0]");
}

#[test]
fn an_empty_or_malformed_organization_list_is_refused_naming_it() {
    let yaml = "model_list:\n  - model_name: g\n    litellm_params: { model: openai/gpt-4o, organization: [] }\n";
    assert_err(load(yaml), ConfigErrorKind::Invalid, "model_list[0].litellm_params.organization", "at least one");
    let yaml =
        "model_list:\n  - model_name: g\n    litellm_params: { model: openai/gpt-4o, organization: [org-a, true] }\n";
    assert_err(load(yaml), ConfigErrorKind::Type, "model_list[0].litellm_params.organization[1]", "must be a string");
}

// ===== supported_environments =====

const ENVIRONMENTS: &str = "model_list:
  - model_name: gpt-4o
    litellm_params: { model: openai/gpt-4o }
    model_info: { id: everywhere }
  - model_name: gpt-4o
    litellm_params: { model: openai/gpt-4o-2024-08-06 }
    model_info: { id: prod, supported_environments: [production] }
  - model_name: gpt-4o
    litellm_params: { model: openai/gpt-4o-2024-11-20 }
    model_info: { id: staging, supported_environments: [development, staging] }
";

#[test]
fn supported_environments_load_a_deployment_only_in_its_environments() {
    let ids = |c: Config| c.deployments.iter().map(|d| d.id.to_string()).collect::<Vec<_>>();
    let c = load_with(ENVIRONMENTS, &[("LITELLM_ENVIRONMENT", "production")]).expect("loads");
    assert_eq!(ids(c), ["everywhere", "prod"]);
    let c = load_with(ENVIRONMENTS, &[("LITELLM_ENVIRONMENT", "staging")]).expect("loads");
    assert_eq!(ids(c), ["everywhere", "staging"]);
    // The config's own `environment_variables` count, as LiteLLM exports them first.
    let yaml = format!("environment_variables: {{ LITELLM_ENVIRONMENT: development }}\n{ENVIRONMENTS}");
    assert_eq!(ids(load(&yaml).expect("loads")), ["everywhere", "staging"]);
    // No key is warned about.
    let c = load_with(ENVIRONMENTS, &[("LITELLM_ENVIRONMENT", "production")]).expect("loads");
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
}

#[test]
fn supported_environments_need_a_valid_litellm_environment() {
    let path = "model_list[1].model_info.supported_environments";
    assert_err(load(ENVIRONMENTS), ConfigErrorKind::Env, path, "`LITELLM_ENVIRONMENT` is not");
    assert_err(load_with(ENVIRONMENTS, &[("LITELLM_ENVIRONMENT", "prod")]), ConfigErrorKind::Env, path, "`prod`");
    let yaml = "model_list:\n  - model_name: g\n    litellm_params: { model: openai/gpt-4o }\n    model_info: { supported_environments: [qa] }\n";
    let env = [("LITELLM_ENVIRONMENT", "production")];
    assert_err(
        load_with(yaml, &env),
        ConfigErrorKind::Invalid,
        "model_list[0].model_info.supported_environments[0]",
        "staging",
    );
    let yaml = "model_list:\n  - model_name: g\n    litellm_params: { model: openai/gpt-4o }\n    model_info: { supported_environments: production }\n";
    assert_err(
        load_with(yaml, &env),
        ConfigErrorKind::Type,
        "model_list[0].model_info.supported_environments",
        "a list",
    );
}

#[test]
fn errors_after_a_skipped_entry_name_its_own_index() {
    let yaml = format!(
        "{ENVIRONMENTS}  - model_name: mini\n    litellm_params: {{ model: openai/gpt-4o-mini }}\n    model_info: {{ id: everywhere }}\n"
    );
    assert_err(
        load_with(&yaml, &[("LITELLM_ENVIRONMENT", "production")]),
        ConfigErrorKind::Invalid,
        "model_list[3]",
        "model_list[0]",
    );
}

// ===== model_alias_map =====

#[test]
fn model_alias_map_entries_are_hidden_aliases() {
    let yaml = "model_list:\n  - model_name: gpt-4o\n    litellm_params: { model: openai/gpt-4o }\nlitellm_settings:\n  model_alias_map: { gpt-4: gpt-4o }\n";
    let c = load(yaml).expect("loads");
    assert_eq!(c.aliases, [Alias::new("gpt-4", "gpt-4o", true)]);
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
}

#[test]
fn model_group_alias_wins_over_model_alias_map_with_a_warning() {
    let yaml = "model_list:\n  - model_name: gpt-4o\n    litellm_params: { model: openai/gpt-4o }\n  - model_name: mini\n    litellm_params: { model: openai/gpt-4o-mini }\nrouter_settings:\n  model_group_alias: { fast: mini }\nlitellm_settings:\n  model_alias_map: { fast: gpt-4o }\n";
    let c = load(yaml).expect("loads");
    assert_eq!(c.aliases, [Alias::new("fast", "mini", false)]);
    assert!(c.warnings.iter().any(|w| w.contains("litellm_settings.model_alias_map.fast")), "{:?}", c.warnings);
}

#[test]
fn a_model_alias_map_entry_must_name_a_group() {
    let base = "model_list:\n  - model_name: gpt-4o\n    litellm_params: { model: openai/gpt-4o }\nlitellm_settings:\n";
    let path = "litellm_settings.model_alias_map.gpt-4";
    assert_err(
        load(&format!("{base}  model_alias_map: {{ gpt-4: [gpt-4o] }}\n")),
        ConfigErrorKind::Type,
        path,
        "model group",
    );
    assert_err(load(&format!("{base}  model_alias_map: {{ gpt-4: nope }}\n")), ConfigErrorKind::Invalid, path, "nope");
}

// ===== routing strategy and retry policies =====

#[test]
fn provider_budget_routing_is_accepted_as_litellms_strategy_name() {
    let c = load("router_settings: { routing_strategy: provider-budget-routing }").expect("loads");
    assert_eq!(c.routing_strategy, RoutingStrategy::SimpleShuffle);
}

#[test]
fn the_newer_retry_policy_fields_are_read() {
    let yaml = "router_settings:\n  retry_policy: { NotFoundErrorRetries: 1, ServiceUnavailableErrorRetries: 2, BadGatewayErrorRetries: 3, DefaultRetries: 4 }\n  model_group_retry_policy: { gpt-4o: { DefaultRetries: 0 } }\n";
    let c = load(yaml).expect("loads");
    let policy = c.retry.retry_policy.expect("set");
    assert_eq!(policy.for_outcome(Outcome::NotFound), Some(1));
    assert_eq!(policy.for_failure(Outcome::ServerError, Some(503)), Some(2));
    assert_eq!(policy.for_failure(Outcome::ServerError, Some(502)), Some(3));
    assert_eq!(policy.default, Some(4));
    assert_eq!(c.retry.group_retry_policies["gpt-4o"].default, Some(0));
    assert_err(
        load("router_settings: { retry_policy: { DefaultRetry: 1 } }"),
        ConfigErrorKind::Invalid,
        "router_settings.retry_policy.DefaultRetry",
        "DefaultRetries",
    );
}

#[test]
fn a_fallback_target_may_be_a_bare_name_a_wildcard_serves_or_a_provider_model() {
    let yaml = "model_list:\n  - model_name: \"openai/*\"\n    litellm_params: { model: \"openai/*\", api_base: \"http://h/v1\" }\n  - model_name: eu\n    litellm_params: { model: custom_openai/eu-model, api_base: \"http://h/v1\" }\nrouter_settings:\n  fallbacks: [{ eu: [gpt-4o-mini, custom_openai/eu-model] }]\n";
    load(yaml).expect("both targets resolve as the registry resolves them");
    let bad = yaml.replace("gpt-4o-mini", "my-own-model");
    assert_err(
        load(&bad),
        ConfigErrorKind::Invalid,
        "router_settings.fallbacks[0].eu[0]",
        "`my-own-model` is not a model group",
    );
}
