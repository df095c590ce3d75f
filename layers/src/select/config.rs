use std::{collections::HashMap, fmt, str::FromStr, sync::Arc};

use super::strategy::{CostBased, LatencyBased, LeastBusy, P2cPeakEwma, SimpleShuffle, Strategy, UsageBased};

/// The routing strategies, by their LiteLLM names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RoutingStrategy {
    /// `simple-shuffle`: weighted random by `weight`, else `rpm`, else `tpm`, decided per group.
    #[default]
    SimpleShuffle,
    /// `least-busy`: fewest requests in flight on this replica.
    LeastBusy,
    /// `usage-based-routing` (and `-v2`): lowest TPM in the window among those under their limits.
    UsageBased,
    /// `latency-based-routing`: lowest recent latency (TTFT for streams), within a buffer.
    LatencyBased,
    /// `cost-based-routing`: cheapest per token among those under their limits.
    CostBased,
    /// `p2c-peak-ewma`: power of two choices over peak-EWMA latency × (in flight + 1).
    P2cPeakEwma,
}

impl RoutingStrategy {
    /// Every strategy with its canonical name.
    pub const ALL: [(&'static str, RoutingStrategy); 6] = [
        ("simple-shuffle", Self::SimpleShuffle),
        ("least-busy", Self::LeastBusy),
        ("usage-based-routing", Self::UsageBased),
        ("latency-based-routing", Self::LatencyBased),
        ("cost-based-routing", Self::CostBased),
        ("p2c-peak-ewma", Self::P2cPeakEwma),
    ];

    /// The canonical name.
    pub fn as_str(self) -> &'static str {
        Self::ALL.iter().find(|(_, s)| *s == self).map_or("simple-shuffle", |(n, _)| n)
    }

    /// The strategy with default arguments.
    pub fn build(self) -> Arc<dyn Strategy> {
        self.build_with(&StrategyArgs::default())
    }

    /// The strategy with `args`.
    pub fn build_with(self, args: &StrategyArgs) -> Arc<dyn Strategy> {
        match self {
            Self::SimpleShuffle => Arc::new(SimpleShuffle),
            Self::LeastBusy => Arc::new(LeastBusy),
            Self::UsageBased => Arc::new(UsageBased),
            Self::LatencyBased => Arc::new(LatencyBased::new(args.lowest_latency_buffer)),
            Self::CostBased => Arc::new(CostBased),
            Self::P2cPeakEwma => Arc::new(P2cPeakEwma),
        }
    }
}

impl fmt::Display for RoutingStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not a routing strategy, or an invalid `routing_groups` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SelectConfigError {
    /// Unknown `routing_strategy`.
    UnknownStrategy {
        /// The name given.
        given: String,
    },
    /// A routing group without a name.
    EmptyGroupName {
        /// Index in `routing_groups`.
        index: usize,
    },
    /// Two routing groups share a name.
    DuplicateGroupName {
        /// The name.
        name: String,
    },
    /// `default` is reserved for the router-wide strategy.
    ReservedGroupName {
        /// Index in `routing_groups`.
        index: usize,
    },
    /// A model appears in two routing groups.
    ModelInTwoGroups {
        /// The model group.
        model: String,
        /// The first routing group naming it.
        first: String,
        /// The second.
        second: String,
    },
    /// An argument is out of range.
    InvalidArgument {
        /// The argument.
        name: &'static str,
        /// Why.
        reason: String,
    },
}

impl fmt::Display for SelectConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownStrategy { given } => {
                let valid: Vec<&str> = RoutingStrategy::ALL.iter().map(|(n, _)| *n).collect();
                write!(
                    f,
                    "unknown routing strategy `{given}`; valid: {}, usage-based-routing-v2, provider-budget-routing",
                    valid.join(", ")
                )
            }
            Self::EmptyGroupName { index } => write!(f, "routing group #{index} has an empty `group_name`"),
            Self::DuplicateGroupName { name } => write!(f, "routing group name `{name}` is used twice"),
            Self::ReservedGroupName { index } => {
                write!(f, "routing group #{index} is named `default`, which is reserved")
            }
            Self::ModelInTwoGroups { model, first, second } => {
                write!(f, "model `{model}` is in routing groups `{first}` and `{second}`; a model may be in one")
            }
            Self::InvalidArgument { name, reason } => write!(f, "invalid `{name}`: {reason}"),
        }
    }
}

impl std::error::Error for SelectConfigError {}

impl FromStr for RoutingStrategy {
    type Err = SelectConfigError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "usage-based-routing-v2" => return Ok(Self::UsageBased),
            // LiteLLM 1.100 accepts the name and builds no selector for it: picks are
            // simple-shuffle's, and the budgets are `provider_budget_config`'s pre-call check.
            "provider-budget-routing" => return Ok(Self::SimpleShuffle),
            _ => {}
        }
        Self::ALL
            .iter()
            .find(|(n, _)| *n == s)
            .map(|(_, v)| *v)
            .ok_or_else(|| SelectConfigError::UnknownStrategy { given: s.to_owned() })
    }
}

/// Strategy arguments (`routing_strategy_args`). Latency sample settings (`ttl`,
/// `max_latency_list_size`) belong to the store: see
/// [`LatencyConfig`](crate::state::LatencyConfig).
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct StrategyArgs {
    /// Latency-based: deployments within `lowest × (1 + buffer)` share the traffic (default 0).
    pub lowest_latency_buffer: f64,
}

impl StrategyArgs {
    /// Validated arguments.
    pub fn new(lowest_latency_buffer: f64) -> Result<Self, SelectConfigError> {
        if !(lowest_latency_buffer.is_finite() && lowest_latency_buffer >= 0.0) {
            return Err(SelectConfigError::InvalidArgument {
                name: "lowest_latency_buffer",
                reason: format!("must be a finite number >= 0, got {lowest_latency_buffer}"),
            });
        }
        Ok(Self { lowest_latency_buffer })
    }
}

/// One entry of `routing_groups`: a strategy for a set of model groups.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct RoutingGroup {
    /// Its name (unique, not `default`).
    pub name: String,
    /// The model groups it covers.
    pub models: Vec<String>,
    /// Their strategy.
    pub strategy: RoutingStrategy,
}

impl RoutingGroup {
    /// A routing group.
    pub fn new(name: impl Into<String>, models: Vec<String>, strategy: RoutingStrategy) -> Self {
        Self { name: name.into(), models, strategy }
    }
}

/// Validated `routing_groups`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RoutingGroups(Vec<RoutingGroup>);

impl RoutingGroups {
    /// Validates: names non-empty and unique, `default` reserved, each model in at most one group.
    pub fn new(groups: Vec<RoutingGroup>) -> Result<Self, SelectConfigError> {
        let mut names: HashMap<&str, ()> = HashMap::new();
        let mut owner: HashMap<&str, &str> = HashMap::new();
        for (index, g) in groups.iter().enumerate() {
            if g.name.trim().is_empty() {
                return Err(SelectConfigError::EmptyGroupName { index });
            }
            if g.name == "default" {
                return Err(SelectConfigError::ReservedGroupName { index });
            }
            if names.insert(&g.name, ()).is_some() {
                return Err(SelectConfigError::DuplicateGroupName { name: g.name.clone() });
            }
            for m in &g.models {
                if let Some(first) = owner.insert(m, &g.name)
                    && first != g.name
                {
                    return Err(SelectConfigError::ModelInTwoGroups {
                        model: m.clone(),
                        first: first.to_owned(),
                        second: g.name.clone(),
                    });
                }
            }
        }
        Ok(Self(groups))
    }

    /// The entries.
    pub fn groups(&self) -> &[RoutingGroup] {
        &self.0
    }
}

/// The strategy of each model group: a default plus per-group overrides.
#[derive(Clone, Debug)]
pub struct Strategies {
    default: Arc<dyn Strategy>,
    by_group: HashMap<Arc<str>, Arc<dyn Strategy>>,
}

impl Strategies {
    /// One strategy for every group.
    pub fn new(default: Arc<dyn Strategy>) -> Self {
        Self { default, by_group: HashMap::new() }
    }

    /// Uses `strategy` for `group`.
    pub fn with_group(mut self, group: impl Into<Arc<str>>, strategy: Arc<dyn Strategy>) -> Self {
        self.by_group.insert(group.into(), strategy);
        self
    }

    /// The default strategy with each routing group's strategy for its models.
    pub fn from_routing_groups(default: Arc<dyn Strategy>, groups: &RoutingGroups, args: &StrategyArgs) -> Self {
        let mut s = Self::new(default);
        for g in groups.groups() {
            let strategy = g.strategy.build_with(args);
            for m in &g.models {
                s.by_group.insert(Arc::from(m.as_str()), strategy.clone());
            }
        }
        s
    }

    /// The strategy for `group`.
    pub fn for_group(&self, group: &str) -> &Arc<dyn Strategy> {
        if self.by_group.is_empty() {
            return &self.default;
        }
        self.by_group.get(group).unwrap_or(&self.default)
    }
}

impl From<Arc<dyn Strategy>> for Strategies {
    fn from(s: Arc<dyn Strategy>) -> Self {
        Self::new(s)
    }
}

impl From<RoutingStrategy> for Strategies {
    fn from(s: RoutingStrategy) -> Self {
        Self::new(s.build())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_strategy_lists_the_valid_ones() {
        let err = "fastest".parse::<RoutingStrategy>().unwrap_err();
        let msg = err.to_string();
        for (name, _) in RoutingStrategy::ALL {
            assert!(msg.contains(name), "{msg}");
        }
    }

    #[test]
    fn usage_based_v2_is_accepted() {
        assert_eq!("usage-based-routing-v2".parse::<RoutingStrategy>(), Ok(RoutingStrategy::UsageBased));
    }

    #[test]
    fn provider_budget_routing_picks_as_simple_shuffle_as_in_litellm() {
        assert_eq!("provider-budget-routing".parse::<RoutingStrategy>(), Ok(RoutingStrategy::SimpleShuffle));
        let err = "nope".parse::<RoutingStrategy>().unwrap_err().to_string();
        assert!(err.contains("provider-budget-routing"), "{err}");
    }

    #[test]
    fn routing_groups_are_validated() {
        let g = |n: &str, m: &[&str]| {
            RoutingGroup::new(n, m.iter().map(|s| s.to_string()).collect(), RoutingStrategy::LeastBusy)
        };
        assert!(RoutingGroups::new(vec![g("a", &["x"]), g("b", &["y"])]).is_ok());
        assert!(matches!(
            RoutingGroups::new(vec![g("a", &["x"]), g("a", &["y"])]),
            Err(SelectConfigError::DuplicateGroupName { .. })
        ));
        assert!(matches!(
            RoutingGroups::new(vec![g("default", &["x"])]),
            Err(SelectConfigError::ReservedGroupName { .. })
        ));
        assert!(matches!(RoutingGroups::new(vec![g(" ", &["x"])]), Err(SelectConfigError::EmptyGroupName { .. })));
        assert!(matches!(
            RoutingGroups::new(vec![g("a", &["x"]), g("b", &["x"])]),
            Err(SelectConfigError::ModelInTwoGroups { .. })
        ));
    }
}
