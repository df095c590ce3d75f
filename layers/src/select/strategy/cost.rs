use rand::RngCore;

use super::{Selection, Strategy, min_by_key_random_tie};

/// `cost-based-routing`: the cheapest candidate per token (input + output price) among those
/// under their limits. Prices come from the deployment (`input_cost_per_token`,
/// `output_cost_per_token`), else from [`builtin_price`]; a deployment with no known price ranks
/// after every priced one. Ties are broken at random, so equal-priced keys share the load.
#[derive(Clone, Copy, Debug, Default)]
pub struct CostBased;

impl Strategy for CostBased {
    fn name(&self) -> &'static str {
        "cost-based-routing"
    }

    fn needs_usage(&self) -> bool {
        true
    }

    fn pick(&self, s: &Selection<'_>, rng: &mut dyn RngCore) -> Option<usize> {
        min_by_key_random_tie(s.candidates.len(), rng, |i| {
            if !s.under_limits(i) {
                return None;
            }
            let d = &s.candidates[i];
            let builtin = builtin_price(&d.model);
            let input = d.input_cost_per_token.or(builtin.map(|p| p.0));
            let output = d.output_cost_per_token.or(builtin.map(|p| p.1));
            Some(match (input, output) {
                (Some(a), Some(b)) => a + b,
                _ => f64::MAX,
            })
        })
    }
}

/// Built-in list prices (USD per input token, per output token) for common models, matched on
/// the provider model without its provider prefix. A snapshot for routing decisions, not billing;
/// set prices on the deployment to override.
pub fn builtin_price(model: &str) -> Option<(f64, f64)> {
    let name = model.rsplit_once('/').map_or(model, |(_, m)| m);
    const TABLE: &[(&str, f64, f64)] = &[
        ("gpt-4o-mini", 0.15e-6, 0.60e-6),
        ("gpt-4o", 2.50e-6, 10.0e-6),
        ("gpt-4.1-nano", 0.10e-6, 0.40e-6),
        ("gpt-4.1-mini", 0.40e-6, 1.60e-6),
        ("gpt-4.1", 2.00e-6, 8.00e-6),
        ("gpt-4-turbo", 10.0e-6, 30.0e-6),
        ("gpt-4", 30.0e-6, 60.0e-6),
        ("gpt-3.5-turbo", 0.50e-6, 1.50e-6),
        ("o4-mini", 1.10e-6, 4.40e-6),
        ("o3-mini", 1.10e-6, 4.40e-6),
        ("o3", 2.00e-6, 8.00e-6),
        ("o1-mini", 1.10e-6, 4.40e-6),
        ("o1", 15.0e-6, 60.0e-6),
        ("text-embedding-3-small", 0.02e-6, 0.0),
        ("text-embedding-3-large", 0.13e-6, 0.0),
        ("text-embedding-ada-002", 0.10e-6, 0.0),
    ];
    // Longest prefix wins, so `gpt-4o-mini-2024-07-18` is priced as `gpt-4o-mini`, not `gpt-4o`.
    TABLE
        .iter()
        .filter(|(prefix, _, _)| name.starts_with(prefix))
        .max_by_key(|(prefix, _, _)| prefix.len())
        .map(|&(_, i, o)| (i, o))
}
