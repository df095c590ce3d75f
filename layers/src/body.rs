//! [`RouteBody`]: the one response body type of the stack.
//!
//! Everything an attempt holds (in-flight counts, reservations, parallel slots) and everything it
//! records when it ends (latency, real token usage, a mid-stream failure) rides on the body: each
//! end hook fires exactly once, when the body ends, fails, or is dropped unread.
//!
//! ```
//! use std::sync::{Arc, atomic::{AtomicBool, Ordering}};
//! use switchyard_layers::body::{BodyEndKind, RouteBody};
//!
//! let fired = Arc::new(AtomicBool::new(false));
//! let seen = fired.clone();
//! let mut body = RouteBody::from("hello");
//! body.on_end(move |end| seen.store(end.kind == BodyEndKind::Dropped, Ordering::SeqCst));
//! drop(body);
//! assert!(fired.load(Ordering::SeqCst));
//! ```

use std::{
    fmt,
    pin::Pin,
    sync::{Arc, OnceLock},
    task::{Context, Poll, ready},
};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::{BodyExt, Empty, Full, combinators::UnsyncBoxBody};
use tokio::time::Instant;

use crate::{BoxError, Outcome, RouteError, state::InFlightGuard};

/// Token usage of one attempt, as the upstream reported it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Usage {
    /// Input tokens.
    pub prompt_tokens: u64,
    /// Output tokens.
    pub completion_tokens: u64,
}

impl Usage {
    /// Usage of `prompt` input and `completion` output tokens.
    pub const fn new(prompt: u64, completion: u64) -> Self {
        Self { prompt_tokens: prompt, completion_tokens: completion }
    }

    /// Input plus output tokens.
    pub const fn total(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

/// Where a provider reports usage it only learns while streaming (the final usage chunk).
#[derive(Clone, Debug, Default)]
pub struct UsageSlot(Arc<OnceLock<Usage>>);

impl UsageSlot {
    /// An empty slot.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records the usage; later calls are ignored.
    pub fn set(&self, usage: Usage) {
        let _ = self.0.set(usage);
    }

    /// The usage, once reported.
    pub fn get(&self) -> Option<Usage> {
        self.0.get().copied()
    }
}

/// How a body ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BodyEndKind {
    /// Read to the end.
    Complete,
    /// The upstream failed mid-body.
    Failed(Outcome),
    /// Dropped before its end (client went away, stream abandoned).
    Dropped,
}

/// What end hooks receive.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct BodyEnd {
    /// How the body ended.
    pub kind: BodyEndKind,
    /// The usage the upstream reported, if any.
    pub usage: Option<Usage>,
    /// When it ended.
    pub at: Instant,
}

type Hook = Box<dyn FnOnce(&BodyEnd) + Send>;

/// The response body of the routing stack. See the [module docs](self).
pub struct RouteBody {
    inner: UnsyncBoxBody<Bytes, BoxError>,
    usage: UsageSlot,
    hooks: Vec<Hook>,
    /// The serving attempt's in-flight count, released first when the body ends: a field, not a
    /// boxed hook, as every served attempt has one.
    in_flight: Option<InFlightGuard>,
}

impl fmt::Debug for RouteBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RouteBody").field("usage", &self.usage.get()).field("hooks", &self.hooks.len()).finish()
    }
}

impl Default for RouteBody {
    fn default() -> Self {
        Self::empty()
    }
}

impl RouteBody {
    /// Wraps any body.
    pub fn new<B>(body: B) -> Self
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        Self {
            inner: body.map_err(Into::into).boxed_unsync(),
            usage: UsageSlot::new(),
            hooks: Vec::new(),
            in_flight: None,
        }
    }

    /// An empty body.
    pub fn empty() -> Self {
        Self::new(Empty::<Bytes>::new())
    }

    /// Uses `slot` as the body's usage report (a streaming provider fills it at the usage chunk).
    pub fn with_usage_slot(mut self, slot: UsageSlot) -> Self {
        self.usage = slot;
        self
    }

    /// Records the usage of a body whose usage is already known (non-streaming answers).
    pub fn with_usage(self, usage: Usage) -> Self {
        self.usage.set(usage);
        self
    }

    /// The usage reported so far.
    pub fn usage(&self) -> Option<Usage> {
        self.usage.get()
    }

    /// Runs `hook` once when the body ends, fails or is dropped. Hooks run in the order added.
    pub fn on_end(&mut self, hook: impl FnOnce(&BodyEnd) + Send + 'static) {
        self.hooks.push(Box::new(hook));
    }

    /// Keeps `guard` alive until the body ends (then drops it).
    pub fn hold<G: Send + 'static>(&mut self, guard: G) {
        self.on_end(move |_| drop(guard));
    }

    /// Holds the serving attempt's in-flight count until the body ends (a body that already holds
    /// one, passing through a nested router, keeps both).
    pub(crate) fn hold_in_flight(&mut self, guard: InFlightGuard) {
        match self.in_flight {
            None => self.in_flight = Some(guard),
            Some(_) => self.hold(guard),
        }
    }

    fn finish(&mut self, kind: BodyEndKind) {
        self.in_flight = None;
        if self.hooks.is_empty() {
            return;
        }
        let end = BodyEnd { kind, usage: self.usage.get(), at: Instant::now() };
        for hook in self.hooks.drain(..) {
            hook(&end);
        }
    }
}

impl From<Bytes> for RouteBody {
    fn from(b: Bytes) -> Self {
        Self::new(Full::new(b))
    }
}

impl From<&'static str> for RouteBody {
    fn from(s: &'static str) -> Self {
        Self::from(Bytes::from_static(s.as_bytes()))
    }
}

impl From<String> for RouteBody {
    fn from(s: String) -> Self {
        Self::from(Bytes::from(s))
    }
}

impl From<Vec<u8>> for RouteBody {
    fn from(v: Vec<u8>) -> Self {
        Self::from(Bytes::from(v))
    }
}

impl Body for RouteBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        let polled = ready!(Pin::new(&mut this.inner).poll_frame(cx));
        match &polled {
            None => this.finish(BodyEndKind::Complete),
            Some(Err(e)) => {
                let outcome = RouteError::find(&**e).and_then(RouteError::outcome).unwrap_or(Outcome::Transport);
                this.finish(BodyEndKind::Failed(outcome));
            }
            Some(Ok(_)) => {}
        }
        Poll::Ready(polled)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for RouteBody {
    fn drop(&mut self) {
        self.finish(BodyEndKind::Dropped);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn hooks_fire_once_on_complete_not_again_on_drop() {
        let count = Arc::new(AtomicUsize::new(0));
        let c = count.clone();
        let mut body = RouteBody::from("abc").with_usage(Usage::new(3, 4));
        body.on_end(move |end| {
            assert_eq!(end.kind, BodyEndKind::Complete);
            assert_eq!(end.usage.map(|u| u.total()), Some(7));
            c.fetch_add(1, Ordering::SeqCst);
        });
        let bytes = (&mut body).collect().await.expect("full body").to_bytes();
        assert_eq!(&bytes[..], b"abc");
        drop(body);
        assert_eq!(count.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_failing_body_reports_the_outcome_of_its_error() {
        let stream = futures_util::stream::iter(vec![
            Ok(Frame::data(Bytes::from_static(b"data: {}\n\n"))),
            Err::<Frame<Bytes>, BoxError>(RouteError::upstream(Outcome::ServerError, "d1".into(), "cut").into()),
        ]);
        let seen = Arc::new(parking_lot::Mutex::new(None));
        let s = seen.clone();
        let mut body = RouteBody::new(http_body_util::StreamBody::new(stream));
        body.on_end(move |end| *s.lock() = Some(end.kind));
        assert!((&mut body).collect().await.is_err());
        assert_eq!(*seen.lock(), Some(BodyEndKind::Failed(Outcome::ServerError)));
    }
}
