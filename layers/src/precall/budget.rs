//! Budgets: spend limits per provider and per deployment over a period.
//!
//! A provider budget (`provider_budget_config`) caps the spend of every deployment whose
//! [`provider`](Deployment::provider) it names, together; a deployment budget (`max_budget` with
//! `budget_duration`) caps one deployment. A candidate whose provider or own spend has reached its
//! limit (`spend >= limit`, as in LiteLLM) is removed; with none left the attempt fails with
//! [`RouteErrorKind::BudgetExceeded`] (429, general fallbacks) saying what is spent and when the
//! first of them resets.
//!
//! Spend lives in the [`StateStore`] under `provider_spend:{provider}` and
//! `deployment_spend:{id}`; a period starts with its first spend and lasts the configured
//! duration. The filter reads the keys its candidates need in one call. Accounting happens when a
//! served attempt's body ends: its real usage priced with the deployment's
//! `input_cost_per_token` / `output_cost_per_token` (declared, else the [catalog](crate::catalog)'s
//! list prices) is added to each of its keys atomically in the store. Failed attempts, answers
//! without usage and deployments without both prices add nothing.

use std::{collections::BTreeMap, fmt::Write as _, sync::Arc, time::Duration};

use crate::{
    BoxError, Candidates, Deployment, Group, RouteBody, RouteError, RouteErrorKind, StateStore,
    state::{SpendState, StoreError},
};

/// A spend limit over a period.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct Budget {
    /// The most that may be spent in one period, in USD (the unit of the configured prices).
    pub limit: f64,
    /// How long a period lasts from its first spend.
    pub period: Duration,
}

impl Budget {
    /// `limit` USD per `period`. A negative or non-finite limit is taken as 0 (nothing may be
    /// spent); the config reader refuses both.
    pub fn new(limit: f64, period: Duration) -> Self {
        Self { limit: if limit.is_finite() { limit.max(0.0) } else { 0.0 }, period }
    }
}

/// Budgets of the [`PreCallLayer`](super::PreCallLayer): per provider here, per deployment on the
/// deployment itself ([`Deployment::max_budget`] with [`Deployment::budget_duration`]).
///
/// ```
/// use std::time::Duration;
/// use switchyard_layers::precall::{Budget, BudgetConfig, PreCallConfig};
///
/// let day = Duration::from_secs(86_400);
/// let budgets = BudgetConfig::new().provider("openai", Budget::new(100.0, day));
/// let config = PreCallConfig::new().budgets(budgets);
/// assert!(config.budgets.provider_budget("openai").is_some());
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct BudgetConfig {
    /// `provider_budget_config`: provider name (`openai`, `azure`, ...) to its budget.
    pub providers: BTreeMap<String, Budget>,
}

impl BudgetConfig {
    /// No provider budgets (deployment budgets still apply).
    pub fn new() -> Self {
        Self::default()
    }

    /// Caps the spend of every deployment of `provider`, together.
    pub fn provider(mut self, provider: impl Into<String>, budget: Budget) -> Self {
        self.providers.insert(provider.into(), budget);
        self
    }

    /// The budget of `provider`, if any.
    pub fn provider_budget(&self, provider: &str) -> Option<Budget> {
        self.providers.get(provider).copied()
    }
}

/// The store key of a provider's spend.
pub(crate) fn provider_key(provider: &str) -> String {
    format!("provider_spend:{provider}")
}

/// The store key of a deployment's spend.
pub(crate) fn deployment_key(d: &Deployment) -> String {
    format!("deployment_spend:{}", d.id)
}

fn own_budget(d: &Deployment) -> Option<Budget> {
    Some(Budget::new(d.max_budget?, d.budget_duration?))
}

/// The budgets that apply to `d`: (store key, budget, what to call it in messages).
fn budgets_of(config: &BudgetConfig, d: &Deployment) -> Vec<(String, Budget, String)> {
    let mut out = Vec::new();
    if let Some(b) = config.provider_budget(d.provider()) {
        out.push((provider_key(d.provider()), b, format!("provider `{}`", d.provider())));
    }
    if let Some(b) = own_budget(d) {
        out.push((deployment_key(d), b, format!("deployment `{}`", d.id)));
    }
    out
}

/// Whether a budget applies to some candidate.
pub(crate) fn any_budget(config: &BudgetConfig, list: &[Arc<Deployment>], any_own: bool) -> bool {
    // Without provider budgets, skip parsing each deployment's provider out of its model name.
    any_own || (!config.providers.is_empty() && list.iter().any(|d| config.provider_budget(d.provider()).is_some()))
}

/// One budget found spent: who, how much, and when it resets.
pub(crate) struct Spent {
    what: String,
    state: SpendState,
    limit: f64,
}

/// Drops the candidates whose provider or own budget is spent (one store read for every key);
/// returns what was found spent, per dropped deployment.
pub(crate) async fn filter(
    store: &StateStore,
    config: &BudgetConfig,
    list: &mut Candidates,
) -> Result<Vec<Vec<Spent>>, StoreError> {
    let per: Vec<_> = list.iter().map(|d| budgets_of(config, d)).collect();
    let mut keys: Vec<String> = per.iter().flatten().map(|(k, _, _)| k.clone()).collect();
    keys.sort_unstable();
    keys.dedup();
    let read = store.spends(&keys.iter().map(String::as_str).collect::<Vec<_>>()).await?;
    let state = |key: &String| keys.binary_search(key).ok().and_then(|i| read.get(i).copied()).unwrap_or_default();
    let mut dropped = Vec::new();
    let mut budgets = per.into_iter();
    list.retain(|_| {
        let spent: Vec<Spent> = budgets
            .next()
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(key, b, what)| {
                let s = state(&key);
                (s.total >= b.limit).then_some(Spent { what, state: s, limit: b.limit })
            })
            .collect();
        if spent.is_empty() {
            return true;
        }
        dropped.push(spent);
        false
    });
    Ok(dropped)
}

/// Every candidate is over budget: [`RouteErrorKind::BudgetExceeded`] naming each spent budget,
/// with `retry_after` = the soonest time a dropped deployment has all its budgets back.
pub(crate) fn exceeded(group: &Group, dropped: &[Vec<Spent>]) -> BoxError {
    let mut named: Vec<&Spent> = Vec::new();
    for s in dropped.iter().flatten() {
        if !named.iter().any(|n| n.what == s.what) {
            named.push(s);
        }
    }
    let mut parts = Vec::with_capacity(named.len());
    for s in named {
        let mut part = format!("{} spent ${:.4} of ${:.4}", s.what, s.state.total, s.limit);
        if let Some(r) = s.state.resets_in {
            let _ = write!(part, " (resets in {}s)", r.as_secs().max(1));
        }
        parts.push(part);
    }
    // A deployment is back when every budget it exceeded has reset; unknown if any has no period.
    let back = dropped
        .iter()
        .filter_map(|spent| spent.iter().map(|s| s.state.resets_in).collect::<Option<Vec<_>>>()?.into_iter().max())
        .min();
    let mut e = RouteError::new(
        RouteErrorKind::BudgetExceeded,
        format!("every deployment of `{}` is over budget: {}", group.name(), parts.join("; ")),
    )
    .with_group(group.name().clone());
    if let Some(wait) = back {
        e = e.with_retry_after(wait);
    }
    e.into()
}

/// Adds the served attempt's cost to its budgets when `body` ends with usage. The hook is sync:
/// the store applies it in memory at once (`add_spend_detached`), and would queue it on a
/// networked backend.
pub(crate) fn account(body: &mut RouteBody, store: Arc<StateStore>, config: &BudgetConfig, served: Arc<Deployment>) {
    let budgets: Vec<(String, Duration)> =
        budgets_of(config, &served).into_iter().map(|(k, b, _)| (k, b.period)).collect();
    // Without both prices the cost is unknown: nothing is counted (documented).
    if budgets.is_empty() || served.cost(0, 0).is_none() {
        return;
    }
    body.on_end(move |end| {
        let Some(u) = end.usage else { return };
        let Some(cost) = served.cost(u.prompt_tokens, u.completion_tokens) else { return };
        if !(cost.is_finite() && cost > 0.0) {
            return;
        }
        for (key, period) in &budgets {
            store.add_spend_detached(key, cost, *period);
        }
    });
}
