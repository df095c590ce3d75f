//! Simulated streams: the first content chunk is ready when the attempt's future resolves, the
//! rest arrive through the body as server-sent events.

use bytes::Bytes;
use futures_util::stream;
use http::{HeaderValue, header};
use http_body::Frame;
use http_body_util::StreamBody;
use rand::{Rng, rngs::SmallRng};
use switchyard_layers::{BoxError, Outcome, RouteBody, RouteError, body::UsageSlot};

use super::{
    SimStats,
    reply::{Attempt, DONE_EVENT},
    stats::InFlight,
};

/// What the body sends next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Content chunk `n` (or, past the last one, the finish chunk).
    Content(u32),
    Usage,
    Done,
    End,
}

struct State {
    attempt: Attempt,
    rng: SmallRng,
    next: Step,
    /// Content chunks sent before the stream breaks, if it does.
    break_after: Option<u32>,
    slot: UsageSlot,
    stats: SimStats,
    _in_flight: InFlight,
}

/// A streaming answer whose first content chunk is ready now.
pub(crate) fn response(
    attempt: Attempt,
    mut rng: SmallRng,
    stats: SimStats,
    in_flight: InFlight,
) -> http::Response<RouteBody> {
    let chunks = attempt.profile.chunks;
    let break_after = rng.random_bool(attempt.profile.mid_stream).then(|| rng.random_range(1..=chunks));
    let slot = UsageSlot::new();
    let state =
        State { attempt, rng, next: Step::Content(0), break_after, slot: slot.clone(), stats, _in_flight: in_flight };
    let body = RouteBody::new(StreamBody::new(stream::unfold(state, next_frame))).with_usage_slot(slot);
    let mut resp = http::Response::new(body);
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

async fn next_frame(mut st: State) -> Option<(Result<Frame<Bytes>, BoxError>, State)> {
    let event = match st.next {
        Step::Content(n) => {
            if n > 0 {
                let delay = st.attempt.profile.chunk_interval.sample(&mut st.rng);
                tokio::time::sleep(delay).await;
            }
            if st.break_after == Some(n) {
                st.next = Step::End;
                let id = st.attempt.deployment.id.clone();
                st.stats.record_mid_stream(&id);
                let message = format!("simulated: stream from deployment `{id}` broke after {n} chunks");
                let err = RouteError::upstream(Outcome::Transport, id, message);
                return Some((Err(err.into()), st));
            }
            if n < st.attempt.profile.chunks {
                st.next = Step::Content(n + 1);
                st.attempt.content_event(n)
            } else {
                st.next = Step::Usage;
                st.attempt.finish_event()
            }
        }
        Step::Usage => {
            st.slot.set(st.attempt.usage());
            st.next = Step::Done;
            st.attempt.usage_event()
        }
        Step::Done => {
            st.next = Step::End;
            Bytes::from_static(DONE_EVENT)
        }
        Step::End => return None,
    };
    Some((Ok(Frame::data(event)), st))
}
