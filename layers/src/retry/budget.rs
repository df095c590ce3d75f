//! [`RetryBudget`]: a token bucket shared across requests that bounds retries to a share of the
//! traffic, so a failing upstream is not hit by a retry storm.

use std::{
    fmt,
    sync::atomic::{AtomicI64, AtomicU64, Ordering},
};

use tokio::time::Instant;

/// Fixed-point unit: one token is a million micro-tokens, so fractional deposits stay exact
/// enough and every update is one atomic operation.
const UNIT: i64 = 1_000_000;

/// Retries allowed as a share of first attempts, plus a floor per second (linkerd's and tower's
/// retry budget, as a token bucket).
///
/// Every call deposits `ratio` tokens when its first attempt starts; every retry withdraws one
/// token and is not made when fewer than one is left. Independently of traffic, `min_per_sec`
/// tokens are added each second so a quiet service can still retry. The balance never exceeds
/// `capacity` tokens (default: `max(100, 10 × min_per_sec)`), which bounds a burst of retries after
/// a long healthy period.
///
/// Lock-free: deposits, withdrawals and the time-based refill are single atomic updates. Time is
/// `tokio::time`, so a paused test clock drives the refill.
///
/// ```
/// use switchyard_layers::retry::RetryBudget;
///
/// let budget = RetryBudget::new(0.5, 0)?;
/// budget.deposit();
/// assert!(!budget.withdraw()); // half a token: no retry yet
/// budget.deposit();
/// assert!(budget.withdraw()); // two first attempts pay for one retry
/// assert!(!budget.withdraw());
/// # Ok::<(), switchyard_layers::retry::RetryBudgetError>(())
/// ```
pub struct RetryBudget {
    /// Micro-tokens available.
    balance: AtomicI64,
    /// Nanoseconds since `origin` up to which the floor has been credited.
    refilled_to: AtomicU64,
    origin: Instant,
    deposit: i64,
    capacity: i64,
    min_per_sec: u32,
}

impl fmt::Debug for RetryBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryBudget")
            .field("ratio", &self.ratio())
            .field("min_per_sec", &self.min_per_sec)
            .field("capacity", &(self.capacity / UNIT))
            .field("balance", &self.balance())
            .finish()
    }
}

impl RetryBudget {
    /// Highest accepted `ratio` (tower's bound): ten retries per first attempt.
    pub const MAX_RATIO: f64 = 1000.0;

    /// A budget allowing `ratio` retries per first attempt (0.2 = one retry per five calls) plus
    /// `min_per_sec` retries per second. It starts with one second of the floor.
    pub fn new(ratio: f64, min_per_sec: u32) -> Result<Self, RetryBudgetError> {
        if !(ratio.is_finite() && (0.0..=Self::MAX_RATIO).contains(&ratio)) {
            return Err(RetryBudgetError { ratio });
        }
        let capacity = i64::from(min_per_sec.saturating_mul(10).max(100)) * UNIT;
        let start = (i64::from(min_per_sec) * UNIT).min(capacity);
        Ok(Self {
            balance: AtomicI64::new(start),
            refilled_to: AtomicU64::new(0),
            origin: Instant::now(),
            deposit: (ratio * UNIT as f64).round() as i64,
            capacity,
            min_per_sec,
        })
    }

    /// Caps the balance at `tokens` (the largest burst of retries the budget allows).
    pub fn with_capacity(mut self, tokens: u32) -> Self {
        self.capacity = i64::from(tokens) * UNIT;
        let start = self.balance.load(Ordering::Relaxed).min(self.capacity);
        self.balance = AtomicI64::new(start);
        self
    }

    /// A budget with the same settings (ratio, floor, capacity) and none of this one's history:
    /// its starting balance, as if just built. For a new stack built from a config that holds a
    /// budget, so stacks never share one's balance.
    pub fn fresh(&self) -> Self {
        let start = (i64::from(self.min_per_sec) * UNIT).min(self.capacity);
        Self {
            balance: AtomicI64::new(start),
            refilled_to: AtomicU64::new(0),
            origin: Instant::now(),
            deposit: self.deposit,
            capacity: self.capacity,
            min_per_sec: self.min_per_sec,
        }
    }

    /// Whether `other` has the same settings (ratio, floor, capacity), whatever either's balance:
    /// a reload whose config keeps the budget's settings keeps the budget, and its history.
    ///
    /// ```
    /// use switchyard_layers::retry::RetryBudget;
    ///
    /// let a = RetryBudget::new(0.2, 10)?;
    /// assert!(a.same_settings(&a.fresh()));
    /// assert!(!a.same_settings(&RetryBudget::new(0.5, 10)?));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn same_settings(&self, other: &Self) -> bool {
        self.deposit == other.deposit && self.capacity == other.capacity && self.min_per_sec == other.min_per_sec
    }

    /// Retries per second credited whatever the traffic (the floor).
    pub fn min_per_sec(&self) -> u32 {
        self.min_per_sec
    }

    /// Retries per first attempt.
    pub fn ratio(&self) -> f64 {
        self.deposit as f64 / UNIT as f64
    }

    /// Tokens available now (floor refill included).
    pub fn balance(&self) -> f64 {
        self.refill();
        self.balance.load(Ordering::Acquire) as f64 / UNIT as f64
    }

    /// Credits one first attempt.
    pub fn deposit(&self) {
        self.add(self.deposit);
    }

    /// Takes the token for one retry; `false` (and nothing taken) when less than one is left.
    pub fn withdraw(&self) -> bool {
        self.refill();
        self.balance.fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| (b >= UNIT).then_some(b - UNIT)).is_ok()
    }

    fn add(&self, amount: i64) {
        if amount <= 0 {
            return;
        }
        let cap = self.capacity;
        // Never lowers a balance that is (after `with_capacity`) above the cap; only adds up to it.
        let _ = self.balance.fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| {
            (b < cap).then(|| b.saturating_add(amount).min(cap))
        });
    }

    /// Credits the floor for the time since the last refill. `fetch_max` hands every interval of
    /// time to exactly one caller, so concurrent refills never credit the same second twice.
    fn refill(&self) {
        if self.min_per_sec == 0 {
            return;
        }
        let now = u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let before = self.refilled_to.fetch_max(now, Ordering::AcqRel);
        if now > before {
            // micro-tokens = nanos × per_sec × UNIT / 1e9 = nanos × per_sec / 1000
            let credit = u128::from(now - before) * u128::from(self.min_per_sec) / 1000;
            self.add(i64::try_from(credit).unwrap_or(i64::MAX));
        }
    }
}

/// A [`RetryBudget`] ratio outside `0..=1000` (or not a number).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryBudgetError {
    ratio: f64,
}

impl RetryBudgetError {
    /// The rejected ratio.
    pub fn ratio(&self) -> f64 {
        self.ratio
    }
}

impl fmt::Display for RetryBudgetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "retry budget ratio {} is not in 0..={}", self.ratio, RetryBudget::MAX_RATIO)
    }
}

impl std::error::Error for RetryBudgetError {}

#[cfg(test)]
mod tests {
    use std::{sync::Arc, time::Duration};

    use super::*;

    #[test]
    fn ratio_is_validated() {
        assert!(RetryBudget::new(-0.1, 0).is_err());
        assert!(RetryBudget::new(f64::NAN, 0).is_err());
        assert!(RetryBudget::new(1000.5, 0).is_err());
        assert_eq!(RetryBudget::new(0.2, 0).map(|b| b.ratio()).ok(), Some(0.2));
    }

    #[tokio::test(start_paused = true)]
    async fn floor_refills_over_time_up_to_capacity() {
        let b = RetryBudget::new(0.0, 2).expect("valid").with_capacity(3);
        assert!(b.withdraw());
        assert!(b.withdraw());
        assert!(!b.withdraw());
        tokio::time::advance(Duration::from_millis(500)).await;
        assert!(b.withdraw());
        assert!(!b.withdraw());
        tokio::time::advance(Duration::from_secs(60)).await;
        assert_eq!(b.balance(), 3.0);
    }

    #[test]
    fn deposits_stop_at_capacity() {
        let b = RetryBudget::new(1.0, 0).expect("valid").with_capacity(2);
        for _ in 0..10 {
            b.deposit();
        }
        assert_eq!(b.balance(), 2.0);
    }

    #[test]
    fn concurrent_withdrawals_never_overdraw() {
        let b = Arc::new(RetryBudget::new(1.0, 0).expect("valid"));
        for _ in 0..50 {
            b.deposit();
        }
        let granted: usize = (0..4)
            .map(|_| {
                let b = b.clone();
                std::thread::spawn(move || (0..100).filter(|_| b.withdraw()).count())
            })
            .map(|h| h.join().expect("no panic"))
            .sum();
        assert_eq!(granted, 50);
    }
}
