//! Vertex AI's text embeddings: an OpenAI `/v1/embeddings` request as a `:predict` request of a
//! Google embedding model (`text-embedding-005`, `text-multilingual-embedding-002`,
//! `gemini-embedding-001`), and its answer as an OpenAI embeddings list with usage.
//!
//! Vertex AI embeds through `POST .../publishers/google/models/{model}:predict`, not the Gemini
//! API's `batchEmbedContents`: one `instances[]` entry per text (`content`, and optionally
//! `task_type` and `title`), `parameters` for the whole call (`autoTruncate`,
//! `outputDimensionality`); each `predictions[]` entry holds `embeddings.values` and
//! `embeddings.statistics.token_count`. The mapping follows LiteLLM 1.100
//! (`VertexAITextEmbeddingConfig`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::TranslateError;

/// The most texts Vertex AI embeds in one `:predict` call of a text embedding model.
pub const MAX_INSTANCES: usize = 250;

/// The task types Vertex AI's text embedding models take (`task_type`).
pub const TASK_TYPES: [&str; 8] = [
    "RETRIEVAL_QUERY",
    "RETRIEVAL_DOCUMENT",
    "SEMANTIC_SIMILARITY",
    "CLASSIFICATION",
    "CLUSTERING",
    "QUESTION_ANSWERING",
    "FACT_VERIFICATION",
    "CODE_RETRIEVAL_QUERY",
];

/// A `POST .../publishers/google/models/{model}:predict` body for a text embedding model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PredictRequest {
    /// One instance per text, in order.
    pub instances: Vec<TextEmbeddingInstance>,
    /// Settings of the whole call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<EmbeddingParameters>,
    /// Every other field (`labels`), as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One text to embed. Vertex AI spells these fields in snake case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TextEmbeddingInstance {
    /// The text.
    pub content: String,
    /// What the embedding is for: one of [`TASK_TYPES`] (Google's default is
    /// `RETRIEVAL_QUERY`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_type: Option<String>,
    /// The document's title (only with `RETRIEVAL_DOCUMENT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// `parameters` of a text embedding call (`TextEmbeddingPredictionParams`).
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct EmbeddingParameters {
    /// Truncate texts longer than the model's input limit instead of failing (Google's default:
    /// `true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_truncate: Option<bool>,
    /// Truncate each embedding to this many dimensions (OpenAI's `dimensions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_dimensionality: Option<u64>,
    /// Every other parameter, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A `:predict` answer of a text embedding model.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PredictResponse {
    /// One prediction per instance, in order.
    #[serde(default)]
    pub predictions: Vec<Prediction>,
    /// Every other field (`metadata.billableCharacterCount`, `deployedModelId`), as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One instance's prediction.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Prediction {
    /// The embedding; absent only in an answer that is not a text embedding's.
    #[serde(default)]
    pub embeddings: Option<TextEmbedding>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One text's embedding.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TextEmbedding {
    /// The vector.
    #[serde(default)]
    pub values: Vec<f64>,
    /// What the model read of the text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statistics: Option<EmbeddingStatistics>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `embeddings.statistics`: Vertex AI's `:predict` answers spell `token_count` in snake case (the
/// proto JSON spelling `tokenCount` is read too).
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EmbeddingStatistics {
    /// The tokens of the text.
    #[serde(default, alias = "tokenCount", skip_serializing_if = "Option::is_none")]
    pub token_count: Option<u64>,
    /// Whether the text was cut to the model's input limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// How [`predict_request_from_openai`] reads one request.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PredictOptions {
    /// The Vertex AI model (`text-embedding-005`); it goes in the URL, and decides how many texts
    /// one call may hold ([`max_instances`](Self::max_instances)).
    pub model: String,
    /// The most texts one call may hold: 1 for the `gemini-embedding` models (Google: "supports
    /// one instance per request"), else [`MAX_INSTANCES`].
    pub max_instances: usize,
    /// Drop OpenAI parameters Vertex AI cannot honour (`user`, `encoding_format: base64`) instead
    /// of refusing them (LiteLLM's `drop_params`).
    pub drop_unsupported: bool,
}

impl PredictOptions {
    /// Options for `model`, refusing unsupported parameters.
    ///
    /// ```
    /// use switchyard_dialects::gemini::PredictOptions;
    ///
    /// assert_eq!(PredictOptions::new("gemini-embedding-001").max_instances, 1);
    /// assert_eq!(PredictOptions::new("text-embedding-005").max_instances, 250);
    /// ```
    pub fn new(model: impl Into<String>) -> Self {
        let model = model.into();
        let max_instances = if model.starts_with("gemini-embedding") { 1 } else { MAX_INSTANCES };
        Self { model, max_instances, drop_unsupported: false }
    }

    /// Drops unsupported parameters instead of refusing them.
    pub fn drop_unsupported(mut self, drop: bool) -> Self {
        self.drop_unsupported = drop;
        self
    }
}

/// Translates an OpenAI `/v1/embeddings` request body (its members, the deployment's parameters
/// already merged in) into a Vertex AI `:predict` request.
///
/// - `input`: a string or a non-empty array of strings, one instance each; token arrays are
///   refused (Vertex AI embeds text), and so are more texts than the model takes in one call.
/// - `dimensions` → `parameters.outputDimensionality` (a positive integer).
/// - `task_type` (one of [`TASK_TYPES`]; LiteLLM's `input_type` is the same) and `title` go on
///   every instance; `auto_truncate` (a boolean) → `parameters.autoTruncate`.
/// - `encoding_format: "float"` is what Vertex AI answers and is dropped; `base64` and `user`
///   are refused (dropped with `drop_unsupported`), as LiteLLM does.
/// - `model` names the URL's model and is not sent; any other member goes into `parameters` as
///   given (LiteLLM's provider-specific parameters).
///
/// ```
/// use serde_json::json;
/// use switchyard_dialects::gemini::{PredictOptions, predict_request_from_openai};
///
/// let body = json!({"model": "embed", "input": ["a", "b"], "dimensions": 256, "task_type": "RETRIEVAL_DOCUMENT"});
/// let req = predict_request_from_openai(body.as_object().unwrap(), &PredictOptions::new("text-embedding-005"))?;
/// assert_eq!(serde_json::to_value(&req)?, json!({
///     "instances": [
///         {"content": "a", "task_type": "RETRIEVAL_DOCUMENT"},
///         {"content": "b", "task_type": "RETRIEVAL_DOCUMENT"},
///     ],
///     "parameters": {"outputDimensionality": 256},
/// }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn predict_request_from_openai(
    request: &Map<String, Value>,
    options: &PredictOptions,
) -> Result<PredictRequest, TranslateError> {
    let texts = texts(request.get("input"))?;
    if texts.len() > options.max_instances {
        let reason = match options.max_instances {
            1 => format!("Vertex AI's `{}` embeds one text per request; send one string", options.model),
            n => format!("Vertex AI embeds at most {n} texts per request; send fewer"),
        };
        return Err(TranslateError::new("input", reason));
    }
    let mut parameters = EmbeddingParameters::default();
    let (mut task_type, mut title) = (None, None);
    for (key, value) in request {
        match key.as_str() {
            "input" | "model" => {}
            "dimensions" => match value.as_u64().filter(|d| *d > 0) {
                Some(dimensions) => parameters.output_dimensionality = Some(dimensions),
                None if value.is_null() => {}
                None => return Err(TranslateError::new("dimensions", "must be a positive integer")),
            },
            // LiteLLM maps `input_type` to `task_type`; `task_type` wins when both are given.
            "task_type" | "input_type" if !value.is_null() => {
                let Some(kind) = value.as_str().filter(|t| TASK_TYPES.contains(t)) else {
                    let reason = format!("must be one of {}", TASK_TYPES.join(", "));
                    return Err(TranslateError::new(key.as_str(), reason));
                };
                if key == "task_type" || task_type.is_none() {
                    task_type = Some(kind.to_owned());
                }
            }
            "title" if !value.is_null() => {
                let text = value.as_str().ok_or_else(|| TranslateError::new("title", "must be a string"))?;
                title = Some(text.to_owned());
            }
            "auto_truncate" if !value.is_null() => {
                let on = value.as_bool().ok_or_else(|| TranslateError::new("auto_truncate", "must be a boolean"))?;
                parameters.auto_truncate = Some(on);
            }
            "encoding_format" => match value.as_str() {
                None | Some("float") => {}
                Some(_) if options.drop_unsupported => {}
                Some(other) => {
                    let reason = format!("Vertex AI answers float vectors only, not `{other}`");
                    return Err(TranslateError::new("encoding_format", reason));
                }
            },
            "user" => {
                if !options.drop_unsupported && !value.is_null() {
                    return Err(TranslateError::new("user", "Vertex AI's embeddings take no end-user id"));
                }
            }
            "task_type" | "input_type" | "title" | "auto_truncate" => {}
            other => {
                parameters.extra.insert(other.to_owned(), value.clone());
            }
        }
    }
    let instances = texts
        .into_iter()
        .map(|text| TextEmbeddingInstance {
            content: text.to_owned(),
            task_type: task_type.clone(),
            title: title.clone(),
        })
        .collect();
    let parameters = (parameters != EmbeddingParameters::default()).then_some(parameters);
    Ok(PredictRequest { instances, parameters, extra: Map::new() })
}

/// The texts of an OpenAI embeddings `input`: a string, or a non-empty array of strings.
fn texts(input: Option<&Value>) -> Result<Vec<&str>, TranslateError> {
    match input {
        Some(Value::String(text)) => Ok(vec![text.as_str()]),
        Some(Value::Array(items)) if !items.is_empty() => items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                item.as_str().ok_or_else(|| {
                    TranslateError::new(format!("input[{i}]"), "Vertex AI embeds text only: send strings, not tokens")
                })
            })
            .collect(),
        Some(Value::Array(_)) => Err(TranslateError::new("input", "must not be empty")),
        None => Err(TranslateError::new("input", "an embeddings request needs `input`")),
        Some(_) => Err(TranslateError::new("input", "must be a string or an array of strings")),
    }
}

/// Translates a `:predict` answer into OpenAI's embeddings list for `model`, one embedding per
/// prediction in order, with `usage.prompt_tokens` (and `total_tokens`) the sum of the
/// predictions' `statistics.token_count` (LiteLLM's usage). A prediction without `embeddings` is
/// an answer that cannot be read, named by its index.
///
/// ```
/// use switchyard_dialects::gemini::{PredictResponse, openai_embeddings_from_predict};
///
/// let answer: PredictResponse = serde_json::from_str(r#"{"predictions": [
///     {"embeddings": {"values": [0.5, -0.25], "statistics": {"truncated": false, "token_count": 3}}},
///     {"embeddings": {"values": [0.0, 1.0], "statistics": {"truncated": false, "token_count": 4}}}
/// ]}"#)?;
/// let list = openai_embeddings_from_predict(answer, "text-embedding-005")?;
/// assert_eq!(list["data"][1]["embedding"], serde_json::json!([0.0, 1.0]));
/// assert_eq!(list["usage"], serde_json::json!({"prompt_tokens": 7, "total_tokens": 7}));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn openai_embeddings_from_predict(resp: PredictResponse, model: &str) -> Result<Value, TranslateError> {
    let mut tokens: u64 = 0;
    let mut data = Vec::with_capacity(resp.predictions.len());
    for (i, prediction) in resp.predictions.into_iter().enumerate() {
        let embedding = prediction
            .embeddings
            .ok_or_else(|| TranslateError::new(format!("predictions[{i}]"), "holds no `embeddings`"))?;
        let counted = embedding.statistics.as_ref().and_then(|s| s.token_count).unwrap_or(0);
        tokens = tokens.saturating_add(counted);
        data.push(json!({"object": "embedding", "index": i, "embedding": embedding.values}));
    }
    Ok(json!({
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(body: Value, model: &str) -> Result<PredictRequest, TranslateError> {
        let Value::Object(body) = body else { panic!("test bodies are objects") };
        predict_request_from_openai(&body, &PredictOptions::new(model))
    }

    #[test]
    fn a_string_is_one_instance_and_an_array_one_per_text() {
        let one = request(json!({"input": "hello"}), "text-embedding-005").expect("translates");
        assert_eq!(serde_json::to_value(&one).expect("JSON"), json!({"instances": [{"content": "hello"}]}));
        let three = request(json!({"input": ["a", "b", "c"]}), "text-multilingual-embedding-002").expect("translates");
        let contents: Vec<&str> = three.instances.iter().map(|i| i.content.as_str()).collect();
        assert_eq!(contents, ["a", "b", "c"]);
        assert_eq!(three.parameters, None);
    }

    #[test]
    fn dimensions_task_type_title_and_auto_truncate_are_mapped() {
        let body = json!({
            "model": "e", "input": "doc", "dimensions": 128, "task_type": "RETRIEVAL_DOCUMENT",
            "title": "A title", "auto_truncate": false, "encoding_format": "float",
        });
        let req = request(body, "text-embedding-005").expect("translates");
        assert_eq!(
            serde_json::to_value(&req).expect("JSON"),
            json!({
                "instances": [{"content": "doc", "task_type": "RETRIEVAL_DOCUMENT", "title": "A title"}],
                "parameters": {"autoTruncate": false, "outputDimensionality": 128},
            })
        );
    }

    #[test]
    fn input_type_is_litellms_name_for_task_type_and_task_type_wins() {
        let req = request(json!({"input": "q", "input_type": "CLUSTERING"}), "text-embedding-005").expect("maps");
        assert_eq!(req.instances[0].task_type.as_deref(), Some("CLUSTERING"));
        let both = json!({"input": "q", "input_type": "CLUSTERING", "task_type": "CLASSIFICATION"});
        let req = request(both, "text-embedding-005").expect("maps");
        assert_eq!(req.instances[0].task_type.as_deref(), Some("CLASSIFICATION"));
        let err =
            request(json!({"input": "q", "task_type": "search_query"}), "text-embedding-005").expect_err("unknown");
        assert_eq!(err.field, "task_type");
    }

    #[test]
    fn gemini_embedding_takes_one_text_per_request() {
        assert!(request(json!({"input": ["only"]}), "gemini-embedding-001").is_ok());
        let err = request(json!({"input": ["a", "b"]}), "gemini-embedding-001").expect_err("two texts");
        assert_eq!(err.field, "input");
        assert!(err.reason.contains("gemini-embedding-001"), "{err}");
        let many: Vec<String> = (0..=MAX_INSTANCES).map(|i| i.to_string()).collect();
        assert_eq!(request(json!({"input": many}), "text-embedding-005").expect_err("251 texts").field, "input");
    }

    #[test]
    fn tokens_empty_inputs_and_bad_values_are_refused_by_name() {
        let field = |body: Value| request(body, "text-embedding-005").expect_err("refused").field;
        assert_eq!(field(json!({"input": [[1, 2, 3]]})), "input[0]");
        assert_eq!(field(json!({"input": []})), "input");
        assert_eq!(field(json!({"input": 7})), "input");
        assert_eq!(field(json!({})), "input");
        assert_eq!(field(json!({"input": "x", "dimensions": 0})), "dimensions");
        assert_eq!(field(json!({"input": "x", "encoding_format": "base64"})), "encoding_format");
        assert_eq!(field(json!({"input": "x", "user": "u-1"})), "user");
        assert_eq!(field(json!({"input": "x", "auto_truncate": "yes"})), "auto_truncate");
    }

    #[test]
    fn drop_params_drops_what_vertex_cannot_take_and_unknown_members_are_parameters() {
        let Value::Object(body) = json!({"input": "x", "user": "u-1", "encoding_format": "base64", "labels_x": 1})
        else {
            unreachable!()
        };
        let options = PredictOptions::new("text-embedding-005").drop_unsupported(true);
        let req = predict_request_from_openai(&body, &options).expect("dropped");
        assert_eq!(
            serde_json::to_value(&req).expect("JSON"),
            json!({
                "instances": [{"content": "x"}],
                "parameters": {"labels_x": 1},
            })
        );
    }

    #[test]
    fn answers_become_an_openai_list_with_the_summed_token_counts() {
        let answer: PredictResponse = serde_json::from_value(json!({
            "predictions": [
                {"embeddings": {"values": [0.25], "statistics": {"truncated": false, "token_count": 5}}},
                {"embeddings": {"values": [0.5], "statistics": {"truncated": true, "tokenCount": 2048}}},
            ],
            "metadata": {"billableCharacterCount": 40},
        }))
        .expect("an answer");
        let list = openai_embeddings_from_predict(answer, "text-embedding-005").expect("readable");
        assert_eq!(
            list,
            json!({
                "object": "list",
                "data": [
                    {"object": "embedding", "index": 0, "embedding": [0.25]},
                    {"object": "embedding", "index": 1, "embedding": [0.5]},
                ],
                "model": "text-embedding-005",
                "usage": {"prompt_tokens": 2053, "total_tokens": 2053},
            })
        );
        let broken: PredictResponse = serde_json::from_value(json!({"predictions": [{"other": 1}]})).expect("shape");
        assert_eq!(openai_embeddings_from_predict(broken, "m").expect_err("no embeddings").field, "predictions[0]");
    }
}
