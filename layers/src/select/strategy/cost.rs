use rand::RngCore;

use super::{Selection, Strategy, min_by_key_random_tie};

/// `cost-based-routing`: the cheapest candidate per token (input + output price) among those
/// under their limits. Prices are the deployment's (`input_cost_per_token`,
/// `output_cost_per_token`), which [`DeploymentBuilder::build`](crate::DeploymentBuilder::build)
/// takes from the [catalog](crate::catalog) when the config declares none; a deployment with no
/// known price ranks after every priced one. Ties are broken at random, so equal-priced keys
/// share the load.
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
            Some(match (d.input_cost_per_token, d.output_cost_per_token) {
                (Some(a), Some(b)) => a + b,
                _ => f64::MAX,
            })
        })
    }
}
