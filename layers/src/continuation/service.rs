use std::{
    any::Any,
    collections::VecDeque,
    sync::Arc,
    task::{Context, Poll},
};

use bytes::Bytes;
use futures_util::{future::BoxFuture, stream};
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use serde_json::{Value, json};
use tokio::time::Instant;
use tower_service::Service;

use super::{ContinuationConfig, Continued, layer::RetryPermit, splice::Splicer};
use crate::{
    AttemptRecord, BoxError, Outcome, RouteBody, RouteCtx, RouteError, RouteRequest, Served, Usage,
    body::UsageSlot,
    ctx::Endpoint,
    future::{LayerFuture, Next, Then},
};

type Response = http::Response<RouteBody>;

/// Calls the stack below the layer again with a continuation request.
type Again = Box<dyn FnMut(http::Request<Bytes>) -> BoxFuture<'static, Result<Response, BoxError>> + Send>;

/// The service of [`ContinuationLayer`](super::ContinuationLayer).
#[derive(Clone)]
pub struct Continuation<S> {
    pub(super) inner: S,
    pub(super) config: Arc<ContinuationConfig>,
    pub(super) permit: Option<RetryPermit>,
}

impl<S: std::fmt::Debug> std::fmt::Debug for Continuation<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Continuation")
            .field("inner", &self.inner)
            .field("config", &self.config)
            .field("retry_permit", &self.permit.is_some())
            .finish()
    }
}

impl<S> Continuation<S> {
    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The inner service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

/// The response future of [`Continuation`]: the inner service's own, and the arming of the
/// response's body when the call may be continued.
pub type ResponseFuture<F> = LayerFuture<F, Option<Arm>>;

impl<S, R> Service<R> for Continuation<S>
where
    S: Service<R, Response = Response, Error = BoxError> + Clone + Send + 'static,
    S::Future: Send + 'static,
    R: RouteRequest,
{
    type Response = Response;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: R) -> Self::Future {
        let arm = self.arm(&req);
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        LayerFuture::in_place(inner.call(req), arm)
    }
}

impl<S> Continuation<S> {
    /// What a continuation of this call needs, when it may have one: the layer is on, the call
    /// is a streamed chat completion, and the request is an `http::Request<Bytes>` (whose JSON
    /// body a continuation extends).
    fn arm<R>(&self, req: &R) -> Option<Arm>
    where
        S: Service<R, Response = Response, Error = BoxError> + Clone + Send + 'static,
        S::Future: Send + 'static,
        R: RouteRequest,
    {
        if !self.config.is_enabled() {
            return None;
        }
        let ctx = req.route_ctx()?;
        if !ctx.facts().stream || ctx.facts().endpoint != Endpoint::Chat {
            return None;
        }
        let template = (req as &dyn Any).downcast_ref::<http::Request<Bytes>>()?.clone();
        let svc = self.inner.clone();
        let again: Again = Box::new(move |next: http::Request<Bytes>| {
            let mut svc = svc.clone();
            Box::pin(async move {
                // `R` is `http::Request<Bytes>`: the template was read as one.
                let boxed: Box<dyn Any + Send> = Box::new(next);
                let next =
                    boxed.downcast::<R>().map_err(|_| BoxError::from("a continuation of another request type"))?;
                futures_util::future::poll_fn(|cx| svc.poll_ready(cx)).await?;
                svc.call(*next).await
            })
        });
        Some(Arm { template, again, config: self.config.clone(), permit: self.permit.clone() })
    }
}

/// What a call that may be continued keeps: the request as this layer received it, a way to
/// call the stack below again, and the settings.
pub struct Arm {
    template: http::Request<Bytes>,
    again: Again,
    config: Arc<ContinuationConfig>,
    permit: Option<RetryPermit>,
}

impl std::fmt::Debug for Arm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Arm").field("config", &self.config).finish_non_exhaustive()
    }
}

impl<F> Then<F> for Arm {
    fn then(self, result: Result<Response, BoxError>, _: &F) -> Next {
        Next::Done(result.map(|resp| self.splice(resp)))
    }
}

impl Arm {
    /// Puts the splicing body around a streamed answer (any other answer passes as it is).
    fn splice(self, resp: Response) -> Response {
        if !is_event_stream(&resp) {
            return resp;
        }
        let (mut parts, body) = resp.into_parts();
        let continued = Continued::default();
        parts.extensions.insert(continued.clone());
        let served = parts.extensions.get::<Served>().cloned();
        let slot = UsageSlot::new();
        let state = Spliced {
            splicer: Splicer::new(self.config.max_partial_bytes),
            body,
            out: VecDeque::new(),
            phase: Phase::Streaming,
            served,
            started: Instant::now(),
            usage: None,
            slot: slot.clone(),
            continued,
            arm: self,
        };
        let body = RouteBody::new(StreamBody::new(stream::unfold(state, Spliced::next))).with_usage_slot(slot);
        http::Response::from_parts(parts, body)
    }
}

enum Phase {
    Streaming,
    /// The error event was sent; this error follows it.
    Failing(BoxError),
    End,
}

/// The client's stream: the first answer, then its continuations.
struct Spliced {
    splicer: Splicer,
    /// The body of the answer being read.
    body: RouteBody,
    /// Bytes to send before reading further.
    out: VecDeque<Bytes>,
    phase: Phase,
    /// Which attempt serves the answer being read.
    served: Option<Served>,
    /// When the answer being read started.
    started: Instant,
    /// The usage of the answers read to their end, summed.
    usage: Option<Usage>,
    /// The usage reported on the client's body: every answer's, summed.
    slot: UsageSlot,
    continued: Continued,
    arm: Arm,
}

impl Spliced {
    async fn next(mut self) -> Option<(Result<Frame<Bytes>, BoxError>, Self)> {
        loop {
            if let Some(bytes) = self.out.pop_front() {
                return Some((Ok(Frame::data(bytes)), self));
            }
            match std::mem::replace(&mut self.phase, Phase::End) {
                Phase::End => return None,
                Phase::Failing(err) => {
                    // One turn for the server to write out the error event first (hyper drops
                    // what it buffered when the body fails in the same poll).
                    tokio::task::yield_now().await;
                    return Some((Err(err), self));
                }
                Phase::Streaming => {}
            }
            let mut out = Vec::new();
            match self.body.frame().await {
                None => {
                    self.splicer.flush(&mut out);
                    out.extend(self.splicer.take_held());
                    self.add_usage(self.body.usage());
                    self.settle_usage();
                }
                Some(Ok(frame)) => {
                    self.phase = Phase::Streaming;
                    match frame.into_data() {
                        Ok(data) => self.splicer.push(&data, &mut out),
                        Err(frame) => return Some((Ok(frame), self)),
                    }
                }
                Some(Err(err)) => {
                    self.add_usage(self.body.usage());
                    if self.continue_after(&err).await {
                        self.phase = Phase::Streaming;
                    } else {
                        self.splicer.flush(&mut out);
                        out.extend(self.splicer.take_held());
                        self.settle_usage();
                        self.phase = Phase::Failing(err);
                    }
                }
            }
            self.out.extend(out);
        }
    }

    fn add_usage(&mut self, usage: Option<Usage>) {
        if let Some(u) = usage {
            let sum = self.usage.unwrap_or_default();
            self.usage =
                Some(Usage::new(sum.prompt_tokens + u.prompt_tokens, sum.completion_tokens + u.completion_tokens));
        }
    }

    /// Reports the usage of every answer read, summed, on the client's body.
    fn settle_usage(&mut self) {
        if let Some(u) = self.usage {
            self.slot.set(u);
        }
    }

    /// Asks the stack below for a continuation of the answer `err` broke, and reads it from now
    /// on; `false` when the answer may not be continued or no deployment could.
    async fn continue_after(&mut self, err: &BoxError) -> bool {
        let route_err = RouteError::find(&**err);
        let failed = route_err
            .and_then(RouteError::deployment)
            .cloned()
            .or_else(|| self.served.as_ref().map(|s| s.deployment.clone()));
        let Some(ctx) = self.arm.template.route_ctx() else { return false };
        if !self.splicer.can_continue() || self.continued.count() >= self.arm.config.max_continuations as usize {
            return false;
        }
        if ctx.deadline.is_some_and(|d| Instant::now() >= d) {
            return false;
        }
        if let Some(permit) = &self.arm.permit
            && !permit()
        {
            return false;
        }
        let Some(next) =
            continuation_request(&self.arm.template, self.served.as_ref(), failed.as_ref(), self.splicer.partial())
        else {
            return false;
        };
        // The broken attempt in the call's trail: its end already fed the cooldown rules.
        if let Some(failed) = &failed {
            let message = route_err.map_or_else(|| err.to_string(), |e| e.message().to_owned());
            let group = self.served.as_ref().map_or_else(|| ctx.target_name().clone(), |s| s.group.clone());
            ctx.record_attempt(AttemptRecord {
                group,
                deployment: failed.clone(),
                outcome: route_err.and_then(RouteError::outcome).unwrap_or(Outcome::Transport),
                duration: self.served.as_ref().map(|s| s.upstream).unwrap_or_default() + self.started.elapsed(),
                message: Some(format!("stream broken, continuing: {message}")),
            });
        }
        let started = Instant::now();
        match (self.arm.again)(next).await {
            Ok(resp) if !is_event_stream(&resp) => {
                tracing::warn!(status = resp.status().as_u16(), "stream continuation answered without a stream");
                false
            }
            Ok(resp) => {
                let (parts, body) = resp.into_parts();
                let served = parts.extensions.get::<Served>().cloned();
                tracing::info!(
                    deployment = served.as_ref().map(|s| s.deployment.as_str()),
                    bytes = self.splicer.partial().len(),
                    "stream continued"
                );
                self.continued.push(served.clone());
                self.served = served;
                self.started = started;
                self.splicer.begin_continuation();
                self.body = body;
                true
            }
            Err(e) => {
                tracing::warn!(error = %e, "stream continuation failed");
                false
            }
        }
    }
}

/// A successful streamed answer.
fn is_event_stream(resp: &Response) -> bool {
    resp.status().is_success()
        && resp
            .headers()
            .get(http::header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"))
}

/// The continuation request: `template` (the request as the layer received it) with the text
/// sent so far as a last assistant message, routed to the group that served (`served`) without
/// the deployment that broke (`failed`); `None` when the body is not a chat request.
fn continuation_request(
    template: &http::Request<Bytes>,
    served: Option<&Served>,
    failed: Option<&crate::DeploymentId>,
    partial: &str,
) -> Option<http::Request<Bytes>> {
    let mut json: Value = serde_json::from_slice(template.body()).ok()?;
    let object = json.as_object_mut()?;
    if object.get("n").and_then(Value::as_u64).is_some_and(|n| n > 1) {
        return None;
    }
    object.get_mut("messages")?.as_array_mut()?.push(json!({"role": "assistant", "content": partial}));
    let body = serde_json::to_vec(&json).ok()?;
    let mut next = template.clone();
    next.headers_mut().remove(http::header::CONTENT_LENGTH);
    *next.body_mut() = Bytes::from(body);
    let ctx: &mut RouteCtx = next.route_ctx_mut()?;
    if let Some(served) = served
        && *served.group != *ctx.target()
    {
        ctx.hop_to(served.group.clone());
        ctx.hop = served.hops;
    }
    if let Some(failed) = failed
        && !ctx.excluded.contains(failed)
    {
        ctx.excluded.push(failed.clone());
    }
    ctx.candidates = None;
    ctx.selected = None;
    Some(next)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use http_body_util::BodyExt;
    use tower::{ServiceExt, service_fn};

    use super::*;
    use crate::{RequestFacts, continuation::ContinuationLayer};

    fn chunk(text: &str) -> String {
        format!(
            "data: {{\"id\":\"c\",\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}}}}]}}\n\n"
        )
    }

    const TOOL_CALL: &str = "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"q\"}}]}}]}\n\n";
    const ERROR_EVENT: &str = "data: {\"error\":{\"message\":\"cut\"}}\n\n";

    /// A provider whose first answer sends `first` then the error event and breaks; every later
    /// call (a continuation) answers "lo" and ends. Counts its calls.
    fn provider(
        first: String,
        calls: Arc<AtomicUsize>,
    ) -> impl Service<http::Request<Bytes>, Response = Response, Error = BoxError, Future: Send> + Clone + Send + 'static
    {
        service_fn(move |_req: http::Request<Bytes>| {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            let first = first.clone();
            async move {
                let frames: Vec<Result<Frame<Bytes>, BoxError>> = if n == 0 {
                    vec![
                        Ok(Frame::data(Bytes::from(first))),
                        Ok(Frame::data(Bytes::from(ERROR_EVENT))),
                        Err(RouteError::upstream(Outcome::ServerError, "a".into(), "cut").into()),
                    ]
                } else {
                    vec![Ok(Frame::data(Bytes::from(chunk("lo")))), Ok(Frame::data(Bytes::from("data: [DONE]\n\n")))]
                };
                let mut resp = http::Response::new(RouteBody::new(StreamBody::new(stream::iter(frames))));
                resp.headers_mut()
                    .insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("text/event-stream"));
                Ok::<_, BoxError>(resp)
            }
        })
    }

    fn request(deadline: Option<Instant>) -> http::Request<Bytes> {
        let facts = RequestFacts::new().streaming(true).endpoint(Endpoint::Chat);
        let mut ctx = RouteCtx::with_facts("gpt", facts);
        ctx.deadline = deadline;
        let mut req = http::Request::new(Bytes::from_static(br#"{"model":"gpt","stream":true,"messages":[]}"#));
        req.extensions_mut().insert(ctx);
        req
    }

    async fn read(layer: ContinuationLayer, first: String, req: http::Request<Bytes>) -> (String, bool, usize) {
        let calls = Arc::new(AtomicUsize::new(0));
        let service = layer.layer(provider(first, calls.clone()));
        let resp = service.oneshot(req).await.expect("committed");
        let mut body = resp.into_body();
        let mut text = String::new();
        let mut failed = false;
        while let Some(frame) = body.frame().await {
            match frame {
                Ok(f) => text.push_str(std::str::from_utf8(f.data_ref().expect("data")).expect("utf-8")),
                Err(_) => failed = true,
            }
        }
        (text, failed, calls.load(Ordering::SeqCst))
    }

    use tower_layer::Layer;

    #[tokio::test(start_paused = true)]
    async fn text_in_flight_is_continued_and_the_error_event_never_sent() {
        let (text, failed, calls) =
            read(ContinuationLayer::new(ContinuationConfig::enabled()), chunk("Hel"), request(None)).await;
        assert_eq!((failed, calls), (false, 2));
        assert!(!text.contains("error") && text.ends_with("data: [DONE]\n\n"), "{text}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_tool_call_in_flight_ends_with_the_error_event() {
        let first = format!("{}{TOOL_CALL}", chunk("Let me look."));
        let (text, failed, calls) =
            read(ContinuationLayer::new(ContinuationConfig::enabled()), first, request(None)).await;
        assert_eq!((failed, calls), (true, 1), "never continued");
        assert!(text.ends_with(ERROR_EVENT), "{text}");
    }

    #[tokio::test(start_paused = true)]
    async fn off_the_stream_ends_with_the_error_event() {
        let first = chunk("Hel");
        let (text, failed, calls) =
            read(ContinuationLayer::new(ContinuationConfig::default()), first, request(None)).await;
        assert_eq!((failed, calls), (true, 1));
        assert!(text.ends_with(ERROR_EVENT), "{text}");
    }

    #[tokio::test(start_paused = true)]
    async fn no_continuation_past_the_deadline_or_with_an_empty_retry_budget() {
        let first = chunk("Hel");
        let past = Some(Instant::now());
        tokio::time::advance(std::time::Duration::from_millis(1)).await;
        let (_, failed, calls) =
            read(ContinuationLayer::new(ContinuationConfig::enabled()), first.clone(), request(past)).await;
        assert_eq!((failed, calls), (true, 1), "past the deadline");

        let empty = crate::retry::RetryBudget::new(0.0, 0).expect("budget").with_capacity(0);
        let layer = ContinuationLayer::new(ContinuationConfig::enabled()).retry_permit(move || empty.withdraw());
        let (_, failed, calls) = read(layer, first, request(None)).await;
        assert_eq!((failed, calls), (true, 1), "no budget left");
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_goes_away_during_the_continuation_releases_it() {
        /// Counts the continuation calls in flight.
        struct InCall(Arc<AtomicUsize>);
        impl Drop for InCall {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        // The continuation's call never answers; it is in flight until it is dropped.
        let in_flight = Arc::new(AtomicUsize::new(0));
        let counter = in_flight.clone();
        let calls = Arc::new(AtomicUsize::new(0));
        let first = provider(chunk("Hel"), calls.clone());
        let service = service_fn(move |req: http::Request<Bytes>| {
            let mut first = first.clone();
            let counter = counter.clone();
            let n = calls.load(Ordering::SeqCst);
            async move {
                if n == 0 {
                    return first.call(req).await;
                }
                counter.fetch_add(1, Ordering::SeqCst);
                let _in_call = InCall(counter);
                std::future::pending::<Result<Response, BoxError>>().await
            }
        });
        let service = ContinuationLayer::new(ContinuationConfig::enabled()).layer(service);
        let resp = service.oneshot(request(None)).await.expect("committed");
        let mut body = resp.into_body();
        let first = body.frame().await.expect("a frame").expect("data");
        assert!(first.data_ref().is_some_and(|d| d.starts_with(b"data: ")));
        // The next read breaks the first answer and waits in the continuation.
        let waited = tokio::time::timeout(std::time::Duration::from_secs(5), body.frame()).await;
        assert!(waited.is_err(), "still waiting for the continuation");
        assert_eq!(in_flight.load(Ordering::SeqCst), 1, "the continuation is in flight");
        drop(body);
        assert_eq!(in_flight.load(Ordering::SeqCst), 0, "dropping the body dropped the continuation");
    }

    #[tokio::test(start_paused = true)]
    async fn the_broken_attempt_joins_the_calls_trail() {
        let first = chunk("Hel");
        let req = request(None);
        let trail = req.route_ctx().expect("ctx").call_trail();
        let (_, failed, _) = read(ContinuationLayer::new(ContinuationConfig::enabled()), first, req).await;
        assert!(!failed);
        let records = trail.records();
        assert_eq!(records.len(), 1, "{records:?}");
        assert_eq!((records[0].deployment.as_str(), records[0].outcome), ("a", Outcome::ServerError));
        assert!(records[0].message.as_deref().is_some_and(|m| m.contains("continuing")), "{records:?}");
    }

    #[test]
    fn the_continuation_request_ends_with_the_partial_assistant_message_and_excludes_the_broken_deployment() {
        let mut req = http::Request::new(Bytes::from_static(
            br#"{"model":"gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}"#,
        ));
        req.headers_mut().insert(http::header::CONTENT_LENGTH, http::HeaderValue::from_static("70"));
        req.extensions_mut().insert(RouteCtx::new("gpt"));
        let failed = crate::DeploymentId::from("a");
        let next = continuation_request(&req, None, Some(&failed), "Hel").expect("a chat request");
        let json: Value = serde_json::from_slice(next.body()).expect("json");
        assert_eq!(json["messages"][1], json!({"role": "assistant", "content": "Hel"}));
        assert_eq!(json["stream"], true);
        assert!(next.headers().get(http::header::CONTENT_LENGTH).is_none());
        assert_eq!(next.route_ctx().map(|c| c.excluded.clone()), Some(vec![failed]));
    }

    #[test]
    fn several_choices_are_never_continued() {
        let mut req = http::Request::new(Bytes::from_static(br#"{"model":"gpt","n":2,"messages":[]}"#));
        req.extensions_mut().insert(RouteCtx::new("gpt"));
        assert!(continuation_request(&req, None, None, "x").is_none());
    }
}
