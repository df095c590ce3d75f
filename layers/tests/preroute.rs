//! The pre-routing layer and LiteLLM's complexity router: the classifier's decisions pinned to
//! LiteLLM 1.100's scores (its eval cases and README examples), and the layer end to end over the
//! real fallback and select layers.

use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use switchyard_layers::{
    BoxError, Deployment, Outcome, Registry, RequestFacts, RouteBody, RouteCtx, RouteError, RouteRequest, Served,
    StateStore,
    ctx::PreRouteDecision,
    fallback::{FallbackConfig, FallbackLayer},
    preroute::{
        Conversation, PreRouteInput, PreRouteLayer, PreRouter, ROUTED_MODEL_HEADER, Role,
        complexity::{ComplexityRouter, ComplexityRouterConfig, KeywordTierRule, Tier},
    },
    select::{RoutingStrategy, SelectLayer},
};
use tower::{ServiceBuilder, ServiceExt, service_fn};

// ===== the classifier =====

/// LiteLLM's eval prompts (`evals/eval_complexity_router.py`) and README examples, with the tier,
/// weighted score and signals LiteLLM 1.100's `_score_and_classify` gives them under the default
/// config (computed by a line-for-line Python transcription of it over the same keyword lists).
const LITELLM_SCORES: &[(&str, Tier, f64, &[&str])] = &[
    ("Hello!", Tier::Simple, -0.15000000000000002, &["short (1 tokens)", "simple (hello)"]),
    (
        "What is Python?",
        Tier::Simple,
        -1.3877787807814457e-17,
        &["short (3 tokens)", "code (python)", "simple (what is)"],
    ),
    ("Who is Elon Musk?", Tier::Simple, -0.15000000000000002, &["short (4 tokens)", "simple (who is)"]),
    ("What's the capital of France?", Tier::Simple, -0.15000000000000002, &["short (7 tokens)", "simple (what's)"]),
    ("Thanks for your help!", Tier::Simple, -0.15000000000000002, &["short (5 tokens)", "simple (thanks)"]),
    ("Define machine learning", Tier::Simple, -0.15000000000000002, &["short (5 tokens)", "simple (define)"]),
    ("When was the iPhone released?", Tier::Simple, -0.15000000000000002, &["short (7 tokens)", "simple (when was)"]),
    (
        "How many planets are in our solar system?",
        Tier::Simple,
        -0.15000000000000002,
        &["short (10 tokens)", "simple (how many)"],
    ),
    ("Yes", Tier::Simple, -0.1, &["short (0 tokens)"]),
    ("What time is it in Tokyo?", Tier::Simple, -0.1, &["short (6 tokens)"]),
    ("Explain how REST APIs work and when to use them", Tier::Simple, -0.1, &["short (11 tokens)"]),
    ("Write a short poem about the ocean", Tier::Simple, -0.15000000000000002, &["short (8 tokens)", "simple (short)"]),
    ("Summarize the main differences between SQL and NoSQL databases", Tier::Medium, 0.15, &["code (sql)"]),
    (
        "What are the benefits of using TypeScript over JavaScript?",
        Tier::Medium,
        0.19999999999999998,
        &["short (14 tokens)", "code (javascript, typescript)"],
    ),
    (
        "Help me debug this error: TypeError: Cannot read property 'map' of undefined",
        Tier::Medium,
        0.3,
        &["code (error, debug)"],
    ),
    (
        "Design a distributed microservice architecture for a high-throughput real-time data processing pipeline with Kubernetes orchestration, implementing proper authentication and encryption protocols",
        Tier::Complex,
        0.4,
        &["code (kubernetes)", "technical (architecture, distributed, microservice)"],
    ),
    (
        "Write a Python function that implements a binary search tree with insert, delete, and search operations. Include proper error handling and optimize for memory efficiency.",
        Tier::Medium,
        0.3,
        &["code (function, error, optimize)"],
    ),
    (
        "Explain the differences between TCP and UDP protocols, including use cases for each, performance implications, and how they handle packet loss in distributed systems",
        Tier::Simple,
        0.125,
        &["technical (distributed, performance, tcp)"],
    ),
    (
        "Create a comprehensive database schema for an e-commerce platform that handles users, products, orders, payments, shipping, reviews, and inventory management with proper indexing strategies",
        Tier::Medium,
        0.3,
        &["code (database, schema)"],
    ),
    (
        "Implement a rate limiter using the token bucket algorithm in Python that supports multiple rate limit tiers and can be used across distributed systems with Redis as the backend",
        Tier::Medium,
        0.3,
        &["code (algorithm, implement, python)"],
    ),
    (
        "Think step by step about how to solve this: A farmer has 17 sheep. All but 9 die. How many are left? Explain your reasoning.",
        Tier::Reasoning,
        0.2,
        &["reasoning (step by step, explain your reasoning)", "simple (how many)"],
    ),
    (
        "Let's think through this carefully. Analyze the pros and cons of microservices vs monolithic architecture for a startup with 5 engineers. Consider scalability, development speed, and operational complexity.",
        Tier::Reasoning,
        0.4,
        &["code (let)", "reasoning (think through, let's think, pros and cons)"],
    ),
    (
        "Reason through this problem: If I have a function that's O(n^2) and I need to process 1 million items, what are my options to optimize it? Walk me through each approach step by step.",
        Tier::Reasoning,
        0.55,
        &["code (function, optimize)", "reasoning (step by step, reason through)"],
    ),
    (
        "I need you to think carefully and analyze this code for potential security vulnerabilities. Consider injection attacks, authentication bypasses, and data exposure risks. Show your reasoning process.",
        Tier::Reasoning,
        0.25,
        &["reasoning (analyze this, think carefully)"],
    ),
    (
        "Step by step, explain your reasoning as you evaluate whether we should use PostgreSQL or MongoDB for our new project. Consider our requirements: complex queries, high write volume, and eventual consistency is acceptable.",
        Tier::Reasoning,
        0.25,
        &["reasoning (step by step, explain your reasoning, evaluate)"],
    ),
    ("What is the capital of France?", Tier::Simple, -0.15000000000000002, &["short (7 tokens)", "simple (what is)"]),
    ("I tried to book a flight but the entry form wasn't working", Tier::Simple, -0.1, &["short (14 tokens)"]),
    ("The poetry of digital art is fascinating", Tier::Simple, -0.1, &["short (10 tokens)"]),
    ("Can you recommend a good book about country music history?", Tier::Simple, -0.1, &["short (14 tokens)"]),
    (
        "Think step by step: analyze the performance implications of implementing a distributed consensus algorithm for our microservices architecture.",
        Tier::Complex,
        0.44999999999999996,
        &["code (algorithm)", "reasoning (step by step)", "technical (architecture, distributed, performance)"],
    ),
    ("What is 2+2?", Tier::Simple, -0.15000000000000002, &["short (3 tokens)", "simple (what is)"]),
    (
        "Write a Python function to parse JSON. First validate the input, then return the result. Use async and await.",
        Tier::Medium,
        0.315,
        &["code (function, return, async)", "multi-step"],
    ),
];

fn tiers() -> ComplexityRouterConfig {
    ComplexityRouterConfig::with_tiers([
        (Tier::Simple, "mini"),
        (Tier::Medium, "mid"),
        (Tier::Complex, "big"),
        (Tier::Reasoning, "thinker"),
    ])
}

fn router(config: ComplexityRouterConfig) -> ComplexityRouter {
    ComplexityRouter::new(config).expect("a valid config")
}

fn ask(text: &str) -> Conversation {
    Conversation::new().push(Role::User, text)
}

#[test]
fn the_scorer_gives_litellms_tier_score_and_signals() {
    let router = router(ComplexityRouterConfig::default());
    for (prompt, tier, score, signals) in LITELLM_SCORES {
        let got = router.classify(prompt);
        assert_eq!(got.tier, *tier, "{prompt}");
        assert_eq!(got.score, *score, "{prompt}");
        assert_eq!(got.signals, *signals, "{prompt}");
    }
}

#[test]
fn a_greeting_goes_to_the_simple_group() {
    let decision = router(tiers()).decide(&ask("Hello!")).expect("a decision");
    assert_eq!(
        (&*decision.target, decision.tier.as_deref(), &*decision.reason),
        ("mini", Some("SIMPLE"), "heuristic_scorer")
    );
    assert_eq!(decision.dimensions.len(), 7);
    assert_eq!(decision.dimensions[0].signal.as_deref(), Some("short (1 tokens)"));
}

#[test]
fn two_reasoning_markers_promote_to_reasoning_once_the_score_clears_the_floor() {
    let r = router(tiers());
    let prompt = "Think step by step about how to solve this: A farmer has 17 sheep. All but 9 die. How many are left? Explain your reasoning.";
    let decision = r.decide(&ask(prompt)).expect("a decision");
    assert_eq!((&*decision.target, &*decision.reason), ("thinker", "reasoning_override"));
    // The same two markers on a prompt the scorer calls SIMPLE do not buy the top tier.
    let cheap = r.classify("Hi! Step by step, think through.");
    assert_eq!((cheap.tier, cheap.cause), (Tier::Simple, "heuristic_scorer"));
    // `reasoning_override_min_score: 0` promotes on the markers alone.
    let config: ComplexityRouterConfig =
        serde_json::from_str(r#"{"reasoning_override_min_score": 0}"#).expect("parses");
    assert_eq!(router(config).classify("Hi! Step by step, think through.").tier, Tier::Reasoning);
}

#[test]
fn a_multi_step_coding_task_scores_as_litellm_does() {
    let prompt =
        "Write a Python function to parse JSON. First validate the input, then return the result. Use async and await.";
    let c = router(tiers()).classify(prompt);
    assert_eq!((c.tier, c.score), (Tier::Medium, 0.315));
    assert_eq!(c.signals, ["code (function, return, async)", "multi-step"]);
    let design = "Design a distributed microservice architecture for a high-throughput real-time data processing \
                  pipeline with Kubernetes orchestration, implementing proper authentication and encryption protocols";
    assert_eq!(router(tiers()).classify(design).tier, Tier::Complex);
}

#[test]
fn the_escalation_keyword_raises_the_tier_one_configured_step() {
    let r = router(tiers());
    let d = r.decide(&ask("Hello! LITELLM ESCALATE")).expect("a decision");
    assert_eq!((&*d.target, d.tier.as_deref(), d.escalated), ("mid", Some("MEDIUM"), true));
    assert_eq!(d.escalation_keyword.as_deref(), Some("LITELLM ESCALATE"));
    assert_eq!(d.signals.last().map(String::as_str), Some("escalation"));
    // Case-sensitive: a lower-case mention is not a request to escalate.
    assert!(!r.decide(&ask("Hello! litellm escalate")).expect("a decision").escalated);
    // Configured keywords are trimmed and blank ones dropped (a blank one would match everything).
    let mut own = tiers();
    own.escalation_keywords = Some(vec!["  ".to_owned(), " PLEASE UPGRADE ".to_owned()]);
    let own = router(own);
    assert!(!own.decide(&ask("Hello!")).expect("a decision").escalated);
    assert!(own.decide(&ask("Hello! PLEASE UPGRADE")).expect("a decision").escalated);
    // To the next tier that has a group; from the top, nowhere.
    let gappy = router(ComplexityRouterConfig::with_tiers([
        (Tier::Simple, "mini"),
        (Tier::Medium, "mid"),
        (Tier::Reasoning, "thinker"),
    ]));
    let long = format!(
        "{} LITELLM ESCALATE",
        "Design a distributed microservice architecture with kubernetes orchestration and encryption protocols. "
    );
    let d = gappy.decide(&ask(&long)).expect("a decision");
    assert_eq!((d.tier.as_deref(), &*d.target), (Some("REASONING"), "thinker"));
}

#[test]
fn without_a_human_ask_the_default_model_serves() {
    let plumbing = Conversation::new()
        .push(Role::System, "You are helpful.")
        .push(Role::User, "<system-reminder>the todo list is empty</system-reminder>");
    let with_default = router(tiers().with_default_model(Some("fallback-group")));
    let d = with_default.decide(&plumbing).expect("a decision");
    assert_eq!((&*d.target, &*d.reason, d.tier.as_deref()), ("fallback-group", "default_fallback", None));
    let d = router(tiers()).decide(&plumbing).expect("a decision");
    assert_eq!((&*d.target, d.tier.as_deref()), ("mid", Some("MEDIUM")));
    assert!(router(tiers()).decide(&Conversation::new()).is_none(), "no messages: no routing");
}

#[test]
fn a_tier_without_a_group_goes_to_the_default_model() {
    let r = router(ComplexityRouterConfig::with_tiers([(Tier::Medium, "mid")]).with_default_model(Some("dflt")));
    assert_eq!(&*r.decide(&ask("Hello!")).expect("a decision").target, "dflt");
    let r = router(ComplexityRouterConfig::with_tiers([(Tier::Medium, "mid")]));
    assert_eq!(&*r.decide(&ask("Hello!")).expect("a decision").target, "mid");
    let err = ComplexityRouter::new(ComplexityRouterConfig::with_tiers([(Tier::Simple, "mini")]))
        .expect_err("MEDIUM missing");
    assert!(err.to_string().contains("tier MEDIUM has no model group"), "{err}");
}

#[test]
fn a_model_list_entry_defaults_to_its_medium_group_as_litellms_router_does() {
    let plumbing = Conversation::new().push(Role::User, "<system-reminder>x</system-reminder>");
    let mut config = tiers();
    config.default_model = Some("ignored".to_owned());
    let r = ComplexityRouter::from_deployment(Some(config.clone()), None).expect("MEDIUM stands in");
    let d = r.decide(&plumbing).expect("a decision");
    assert_eq!((&*d.target, d.tier.as_deref()), ("mid", None), "the derived default replaces the config's own");
    let r = ComplexityRouter::from_deployment(Some(config), Some("chosen".to_owned())).expect("a default model");
    assert_eq!(&*r.decide(&plumbing).expect("a decision").target, "chosen");
    let only_complex = ComplexityRouterConfig::with_tiers([(Tier::Complex, "big")]);
    assert!(ComplexityRouter::from_deployment(Some(only_complex), None).is_err());
    let r = ComplexityRouter::from_deployment(None, Some("gpt-4o".to_owned())).expect("the default tiers");
    assert_eq!(r.group_for_tier(Tier::Simple), "gpt-4o-mini");
}

#[test]
fn reminder_blocks_are_not_scored_and_the_last_real_ask_is() {
    let r = router(tiers());
    let conversation = Conversation::new()
        .push(Role::System, "Think step by step. Explain your reasoning. Write a function, class, and an API.")
        .push(Role::User, "<system-reminder>implement refactor optimize python rust docker</system-reminder>Hello!")
        .push(Role::Assistant, "Hi")
        .push(Role::User, "<system-reminder>debug the api endpoint</system-reminder>");
    let d = r.decide(&conversation).expect("a decision");
    assert_eq!((&*d.target, d.tier.as_deref()), ("mini", Some("SIMPLE")));
}

#[test]
fn keyword_rules_force_the_most_severe_matching_tier() {
    let mut config = tiers();
    config.keyword_tier_rules = Some(vec![
        KeywordTierRule::new(["hello"], Tier::Simple),
        KeywordTierRule::new(["  ", "Audit Plan"], Tier::Complex),
    ]);
    let r = router(config);
    let d = r.decide(&ask("Hello, please draft an audit plan")).expect("a decision");
    assert_eq!(
        (&*d.target, &*d.reason, d.matched_keyword.as_deref()),
        ("big", "literal_keyword_match", Some("Audit Plan"))
    );
    let d = r.decide(&ask("hello there")).expect("a decision");
    assert_eq!((&*d.target, d.score), ("mini", None));
}

#[test]
fn a_conversation_title_call_goes_to_the_cheapest_tier() {
    let prompt = "You are coming up with a succinct title for a coding session. The session: implement a distributed \
                  kubernetes operator in rust with async database access, step by step, explain your reasoning";
    let d = router(tiers()).decide(&ask(prompt)).expect("a decision");
    assert_eq!(
        (&*d.target, &*d.reason, d.signals.as_slice()),
        ("mini", "housekeeping", &["housekeeping".to_owned()][..])
    );
    let mut off = tiers();
    off.route_housekeeping_to_cheapest_tier = false;
    assert_eq!(&*router(off).decide(&ask(prompt)).expect("a decision").reason, "reasoning_override");
}

#[test]
fn the_config_reads_litellms_keys() {
    let config: ComplexityRouterConfig = serde_json::from_str(
        r#"{
            "tiers": {"SIMPLE": "gpt-4o-mini", "MEDIUM": "gpt-4o", "COMPLEX": "claude-sonnet-4", "REASONING": "o1-preview"},
            "tier_boundaries": {"simple_medium": 0.15, "medium_complex": 0.35, "complex_reasoning": 0.60},
            "token_thresholds": {"simple": 15, "complex": 400},
            "dimension_weights": {"tokenCount": 0.10, "codePresence": 0.30, "reasoningMarkers": 0.25, "technicalTerms": 0.25,
                                  "simpleIndicators": 0.05, "multiStepPatterns": 0.03, "questionComplexity": 0.02},
            "code_keywords": ["function", "class", "def", "async", "database"],
            "reasoning_keywords": ["step by step", "think through", "analyze"],
            "default_model": "gpt-4o",
            "escalation_keywords": [],
            "tier_labels": {"SIMPLE": "Cheap"},
            "return_raw_model_name": true
        }"#,
    )
    .expect("LiteLLM's full example parses");
    assert_eq!(config.ignored_keys().collect::<Vec<_>>(), ["return_raw_model_name", "tier_labels"]);
    let r = router(config);
    assert!(
        !r.decide(&ask("Hello LITELLM ESCALATE")).expect("a decision").escalated,
        "an empty list turns escalation off"
    );
    assert_eq!(r.classify("analyze this class").signals, ["short (4 tokens)", "code (class)", "reasoning (analyze)"]);
}

#[test]
fn a_partial_weight_map_replaces_the_defaults() {
    let config: ComplexityRouterConfig =
        serde_json::from_str(r#"{"dimension_weights": {"codePresence": 1.0}}"#).expect("parses");
    let c = router(config).classify("Hello! Write a function and a class.");
    assert_eq!(c.score, 1.0, "only codePresence weighs");
}

#[test]
fn settings_that_would_route_differently_are_refused() {
    for json in [
        r#"{"classifier_type": "llm"}"#,
        r#"{"adaptive": true}"#,
        r#"{"session_affinity": true}"#,
        r#"{"tier_definitions": [{"name": "cheap"}]}"#,
    ] {
        let config: ComplexityRouterConfig = serde_json::from_str(json).expect("parses");
        let err = ComplexityRouter::new(config).expect_err(json);
        assert!(err.to_string().contains("is not supported"), "{err}");
    }
    for json in [r#"{"classifier_type": "heuristic"}"#, r#"{"adaptive": false}"#] {
        let config: ComplexityRouterConfig = serde_json::from_str(json).expect("parses");
        assert!(ComplexityRouter::new(config).is_ok(), "{json}");
    }
    assert!(
        serde_json::from_str::<ComplexityRouterConfig>(r#"{"tiers": {"SIMPLE": ["a", "b"]}}"#).is_err(),
        "pools are not supported"
    );
    assert!(
        serde_json::from_str::<ComplexityRouterConfig>(r#"{"tier_boundaries": {"simple_medum": 0.2}}"#).is_err(),
        "typos are caught"
    );
}

#[test]
fn the_router_reads_the_conversation_from_the_request_body() {
    let body = Bytes::from_static(
        br#"{"model":"smart-router","messages":[{"role":"system","content":"Think step by step, explain your reasoning."},{"role":"user","content":"Hello!"}]}"#,
    );
    let facts = RequestFacts::new().with_body(body);
    let d = router(tiers()).route(&PreRouteInput::new("smart-router", &facts)).expect("a decision");
    assert_eq!(&*d.target, "mini");
    let facts = RequestFacts::new();
    assert!(router(tiers()).route(&PreRouteInput::new("smart-router", &facts)).is_none(), "no body, no routing");
    let embedding = RequestFacts::new()
        .endpoint(switchyard_layers::ctx::Endpoint::Embedding)
        .with_body(Bytes::from_static(br#"{"model":"smart-router","input":"Hello!"}"#));
    assert!(router(tiers()).route(&PreRouteInput::new("smart-router", &embedding)).is_none(), "not a conversation");
}

// ===== the layer in a stack =====

type Req = http::Request<Bytes>;

/// A registry with one deployment per group (id = group name).
fn registry(groups: &[&str]) -> Arc<Registry> {
    let registry = Arc::new(Registry::new());
    for g in groups {
        registry
            .upsert(Deployment::builder(*g, format!("openai/{g}")).id(*g).build().expect("a deployment"))
            .expect("upsert");
    }
    registry
}

fn chat(model: &str, prompt: &str) -> Req {
    let body = serde_json::json!({"model": model, "messages": [{"role": "user", "content": prompt}]}).to_string();
    let body = Bytes::from(body);
    let mut req = http::Request::new(body.clone());
    req.extensions_mut().insert(RouteCtx::with_facts(model, RequestFacts::new().with_body(body)));
    req
}

/// The stack: pre-route, fallback (`mini` falls back to `mid`), select; the provider fails the
/// deployments in `down` and records (requested, group, deployment) per attempt.
fn stack(
    down: &'static [&'static str],
    seen: Arc<Mutex<Vec<(String, String, String)>>>,
) -> impl tower::Service<Req, Response = http::Response<RouteBody>, Error = BoxError> + Clone {
    let registry = registry(&["mini", "mid", "big", "thinker"]);
    let provider = service_fn(move |req: Req| {
        let seen = seen.clone();
        async move {
            let ctx = req.route_ctx().expect("a context");
            let d = ctx.selected.clone().expect("the select layer chose");
            let group = ctx.group.as_ref().map(|g| g.name().to_string()).unwrap_or_default();
            seen.lock().push((ctx.requested().to_owned(), group, d.id.as_str().to_owned()));
            if down.contains(&d.id.as_str()) {
                return Err(RouteError::upstream(Outcome::ServerError, d.id.clone(), "503").into());
            }
            Ok::<_, BoxError>(http::Response::new(RouteBody::from("ok")))
        }
    });
    ServiceBuilder::new()
        .layer(PreRouteLayer::new("smart-router", router(tiers())))
        .layer(FallbackLayer::new(registry.clone(), FallbackConfig::new().fallbacks("mini", ["mid"])))
        .layer(SelectLayer::new(registry, Arc::new(StateStore::memory()), RoutingStrategy::SimpleShuffle.build()))
        .service(provider)
}

#[tokio::test]
async fn the_chosen_group_serves_and_the_response_names_it() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let resp = stack(&[], seen.clone()).oneshot(chat("smart-router", "Hello!")).await.expect("served");
    assert_eq!(resp.headers()[ROUTED_MODEL_HEADER], "mini");
    let served = resp.extensions().get::<Served>().expect("served");
    assert_eq!((&*served.group, served.hops), ("mini", 0));
    let decision = resp.extensions().get::<Arc<PreRouteDecision>>().expect("the decision");
    assert_eq!(decision.tier.as_deref(), Some("SIMPLE"));
    assert_eq!(
        *seen.lock(),
        [("smart-router".to_owned(), "mini".to_owned(), "mini".to_owned())],
        "the name asked for stays visible"
    );
}

#[tokio::test]
async fn fallbacks_apply_to_the_chosen_group() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let resp =
        stack(&["mini"], seen.clone()).oneshot(chat("smart-router", "Hello!")).await.expect("served by the fallback");
    let served = resp.extensions().get::<Served>().expect("served");
    assert_eq!((&*served.group, served.hops), ("mid", 1));
    assert_eq!(resp.headers()[ROUTED_MODEL_HEADER], "mini", "the header names the pre-router's choice");
    let groups: Vec<String> = seen.lock().iter().map(|(_, g, _)| g.clone()).collect();
    assert_eq!(groups, ["mini", "mid"]);
}

#[tokio::test]
async fn requests_for_other_models_are_untouched() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let resp = stack(&[], seen.clone()).oneshot(chat("big", "Hello!")).await.expect("served");
    assert!(resp.headers().get(ROUTED_MODEL_HEADER).is_none());
    assert!(resp.extensions().get::<Arc<PreRouteDecision>>().is_none());
    assert_eq!(*seen.lock(), [("big".to_owned(), "big".to_owned(), "big".to_owned())]);
}

#[tokio::test]
async fn a_failed_call_keeps_the_decision_in_its_context() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let err =
        stack(&["mini", "mid"], seen).oneshot(chat("smart-router", "Hello!")).await.expect_err("both groups down");
    let err = RouteError::find(&*err).expect("a route error");
    assert_eq!(err.outcome(), Some(Outcome::ServerError));
}

/// A pre-router of the user's own, inserted with the stack builder like any layer.
struct ByTag;

impl PreRouter for ByTag {
    fn route(&self, input: &PreRouteInput<'_>) -> Option<PreRouteDecision> {
        let batch = input.facts().tags.iter().any(|t| t == "batch");
        Some(PreRouteDecision::new(if batch { "mini" } else { "big" }, "tag").with_signal(format!("batch={batch}")))
    }
}

#[tokio::test]
async fn a_user_written_pre_router_routes_through_the_real_layers() {
    let registry = registry(&["mini", "big"]);
    let provider = service_fn(|req: Req| async move {
        let ctx = req.route_ctx().expect("a context");
        assert_eq!(ctx.pre_route().map(|d| d.signals.clone()), Some(vec!["batch=true".to_owned()]));
        Ok::<_, BoxError>(http::Response::new(RouteBody::from("ok")))
    });
    let svc = ServiceBuilder::new()
        .layer(PreRouteLayer::new("auto", ByTag))
        .layer(SelectLayer::new(registry, Arc::new(StateStore::memory()), RoutingStrategy::SimpleShuffle.build()))
        .service(provider);
    let mut req = http::Request::new(Bytes::new());
    req.extensions_mut().insert(RouteCtx::with_facts("auto", RequestFacts::new().tags(vec!["batch".to_owned()])));
    let resp = svc.oneshot(req).await.expect("served");
    assert_eq!(resp.extensions().get::<Served>().map(|s| s.group.to_string()).as_deref(), Some("mini"));
}
