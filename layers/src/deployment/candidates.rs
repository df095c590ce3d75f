//! [`Candidates`]: the deployments that may still serve an attempt.

use std::{fmt, ops::Deref, sync::Arc};

use super::Deployment;

/// The deployments that may still serve an attempt, in the group's order.
///
/// A call starts with its group's whole list, shared with every other call (an `Arc` bump, not a
/// copy), and the first layer that removes a deployment takes its own copy: a call that filters
/// nothing costs the same with 4 deployments as with 1,024. Reads go through `Deref` to a slice.
///
/// ```
/// use std::sync::Arc;
/// use switchyard_layers::{Candidates, Deployment};
///
/// let a = Arc::new(Deployment::builder("g", "openai/a").id("a").build()?);
/// let b = Arc::new(Deployment::builder("g", "openai/b").id("b").build()?);
/// let mut list = Candidates::from(vec![a, b]);
/// list.retain(|d| d.id.as_str() != "a");
/// assert_eq!(list.iter().map(|d| d.id.as_str()).collect::<Vec<_>>(), ["b"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Candidates(Repr);

#[derive(Clone)]
enum Repr {
    /// Shared with the group (and every call that has not filtered it), with what it declares.
    Shared(Arc<[Arc<Deployment>]>, Declared),
    /// This call's own copy.
    Owned(Vec<Arc<Deployment>>),
}

/// What a list of deployments declares, for the checks that only run when some deployment needs
/// them. Read once per group for a shared list, by one pass over the list otherwise.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Declared {
    /// Some deployment has a context window (`max_input_tokens`).
    pub(crate) window: bool,
    /// Some deployment has a TPM limit.
    pub(crate) tpm: bool,
    /// Some deployment has an RPM or a TPM limit.
    pub(crate) rate_limit: bool,
    /// Some deployment has its own budget (`max_budget` with `budget_duration`).
    pub(crate) own_budget: bool,
    /// Some deployment has `max_parallel_requests`.
    pub(crate) parallel: bool,
    /// The deployments are in more than one `order` tier (a deployment without one is a tier).
    pub(crate) tiers: bool,
    /// Some deployment is blocked.
    pub(crate) blocked: bool,
}

impl Declared {
    pub(crate) fn of(list: &[Arc<Deployment>]) -> Self {
        let mut d = Self::default();
        let first_order = list.first().map(|x| x.order);
        for x in list {
            d.window |= x.max_input_tokens.is_some();
            d.tpm |= x.tpm.is_some();
            d.rate_limit |= x.rpm.is_some() || x.tpm.is_some();
            d.own_budget |= x.max_budget.is_some() && x.budget_duration.is_some();
            d.parallel |= x.max_parallel_requests.is_some();
            d.tiers |= Some(x.order) != first_order;
            d.blocked |= x.blocked;
        }
        d
    }
}

impl Candidates {
    /// No candidates.
    pub fn new() -> Self {
        Self(Repr::Owned(Vec::new()))
    }

    /// A list shared with its owner until it is changed.
    pub fn shared(list: Arc<[Arc<Deployment>]>) -> Self {
        let declared = Declared::of(&list);
        Self(Repr::Shared(list, declared))
    }

    /// A shared list whose [`Declared`] summary is already known (a group's).
    pub(crate) fn shared_declared(list: Arc<[Arc<Deployment>]>, declared: Declared) -> Self {
        Self(Repr::Shared(list, declared))
    }

    /// What the deployments declare: the group's summary while the list is shared, one pass
    /// over the list once a layer changed it.
    pub(crate) fn declared(&self) -> Declared {
        match &self.0 {
            Repr::Shared(_, declared) => *declared,
            Repr::Owned(list) => Declared::of(list),
        }
    }

    /// Keeps the deployments for which `keep` returns `true`, in order. `keep` is called exactly
    /// once per deployment, in order; the shared list is copied only when one is dropped.
    pub fn retain(&mut self, mut keep: impl FnMut(&Arc<Deployment>) -> bool) {
        match &mut self.0 {
            Repr::Owned(list) => list.retain(|d| keep(d)),
            Repr::Shared(list, _) => {
                let Some(first_dropped) = list.iter().position(|d| !keep(d)) else { return };
                let mut owned = Vec::with_capacity(list.len() - 1);
                owned.extend(list[..first_dropped].iter().cloned());
                owned.extend(list[first_dropped + 1..].iter().filter(|d| keep(d)).cloned());
                self.0 = Repr::Owned(owned);
            }
        }
    }

    /// Removes and returns the deployment at `index`.
    ///
    /// # Panics
    ///
    /// When `index` is out of bounds, like [`Vec::remove`].
    pub fn remove(&mut self, index: usize) -> Arc<Deployment> {
        self.make_mut().remove(index)
    }

    /// This call's own copy of the list, made on first use.
    pub fn make_mut(&mut self) -> &mut Vec<Arc<Deployment>> {
        if let Repr::Shared(list, _) = &self.0 {
            self.0 = Repr::Owned(list.to_vec());
        }
        match &mut self.0 {
            Repr::Owned(list) => list,
            Repr::Shared(..) => unreachable!("made owned above"),
        }
    }

    /// Whether the list is still shared with its owner (created by [`Candidates::shared`] and not
    /// changed since, so no copy was made).
    pub fn is_shared(&self) -> bool {
        matches!(self.0, Repr::Shared(..))
    }
}

impl Default for Candidates {
    fn default() -> Self {
        Self::new()
    }
}

impl Deref for Candidates {
    type Target = [Arc<Deployment>];

    fn deref(&self) -> &Self::Target {
        match &self.0 {
            Repr::Shared(list, _) => list,
            Repr::Owned(list) => list,
        }
    }
}

impl From<Vec<Arc<Deployment>>> for Candidates {
    fn from(list: Vec<Arc<Deployment>>) -> Self {
        Self(Repr::Owned(list))
    }
}

impl<'a> IntoIterator for &'a Candidates {
    type Item = &'a Arc<Deployment>;
    type IntoIter = std::slice::Iter<'a, Arc<Deployment>>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl FromIterator<Arc<Deployment>> for Candidates {
    fn from_iter<I: IntoIterator<Item = Arc<Deployment>>>(iter: I) -> Self {
        Self(Repr::Owned(iter.into_iter().collect()))
    }
}

impl fmt::Debug for Candidates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter().map(|d| &d.id)).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(ids: &[&str]) -> Arc<[Arc<Deployment>]> {
        ids.iter().map(|id| Arc::new(Deployment::builder("g", "openai/m").id(*id).build().expect("valid"))).collect()
    }

    fn ids(c: &Candidates) -> Vec<&str> {
        c.iter().map(|d| d.id.as_str()).collect()
    }

    #[test]
    fn retain_keeping_everything_stays_shared() {
        let group = list(&["a", "b", "c"]);
        let mut c = Candidates::shared(group.clone());
        let mut seen = Vec::new();
        c.retain(|d| {
            seen.push(d.id.clone());
            true
        });
        assert!(c.is_shared());
        assert_eq!(seen.len(), 3);
        assert_eq!(Arc::strong_count(&group), 2);
    }

    #[test]
    fn retain_calls_keep_once_per_deployment_in_order_and_copies_once() {
        let group = list(&["a", "b", "c", "d"]);
        let mut c = Candidates::shared(group.clone());
        let mut seen = Vec::new();
        c.retain(|d| {
            seen.push(d.id.as_str().to_owned());
            d.id.as_str() != "b" && d.id.as_str() != "d"
        });
        assert_eq!(seen, ["a", "b", "c", "d"]);
        assert_eq!(ids(&c), ["a", "c"]);
        assert!(!c.is_shared());
        // The group's list is untouched.
        assert_eq!(group.len(), 4);
    }

    #[test]
    fn declared_is_the_groups_while_shared_and_read_again_once_changed() {
        let plain = Arc::new(Deployment::builder("g", "openai/m").id("plain").build().expect("valid"));
        let limited =
            Arc::new(Deployment::builder("g", "openai/m").id("limited").tpm(100).order(2).build().expect("valid"));
        let list: Arc<[Arc<Deployment>]> = vec![plain, limited].into();
        let mut c = Candidates::shared(list);
        let d = c.declared();
        assert!(d.tpm && d.rate_limit && d.tiers);
        assert!(!d.window && !d.parallel && !d.own_budget && !d.blocked);
        c.retain(|d| d.id.as_str() == "plain");
        assert_eq!(c.declared(), Declared::default(), "the limited one is gone: nothing is declared");
    }

    #[test]
    fn remove_and_make_mut_copy_on_write() {
        let group = list(&["a", "b"]);
        let mut c = Candidates::shared(group.clone());
        let other = c.clone();
        assert_eq!(c.remove(0).id.as_str(), "a");
        assert_eq!(ids(&c), ["b"]);
        assert_eq!(ids(&other), ["a", "b"]);
        c.make_mut().clear();
        assert!(c.is_empty());
    }
}
