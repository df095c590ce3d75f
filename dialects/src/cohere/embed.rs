//! Cohere's v2 Embed API (`POST /v2/embed`): the request and answer wire structs, and the
//! translation from and to OpenAI's `/v1/embeddings`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::wire::count;
use crate::TranslateError;

/// The `input_type` sent when the client gives none: LiteLLM's
/// `COHERE_DEFAULT_EMBEDDING_INPUT_TYPE` (1.100).
pub const DEFAULT_INPUT_TYPE: &str = "search_document";

/// A `POST /v2/embed` body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EmbedRequest {
    /// The embedding model.
    pub model: String,
    /// `search_document`, `search_query`, `classification`, `clustering` or `image`.
    pub input_type: String,
    /// Texts to embed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub texts: Option<Vec<String>>,
    /// Images to embed, as `data:` URIs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<Vec<String>>,
    /// `float`, `int8`, `uint8`, `binary`, `ubinary`, `base64` (required by v2).
    pub embedding_types: Vec<String>,
    /// The dimensions of the output (OpenAI's `dimensions`; `embed-v4` and newer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_dimension: Option<u64>,
    /// Every other field (`truncate`, `max_tokens`, `inputs`, `priority`), as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A `POST /v2/embed` answer.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EmbedResponse {
    /// The answer's id.
    #[serde(default)]
    pub id: String,
    /// One array per requested type, each with one embedding per input, in order.
    #[serde(default)]
    pub embeddings: Map<String, Value>,
    /// `billed_units` (`input_tokens`, `images`, `image_tokens`), `tokens`, `api_version`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
    /// Every other field (`texts`, `images`, `response_type`), as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The embedding types [`openai_embeddings_from`] reads, in order of preference.
const TYPES: [&str; 6] = ["float", "int8", "uint8", "binary", "ubinary", "base64"];

/// Translates OpenAI's embeddings `input` into a Cohere v2 Embed request for `model`, asking for
/// `float` embeddings.
///
/// A string or an array of strings becomes `texts`; an array of `data:` URIs only becomes
/// `images` (with `input_type: image`, as LiteLLM sends base64 images). `input_type` is the
/// caller's (the client's `input_type` parameter), else `search_document` ([`DEFAULT_INPUT_TYPE`]).
/// Token arrays, an empty input, and texts mixed with images are refused naming `input`.
///
/// ```
/// use switchyard_dialects::cohere::embed_request_from_openai;
///
/// let body = embed_request_from_openai(&serde_json::json!(["hello", "world"]), "embed-v4.0", None)?;
/// assert_eq!(serde_json::to_value(&body)?, serde_json::json!({
///     "model": "embed-v4.0", "input_type": "search_document",
///     "texts": ["hello", "world"], "embedding_types": ["float"],
/// }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn embed_request_from_openai(
    input: &Value,
    model: &str,
    input_type: Option<&str>,
) -> Result<EmbedRequest, TranslateError> {
    let inputs: Vec<String> = match input {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) if items.is_empty() => {
            return Err(TranslateError::new("input", "must not be empty"));
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(s) => Ok(s.clone()),
                _ => Err(TranslateError::new(
                    format!("input[{i}]"),
                    "Cohere embeds text or images: token arrays are not supported",
                )),
            })
            .collect::<Result<_, _>>()?,
        _ => return Err(TranslateError::new("input", "must be a string or an array of strings")),
    };
    let images = inputs.iter().filter(|s| is_data_uri(s)).count();
    let (texts, images, default_type) = if images == 0 {
        (Some(inputs), None, DEFAULT_INPUT_TYPE)
    } else if images == inputs.len() {
        (None, Some(inputs), "image")
    } else {
        return Err(TranslateError::new(
            "input",
            "texts and data: URI images cannot be embedded in one Cohere request",
        ));
    };
    Ok(EmbedRequest {
        model: model.to_owned(),
        input_type: input_type.unwrap_or(default_type).to_owned(),
        texts,
        images,
        embedding_types: vec!["float".to_owned()],
        output_dimension: None,
        extra: Map::new(),
    })
}

fn is_data_uri(s: &str) -> bool {
    s.get(..5).is_some_and(|p| p.eq_ignore_ascii_case("data:"))
}

/// Translates a Cohere v2 Embed answer into OpenAI's list shape for `model`:
/// `{"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model", "usage"}`.
///
/// The `float` embeddings when present, else the first type present (`int8`, `uint8`, `binary`,
/// `ubinary`, `base64`). `usage.prompt_tokens` is `meta.billed_units.input_tokens` plus
/// `image_tokens`, else `meta.tokens.input_tokens`, else 0.
///
/// ```
/// use switchyard_dialects::cohere::{EmbedResponse, openai_embeddings_from};
///
/// let resp: EmbedResponse = serde_json::from_str(r#"{"id": "da6e5", "embeddings": {"float": [[0.1, 0.2]]},
///     "texts": ["hello"], "meta": {"billed_units": {"input_tokens": 1}}}"#)?;
/// let out = openai_embeddings_from(resp, "embed-v4.0");
/// assert_eq!(out["data"][0]["embedding"], serde_json::json!([0.1, 0.2]));
/// assert_eq!(out["usage"]["prompt_tokens"], 1);
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn openai_embeddings_from(resp: EmbedResponse, model: &str) -> Value {
    let EmbedResponse { mut embeddings, meta, .. } = resp;
    let vectors = TYPES
        .iter()
        .find_map(|t| match embeddings.remove(*t) {
            Some(Value::Array(items)) => Some(items),
            _ => None,
        })
        .unwrap_or_default();
    let data: Vec<Value> = vectors
        .into_iter()
        .enumerate()
        .map(|(index, embedding)| json!({"object": "embedding", "index": index, "embedding": embedding}))
        .collect();
    let prompt_tokens = meta.as_ref().map_or(0, prompt_tokens);
    json!({
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens},
    })
}

/// Billed input and image tokens, else the model's input tokens.
fn prompt_tokens(meta: &Value) -> u64 {
    let number = |v: Option<&Value>| match v {
        Some(Value::Number(n)) => count(n),
        _ => None,
    };
    let billed = meta.get("billed_units");
    let text = number(billed.and_then(|b| b.get("input_tokens")));
    let images = number(billed.and_then(|b| b.get("image_tokens")));
    if text.is_some() || images.is_some() {
        return text.unwrap_or(0).saturating_add(images.unwrap_or(0));
    }
    number(meta.get("tokens").and_then(|t| t.get("input_tokens"))).unwrap_or(0)
}
