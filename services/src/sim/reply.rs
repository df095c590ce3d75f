//! The bodies of successful simulated answers: whole answers and stream chunks.

use std::{
    sync::Arc,
    time::{SystemTime, UNIX_EPOCH},
};

use bytes::Bytes;
use http::{HeaderValue, header};
use rand::{Rng, RngCore};
use serde_json::json;
use switchyard_layers::{Deployment, RouteBody, Usage, ctx::Endpoint};

use super::SimProfile;
use crate::openai::wire::{sse, to_json};
use crate::openai::{
    ChatChunk, ChatCompletion, ChatDelta, ChatMessage, ChunkChoice, Embedding, EmbeddingResponse, EmbeddingUsage,
    UsageBody,
};

/// One simulated attempt: who answers, how, and the answer's identity.
#[derive(Debug)]
pub(crate) struct Attempt {
    pub(crate) deployment: Arc<Deployment>,
    pub(crate) profile: Arc<SimProfile>,
    pub(crate) endpoint: Endpoint,
    pub(crate) prompt_tokens: u64,
    id: String,
    created: u64,
}

impl Attempt {
    pub(crate) fn new<R: RngCore + ?Sized>(
        deployment: Arc<Deployment>,
        profile: Arc<SimProfile>,
        endpoint: Endpoint,
        prompt_tokens: u64,
        rng: &mut R,
    ) -> Self {
        let prefix = match endpoint {
            Endpoint::Completion => "cmpl",
            Endpoint::Embedding => "emb",
            _ => "chatcmpl",
        };
        let id = format!("{prefix}-sim{:016x}", rng.next_u64());
        let created = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        Self { deployment, profile, endpoint, prompt_tokens, id, created }
    }

    /// The model name an upstream reports: the provider model without its provider prefix.
    fn upstream_model(&self) -> &str {
        let model = &self.deployment.model;
        model.split_once('/').map_or(&**model, |(_, m)| m)
    }

    /// Content chunk `i`: the first names the deployment, each later one is one more token.
    pub(crate) fn piece(&self, i: u32) -> String {
        if i == 0 {
            format!("Simulated answer from deployment `{}` ({}).", self.deployment.id, self.deployment.model)
        } else {
            format!(" token{i}")
        }
    }

    /// What the attempt used: one completion token per content chunk.
    pub(crate) fn usage(&self) -> Usage {
        match self.endpoint {
            Endpoint::Embedding => Usage::new(self.prompt_tokens, 0),
            _ => Usage::new(self.prompt_tokens, u64::from(self.profile.chunks)),
        }
    }

    /// A whole (non-streaming) answer.
    pub(crate) fn whole<R: Rng + ?Sized>(&self, rng: &mut R) -> http::Response<RouteBody> {
        let usage = self.usage();
        let body = match self.endpoint {
            Endpoint::Embedding => {
                let dims = self.profile.embedding_dims;
                let mut v: Vec<f32> = (0..dims).map(|_| rng.random_range(-1.0..1.0)).collect();
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                if norm > 0.0 {
                    v.iter_mut().for_each(|x| *x /= norm);
                }
                let answer = EmbeddingResponse::new(self.upstream_model(), vec![Embedding::new(0, v)])
                    .with_usage(EmbeddingUsage::new(usage.prompt_tokens));
                to_json(&answer)
            }
            Endpoint::Completion => to_json(&json!({
                "id": self.id,
                "object": "text_completion",
                "created": self.created,
                "model": self.upstream_model(),
                "choices": [{"text": self.text(), "index": 0, "logprobs": null, "finish_reason": "stop"}],
                "usage": UsageBody::from(usage),
            })),
            _ => {
                let answer = ChatCompletion::new(&self.id, self.upstream_model(), self.created)
                    .with_choice(ChatMessage::assistant(self.text()), Some("stop".to_owned()))
                    .with_usage(UsageBody::from(usage));
                to_json(&answer)
            }
        };
        let mut resp = http::Response::new(RouteBody::from(body).with_usage(usage));
        resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        resp
    }

    fn text(&self) -> String {
        (0..self.profile.chunks).map(|i| self.piece(i)).collect()
    }

    /// The SSE event carrying content chunk `i` (the first also carries the role).
    pub(crate) fn content_event(&self, i: u32) -> Bytes {
        let piece = self.piece(i);
        match self.endpoint {
            Endpoint::Completion => self.completion_event(&piece, None),
            _ => {
                let mut delta = ChatDelta::text(piece);
                if i == 0 {
                    delta = delta.with_role("assistant");
                }
                self.chat_event(Some(ChunkChoice::new(0, delta, None)), None)
            }
        }
    }

    /// The SSE event closing the choice (`finish_reason: stop`).
    pub(crate) fn finish_event(&self) -> Bytes {
        match self.endpoint {
            Endpoint::Completion => self.completion_event("", Some("stop")),
            _ => self.chat_event(Some(ChunkChoice::new(0, ChatDelta::new(), Some("stop".to_owned()))), None),
        }
    }

    /// The SSE event reporting usage (no choices), as with `stream_options.include_usage`.
    pub(crate) fn usage_event(&self) -> Bytes {
        let usage = UsageBody::from(self.usage());
        match self.endpoint {
            Endpoint::Completion => sse(&json!({
                "id": self.id,
                "object": "text_completion",
                "created": self.created,
                "model": self.upstream_model(),
                "choices": [],
                "usage": usage,
            })),
            _ => self.chat_event(None, Some(usage)),
        }
    }

    fn chat_event(&self, choice: Option<ChunkChoice>, usage: Option<UsageBody>) -> Bytes {
        let mut chunk = ChatChunk::new(&self.id, self.upstream_model(), self.created);
        chunk.choices.extend(choice);
        chunk.usage = usage;
        sse(&chunk)
    }

    fn completion_event(&self, text: &str, finish: Option<&str>) -> Bytes {
        sse(&json!({
            "id": self.id,
            "object": "text_completion",
            "created": self.created,
            "model": self.upstream_model(),
            "choices": [{"text": text, "index": 0, "logprobs": null, "finish_reason": finish}],
        }))
    }
}

/// `data: [DONE]`, the end of an OpenAI stream.
pub(crate) const DONE_EVENT: &[u8] = b"data: [DONE]\n\n";
