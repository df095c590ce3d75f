//! Embeddings: an OpenAI `/v1/embeddings` input as a Gemini `batchEmbedContents` request, and its
//! answer as an OpenAI embeddings list.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::wire::{Content, Part};
use crate::TranslateError;

/// A `POST /v1beta/models/{model}:batchEmbedContents` body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BatchEmbedContentsRequest {
    /// One request per input text.
    pub requests: Vec<EmbedContentRequest>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One text to embed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct EmbedContentRequest {
    /// `models/<model>`, the same as the URL's.
    pub model: String,
    /// The text, as one text part.
    pub content: Content,
    /// `RETRIEVAL_QUERY`, `RETRIEVAL_DOCUMENT`, `SEMANTIC_SIMILARITY`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_type: Option<String>,
    /// A document's title (with `RETRIEVAL_DOCUMENT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Truncates the embedding to this many dimensions (OpenAI's `dimensions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_dimensionality: Option<u32>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A `batchEmbedContents` answer.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BatchEmbedContentsResponse {
    /// One embedding per request, in order.
    #[serde(default)]
    pub embeddings: Vec<ContentEmbedding>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One embedding.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ContentEmbedding {
    /// The vector.
    #[serde(default)]
    pub values: Vec<f64>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `models/<model>`, as the embedding requests name it.
fn model_path(model: &str) -> String {
    if model.starts_with("models/") { model.to_owned() } else { format!("models/{model}") }
}

/// Translates the `input` of an OpenAI embeddings request (a string or an array of strings) into
/// a `batchEmbedContents` request for `model`, one request per string, in order. Token arrays
/// (OpenAI's pre-tokenized inputs) are refused (`input`): Gemini embeds text only. The caller sets
/// `output_dimensionality` (OpenAI's `dimensions`) and `task_type` on each request when it has
/// them.
///
/// ```
/// use switchyard_dialects::gemini::embed_request_from_openai;
///
/// let body = embed_request_from_openai(&serde_json::json!(["a", "b"]), "gemini-embedding-001")?;
/// assert_eq!(serde_json::to_value(&body)?["requests"][1], serde_json::json!({
///     "model": "models/gemini-embedding-001", "content": {"parts": [{"text": "b"}]},
/// }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn embed_request_from_openai(input: &Value, model: &str) -> Result<BatchEmbedContentsRequest, TranslateError> {
    let texts: Vec<&str> = match input {
        Value::String(text) => vec![text.as_str()],
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                item.as_str().ok_or_else(|| {
                    TranslateError::new(format!("input[{i}]"), "Gemini embeds text only: send strings, not tokens")
                })
            })
            .collect::<Result<_, _>>()?,
        Value::Array(_) => return Err(TranslateError::new("input", "must not be empty")),
        _ => return Err(TranslateError::new("input", "must be a string or an array of strings")),
    };
    let model = model_path(model);
    let requests = texts
        .into_iter()
        .map(|text| EmbedContentRequest {
            model: model.clone(),
            content: Content::parts(vec![Part::text(text)]),
            task_type: None,
            title: None,
            output_dimensionality: None,
            extra: Map::new(),
        })
        .collect();
    Ok(BatchEmbedContentsRequest { requests, extra: Map::new() })
}

/// Translates a `batchEmbedContents` answer into OpenAI's embeddings list for `model`. Gemini
/// reports no token counts for embeddings, so `usage` is zero unless the answer has
/// `usageMetadata.promptTokenCount`.
///
/// ```
/// use switchyard_dialects::gemini::{BatchEmbedContentsResponse, openai_embeddings_from};
///
/// let answer: BatchEmbedContentsResponse =
///     serde_json::from_str(r#"{"embeddings": [{"values": [0.5, -0.25]}]}"#)?;
/// let list = openai_embeddings_from(answer, "gemini-embedding-001");
/// assert_eq!(list["data"][0]["embedding"], serde_json::json!([0.5, -0.25]));
/// assert_eq!(list["object"], "list");
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn openai_embeddings_from(resp: BatchEmbedContentsResponse, model: &str) -> Value {
    let tokens = resp.extra.get("usageMetadata").and_then(|u| u.get("promptTokenCount")).and_then(Value::as_u64);
    let data: Vec<Value> = resp
        .embeddings
        .into_iter()
        .enumerate()
        .map(|(i, e)| json!({"object": "embedding", "index": i, "embedding": e.values}))
        .collect();
    let tokens = tokens.unwrap_or(0);
    json!({
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    })
}
