//! Mid-stream continuation (opt-in): a chat completion stream that breaks after text reached
//! the client is continued on another deployment, and the client reads one stream.
//!
//! Off by default: a stream broken after its first content ends with an error event, as in
//! LiteLLM. With [`ContinuationLayer`] on (`router_settings.stream_continuation`), when the body
//! of a streamed `/v1/chat/completions` answer fails and everything the client received was text
//! (no tool call, no refusal, one choice, no finish reason, at most
//! [`max_partial_bytes`](ContinuationConfig::max_partial_bytes)), the layer sends the request
//! again through the layers below it, with the text already sent as a last assistant message and
//! the broken deployment excluded: the retry layer picks another deployment of the group, or the
//! fallback layer another group. The continuation's chunks are spliced into the same body: the
//! first stream's `id`, `model` and `created`, no second role chunk, one `[DONE]`; the error
//! event of the broken stream is never sent. Each continuation is a retry (it withdraws from the
//! retry budget), none starts past the call's deadline, and at most
//! [`max_continuations`](ContinuationConfig::max_continuations) are made. When none can be made,
//! the stream ends with the error event as it would have without the layer.
//!
//! The response's status and headers were sent with the first byte: they name the deployment
//! that started the answer. [`Continued`], in the response extensions, lists the attempts that
//! continued it. `docs/reliability.md` has the caveats.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), switchyard_layers::BoxError> {
//! use bytes::Bytes;
//! use http_body_util::BodyExt;
//! use tower::{ServiceBuilder, ServiceExt, service_fn};
//! use switchyard_layers::{
//!     BoxError, RequestFacts, RouteBody, RouteCtx, RouteError, Outcome,
//!     continuation::{ContinuationConfig, ContinuationLayer, Continued},
//!     ctx::Endpoint,
//! };
//!
//! // The first answer breaks after "Hel"; the continuation (asked with "Hel" as the last
//! // assistant message) says "lo".
//! let provider = service_fn(|req: http::Request<Bytes>| async move {
//!     let body = std::str::from_utf8(req.body()).unwrap_or_default().to_owned();
//!     let chunk = |text: &str| format!("data: {{\"id\":\"c\",\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}}}}]}}\n\n");
//!     let frames: Vec<Result<http_body::Frame<Bytes>, BoxError>> = if body.contains(r#""role":"assistant""#) {
//!         vec![Ok(http_body::Frame::data(Bytes::from(chunk("lo")))), Ok(http_body::Frame::data(Bytes::from("data: [DONE]\n\n")))]
//!     } else {
//!         vec![
//!             Ok(http_body::Frame::data(Bytes::from(chunk("Hel")))),
//!             Err(RouteError::upstream(Outcome::ServerError, "a".into(), "cut").into()),
//!         ]
//!     };
//!     let body = RouteBody::new(http_body_util::StreamBody::new(futures_util::stream::iter(frames)));
//!     let mut resp = http::Response::new(body);
//!     resp.headers_mut().insert("content-type", http::HeaderValue::from_static("text/event-stream"));
//!     Ok::<_, BoxError>(resp)
//! });
//! let service = ServiceBuilder::new().layer(ContinuationLayer::new(ContinuationConfig::enabled())).service(provider);
//!
//! let facts = RequestFacts::new().streaming(true).endpoint(Endpoint::Chat);
//! let mut req = http::Request::new(Bytes::from_static(br#"{"model":"gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}"#));
//! req.extensions_mut().insert(RouteCtx::with_facts("gpt", facts));
//! let resp = service.oneshot(req).await?;
//! let continued = resp.extensions().get::<Continued>().cloned().expect("armed");
//! let text = resp.into_body().collect().await?.to_bytes();
//! let text = std::str::from_utf8(&text)?;
//! assert!(text.contains("Hel") && text.contains("lo") && text.ends_with("data: [DONE]\n\n"));
//! assert_eq!(continued.count(), 1);
//! # Ok(()) }
//! ```

mod layer;
mod service;
mod splice;

use std::sync::Arc;

pub use layer::{ContinuationConfig, ContinuationLayer};
pub use service::{Arm, Continuation, ResponseFuture};

use crate::Served;

/// The continuations of a streamed answer, in the response extensions of every answer the
/// [`ContinuationLayer`] could continue: shared with the body, so it fills in while the client
/// reads. Each entry is the attempt that continued the answer (`None` when the answer it gave
/// carried no [`Served`]).
///
/// ```
/// use switchyard_layers::continuation::Continued;
/// assert_eq!(Continued::default().count(), 0);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Continued(Arc<parking_lot::Mutex<Vec<Option<Served>>>>);

impl Continued {
    /// How many continuations the answer had so far.
    pub fn count(&self) -> usize {
        self.0.lock().len()
    }

    /// The attempts that continued the answer, oldest first.
    pub fn served(&self) -> Vec<Option<Served>> {
        self.0.lock().clone()
    }

    pub(crate) fn push(&self, served: Option<Served>) {
        self.0.lock().push(served);
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::{BoxError, RouteBody};

    #[test]
    fn the_layer_and_its_service_are_embeddable() {
        crate::assert_embeddable::<ContinuationLayer>();
        crate::assert_embeddable::<
            Continuation<tower::util::BoxCloneSyncService<http::Request<Bytes>, http::Response<RouteBody>, BoxError>>,
        >();
    }
}
