//! Facade-level properties: the whole default stack (`Router::from_config`: fallback, retry,
//! cooldown, pre-call, select) over the simulated provider failing every attempt, on a paused
//! clock, with fixed proptest seeds. The provider's own call counts are the ground truth: each
//! group visited gets at most 1 + `num_retries` attempts, at most 1 + `max_fallbacks` groups are
//! visited, and a group left is never visited again, whatever the fallback tables (cycles,
//! self-references, default and per-error tables included). The layer-level properties are in
//! `layers/tests/properties.rs`.

use std::collections::BTreeSet;

use proptest::{
    prelude::*,
    test_runner::{RngAlgorithm, RngSeed},
};
use switchyard::{
    Config, RouteError, RouteErrorKind, Router,
    services::{
        openai::{ChatMessage, ChatRequest},
        profile::Failure,
        sim::{SimProfile, SimProvider},
    },
};

const KINDS: [Failure; 7] = [
    Failure::InternalError,
    Failure::RateLimited,
    Failure::Unavailable,
    Failure::Connect,
    Failure::ContextWindowExceeded,
    Failure::ContentFilter,
    Failure::Unauthorized,
];

/// Groups of 1-3 deployments that all fail (each group with its own kind), and fallback tables
/// drawn at random, self-references and cycles allowed.
#[derive(Clone, Debug)]
struct World {
    groups: Vec<(usize, usize)>,
    general: Vec<(usize, usize)>,
    context_window: Vec<(usize, usize)>,
    content_policy: Vec<(usize, usize)>,
    default: Vec<usize>,
    num_retries: u32,
    max_fallbacks: u32,
}

fn world() -> impl Strategy<Value = World> {
    let edges = || prop::collection::vec((0usize..4, 0usize..4), 0..8);
    (
        prop::collection::vec((1usize..=3, 0..KINDS.len()), 1..=4),
        edges(),
        edges(),
        edges(),
        prop::collection::vec(0usize..4, 0..=2),
        0u32..=3,
        0u32..=4,
    )
        .prop_map(|(groups, general, context_window, content_policy, default, num_retries, max_fallbacks)| World {
            groups,
            general,
            context_window,
            content_policy,
            default,
            num_retries,
            max_fallbacks,
        })
}

impl World {
    fn table(&self, key: &str, edges: &[(usize, usize)], yaml: &mut String) {
        let n = self.groups.len();
        let mut targets: Vec<Vec<usize>> = vec![Vec::new(); n];
        for &(a, b) in edges.iter().filter(|(a, b)| *a < n && *b < n) {
            if !targets[a].contains(&b) {
                targets[a].push(b);
            }
        }
        let entries: Vec<String> = targets
            .iter()
            .enumerate()
            .filter(|(_, t)| !t.is_empty())
            .map(|(a, t)| format!("{{ g{a}: [{}] }}", t.iter().map(|b| format!("g{b}")).collect::<Vec<_>>().join(", ")))
            .collect();
        if !entries.is_empty() {
            yaml.push_str(&format!("  {key}: [{}]\n", entries.join(", ")));
        }
    }

    fn config(&self) -> Config {
        let mut yaml = String::from("model_list:\n");
        for (g, (size, _)) in self.groups.iter().enumerate() {
            for d in 0..*size {
                yaml.push_str(&format!(
                    "  - {{ model_name: g{g}, litellm_params: {{ model: openai/g{g}d{d} }}, \
                     model_info: {{ id: g{g}d{d} }} }}\n"
                ));
            }
        }
        yaml.push_str(&format!(
            "router_settings:\n  num_retries: {}\n  max_fallbacks: {}\n",
            self.num_retries, self.max_fallbacks
        ));
        self.table("fallbacks", &self.general, &mut yaml);
        self.table("context_window_fallbacks", &self.context_window, &mut yaml);
        self.table("content_policy_fallbacks", &self.content_policy, &mut yaml);
        let default: BTreeSet<String> =
            self.default.iter().filter(|g| **g < self.groups.len()).map(|g| format!("g{g}")).collect();
        if !default.is_empty() {
            yaml.push_str(&format!("  default_fallbacks: [{}]\n", default.into_iter().collect::<Vec<_>>().join(", ")));
        }
        Config::from_yaml_str(&yaml).unwrap_or_else(|e| panic!("generated config is valid: {e}\n{yaml}"))
    }

    fn provider(&self, seed: u64) -> SimProvider {
        let mut sim = SimProvider::new(seed);
        for (g, (size, kind)) in self.groups.iter().enumerate() {
            let profile = SimProfile::builder().fail(KINDS[*kind], 1.0).build().expect("valid profile");
            for d in 0..*size {
                sim = sim.profile(format!("g{g}d{d}"), profile.clone());
            }
        }
        sim
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 128,
        rng_seed: RngSeed::Fixed(0x5EED_0008),
        rng_algorithm: RngAlgorithm::ChaCha,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Counted at the provider, per call: attempts <= (1 + retries) × groups visited, groups
    /// visited <= 1 + max_fallbacks, every call fails typed, and the trail never returns to a
    /// group it left.
    #[test]
    fn always_failing_calls_have_bounded_attempts_and_never_revisit_a_group(world in world(), seed in 0u64..1_000) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build();
        rt.expect("runtime").block_on(async {
            let sim = world.provider(seed);
            let stats = sim.stats();
            let router = Router::builder(&world.config()).seed(seed).build(sim).expect("router");
            for call in 0..3 {
                let before = stats.snapshot();
                let err = match router.chat(ChatRequest::new("g0", vec![ChatMessage::user("hi")])).await {
                    Ok(answer) => panic!("every deployment fails, yet {} answered", answer.served.deployment),
                    Err(e) => e,
                };
                let after = stats.snapshot();
                let route: &RouteError = &err;
                prop_assert!(
                    matches!(
                        route.kind(),
                        RouteErrorKind::Upstream | RouteErrorKind::AllCoolingDown | RouteErrorKind::NoCandidates
                    ),
                    "{:?}", route.kind()
                );
                let mut attempts = 0;
                let mut groups = BTreeSet::new();
                for (id, s) in &after {
                    let calls = s.calls - before.get(id).map_or(0, |b| b.calls);
                    if calls > 0 {
                        attempts += calls;
                        groups.insert(id.as_str().split('d').next().unwrap_or_default().to_owned());
                    }
                }
                let visited = groups.len() as u64;
                // Nothing is cooling down before the first call: it must reach the provider.
                prop_assert!(call > 0 || attempts > 0, "the first call made no attempt: {}", route);
                let max_groups = 1 + u64::from(world.max_fallbacks);
                prop_assert!(visited <= max_groups, "{} groups, max_fallbacks {}", visited, world.max_fallbacks);
                prop_assert!(
                    attempts <= (1 + u64::from(world.num_retries)) * visited,
                    "{} attempts in {} groups with {} retries", attempts, visited, world.num_retries
                );
                let trail: Vec<String> = route.trail().iter().map(|r| r.group.to_string()).collect();
                prop_assert_eq!(trail.len() as u64, attempts, "the trail records every attempt");
                let mut runs: Vec<&String> = Vec::new();
                for g in &trail {
                    if runs.last() != Some(&g) {
                        prop_assert!(!runs.contains(&g), "{} visited twice: {:?}", g, trail);
                        runs.push(g);
                    }
                }
            }
            Ok(())
        })?;
    }
}
