//! The context-window check, and the once-per-request input-token count it (and TPM) reads.

use std::sync::Arc;

use super::tokens::{Tokenizer, count_input_tokens};
use crate::{BoxError, Candidates, Deployment, Group, RequestFacts, RouteError, RouteErrorKind};

/// The request's input tokens: the count already in `facts` (set by the caller, or by an earlier
/// attempt of this request), else counted now from `facts.body` with `tokenizer` and stored in
/// `facts` for every later attempt and layer. `None` when the body is absent or not a request
/// the counter understands (the checks that need a count are then skipped, as LiteLLM does when
/// its counter fails).
///
/// Bodies above `offload_above` bytes, and any body while the tokenizer's vocabulary is still
/// loading, are counted on a blocking thread (`spawn_blocking`), off the async executor.
pub(crate) async fn input_tokens(facts: &RequestFacts, tokenizer: Tokenizer, offload_above: usize) -> Option<u64> {
    if let Some(n) = facts.input_tokens.get() {
        return Some(*n);
    }
    let body = facts.body.clone()?;
    let offload = body.len() > offload_above || !tokenizer.is_loaded();
    let counted = match tokio::runtime::Handle::try_current() {
        Ok(runtime) if offload => {
            runtime.spawn_blocking(move || count_input_tokens(&body, tokenizer)).await.ok().flatten()
        }
        _ => count_input_tokens(&body, tokenizer),
    }?;
    // Another clone of the request may have counted meanwhile: keep the first count.
    Some(*facts.input_tokens.get_or_init(|| counted))
}

/// The tokenizer of the deployment whose window is checked first: the first candidate that
/// declares `max_input_tokens`, else the first one. One count serves the whole request (the
/// other candidates' tokenizers differ by a few percent at most within OpenAI's families).
pub(crate) fn tokenizer_for(list: &[Arc<Deployment>]) -> Tokenizer {
    list.iter()
        .find(|d| d.max_input_tokens.is_some())
        .or_else(|| list.first())
        .map_or(Tokenizer::Estimate, |d| Tokenizer::for_model(&d.model))
}

/// Drops the deployments whose `max_input_tokens` is below `tokens`; returns the largest window
/// it dropped (for the error message).
pub(crate) fn filter(list: &mut Candidates, tokens: u64) -> Option<u32> {
    let mut largest: Option<u32> = None;
    list.retain(|d| match d.max_input_tokens {
        Some(max) if tokens > u64::from(max) => {
            largest = Some(largest.map_or(max, |l| l.max(max)));
            false
        }
        _ => true,
    });
    largest
}

/// The prompt fits no candidate: [`RouteErrorKind::ContextWindowExceeded`], whose outcome sends
/// the call to `context_window_fallbacks`.
pub(crate) fn exceeded(group: &Group, tokens: u64, largest: Option<u32>) -> BoxError {
    let largest = largest.map_or_else(String::new, |l| format!(" (the largest window is {l})"));
    RouteError::new(
        RouteErrorKind::ContextWindowExceeded,
        format!(
            "the prompt has {tokens} input tokens, more than any deployment of `{}` accepts{largest}",
            group.name()
        ),
    )
    .with_group(group.name().clone())
    .into()
}
