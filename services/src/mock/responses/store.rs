//! The responses a mock server keeps (`store` not false), bounded: past [`CAPACITY`] the oldest
//! is forgotten, as if it had expired.

use std::{
    collections::{HashMap, VecDeque},
    sync::Arc,
};

use bytes::Bytes;
use parking_lot::Mutex;
use serde_json::Value;

/// How many responses one mock server keeps.
pub(in crate::mock) const CAPACITY: usize = 10_000;

/// A response the mock keeps, with what created it: enough for a test to tell that a
/// conversation went on with *this* server.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct StoredResponse {
    /// The response object as `GET /v1/responses/{id}` answers it (`status` `completed`,
    /// `incomplete`, `failed` or, once cancelled, `cancelled`).
    pub response: Value,
    /// The input items of the request that created it (a string `input` is one `user` message).
    pub input: Vec<Value>,
    /// The `previous_response_id` that request carried, if any.
    pub previous_response_id: Option<String>,
    /// The body of that request, as received.
    pub request: Bytes,
}

impl StoredResponse {
    /// The response's id (`resp_…`).
    pub fn id(&self) -> &str {
        self.response.get("id").and_then(Value::as_str).unwrap_or_default()
    }

    /// The response's output items.
    pub fn output(&self) -> &[Value] {
        self.response.get("output").and_then(Value::as_array).map_or(&[], Vec::as_slice)
    }

    /// Whether it was created with `background: true` (only those can be cancelled).
    pub fn background(&self) -> bool {
        self.response.get("background").and_then(Value::as_bool).unwrap_or(false)
    }
}

/// Stored responses by id, oldest first.
#[derive(Debug)]
pub(in crate::mock) struct Store {
    capacity: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    by_id: HashMap<String, Arc<StoredResponse>>,
    /// Ids in the order they were stored; holds exactly the keys of `by_id`.
    order: VecDeque<String>,
}

impl Default for Store {
    fn default() -> Self {
        Self::with_capacity(CAPACITY)
    }
}

impl Store {
    pub(in crate::mock) fn with_capacity(capacity: usize) -> Self {
        Self { capacity: capacity.max(1), inner: Mutex::new(Inner::default()) }
    }

    /// Keeps `stored`, forgetting the oldest responses past the capacity.
    pub(in crate::mock) fn insert(&self, stored: StoredResponse) {
        let id = stored.id().to_owned();
        let mut inner = self.inner.lock();
        if inner.by_id.insert(id.clone(), Arc::new(stored)).is_none() {
            inner.order.push_back(id);
        }
        while inner.order.len() > self.capacity {
            if let Some(oldest) = inner.order.pop_front() {
                inner.by_id.remove(&oldest);
            }
        }
    }

    pub(in crate::mock) fn get(&self, id: &str) -> Option<Arc<StoredResponse>> {
        self.inner.lock().by_id.get(id).cloned()
    }

    /// Forgets `id`; whether it was kept.
    pub(in crate::mock) fn remove(&self, id: &str) -> bool {
        let mut inner = self.inner.lock();
        let removed = inner.by_id.remove(id).is_some();
        if removed {
            inner.order.retain(|kept| kept != id);
        }
        removed
    }

    /// Changes the response kept as `id` with `change`; the response changed, if `id` is kept.
    pub(in crate::mock) fn update(&self, id: &str, change: impl FnOnce(&mut Value)) -> Option<Value> {
        let mut inner = self.inner.lock();
        let stored = inner.by_id.get_mut(id)?;
        let stored = Arc::make_mut(stored);
        change(&mut stored.response);
        Some(stored.response.clone())
    }

    /// The ids kept, oldest first.
    pub(in crate::mock) fn ids(&self) -> Vec<String> {
        self.inner.lock().order.iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn stored(id: &str) -> StoredResponse {
        StoredResponse {
            response: json!({"id": id, "object": "response"}),
            input: Vec::new(),
            previous_response_id: None,
            request: Bytes::new(),
        }
    }

    #[test]
    fn the_oldest_response_is_forgotten_past_the_capacity() {
        let store = Store::with_capacity(2);
        for id in ["resp_a", "resp_b", "resp_c"] {
            store.insert(stored(id));
        }
        assert_eq!(store.ids(), ["resp_b", "resp_c"]);
        assert!(store.get("resp_a").is_none());
    }

    #[test]
    fn a_removed_response_leaves_the_order_too() {
        let store = Store::with_capacity(2);
        store.insert(stored("resp_a"));
        assert!(store.remove("resp_a"));
        assert!(!store.remove("resp_a"));
        store.insert(stored("resp_b"));
        store.insert(stored("resp_c"));
        assert_eq!(store.ids(), ["resp_b", "resp_c"]);
    }
}
