//! The spare service of a layer that may call its inner service more than once per request
//! (retry, fallback).
//!
//! Tower's usual way to keep a service for later attempts is to move the ready service into the
//! response future and put a clone back in its place, on every call. That clone costs an `Arc`
//! increment per layer below (and the decrements when it drops) on every call, although most calls
//! succeed at once and never use it. Instead the layer's service keeps one clone of its inner
//! service, made when the layer wraps it and shared by every clone of the layer's service; a call
//! that failed takes a fresh clone of that spare for its next attempts, drives it to readiness and
//! calls it, as it would have the clone it kept. A call that succeeds at once clones nothing.
//!
//! The spare sits behind a mutex so that the layer's service is `Sync` whenever the inner service
//! is `Send`; it is locked only to clone it, after a failure.

use std::sync::{Arc, Mutex, PoisonError};

/// A layer's settings and a spare clone of the service it wraps.
pub(crate) struct Spare<L, S> {
    /// The layer's settings, shared with every call.
    pub(crate) layer: L,
    service: Mutex<S>,
}

impl<L, S: Clone> Spare<L, S> {
    /// Keeps a clone of `service` beside `layer`.
    pub(crate) fn new(layer: L, service: &S) -> Arc<Self> {
        Arc::new(Self { layer, service: Mutex::new(service.clone()) })
    }

    /// A fresh clone of the spare, for the attempts after a failure; drive it to readiness before
    /// calling it.
    pub(crate) fn service(&self) -> S {
        // A panic while cloning leaves the spare as it was: cloning takes it by reference.
        self.service.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Counts its clones.
    struct Counted(Arc<AtomicUsize>);

    impl Clone for Counted {
        fn clone(&self) -> Self {
            self.0.fetch_add(1, Ordering::Relaxed);
            Self(self.0.clone())
        }
    }

    #[test]
    fn the_spare_is_cloned_once_when_kept_and_once_per_use() {
        let clones = Arc::new(AtomicUsize::new(0));
        let spare = Spare::new("settings", &Counted(clones.clone()));
        assert_eq!(clones.load(Ordering::Relaxed), 1);
        let shared = spare.clone();
        assert_eq!(clones.load(Ordering::Relaxed), 1, "sharing the spare clones no service");
        let _a = shared.service();
        let _b = spare.service();
        assert_eq!(clones.load(Ordering::Relaxed), 3);
        assert_eq!(spare.layer, "settings");
    }
}
