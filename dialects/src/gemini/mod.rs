//! Google's Gemini API (`generateContent`, `streamGenerateContent?alt=sse`,
//! `batchEmbedContents`): wire structs that keep unknown fields, and the translation from and to
//! the chat hub (requests, whole answers, streams, errors, embeddings). Vertex AI serves the same
//! body for its Gemini models; its own text embeddings (`:predict`, [`predict_request_from_openai`])
//! and token counter (`:countTokens`, [`CountTokensRequest`]) are here too.
//!
//! An OpenAI client reaching Gemini: [`request_from_chat`] builds the body, [`blocked`] and
//! [`chat_from_response`] read a whole answer, [`ChunkTranslator`] a stream, and
//! [`classify_error`], [`retry_after`] and [`error_message`] a failure. Field by field, what maps,
//! what is dropped and what is refused is in `docs/dialects/gemini.md`; the mapping follows
//! LiteLLM 1.100 where that is sensible.
//!
//! ```
//! use switchyard_dialects::chat::{ChatRequest, Message};
//! use switchyard_dialects::gemini::{self, GenerateContentResponse, RequestOptions};
//!
//! let mut req = ChatRequest::new("flash", vec![Message::user("Hello")]);
//! req.max_completion_tokens = Some(64);
//! let body = gemini::request_from_chat(req, &RequestOptions::new("gemini-2.5-flash"))?;
//! assert_eq!(serde_json::to_value(&body)?, serde_json::json!({
//!     "contents": [{"role": "user", "parts": [{"text": "Hello"}]}],
//!     "generationConfig": {"maxOutputTokens": 64},
//! }));
//!
//! let answer: GenerateContentResponse = serde_json::from_str(r#"{
//!     "candidates": [{"content": {"role": "model", "parts": [{"text": "Hi."}]}, "finishReason": "MAX_TOKENS"}],
//!     "usageMetadata": {"promptTokenCount": 2, "candidatesTokenCount": 64, "totalTokenCount": 66}}"#)?;
//! assert!(gemini::blocked(&answer).is_none());
//! let chat = gemini::chat_from_response(answer, "flash", 1_700_000_000);
//! assert_eq!(chat.choices[0].finish_reason.as_deref(), Some("length"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod count;
mod embed;
mod error;
mod ids;
mod predict;
mod request;
mod response;
mod schema;
mod stream;
mod wire;

pub use count::{CountTokensRequest, CountTokensResponse, anthropic_count_from};
pub use embed::{
    BatchEmbedContentsRequest, BatchEmbedContentsResponse, ContentEmbedding, EmbedContentRequest,
    embed_request_from_openai, openai_embeddings_from,
};
pub use error::{classify_error, error_message, retry_after};
pub use predict::{
    EmbeddingParameters, EmbeddingStatistics, MAX_INSTANCES, PredictOptions, PredictRequest, PredictResponse,
    Prediction, TASK_TYPES, TextEmbedding, TextEmbeddingInstance, openai_embeddings_from_predict,
    predict_request_from_openai,
};
pub use request::request_from_chat;
pub use response::{blocked, chat_from_response, chat_usage, finish_reason};
pub use stream::ChunkTranslator;
pub use wire::{
    Blob, Candidate, Content, FileData, FunctionCall, FunctionCallingConfig, FunctionDeclaration, FunctionResponse,
    GenerateContentRequest, GenerateContentResponse, GenerationConfig, Part, PromptFeedback, ThinkingConfig, Tool,
    ToolConfig, UsageMetadata,
};

/// How [`request_from_chat`] translates one request.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RequestOptions {
    /// The Gemini model the deployment names (`gemini-2.5-flash`); it goes in the URL, and
    /// decides [`gemini_3`](Self::gemini_3).
    pub model: String,
    /// Drop parameters Gemini cannot honour instead of refusing them (LiteLLM's `drop_params`).
    pub drop_unsupported: bool,
    /// The model is Gemini 3 or newer (LiteLLM's test: the name contains `gemini-3`): function
    /// call ids are sent back on `functionCall` / `functionResponse` (older models refuse them),
    /// a turn's first call without a thought signature gets Google's documented placeholder, and
    /// `reasoning_effort` becomes a `thinkingLevel` instead of a `thinkingBudget`.
    pub gemini_3: bool,
}

impl RequestOptions {
    /// Options for `model`, refusing unsupported parameters.
    ///
    /// ```
    /// use switchyard_dialects::gemini::RequestOptions;
    ///
    /// assert!(RequestOptions::new("gemini-3-pro-preview").gemini_3);
    /// assert!(!RequestOptions::new("gemini-2.5-pro").drop_unsupported(true).gemini_3);
    /// ```
    pub fn new(model: impl Into<String>) -> Self {
        let model = model.into();
        let gemini_3 = model.contains("gemini-3");
        Self { model, drop_unsupported: false, gemini_3 }
    }

    /// Drops unsupported parameters instead of refusing them.
    pub fn drop_unsupported(mut self, drop: bool) -> Self {
        self.drop_unsupported = drop;
        self
    }

    /// Overrides whether the model is treated as Gemini 3 or newer.
    pub fn gemini_3(mut self, gemini_3: bool) -> Self {
        self.gemini_3 = gemini_3;
        self
    }
}
