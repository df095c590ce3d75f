//! The typed in-process API: OpenAI-shaped requests in, typed answers out, through the same
//! layers as HTTP traffic.

use std::{
    fmt,
    pin::Pin,
    task::{Context, Poll},
};

use bytes::Bytes;
use futures_util::{Stream, StreamExt, stream::BoxStream};
use http_body_util::BodyExt;
use serde::{Serialize, de::DeserializeOwned};
use switchyard_layers::{Outcome, RouteBody, RouteCtx, RouteError, RouteErrorKind, Served, ctx::Endpoint};
use switchyard_services::openai::{
    ChatChunk, ChatCompletion, ChatRequest, EmbeddingRequest, EmbeddingResponse, SseDecoder, SseEvent, facts_from_json,
};

use super::Router;

/// Largest single streamed event the typed client accepts.
const MAX_EVENT_BYTES: usize = 4 << 20;

/// A chat completion and where it was served.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ChatResponse {
    /// The completion.
    pub completion: ChatCompletion,
    /// Which group and deployment served it.
    pub served: Served,
}

/// An embedding answer and where it was served.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct EmbedResponse {
    /// The embeddings.
    pub embeddings: EmbeddingResponse,
    /// Which group and deployment served it.
    pub served: Served,
}

/// A streamed chat completion: the chunks, and where the stream is served from.
///
/// The stream is committed to its deployment once this value exists (the first content chunk
/// arrived); a later upstream failure is an `Err` item, never a silent end.
pub struct ChatStream {
    served: Served,
    chunks: BoxStream<'static, Result<ChatChunk, RouteError>>,
}

impl fmt::Debug for ChatStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChatStream").field("served", &self.served).finish_non_exhaustive()
    }
}

impl ChatStream {
    /// Which group and deployment serve the stream.
    pub fn served(&self) -> &Served {
        &self.served
    }
}

impl Stream for ChatStream {
    type Item = Result<ChatChunk, RouteError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.chunks.as_mut().poll_next(cx)
    }
}

struct StreamState {
    body: RouteBody,
    decoder: SseDecoder,
    pending: std::collections::VecDeque<SseEvent>,
    done: bool,
}

fn malformed(what: &str, e: impl fmt::Display) -> RouteError {
    RouteError::new(RouteErrorKind::Upstream, format!("malformed {what} from upstream: {e}"))
        .with_outcome(Outcome::Transport)
}

impl Router {
    async fn send<T: Serialize>(
        &self,
        path: &'static str,
        body: &T,
        endpoint: Endpoint,
    ) -> Result<(http::Response<RouteBody>, Served), RouteError> {
        let bytes = serde_json::to_vec(body)
            .map_err(|e| RouteError::new(RouteErrorKind::InvalidRequest, format!("request does not serialize: {e}")))?;
        let (model, facts) = facts_from_json(&bytes, endpoint)?;
        let bytes = Bytes::from(bytes);
        let mut req = http::Request::post(path)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(bytes.clone())
            .map_err(|e| RouteError::new(RouteErrorKind::InvalidRequest, e.to_string()))?;
        req.extensions_mut().insert(RouteCtx::with_facts(model, facts.with_body(bytes)));
        let resp = self.call(req).await.map_err(RouteError::from_boxed)?;
        let served = resp.extensions().get::<Served>().cloned().ok_or_else(|| {
            RouteError::new(RouteErrorKind::MissingContext, "the stack answered without a Served extension")
        })?;
        Ok((resp, served))
    }

    async fn collect_json<T: DeserializeOwned>(resp: http::Response<RouteBody>, what: &str) -> Result<T, RouteError> {
        let bytes = resp.into_body().collect().await.map_err(RouteError::from_boxed)?.to_bytes();
        serde_json::from_slice(&bytes).map_err(|e| malformed(what, e))
    }

    /// A chat completion, routed like any other request.
    pub async fn chat(&self, mut req: ChatRequest) -> Result<ChatResponse, RouteError> {
        req.stream = None;
        let (resp, served) = self.send("/v1/chat/completions", &req, Endpoint::Chat).await?;
        let completion = Self::collect_json(resp, "chat completion").await?;
        Ok(ChatResponse { completion, served })
    }

    /// A streamed chat completion. Resolves once the first content chunk arrived, so every
    /// failure before it was retried or routed elsewhere like a non-streaming request.
    pub async fn chat_stream(&self, mut req: ChatRequest) -> Result<ChatStream, RouteError> {
        req.stream = Some(true);
        let (resp, served) = self.send("/v1/chat/completions", &req, Endpoint::Chat).await?;
        let state = StreamState {
            body: resp.into_body(),
            decoder: SseDecoder::new(MAX_EVENT_BYTES),
            pending: std::collections::VecDeque::new(),
            done: false,
        };
        let chunks = futures_util::stream::unfold(state, |mut st| async move {
            if st.done {
                return None;
            }
            loop {
                if let Some(event) = st.pending.pop_front() {
                    if event.is_done() {
                        return None;
                    }
                    let item = serde_json::from_str::<ChatChunk>(&event.data).map_err(|e| malformed("stream chunk", e));
                    st.done = item.is_err();
                    return Some((item, st));
                }
                let failed = match st.body.frame().await {
                    Some(Ok(frame)) => match frame.data_ref().map(|d| st.decoder.push(d)) {
                        Some(Ok(events)) => {
                            st.pending.extend(events);
                            continue;
                        }
                        Some(Err(e)) => malformed("stream", e),
                        None => continue,
                    },
                    Some(Err(e)) => RouteError::from_boxed(e),
                    None => RouteError::new(RouteErrorKind::Upstream, "stream ended without [DONE]")
                        .with_outcome(Outcome::Transport),
                };
                st.done = true;
                return Some((Err(failed), st));
            }
        })
        .boxed();
        Ok(ChatStream { served, chunks })
    }

    /// Embeddings, routed like any other request.
    pub async fn embed(&self, req: EmbeddingRequest) -> Result<EmbedResponse, RouteError> {
        let (resp, served) = self.send("/v1/embeddings", &req, Endpoint::Embedding).await?;
        let embeddings = Self::collect_json(resp, "embedding response").await?;
        Ok(EmbedResponse { embeddings, served })
    }
}
