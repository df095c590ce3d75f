//! Behaviour of the registry: names, aliases, wildcard patterns, deployment ids and runtime
//! changes, driven through the real `SelectLayer` where a request is involved. Census rows:
//! `research/litellm-router-census.md` §1.4, §3.1 rows 6 and 9-11, §3.2 rows 37-39.

mod support;

use std::{collections::BTreeSet, sync::Arc};

use http_body_util::BodyExt;
use proptest::{
    prelude::*,
    test_runner::{Config as ProptestConfig, RngSeed},
};
use support::*;
use switchyard_layers::{
    ApiKey, BoxError, Deployment, DeploymentId, Registry, RouteBody, RouteErrorKind, StateStore,
    deployment::RegistryError, select::RoutingStrategy,
};
use tower::{ServiceExt, service_fn};

fn memory() -> Arc<StateStore> {
    Arc::new(StateStore::memory())
}

/// Sends one request for `model` and returns (serving deployment, provider model it was sent
/// with, serving group).
async fn route(registry: &Arc<Registry>, model: &str) -> Result<(String, String, String), BoxError> {
    let provider = service_fn(|req: Req| async move {
        let ctx = switchyard_layers::RouteRequest::route_ctx(&req).expect("ctx");
        let model = ctx.selected.as_ref().expect("selected").model.to_string();
        Ok::<_, BoxError>(http::Response::new(RouteBody::from(model)))
    });
    let mut svc = stack(select(registry, &memory(), RoutingStrategy::SimpleShuffle), provider);
    let resp = call(&mut svc, request(model)).await?;
    let s = served(&resp).clone();
    let sent_with = resp.into_body().collect().await.expect("body").to_bytes();
    let sent_with = String::from_utf8(sent_with.to_vec()).expect("utf-8");
    assert_eq!(sent_with, &*s.model, "the provider got the model Served names");
    Ok((s.deployment.to_string(), s.model.to_string(), s.group.to_string()))
}

// ---------------------------------------------------------------------------------------------
// Wildcard patterns
// ---------------------------------------------------------------------------------------------

/// Census §3.1 row 6: a `*` deployment serves any model name, with the requested name put into
/// the provider model's wildcard.
#[tokio::test(start_paused = true)]
async fn star_deployment_serves_any_model_with_the_name_substituted() {
    let reg = registry([Deployment::builder("*", "openai/*").id("any")]);
    for model in ["gpt-4o", "gpt-4.1-mini", "o3"] {
        for _ in 0..25 {
            let (d, sent, group) = route(&reg, model).await.expect("served");
            assert_eq!((d.as_str(), group.as_str()), ("any", "*"));
            assert_eq!(sent, format!("openai/{model}"));
        }
    }
}

/// Census §3.2 row 39: `openai/*` captures the model after the prefix and substitutes it into
/// the deployment's own wildcard; names outside the prefix do not match.
#[tokio::test(start_paused = true)]
async fn provider_prefix_pattern_serves_only_matching_names() {
    let reg = registry([Deployment::builder("openai/*", "azure/*").id("prefixed")]);
    let (d, sent, group) = route(&reg, "openai/gpt-4o").await.expect("served");
    assert_eq!((d.as_str(), sent.as_str(), group.as_str()), ("prefixed", "azure/gpt-4o", "openai/*"));
    let err = route(&reg, "anthropic/claude").await.expect_err("no match");
    route_error(&err, RouteErrorKind::UnknownGroup);
}

/// Census §3.2 row 39 (multi-wildcard): captured segments fill the provider model in order.
#[tokio::test(start_paused = true)]
async fn multi_wildcard_segments_are_substituted_in_order() {
    let reg = registry([Deployment::builder("*/llama-*-instruct", "together/*/Meta-Llama-*-Instruct").id("llama")]);
    let (_, sent, _) = route(&reg, "groq/llama-3.1-8b-instruct").await.expect("served");
    assert_eq!(sent, "together/groq/Meta-Llama-3.1-8b-Instruct");
}

/// A provider model without a wildcard is used as is for every matching name.
#[tokio::test(start_paused = true)]
async fn pattern_deployment_without_a_wildcard_keeps_its_model() {
    let reg = registry([Deployment::builder("team-a/*", "openai/gpt-4o-mini").id("fixed")]);
    let (_, sent, _) = route(&reg, "team-a/anything").await.expect("served");
    assert_eq!(sent, "openai/gpt-4o-mini");
}

/// Census §3.2 row 38: the most specific pattern wins over `*`, whatever the config order.
#[tokio::test(start_paused = true)]
async fn most_specific_pattern_wins_over_star() {
    let reg = registry([
        Deployment::builder("*", "fallback/*").id("catch-all"),
        Deployment::builder("openai/*", "openai/*").id("openai-any"),
        Deployment::builder("openai/gpt-4*", "azure/gpt-4*").id("gpt-4-family"),
    ]);
    assert_eq!(route(&reg, "openai/gpt-4o").await.expect("served").0, "gpt-4-family");
    assert_eq!(route(&reg, "openai/o3").await.expect("served").0, "openai-any");
    assert_eq!(route(&reg, "mistral-large").await.expect("served").0, "catch-all");
    assert_eq!(route(&reg, "openai/gpt-4o").await.expect("served").1, "azure/gpt-4o");
}

/// A group named exactly as requested wins over any pattern that would match it.
#[tokio::test(start_paused = true)]
async fn exact_group_wins_over_a_matching_pattern() {
    let reg = registry([
        Deployment::builder("openai/*", "openai/*").id("pattern"),
        Deployment::builder("openai/gpt-4o", "azure/gpt-4o-eu").id("exact"),
    ]);
    assert_eq!(route(&reg, "openai/gpt-4o").await.expect("served").0, "exact");
    assert_eq!(route(&reg, "openai/gpt-4o-mini").await.expect("served").0, "pattern");
}

/// Census §3.2 row 37 and §1.4: LiteLLM anchors patterns only at the start, so `a*b` matched
/// `axbyz`. Patterns match the whole name here.
#[tokio::test(start_paused = true)]
async fn patterns_are_anchored_at_both_ends() {
    let reg = registry([Deployment::builder("a*b", "openai/*").id("glob")]);
    assert_eq!(route(&reg, "axb").await.expect("matches").1, "openai/x");
    assert_eq!(route(&reg, "ab").await.expect("an empty capture matches").1, "openai/");
    for name in ["axbyz", "xaxb", "ba"] {
        let err = route(&reg, name).await.expect_err(name);
        route_error(&err, RouteErrorKind::UnknownGroup);
    }
}

/// A reference glob matcher: `*` matches any run of characters, everything else itself.
fn glob(pattern: &[u8], name: &[u8]) -> bool {
    match pattern.split_first() {
        None => name.is_empty(),
        Some((b'*', rest)) => (0..=name.len()).any(|i| glob(rest, &name[i..])),
        Some((c, rest)) => name.first() == Some(c) && glob(rest, &name[1..]),
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        rng_seed: RngSeed::Fixed(SEED),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Any pattern resolves exactly the names a whole-name glob match accepts, and putting the
    /// captured segments back into the same pattern rebuilds the requested name.
    #[test]
    fn pattern_resolution_agrees_with_whole_name_glob_matching(
        pattern in "[ab/]{0,3}\\*[ab/*]{0,4}",
        name in "[ab/]{0,8}",
    ) {
        let reg = Registry::new();
        reg.add(Deployment::builder(pattern.as_str(), format!("p/{pattern}")).id("d").build().expect("valid"))
            .expect("one deployment");
        let resolved = reg.resolve(&name);
        prop_assert_eq!(resolved.is_ok(), glob(pattern.as_bytes(), name.as_bytes()));
        if let Ok(r) = resolved {
            prop_assert_eq!(r.group.deployments()[0].model.to_string(), format!("p/{name}"));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Deployment ids
// ---------------------------------------------------------------------------------------------

/// Census §3.1 row 9 and §1.4 step 2: a deployment id as the model routes to exactly that
/// deployment, whatever the weights; it is served under its own group.
#[tokio::test(start_paused = true)]
async fn requesting_a_deployment_id_routes_to_exactly_that_deployment() {
    let reg = registry([dep("gpt-4o", "eu").weight(1.0), dep("gpt-4o", "us").weight(1000.0)]);
    for _ in 0..50 {
        let (d, _, group) = route(&reg, "eu").await.expect("served");
        assert_eq!((d.as_str(), group.as_str()), ("eu", "gpt-4o"));
    }
}

#[tokio::test(start_paused = true)]
async fn requesting_a_blocked_deployment_by_id_is_no_candidates() {
    let reg = registry([dep("gpt-4o", "eu").blocked(true), dep("gpt-4o", "us")]);
    let err = route(&reg, "eu").await.expect_err("blocked");
    route_error(&err, RouteErrorKind::NoCandidates);
}

/// Census §3.1 row 10: the same group and provider parameters give the same id, whichever way
/// the deployment reaches the registry.
#[test]
fn same_group_and_parameters_give_the_same_id() {
    let build = || {
        Deployment::builder("gpt-4o", "azure/gpt-4o")
            .api_base("https://eu.example.com")
            .api_key(ApiKey::new("sk-1"))
            .rpm(600)
            .param("temperature", 0.2.into())
            .param("seed", 7.into())
            .build()
            .expect("valid")
    };
    let reordered = Deployment::builder("gpt-4o", "azure/gpt-4o")
        .param("seed", 7.into())
        .param("temperature", 0.2.into())
        .rpm(600)
        .api_key(ApiKey::new("sk-1"))
        .api_base("https://eu.example.com")
        .build()
        .expect("valid");
    assert_eq!(build().id, build().id);
    assert_eq!(build().id, reordered.id, "parameter order does not matter");
    assert_eq!(build().id.as_str().len(), 32);

    let reg = Registry::new();
    reg.upsert(build()).expect("upsert");
    reg.upsert(build()).expect("upsert of the same entry replaces it");
    assert_eq!(reg.deployments().len(), 1);
    assert_eq!(reg.add(build()), Err(RegistryError::DuplicateId(build().id)));
}

/// Census §3.1 row 11: any difference in provider parameters (credentials included) gives a
/// different id, and the group name is part of the identity.
#[test]
fn different_parameters_or_credentials_give_different_ids() {
    let base = || Deployment::builder("gpt-4o", "openai/gpt-4o");
    let ids: BTreeSet<DeploymentId> = [
        base(),
        base().api_key(ApiKey::new("sk-1")),
        base().api_key(ApiKey::new("sk-2")),
        base().api_base("https://a.example.com"),
        base().rpm(10),
        base().tpm(10),
        base().weight(2.0),
        base().param("temperature", 0.5.into()),
        Deployment::builder("gpt-4o-eu", "openai/gpt-4o"),
    ]
    .into_iter()
    .map(|b| b.build().expect("valid").id)
    .collect();
    assert_eq!(ids.len(), 9);
}

/// An explicit id (`model_info.id`) is kept, and survives edits through `to_builder`.
#[test]
fn explicit_id_is_kept_across_edits() {
    let d = Deployment::builder("gpt-4o", "openai/gpt-4o").id("primary").rpm(10).build().expect("valid");
    assert_eq!(d.id.as_str(), "primary");
    let edited = d.to_builder().rpm(20).blocked(true).build().expect("valid");
    assert_eq!(edited.id.as_str(), "primary");
}

// ---------------------------------------------------------------------------------------------
// Aliases and unknown names
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn unknown_group_lists_groups_and_visible_aliases_but_not_hidden_ones() {
    let reg = registry([dep("gpt-4o", "a"), dep("claude", "b"), Deployment::builder("openai/*", "openai/*").id("p")]);
    reg.set_alias("fast", "gpt-4o", false).expect("target exists");
    reg.set_alias("secret", "claude", true).expect("target exists");
    let err = route(&reg, "no-such-model").await.expect_err("unknown");
    let route_err = route_error(&err, RouteErrorKind::UnknownGroup);
    assert_eq!(route_err.known_groups(), ["claude", "fast", "gpt-4o", "openai/*"]);
    assert_eq!(route_err.http_status(), http::StatusCode::NOT_FOUND);
    assert!(route_err.to_string().contains("no-such-model"));
    assert_eq!(route(&reg, "secret").await.expect("a hidden alias still resolves").2, "claude");
    assert_eq!(reg.names(), ["claude", "fast", "gpt-4o", "openai/*"]);
}

#[test]
fn alias_to_an_unknown_group_is_rejected() {
    let reg = registry([dep("gpt-4o", "a")]);
    let err = reg.set_alias("fast", "gpt-5", false).expect_err("no such group");
    assert!(matches!(err, RegistryError::UnknownAliasTarget { .. }), "{err:?}");
    assert!(!reg.knows("fast"));
}

/// An alias is looked up before groups (§1.4 step 3), and removing it makes the name unknown.
#[tokio::test(start_paused = true)]
async fn alias_resolves_before_groups_and_can_be_removed() {
    let reg = registry([dep("gpt-4", "old"), dep("gpt-4o", "new")]);
    reg.set_alias("gpt-4", "gpt-4o", false).expect("target exists");
    assert_eq!(route(&reg, "gpt-4").await.expect("served").0, "new");
    assert!(reg.remove_alias("gpt-4"));
    assert!(!reg.remove_alias("gpt-4"));
    assert_eq!(route(&reg, "gpt-4").await.expect("served").0, "old");
}

/// An alias whose target group has lost its last deployment does not resolve, so it is not
/// listed as a known name either; it works again once the group is back.
#[tokio::test(start_paused = true)]
async fn alias_of_a_removed_group_is_not_listed_until_the_group_returns() {
    let reg = registry([dep("gpt-4o", "a"), dep("claude", "b")]);
    reg.set_alias("fast", "gpt-4o", false).expect("target exists");
    reg.remove(&DeploymentId::from("a")).expect("registered");
    let err = route(&reg, "fast").await.expect_err("target gone");
    let route_err = route_error(&err, RouteErrorKind::UnknownGroup);
    assert_eq!(route_err.known_groups(), ["claude"]);
    assert_eq!(reg.names(), ["claude"]);
    reg.add(dep("gpt-4o", "a2").build().expect("valid")).expect("new id");
    assert_eq!(route(&reg, "fast").await.expect("served again").0, "a2");
    assert_eq!(reg.names(), ["claude", "fast", "gpt-4o"]);
}

// ---------------------------------------------------------------------------------------------
// Runtime changes
// ---------------------------------------------------------------------------------------------

/// Requests parked inside the provider keep the deployment they were sent to while the test
/// removes it and adds another; new requests only see the new set; nothing waits on anything.
#[tokio::test(start_paused = true)]
async fn runtime_add_and_remove_while_requests_are_in_flight() {
    let reg = registry([dep("g", "old-1"), dep("g", "old-2")]);
    let store = memory();
    let (mut gate, provider) = gated();
    let mut svc = stack(select(&reg, &store, RoutingStrategy::LeastBusy), provider);
    let parked: Vec<_> = (0..10).map(|_| tokio::spawn(svc.clone().oneshot(parked_request("g")))).collect();
    let mut parked_on = Vec::new();
    for _ in 0..10 {
        parked_on.push(gate.entered.recv().await.expect("request parked"));
    }
    assert_eq!(parked_on.iter().filter(|d| *d == "old-1").count(), 5, "least-busy spread them: {parked_on:?}");

    assert!(reg.remove(&DeploymentId::from("old-1")).is_some());
    assert!(reg.remove(&DeploymentId::from("old-2")).is_some());
    reg.add(dep("g", "new").build().expect("valid")).expect("new id");

    for _ in 0..20 {
        assert_eq!(serve(&mut svc, "g").await, "new");
    }
    assert!(parked.iter().all(|h| !h.is_finished()), "the parked requests are still parked");

    gate.open.send(true).expect("provider alive");
    let mut served_by = Vec::new();
    for h in parked {
        let resp = h.await.expect("task").expect("the removed deployment still answers");
        let by = served(&resp).deployment.to_string();
        let body = resp.into_body().collect().await.expect("body").to_bytes();
        assert_eq!(&body[..], by.as_bytes());
        served_by.push(by);
    }
    served_by.sort();
    parked_on.sort();
    assert_eq!(served_by, parked_on, "each parked request finished on its original deployment");
    for d in ["old-1", "old-2", "new"] {
        assert_eq!(store.local().in_flight(&DeploymentId::from(d)), 0, "{d}");
    }
}

/// `upsert` changes a deployment in place for new requests, e.g. blocking it at runtime.
#[tokio::test(start_paused = true)]
async fn upsert_blocks_a_deployment_for_new_requests() {
    let reg = registry([dep("g", "a"), dep("g", "b")]);
    let mut svc = stack(select(&reg, &memory(), RoutingStrategy::SimpleShuffle), echo());
    let both = tally(&mut svc, "g", 100).await;
    assert!(count(&both, "a") > 0 && count(&both, "b") > 0, "{both:?}");
    let a = reg.deployment(&DeploymentId::from("a")).expect("registered");
    reg.upsert(a.to_builder().blocked(true).build().expect("valid")).expect("upsert");
    assert_eq!(reg.deployments().iter().map(|d| d.id.as_str()).collect::<Vec<_>>(), ["a", "b"], "order kept");
    assert_eq!(count(&tally(&mut svc, "g", 100).await, "b"), 100);
}

/// Removing the last deployment of a group makes the group unknown.
#[tokio::test(start_paused = true)]
async fn removing_the_last_deployment_makes_the_group_unknown() {
    let reg = registry([dep("g", "a"), dep("h", "b")]);
    assert!(reg.knows("g"));
    reg.remove(&DeploymentId::from("a"));
    assert!(!reg.knows("g") && reg.group("g").is_none());
    let err = route(&reg, "g").await.expect_err("gone");
    assert_eq!(route_error(&err, RouteErrorKind::UnknownGroup).known_groups(), ["h"]);
    assert!(reg.remove(&DeploymentId::from("a")).is_none(), "removing twice is a no-op");
}
