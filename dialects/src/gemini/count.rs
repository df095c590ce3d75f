//! Vertex AI's token counter for Gemini models (`POST .../publishers/google/models/{model}:
//! countTokens`): the request made from a `generateContent` body, and its answer as Anthropic's
//! `{"input_tokens": n}` (the answer of `/v1/messages/count_tokens`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::wire::{Content, GenerateContentRequest, Tool};

/// A Vertex AI `countTokens` body: what the model would read of a `generateContent` request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CountTokensRequest {
    /// The conversation.
    pub contents: Vec<Content>,
    /// The system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_instruction: Option<Content>,
    /// The tools the model may call (their declarations count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CountTokensRequest {
    /// The counted part of `request`: its contents, system instruction and tools. How to answer
    /// (`generationConfig`, `toolConfig`, safety settings, cached content, labels) does not
    /// change the input's tokens and is left out.
    ///
    /// ```
    /// use switchyard_dialects::gemini::{Content, CountTokensRequest, GenerateContentRequest, Part};
    ///
    /// let generate = GenerateContentRequest::new(vec![Content::parts(vec![Part::text("hi")])]);
    /// let count = CountTokensRequest::from_generate(generate);
    /// assert_eq!(serde_json::to_value(&count)?, serde_json::json!({"contents": [{"parts": [{"text": "hi"}]}]}));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn from_generate(request: GenerateContentRequest) -> Self {
        Self {
            contents: request.contents,
            system_instruction: request.system_instruction,
            tools: request.tools,
            extra: Map::new(),
        }
    }
}

/// A `countTokens` answer.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CountTokensResponse {
    /// The tokens the model would read (absent: none).
    #[serde(default)]
    pub total_tokens: u64,
    /// The billable characters (Vertex AI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_billable_characters: Option<u64>,
    /// Every other field (`promptTokensDetails`), as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The answer of Anthropic's token counter for a `countTokens` answer: `{"input_tokens":
/// totalTokens}`.
///
/// ```
/// use switchyard_dialects::gemini::{CountTokensResponse, anthropic_count_from};
///
/// let answer: CountTokensResponse = serde_json::from_str(r#"{"totalTokens": 31, "totalBillableCharacters": 96}"#)?;
/// assert_eq!(anthropic_count_from(&answer), serde_json::json!({"input_tokens": 31}));
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn anthropic_count_from(answer: &CountTokensResponse) -> Value {
    json!({ "input_tokens": answer.total_tokens })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gemini::{GenerationConfig, Part};

    #[test]
    fn only_what_the_model_reads_is_counted() {
        let mut generate = GenerateContentRequest::new(vec![Content::parts(vec![Part::text("hello")])]);
        generate.system_instruction = Some(Content::parts(vec![Part::text("Be brief.")]));
        generate.generation_config = Some(GenerationConfig::default());
        generate.safety_settings = Some(vec![json!({"category": "HARM_CATEGORY_HATE_SPEECH"})]);
        generate.extra.insert("labels".to_owned(), json!({"team": "a"}));
        let count = serde_json::to_value(CountTokensRequest::from_generate(generate)).expect("JSON");
        assert_eq!(
            count,
            json!({
                "contents": [{"parts": [{"text": "hello"}]}],
                "systemInstruction": {"parts": [{"text": "Be brief."}]},
            })
        );
    }

    #[test]
    fn an_answer_without_tokens_counts_none() {
        let answer: CountTokensResponse = serde_json::from_str("{}").expect("an empty answer");
        assert_eq!(anthropic_count_from(&answer), json!({"input_tokens": 0}));
    }
}
