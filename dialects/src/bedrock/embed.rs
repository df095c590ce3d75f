//! Embeddings on Bedrock: `InvokeModel` bodies for Amazon Titan and Cohere embed models, and
//! their answers as one OpenAI embeddings list.

use serde_json::{Value, json};

use crate::TranslateError;

/// The most texts one Cohere embed call takes.
const COHERE_BATCH: usize = 96;

/// The embedding families Bedrock's `InvokeModel` serves here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Embedder {
    /// `amazon.titan-embed-*`: one `inputText` per call.
    Titan,
    /// `cohere.embed-*`: `texts` (up to 96) and an `input_type`.
    Cohere,
}

fn embedder(model_id: &str) -> Result<Embedder, TranslateError> {
    let id = model_id.to_ascii_lowercase();
    if id.contains("amazon.titan-embed") {
        Ok(Embedder::Titan)
    } else if id.contains("cohere.embed") {
        Ok(Embedder::Cohere)
    } else {
        Err(TranslateError::new(
            "model",
            format!(
                "{model_id:?} is not a Bedrock Titan or Cohere embedding model (amazon.titan-embed-*, cohere.embed-*)"
            ),
        ))
    }
}

/// The texts of an OpenAI embeddings `input`: a string or an array of strings.
fn texts(input: &Value) -> Result<Vec<&str>, TranslateError> {
    let texts = match input {
        Value::String(text) => vec![text.as_str()],
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                item.as_str().ok_or_else(|| {
                    TranslateError::new(format!("input[{i}]"), "Bedrock embeds text: token arrays cannot cross")
                })
            })
            .collect::<Result<_, _>>()?,
        _ => return Err(TranslateError::new("input", "must be a string or a non-empty array of strings")),
    };
    Ok(texts)
}

/// The `InvokeModel` bodies that embed an OpenAI embeddings `input` (a string or an array of
/// strings) with `model_id`, in order: one `{"inputText"}` per text for Titan, which embeds one
/// text per call; `{"texts", "input_type": "search_document"}` per 96 texts for Cohere (LiteLLM's
/// default input type).
///
/// ```
/// use serde_json::json;
/// use switchyard_dialects::bedrock::embed_request;
///
/// let bodies = embed_request("amazon.titan-embed-text-v2:0", &json!(["a", "b"]))?;
/// assert_eq!(bodies, [json!({"inputText": "a"}), json!({"inputText": "b"})]);
/// let bodies = embed_request("cohere.embed-english-v3", &json!("a"))?;
/// assert_eq!(bodies, [json!({"texts": ["a"], "input_type": "search_document"})]);
/// # Ok::<(), switchyard_dialects::TranslateError>(())
/// ```
pub fn embed_request(model_id: &str, input: &Value) -> Result<Vec<Value>, TranslateError> {
    let embedder = embedder(model_id)?;
    let texts = texts(input)?;
    Ok(match embedder {
        Embedder::Titan => texts.into_iter().map(|text| json!({"inputText": text})).collect(),
        Embedder::Cohere => {
            texts.chunks(COHERE_BATCH).map(|batch| json!({"texts": batch, "input_type": "search_document"})).collect()
        }
    })
}

/// One OpenAI embeddings answer (`{"object": "list", "data", "model", "usage"}`) from the
/// `answers` to the bodies of [`embed_request`], in the same order. Titan's
/// `inputTextTokenCount`s are the usage; Cohere's answers on Bedrock count no tokens, so their
/// usage is 0.
///
/// ```
/// use serde_json::json;
/// use switchyard_dialects::bedrock::openai_embeddings_from;
///
/// let answers = [json!({"embedding": [0.5, -0.25], "inputTextTokenCount": 3})];
/// let list = openai_embeddings_from("amazon.titan-embed-text-v2:0", &answers)?;
/// assert_eq!(list["data"][0], json!({"object": "embedding", "index": 0, "embedding": [0.5, -0.25]}));
/// assert_eq!(list["usage"], json!({"prompt_tokens": 3, "total_tokens": 3}));
/// # Ok::<(), switchyard_dialects::TranslateError>(())
/// ```
pub fn openai_embeddings_from(model_id: &str, answers: &[Value]) -> Result<Value, TranslateError> {
    let embedder = embedder(model_id)?;
    let mut vectors: Vec<Value> = Vec::new();
    let mut tokens: u64 = 0;
    for (i, answer) in answers.iter().enumerate() {
        match embedder {
            Embedder::Titan => {
                let vector = answer.get("embedding").filter(|v| is_vector(v)).ok_or_else(|| {
                    TranslateError::new(format!("answers[{i}].embedding"), "a Titan answer has an array of numbers")
                })?;
                vectors.push(vector.clone());
                tokens = tokens.saturating_add(answer.get("inputTextTokenCount").and_then(Value::as_u64).unwrap_or(0));
            }
            Embedder::Cohere => {
                // `embeddings` is a list of vectors, or by type (`{"float": [...]}`) when the
                // body asked for `embedding_types`.
                let embeddings = answer.get("embeddings");
                let list = embeddings.and_then(|e| e.get("float")).or(embeddings).and_then(Value::as_array);
                let list = list.filter(|l| l.iter().all(is_vector)).ok_or_else(|| {
                    TranslateError::new(
                        format!("answers[{i}].embeddings"),
                        "a Cohere answer has a list of float vectors",
                    )
                })?;
                vectors.extend(list.iter().cloned());
            }
        }
    }
    let data: Vec<Value> = vectors
        .into_iter()
        .enumerate()
        .map(|(index, embedding)| json!({"object": "embedding", "index": index, "embedding": embedding}))
        .collect();
    Ok(json!({
        "object": "list",
        "data": data,
        "model": model_id,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }))
}

fn is_vector(value: &Value) -> bool {
    value.as_array().is_some_and(|v| v.iter().all(Value::is_number))
}
