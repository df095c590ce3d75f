//! What a config would serve, as `switchyard check` prints it: a plain value built from a
//! [`Config`], serialized for `--json` and rendered as aligned text otherwise. Credentials never
//! appear: API keys and the master key are reported as set or not, URLs lose their user info
//! and query.

use std::{
    collections::BTreeMap,
    fmt::{self, Write as _},
};

use serde::Serialize;
use switchyard::{
    Config, ConfigError, Deployment,
    layers::{
        error_class::{PerErrorClass, PolicyKind},
        redact::mask_url_credentials,
    },
};

/// Everything `check` reports about a config that loaded.
#[derive(Debug, Serialize)]
pub(crate) struct Summary {
    pub(crate) model_groups: Vec<GroupView>,
    /// The virtual model names of `auto_router/...` entries and where they may route.
    pub(crate) pre_routers: Vec<PreRouterView>,
    pub(crate) aliases: Vec<AliasView>,
    pub(crate) fallbacks: FallbacksView,
    pub(crate) router: RouterView,
    pub(crate) gateway: GatewayView,
    pub(crate) warnings: Vec<String>,
}

/// A model group (or a wildcard pattern) and the deployments serving it, in config order.
#[derive(Debug, Serialize)]
pub(crate) struct GroupView {
    pub(crate) name: String,
    /// The name has a `*`: requests for any model it matches are routed here.
    pub(crate) pattern: bool,
    pub(crate) strategy: &'static str,
    pub(crate) deployments: Vec<DeploymentView>,
}

#[derive(Debug, Serialize)]
pub(crate) struct DeploymentView {
    pub(crate) id: String,
    pub(crate) model: String,
    pub(crate) provider: String,
    /// `None`: the provider's public endpoint.
    pub(crate) api_base: Option<String>,
    /// The config gives the deployment a key (providers may also take theirs elsewhere).
    pub(crate) api_key: bool,
    pub(crate) rpm: Option<u64>,
    pub(crate) tpm: Option<u64>,
    pub(crate) weight: Option<f64>,
    pub(crate) order: Option<u32>,
    pub(crate) max_parallel_requests: Option<u32>,
    pub(crate) region: Option<String>,
    pub(crate) tags: Vec<String>,
    pub(crate) blocked: bool,
}

/// A pre-router: its virtual name, its kind and the groups it may pick.
#[derive(Debug, Serialize)]
pub(crate) struct PreRouterView {
    pub(crate) name: String,
    /// `complexity_router` or `quality_router`.
    pub(crate) router: &'static str,
    /// What each target stands for (`SIMPLE`, `tier 2`, `default`) and the group.
    pub(crate) targets: Vec<(String, String)>,
}

#[derive(Debug, Serialize)]
pub(crate) struct AliasView {
    pub(crate) alias: String,
    pub(crate) target: String,
    pub(crate) hidden: bool,
}

#[derive(Debug, Serialize)]
pub(crate) struct FallbacksView {
    pub(crate) general: BTreeMap<String, Vec<String>>,
    pub(crate) context_window: BTreeMap<String, Vec<String>>,
    pub(crate) content_policy: BTreeMap<String, Vec<String>>,
    pub(crate) default: Vec<String>,
    pub(crate) max_fallbacks: u32,
}

#[derive(Debug, Serialize)]
pub(crate) struct RouterView {
    pub(crate) routing_strategy: &'static str,
    pub(crate) routing_groups: Vec<RoutingGroupView>,
    pub(crate) num_retries: u32,
    pub(crate) retry_after_seconds: f64,
    pub(crate) retry_policy: Option<BTreeMap<String, u32>>,
    pub(crate) timeout_seconds: Option<f64>,
    pub(crate) stream_timeout_seconds: Option<f64>,
    pub(crate) deadline_seconds: Option<f64>,
    pub(crate) cooldowns: bool,
    pub(crate) cooldown_seconds: f64,
    pub(crate) allowed_fails: Option<u32>,
    pub(crate) allowed_fails_policy: Option<BTreeMap<String, u32>>,
    pub(crate) cooldown_probe: bool,
    pub(crate) wait_for_cooldown_seconds: Option<f64>,
    pub(crate) enable_pre_call_checks: bool,
    pub(crate) enable_tag_filtering: bool,
    pub(crate) default_max_parallel_requests: Option<u32>,
    pub(crate) state: StateView,
    pub(crate) seed: Option<u64>,
}

#[derive(Debug, Serialize)]
pub(crate) struct RoutingGroupView {
    pub(crate) name: String,
    pub(crate) models: Vec<String>,
    pub(crate) strategy: &'static str,
}

/// Where routing state lives.
#[derive(Debug, Serialize)]
pub(crate) struct StateView {
    /// `memory` (per replica) or `redis` (shared).
    pub(crate) backend: &'static str,
    /// The Redis server, or `cluster [...]`, with credentials masked.
    pub(crate) server: Option<String>,
    pub(crate) namespace: Option<String>,
}

#[derive(Debug, Serialize)]
pub(crate) struct GatewayView {
    pub(crate) master_key: bool,
    /// `estimate` (local) or `upstream` for `/v1/messages/count_tokens`.
    pub(crate) count_tokens: &'static str,
    pub(crate) allowed_origins: Option<Vec<String>>,
    pub(crate) allowed_hosts: Option<Vec<String>>,
    pub(crate) max_connections: Option<usize>,
    /// The response cache (`litellm_settings.cache`): backend, TTL, namespace; `None` when off.
    pub(crate) response_cache: Option<String>,
}

impl Summary {
    /// The summary of `config`. Fails only when the Redis settings do not hold together (the
    /// loader checks them too; this also reads `redis_ssl_ca_certs`, as starting the backend
    /// does).
    pub(crate) fn of(config: &Config) -> Result<Self, ConfigError> {
        Ok(Self {
            model_groups: groups(config),
            pre_routers: config
                .pre_routers
                .iter()
                .map(|p| PreRouterView {
                    name: p.name.clone(),
                    router: p.router.kind(),
                    targets: p.router.targets(config),
                })
                .collect(),
            aliases: config
                .aliases
                .iter()
                .map(|a| AliasView { alias: a.alias.clone(), target: a.target.clone(), hidden: a.hidden })
                .collect(),
            fallbacks: FallbacksView {
                general: config.fallbacks.general.clone(),
                context_window: config.fallbacks.context_window.clone(),
                content_policy: config.fallbacks.content_policy.clone(),
                default: config.fallbacks.default.clone(),
                max_fallbacks: config.fallbacks.max_fallbacks,
            },
            router: router(config)?,
            gateway: GatewayView {
                master_key: config.master_key.is_some(),
                count_tokens: if config.count_tokens_upstream { "upstream" } else { "estimate" },
                allowed_origins: config.edge.allowed_origins.clone(),
                allowed_hosts: config.edge.allowed_hosts.clone(),
                max_connections: config.edge.max_connections,
                response_cache: response_cache(config),
            },
            warnings: config.warnings.clone(),
        })
    }

    /// The number of deployments over every group.
    pub(crate) fn deployments(&self) -> usize {
        self.model_groups.iter().map(|g| g.deployments.len()).sum()
    }
}

/// The groups in the order their first deployment appears in `model_list`.
fn groups(config: &Config) -> Vec<GroupView> {
    let mut groups: Vec<GroupView> = Vec::new();
    for d in &config.deployments {
        let view = deployment(d);
        match groups.iter_mut().find(|g| g.name == *d.group) {
            Some(group) => group.deployments.push(view),
            None => groups.push(GroupView {
                name: d.group.to_string(),
                pattern: d.group.contains('*'),
                strategy: strategy_of(config, &d.group),
                deployments: vec![view],
            }),
        }
    }
    groups
}

fn deployment(d: &Deployment) -> DeploymentView {
    DeploymentView {
        id: d.id.as_str().to_owned(),
        model: d.model.to_string(),
        provider: d.provider().to_owned(),
        api_base: d.api_base.as_deref().map(public_url),
        api_key: d.api_key.is_some(),
        rpm: d.rpm,
        tpm: d.tpm,
        weight: d.weight,
        order: d.order,
        max_parallel_requests: d.max_parallel_requests,
        region: d.region.clone(),
        tags: d.tags.clone(),
        blocked: d.blocked,
    }
}

/// The strategy that picks among `group`'s deployments: its routing group's, else the router's.
fn strategy_of(config: &Config, group: &str) -> &'static str {
    config
        .routing_groups
        .groups()
        .iter()
        .find(|g| g.models.iter().any(|m| m == group))
        .map_or(config.routing_strategy, |g| g.strategy)
        .as_str()
}

/// A URL without user info, query or fragment (where credentials hide).
fn public_url(url: &str) -> String {
    mask_url_credentials(url.split(['?', '#']).next().unwrap_or_default())
}

fn router(config: &Config) -> Result<RouterView, ConfigError> {
    let (retry, cooldown, precall) = (&config.retry, &config.cooldown, &config.precall);
    Ok(RouterView {
        routing_strategy: config.routing_strategy.as_str(),
        routing_groups: config
            .routing_groups
            .groups()
            .iter()
            .map(|g| RoutingGroupView { name: g.name.clone(), models: g.models.clone(), strategy: g.strategy.as_str() })
            .collect(),
        num_retries: retry.num_retries,
        retry_after_seconds: retry.retry_after.as_secs_f64(),
        retry_policy: retry.retry_policy.as_ref().map(litellm_names),
        timeout_seconds: config.timeout.map(|d| d.as_secs_f64()),
        stream_timeout_seconds: config.stream_timeout.map(|d| d.as_secs_f64()),
        deadline_seconds: config.deadline.map(|d| d.as_secs_f64()),
        cooldowns: !cooldown.disabled,
        cooldown_seconds: cooldown.cooldown_time.as_secs_f64(),
        allowed_fails: cooldown.allowed_fails,
        allowed_fails_policy: cooldown.allowed_fails_policy.as_ref().map(litellm_names),
        cooldown_probe: cooldown.probe.is_some(),
        wait_for_cooldown_seconds: cooldown.wait_for_cooldown.map(|d| d.as_secs_f64()),
        // `enable_pre_call_checks` turns the three checks on together.
        enable_pre_call_checks: precall.context_window && precall.region && precall.params,
        enable_tag_filtering: precall.tags,
        default_max_parallel_requests: precall.default_max_parallel_requests,
        state: state(config)?,
        seed: config.seed,
    })
}

/// A per-error-class table by the LiteLLM field names it was written with
/// (`RateLimitErrorRetries: 4`).
fn litellm_names<K: PolicyKind>(table: &PerErrorClass<K>) -> BTreeMap<String, u32> {
    PerErrorClass::<K>::litellm_fields()
        .filter_map(|name| {
            let n = PerErrorClass::<K>::litellm_class(name).and_then(|class| table.get(class))?;
            Some((name.to_owned(), n))
        })
        .collect()
}

#[cfg(feature = "redis")]
fn state(config: &Config) -> Result<StateView, ConfigError> {
    use switchyard::layers::state::Topology;

    let Some(redis) = &config.redis else {
        return Ok(StateView { backend: "memory", server: None, namespace: None });
    };
    let redis = redis.to_redis_config()?;
    let server = match &redis.topology {
        Topology::Single(url) => mask_url_credentials(url),
        Topology::Cluster(nodes) => {
            let nodes: Vec<String> = nodes.iter().map(|n| mask_url_credentials(n)).collect();
            format!("cluster [{}]", nodes.join(", "))
        }
        // A topology newer than this command: not shown rather than shown with credentials.
        _ => "(not shown)".to_owned(),
    };
    Ok(StateView { backend: "redis", server: Some(server), namespace: Some(redis.namespace) })
}

/// Without the `redis` feature a config that sets Redis is refused before this is called.
#[cfg(not(feature = "redis"))]
fn state(config: &Config) -> Result<StateView, ConfigError> {
    let backend = if config.redis.is_some() { "redis" } else { "memory" };
    Ok(StateView { backend, server: None, namespace: None })
}

/// Seconds as people write them: `5s`, `0.25s`.
fn secs(seconds: f64) -> String {
    format!("{seconds}s")
}

fn or_default(value: Option<f64>, default: &str) -> String {
    value.map_or_else(|| default.to_owned(), secs)
}

/// Lines of cells printed with every column as wide as its widest cell.
#[derive(Debug, Default)]
struct Table(Vec<Vec<String>>);

impl Table {
    fn row<I: IntoIterator<Item = String>>(&mut self, cells: I) {
        self.0.push(cells.into_iter().collect());
    }

    fn write(&self, out: &mut String, indent: &str) -> fmt::Result {
        let columns = self.0.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..columns)
            .map(|c| self.0.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0))
            .collect();
        for row in &self.0 {
            let mut line = String::from(indent);
            for (c, cell) in row.iter().enumerate() {
                if c + 1 == row.len() {
                    line.push_str(cell);
                } else {
                    write!(line, "{cell:<width$}  ", width = widths[c])?;
                }
            }
            writeln!(out, "{}", line.trim_end())?;
        }
        Ok(())
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        self.write_groups(&mut out)?;
        self.write_pre_routers(&mut out)?;
        self.write_aliases(&mut out)?;
        self.write_fallbacks(&mut out)?;
        self.write_router(&mut out)?;
        self.write_gateway(&mut out)?;
        if !self.warnings.is_empty() {
            writeln!(out, "\nwarnings ({})", self.warnings.len())?;
            for w in &self.warnings {
                writeln!(out, "  warning: {w}")?;
            }
        }
        f.write_str(&out)
    }
}

impl Summary {
    fn write_groups(&self, out: &mut String) -> fmt::Result {
        writeln!(out, "model groups ({})", self.model_groups.len())?;
        if self.model_groups.is_empty() {
            writeln!(out, "  none: every request will answer 404 until a reload adds deployments")?;
        }
        for g in &self.model_groups {
            let kind = if g.pattern { "pattern, " } else { "" };
            writeln!(out, "  {}  ({kind}{}, {})", g.name, g.strategy, count(g.deployments.len(), "deployment"))?;
            let mut table = Table::default();
            for d in &g.deployments {
                table.row([
                    d.id.clone(),
                    d.model.clone(),
                    d.provider.clone(),
                    d.api_base.clone().unwrap_or_else(|| "(provider's endpoint)".to_owned()),
                    limits(d),
                ]);
            }
            table.write(out, "    ")?;
        }
        Ok(())
    }

    fn write_pre_routers(&self, out: &mut String) -> fmt::Result {
        if self.pre_routers.is_empty() {
            return Ok(());
        }
        writeln!(out, "\npre-routers ({})", self.pre_routers.len())?;
        for p in &self.pre_routers {
            writeln!(out, "  {}  ({})", p.name, p.router)?;
            let mut table = Table::default();
            for (what, group) in &p.targets {
                table.row([what.clone(), "->".to_owned(), group.clone()]);
            }
            table.write(out, "    ")?;
        }
        Ok(())
    }

    fn write_aliases(&self, out: &mut String) -> fmt::Result {
        if self.aliases.is_empty() {
            return Ok(());
        }
        writeln!(out, "\naliases ({})", self.aliases.len())?;
        let mut table = Table::default();
        for a in &self.aliases {
            let hidden = if a.hidden { "(hidden)" } else { "" };
            table.row([a.alias.clone(), "->".to_owned(), a.target.clone(), hidden.to_owned()]);
        }
        table.write(out, "  ")
    }

    fn write_fallbacks(&self, out: &mut String) -> fmt::Result {
        let f = &self.fallbacks;
        let mut table = Table::default();
        for (kind, tables) in
            [("", &f.general), ("context window: ", &f.context_window), ("content policy: ", &f.content_policy)]
        {
            for (group, targets) in tables {
                table.row([format!("{kind}{group}"), "->".to_owned(), targets.join(", ")]);
            }
        }
        if !f.default.is_empty() {
            table.row(["any other group".to_owned(), "->".to_owned(), f.default.join(", ")]);
        }
        if table.0.is_empty() {
            return writeln!(out, "\nfallbacks: none");
        }
        writeln!(out, "\nfallbacks (at most {} per request)", f.max_fallbacks)?;
        table.write(out, "  ")
    }

    fn write_router(&self, out: &mut String) -> fmt::Result {
        let r = &self.router;
        let mut table = Table::default();
        table.row(["strategy".to_owned(), r.routing_strategy.to_owned()]);
        for g in &r.routing_groups {
            table.row([format!("routing group {}", g.name), format!("{} for {}", g.strategy, g.models.join(", "))]);
        }
        let mut retries = format!("{} per group", r.num_retries);
        if r.retry_after_seconds > 0.0 {
            write!(retries, ", at least {} apart", secs(r.retry_after_seconds))?;
        }
        if let Some(policy) = &r.retry_policy {
            write!(retries, ", by error: {}", pairs(policy))?;
        }
        table.row(["retries".to_owned(), retries]);
        table.row(["timeout".to_owned(), or_default(r.timeout_seconds, "600s (provider default)")]);
        table.row(["stream timeout".to_owned(), or_default(r.stream_timeout_seconds, "timeout, else 60s")]);
        if let Some(deadline) = r.deadline_seconds {
            table.row(["deadline".to_owned(), secs(deadline)]);
        }
        let cooldowns = if r.cooldowns {
            let fails = match (&r.allowed_fails_policy, r.allowed_fails) {
                (Some(policy), _) => format!("allowed fails by error: {}", pairs(policy)),
                (None, Some(n)) => format!("after {n} allowed fails a minute"),
                (None, None) => "on LiteLLM's failure-rate rule".to_owned(),
            };
            let probe = if r.cooldown_probe { ", half-open probes" } else { "" };
            format!("{}, {fails}{probe}", secs(r.cooldown_seconds))
        } else {
            "off".to_owned()
        };
        table.row(["cooldowns".to_owned(), cooldowns]);
        if let Some(wait) = r.wait_for_cooldown_seconds {
            table.row(["wait for cooldown".to_owned(), secs(wait)]);
        }
        table.row(["pre-call checks".to_owned(), on_off(r.enable_pre_call_checks).to_owned()]);
        table.row(["tag filtering".to_owned(), on_off(r.enable_tag_filtering).to_owned()]);
        if let Some(n) = r.default_max_parallel_requests {
            table.row(["max parallel requests".to_owned(), format!("{n} per deployment unless set")]);
        }
        let state = match (&r.state.server, &r.state.namespace) {
            (Some(server), Some(ns)) => format!("redis {server}, namespace {ns}"),
            _ if r.state.backend == "redis" => "redis".to_owned(),
            _ => "memory (per replica)".to_owned(),
        };
        table.row(["state".to_owned(), state]);
        if let Some(seed) = r.seed {
            table.row(["seed".to_owned(), seed.to_string()]);
        }
        writeln!(out, "\nrouter")?;
        table.write(out, "  ")
    }

    fn write_gateway(&self, out: &mut String) -> fmt::Result {
        let g = &self.gateway;
        let mut table = Table::default();
        let key = if g.master_key { "set" } else { "not set: only local and IP host names are served" };
        table.row(["master key".to_owned(), key.to_owned()]);
        if let Some(origins) = &g.allowed_origins {
            table.row(["allowed origins".to_owned(), origins.join(", ")]);
        }
        if let Some(hosts) = &g.allowed_hosts {
            table.row(["allowed hosts".to_owned(), hosts.join(", ")]);
        }
        if let Some(n) = g.max_connections {
            table.row(["max connections".to_owned(), n.to_string()]);
        }
        table.row(["count tokens".to_owned(), g.count_tokens.to_owned()]);
        table.row(["response cache".to_owned(), g.response_cache.clone().unwrap_or_else(|| "off".to_owned())]);
        writeln!(out, "\ngateway")?;
        table.write(out, "  ")
    }
}

/// The response cache in one line: `redis cache:6379, ttl 600s, namespace prod, default_off`.
fn response_cache(config: &Config) -> Option<String> {
    use switchyard::cache::{CacheBackend, CacheMode};

    let cache = config.cache.as_ref()?;
    let mut line = match &cache.backend {
        CacheBackend::Local { max_bytes } => format!("local (per replica, at most {} MiB)", max_bytes >> 20),
        CacheBackend::Redis(r) => {
            let server = match (&r.url, &r.host, r.startup_nodes.is_empty()) {
                (_, _, false) => "cluster".to_owned(),
                (Some(url), _, _) => mask_url_credentials(url),
                (None, Some(host), _) => format!("{host}:{}", r.port.unwrap_or(6379)),
                (None, None, _) => String::new(),
            };
            format!("redis {server}").trim_end().to_owned()
        }
        _ => "on".to_owned(),
    };
    write!(line, ", ttl {}", secs(cache.ttl.as_secs_f64())).ok()?;
    if let Some(ns) = &cache.namespace {
        write!(line, ", namespace {ns}").ok()?;
    }
    if cache.mode == CacheMode::DefaultOff {
        line.push_str(", only requests with use-cache");
    }
    if !cache.caching_groups.is_empty() {
        let groups: Vec<String> = cache.caching_groups.iter().map(|g| g.join("+")).collect();
        write!(line, ", shared by {}", groups.join(" ")).ok()?;
    }
    Some(line)
}

/// A deployment's limits and routing marks, as `key value` words.
fn limits(d: &DeploymentView) -> String {
    let mut words = Vec::new();
    if d.blocked {
        words.push("blocked".to_owned());
    }
    let numbers = [("rpm", d.rpm), ("tpm", d.tpm), ("order", d.order.map(u64::from))];
    words.extend(numbers.iter().filter_map(|(k, v)| v.map(|v| format!("{k} {v}"))));
    if let Some(w) = d.weight {
        words.push(format!("weight {w}"));
    }
    if let Some(n) = d.max_parallel_requests {
        words.push(format!("parallel {n}"));
    }
    if let Some(region) = &d.region {
        words.push(format!("region {region}"));
    }
    if !d.tags.is_empty() {
        words.push(format!("tags {}", d.tags.join(",")));
    }
    words.join("  ")
}

/// `1 warning`, `2 warnings`.
pub(crate) fn count(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

fn pairs(map: &BTreeMap<String, u32>) -> String {
    map.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ")
}

fn on_off(on: bool) -> &'static str {
    if on { "on" } else { "off" }
}
