//! InvokeModel for the embedding models, with each model family's own body: Amazon Titan text
//! embeddings (`amazon.titan-embed-text-v1`, `-v2:0`) and Cohere Embed (`cohere.embed-english-v3`,
//! `cohere.embed-multilingual-v3`). Bodies are checked as Bedrock checks them against the model's
//! schema (`Malformed input request: #: required key [...] not found, ...`).

use std::time::Duration;

use axum::response::Response;
use http::{HeaderValue, StatusCode};
use rand::{Rng, rngs::SmallRng};
use serde_json::{Map, Value, json};

use super::answer::{self, Exception, json_bytes};
use crate::mock::{MockProfile, answer as common};

/// Titan v2's output sizes.
const TITAN_DIMENSIONS: [u64; 3] = [256, 512, 1024];
/// Cohere's input types.
const COHERE_INPUT_TYPES: [&str; 5] = ["search_document", "search_query", "classification", "clustering", "image"];
/// Cohere's embedding types.
const COHERE_EMBEDDING_TYPES: [&str; 5] = ["float", "int8", "uint8", "binary", "ubinary"];
/// Most texts in one Cohere request.
const COHERE_MAX_TEXTS: usize = 96;

/// One embeddings request, read.
#[derive(Debug)]
pub(super) enum Embed {
    Titan { chars: u64, dims: usize, by_type: Vec<String> },
    Cohere { texts: Vec<String>, by_type: Option<Vec<String>> },
}

/// Bedrock's refusal of a body its model's schema does not take.
fn malformed(problem: impl std::fmt::Display) -> Exception {
    Exception::validation(format!("Malformed input request: {problem}, please reformat your input and try again."))
}

impl Embed {
    /// Reads the body for the model family `model` names.
    pub(super) fn read(model: &str, body: &[u8], profile: &MockProfile) -> Result<Self, Exception> {
        let Ok(Value::Object(req)) = serde_json::from_slice::<Value>(body) else {
            return Err(malformed("#: expected type: JSONObject"));
        };
        if model.contains("amazon.titan-embed") {
            titan(&req, profile)
        } else if model.contains("cohere.embed") {
            cohere(&req)
        } else {
            Err(Exception::validation(format!(
                "The mock serves InvokeModel for Titan and Cohere embedding models only, not '{model}'."
            )))
        }
    }

    /// The embeddings, with Bedrock's `x-amzn-bedrock-input-token-count` and
    /// `x-amzn-bedrock-invocation-latency` headers.
    pub(super) fn answer(
        &self,
        profile: &MockProfile,
        rng: &mut SmallRng,
        latency: Duration,
        request_id: &str,
    ) -> Response {
        let (body, tokens) = match self {
            Self::Titan { chars, dims, by_type } => {
                let tokens = profile.prompt_tokens.unwrap_or_else(|| chars.div_ceil(4).max(1));
                let embedding = vector(*dims, rng);
                let mut answer = json!({"embedding": embedding, "inputTextTokenCount": tokens});
                if !by_type.is_empty() {
                    let types: Map<String, Value> = by_type.iter().map(|t| (t.clone(), typed(&embedding, t))).collect();
                    answer["embeddingsByType"] = Value::Object(types);
                }
                (answer, tokens)
            }
            Self::Cohere { texts, by_type } => {
                let chars: usize = texts.iter().map(|t| t.chars().count()).sum();
                let tokens = profile
                    .prompt_tokens
                    .unwrap_or_else(|| u64::try_from(chars).unwrap_or(u64::MAX).div_ceil(4).max(1));
                let vectors: Vec<Vec<f32>> = texts.iter().map(|_| vector(profile.embedding_dims, rng)).collect();
                let id = answer::request_id(rng);
                let (embeddings, response_type) = match by_type {
                    None => (json!(vectors), "embeddings_floats"),
                    Some(types) => {
                        let by_type: Map<String, Value> = types
                            .iter()
                            .map(|t| (t.clone(), Value::Array(vectors.iter().map(|v| typed(v, t)).collect())))
                            .collect();
                        (Value::Object(by_type), "embeddings_by_type")
                    }
                };
                let answer =
                    json!({"embeddings": embeddings, "id": id, "response_type": response_type, "texts": texts});
                (answer, tokens)
            }
        };
        let mut resp = common::json_response(StatusCode::OK, json_bytes(&body));
        let headers = resp.headers_mut();
        headers.insert("x-amzn-bedrock-input-token-count", HeaderValue::from(tokens));
        headers.insert(
            "x-amzn-bedrock-invocation-latency",
            HeaderValue::from(u64::try_from(latency.as_millis()).unwrap_or(u64::MAX)),
        );
        answer::insert_request_id(headers, request_id);
        resp
    }
}

/// `{"inputText", "dimensions"?, "normalize"?, "embeddingTypes"?}`.
fn titan(req: &Map<String, Value>, profile: &MockProfile) -> Result<Embed, Exception> {
    no_extra_keys(req, &["inputText", "dimensions", "normalize", "embeddingTypes"])?;
    let text = match req.get("inputText") {
        None => return Err(malformed("#: required key [inputText] not found")),
        Some(Value::String(t)) if !t.is_empty() => t,
        Some(Value::String(_)) => return Err(malformed("#/inputText: expected minLength: 1, actual: 0")),
        Some(_) => return Err(malformed("#/inputText: expected type: String")),
    };
    let dims = match req.get("dimensions") {
        None => profile.embedding_dims,
        Some(Value::Number(n)) if n.as_u64().is_some_and(|d| TITAN_DIMENSIONS.contains(&d)) => {
            n.as_u64().and_then(|d| usize::try_from(d).ok()).unwrap_or(profile.embedding_dims)
        }
        Some(other) => return Err(malformed(format!("#/dimensions: {other} is not a valid enum value"))),
    };
    let by_type = string_list(req.get("embeddingTypes"), "embeddingTypes", &["float", "binary"])?.unwrap_or_default();
    let chars = u64::try_from(text.chars().count()).unwrap_or(u64::MAX);
    Ok(Embed::Titan { chars, dims, by_type })
}

/// `{"texts", "input_type", "truncate"?, "embedding_types"?}`.
fn cohere(req: &Map<String, Value>) -> Result<Embed, Exception> {
    no_extra_keys(req, &["texts", "images", "input_type", "truncate", "embedding_types"])?;
    match req.get("input_type") {
        None => return Err(malformed("#: required key [input_type] not found")),
        Some(Value::String(t)) if COHERE_INPUT_TYPES.contains(&t.as_str()) => {}
        Some(other) => return Err(malformed(format!("#/input_type: {other} is not a valid enum value"))),
    }
    let Some(texts) = string_list(req.get("texts"), "texts", &[])? else {
        return Err(malformed("#: required key [texts] not found"));
    };
    if texts.len() > COHERE_MAX_TEXTS {
        return Err(malformed(format!(
            "#/texts: expected maximum item count: {COHERE_MAX_TEXTS}, found: {}",
            texts.len()
        )));
    }
    let by_type = string_list(req.get("embedding_types"), "embedding_types", &COHERE_EMBEDDING_TYPES)?;
    Ok(Embed::Cohere { texts, by_type })
}

fn no_extra_keys(req: &Map<String, Value>, keys: &[&str]) -> Result<(), Exception> {
    match req.keys().find(|k| !keys.contains(&k.as_str())) {
        Some(extra) => Err(malformed(format!("#: extraneous key [{extra}] is not permitted"))),
        None => Ok(()),
    }
}

/// A list of strings at `key`, each one of `allowed` unless that is empty.
fn string_list(value: Option<&Value>, key: &str, allowed: &[&str]) -> Result<Option<Vec<String>>, Exception> {
    let Some(value) = value else {
        return Ok(None);
    };
    let Value::Array(items) = value else {
        return Err(malformed(format!("#/{key}: expected type: JSONArray")));
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        match item.as_str() {
            Some(s) if allowed.is_empty() || allowed.contains(&s) => out.push(s.to_owned()),
            Some(s) => return Err(malformed(format!("#/{key}/{i}: {s} is not a valid enum value"))),
            None => return Err(malformed(format!("#/{key}/{i}: expected type: String"))),
        }
    }
    Ok(Some(out))
}

/// `v` as the embedding type `kind`: floats as they are, the integer types quantized.
fn typed(v: &[f32], kind: &str) -> Value {
    match kind {
        // Each component in -1..1 scaled to the type's range: the values stay in range.
        #[allow(clippy::cast_possible_truncation)]
        "int8" | "binary" => json!(v.iter().map(|x| (x * 127.0).round() as i32).collect::<Vec<_>>()),
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        "uint8" | "ubinary" => json!(v.iter().map(|x| ((x + 1.0) * 127.5).round() as u32).collect::<Vec<_>>()),
        _ => json!(v),
    }
}

/// A unit vector of `dims` random components.
fn vector(dims: usize, rng: &mut SmallRng) -> Vec<f32> {
    let mut v: Vec<f32> = (0..dims).map(|_| rng.random_range(-1.0..1.0)).collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}
