//! Embeddings: `POST /v1/embeddings` and its answer.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// An embeddings request.
///
/// ```
/// use switchyard_services::openai::EmbeddingRequest;
///
/// let req = EmbeddingRequest::new("text-embedding-3-small", "hello");
/// assert_eq!(serde_json::to_value(&req)?["input"], "hello");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EmbeddingRequest {
    /// The model (group) asked for.
    pub model: String,
    /// A string, an array of strings, or token arrays.
    pub input: Value,
    /// Every other field (`dimensions`, `encoding_format`, `user`, ...), as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl EmbeddingRequest {
    /// A request embedding `input` with `model`.
    pub fn new(model: impl Into<String>, input: impl Into<Value>) -> Self {
        Self { model: model.into(), input: input.into(), extra: Map::new() }
    }
}

fn list_object() -> String {
    "list".to_owned()
}

fn embedding_object() -> String {
    "embedding".to_owned()
}

/// The answer to an embeddings request (`encoding_format: float`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EmbeddingResponse {
    /// Always `list`.
    #[serde(default = "list_object")]
    pub object: String,
    /// One embedding per input, in input order.
    pub data: Vec<Embedding>,
    /// The provider model that answered.
    pub model: String,
    /// Token usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<EmbeddingUsage>,
    /// Every other field, as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl EmbeddingResponse {
    /// An answer with `data` from `model`.
    pub fn new(model: impl Into<String>, data: Vec<Embedding>) -> Self {
        Self { object: list_object(), data, model: model.into(), usage: None, extra: Map::new() }
    }

    /// Sets the usage.
    pub fn with_usage(mut self, usage: EmbeddingUsage) -> Self {
        self.usage = Some(usage);
        self
    }
}

/// One vector of an [`EmbeddingResponse`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Embedding {
    /// Always `embedding`.
    #[serde(default = "embedding_object")]
    pub object: String,
    /// The input this vector belongs to.
    pub index: u32,
    /// The vector.
    pub embedding: Vec<f32>,
    /// Every other field, as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Embedding {
    /// The vector for input `index`.
    pub fn new(index: u32, embedding: Vec<f32>) -> Self {
        Self { object: embedding_object(), index, embedding, extra: Map::new() }
    }
}

/// The `usage` object of an embeddings answer (there are no completion tokens).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EmbeddingUsage {
    /// Input tokens.
    pub prompt_tokens: u64,
    /// Same as `prompt_tokens`.
    #[serde(default)]
    pub total_tokens: u64,
    /// Every other field, as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl EmbeddingUsage {
    /// Usage of `prompt` input tokens.
    pub fn new(prompt: u64) -> Self {
        Self { prompt_tokens: prompt, total_tokens: prompt, extra: Map::new() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_real_openai_embedding_answer_parses() {
        let raw = br#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,-0.2]}],
            "model":"text-embedding-3-small","usage":{"prompt_tokens":2,"total_tokens":2}}"#;
        let r: EmbeddingResponse = serde_json::from_slice(raw).expect("valid answer");
        assert_eq!(r.data[0].embedding, vec![0.1, -0.2]);
        assert_eq!(r.usage.map(|u| u.prompt_tokens), Some(2));
    }
}
