use std::sync::Arc;

use super::FallbackTable;
use crate::{Outcome, RouteErrorKind};

/// What the fallback layer reports to the hook set with
/// [`FallbackLayer::on_event`](super::FallbackLayer::on_event).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FallbackEvent {
    /// The call moves to another group; sent once per hop, before the hop's first attempt.
    #[non_exhaustive]
    Hop {
        /// The group that failed (as the call named it).
        from: Arc<str>,
        /// The group the call moves to (as the table named it).
        to: Arc<str>,
        /// The failure's outcome class; `None` for our refusals without one (unknown group, no
        /// candidates, budget).
        reason: Option<Outcome>,
        /// The failure's [`RouteErrorKind`]; `None` when the error was not a `RouteError`.
        error: Option<RouteErrorKind>,
        /// The list `to` came from.
        table: FallbackTable,
        /// The number of this hop in the call, 1 for the first.
        hop: u32,
    },
    /// A fallback target was skipped because it does not resolve to any group.
    #[non_exhaustive]
    Skipped {
        /// The name the table gave.
        name: Arc<str>,
        /// The list it came from.
        table: FallbackTable,
    },
    /// A group reached by a fallback answered; sent once, only when at least one hop was made.
    #[non_exhaustive]
    Succeeded {
        /// The group that answered.
        group: Arc<str>,
        /// Hops made.
        hops: u32,
    },
    /// The call failed after at least one hop; sent once.
    #[non_exhaustive]
    Failed {
        /// Every group the call tried, in order, the first included.
        groups: Vec<Arc<str>>,
        /// Hops made.
        hops: u32,
        /// The last failure's outcome class.
        reason: Option<Outcome>,
    },
}

/// The hook type: called synchronously on the request's task, so keep it cheap (count, log, send
/// on a channel).
pub(crate) type EventHook = Arc<dyn Fn(&FallbackEvent) + Send + Sync>;
