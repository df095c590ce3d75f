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
    /// Shared with the group (and every call that has not filtered it).
    Shared(Arc<[Arc<Deployment>]>),
    /// This call's own copy.
    Owned(Vec<Arc<Deployment>>),
}

impl Candidates {
    /// No candidates.
    pub fn new() -> Self {
        Self(Repr::Owned(Vec::new()))
    }

    /// A list shared with its owner until it is changed.
    pub fn shared(list: Arc<[Arc<Deployment>]>) -> Self {
        Self(Repr::Shared(list))
    }

    /// Keeps the deployments for which `keep` returns `true`, in order. `keep` is called exactly
    /// once per deployment, in order; the shared list is copied only when one is dropped.
    pub fn retain(&mut self, mut keep: impl FnMut(&Arc<Deployment>) -> bool) {
        match &mut self.0 {
            Repr::Owned(list) => list.retain(|d| keep(d)),
            Repr::Shared(list) => {
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
        if let Repr::Shared(list) = &self.0 {
            self.0 = Repr::Owned(list.to_vec());
        }
        match &mut self.0 {
            Repr::Owned(list) => list,
            Repr::Shared(_) => unreachable!("made owned above"),
        }
    }

    /// Whether this is still the list it was created from, unchanged (no copy was made).
    pub fn is_shared(&self) -> bool {
        matches!(self.0, Repr::Shared(_))
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
            Repr::Shared(list) => list,
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
