//! [`Latency`]: the delay distributions of a simulated upstream.

use std::time::Duration;

use rand::Rng;
use rand_distr::StandardNormal;

use super::ProfileError;

/// The 99th percentile of the standard normal distribution.
const Z_P99: f64 = 2.326_347_874_040_841;
/// No sampled delay exceeds a day, so a wild log-normal tail cannot overflow a deadline.
const MAX_DELAY_SECS: f64 = 86_400.0;

/// A delay distribution: fixed, or log-normal given its median and 99th percentile.
///
/// ```
/// use std::time::Duration;
/// use switchyard_services::profile::Latency;
///
/// let fixed = Latency::fixed(Duration::from_millis(50));
/// let spread = Latency::log_normal(Duration::from_millis(300), Duration::from_secs(2));
/// # let _ = (fixed, spread);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Latency(Shape);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    Fixed(Duration),
    LogNormal { median: Duration, p99: Duration },
}

impl Latency {
    /// No delay.
    pub const ZERO: Self = Self::fixed(Duration::ZERO);

    /// Always `d`.
    pub const fn fixed(d: Duration) -> Self {
        Self(Shape::Fixed(d))
    }

    /// Log-normal with this median and 99th percentile (`p99 >= median > 0`; checked when the
    /// profile is built).
    pub const fn log_normal(median: Duration, p99: Duration) -> Self {
        Self(Shape::LogNormal { median, p99 })
    }

    /// The median delay.
    pub const fn median(&self) -> Duration {
        match self.0 {
            Shape::Fixed(d) => d,
            Shape::LogNormal { median, .. } => median,
        }
    }

    pub(crate) fn validate(&self, what: &'static str) -> Result<(), ProfileError> {
        match self.0 {
            Shape::Fixed(_) => Ok(()),
            Shape::LogNormal { median, p99 } if median.is_zero() || p99 < median => {
                Err(ProfileError::InvalidLatency { what, median, p99 })
            }
            Shape::LogNormal { .. } => Ok(()),
        }
    }

    pub(crate) fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Duration {
        match self.0 {
            Shape::Fixed(d) => d,
            Shape::LogNormal { median, p99 } => {
                let median = median.as_secs_f64();
                let sigma = (p99.as_secs_f64() / median).ln() / Z_P99;
                let z: f64 = rng.sample(StandardNormal);
                let secs = median * (sigma * z).exp();
                Duration::from_secs_f64(if secs.is_finite() { secs.clamp(0.0, MAX_DELAY_SECS) } else { MAX_DELAY_SECS })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::{SeedableRng, rngs::SmallRng};

    use super::*;

    #[test]
    fn log_normal_samples_match_median_and_p99() {
        let latency = Latency::log_normal(Duration::from_millis(200), Duration::from_millis(2000));
        let mut rng = SmallRng::seed_from_u64(1);
        let mut samples: Vec<Duration> = (0..20_000).map(|_| latency.sample(&mut rng)).collect();
        samples.sort();
        let median = samples[samples.len() / 2].as_secs_f64();
        let p99 = samples[samples.len() * 99 / 100].as_secs_f64();
        assert!((median - 0.2).abs() < 0.01, "median {median}");
        assert!((p99 - 2.0).abs() < 0.2, "p99 {p99}");
    }
}
