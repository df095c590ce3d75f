//! Gemini API wire structs (`generateContent`, `streamGenerateContent`): the request, its turns and
//! parts, and the answer. Field names are the REST API's camelCase; every struct keeps the fields
//! it does not name in `extra`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

/// A `POST /v1beta/models/{model}:generateContent` (or `:streamGenerateContent?alt=sse`) body.
/// The model is in the URL, not in the body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GenerateContentRequest {
    /// The conversation: `user` and `model` turns.
    pub contents: Vec<Content>,
    /// The system prompt (a content of text parts, without a role).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_instruction: Option<Content>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// How the model must use the tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_config: Option<ToolConfig>,
    /// Sampling, limits, structured output, thinking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation_config: Option<GenerationConfig>,
    /// Safety settings (`[{category, threshold}]`), as the client sent them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safety_settings: Option<Vec<Value>>,
    /// A cached content to continue from (`cachedContents/...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_content: Option<String>,
    /// Every other field (`labels` on Vertex AI, ...), as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl GenerateContentRequest {
    /// A request for `contents` and nothing else.
    pub fn new(contents: Vec<Content>) -> Self {
        Self {
            contents,
            system_instruction: None,
            tools: None,
            tool_config: None,
            generation_config: None,
            safety_settings: None,
            cached_content: None,
            extra: Map::new(),
        }
    }
}

/// One turn: a role and its parts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Content {
    /// `user` or `model` (absent in `systemInstruction`, and in some answers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The parts, in order.
    #[serde(default)]
    pub parts: Vec<Part>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Content {
    /// A turn of `role` (`user`, `model`) made of `parts`.
    pub fn new(role: impl Into<String>, parts: Vec<Part>) -> Self {
        Self { role: Some(role.into()), parts, extra: Map::new() }
    }

    /// Parts without a role (a `systemInstruction`).
    pub fn parts(parts: Vec<Part>) -> Self {
        Self { role: None, parts, extra: Map::new() }
    }
}

/// One part of a turn: exactly one of its data fields is set (text, inline data, a file, a
/// function call or response); `thought` and `thoughtSignature` qualify it. Data kinds this crate
/// does not model (`executableCode`, `codeExecutionResult`, ...) are kept in `extra`.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Part {
    /// Text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Bytes inline: an image, as base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline_data: Option<Blob>,
    /// A file by URI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_data: Option<FileData>,
    /// The model calls a function.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_call: Option<FunctionCall>,
    /// A function's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_response: Option<FunctionResponse>,
    /// Whether this part is the model's reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought: Option<bool>,
    /// An opaque signature of the model's reasoning, sent back on the next turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self { text: Some(text.into()), ..Self::default() }
    }

    /// A function call part.
    pub fn function_call(call: FunctionCall) -> Self {
        Self { function_call: Some(call), ..Self::default() }
    }

    /// A function response part.
    pub fn function_response(response: FunctionResponse) -> Self {
        Self { function_response: Some(response), ..Self::default() }
    }

    /// Whether the part is reasoning (`thought: true`).
    pub fn is_thought(&self) -> bool {
        self.thought == Some(true)
    }
}

/// `inlineData`: base64 bytes and their media type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Blob {
    /// `image/png`, ...
    #[serde(default)]
    pub mime_type: String,
    /// The bytes, base64.
    #[serde(default)]
    pub data: String,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Blob {
    /// `data` (base64) of `mime_type`.
    pub fn new(mime_type: impl Into<String>, data: impl Into<String>) -> Self {
        Self { mime_type: mime_type.into(), data: data.into(), extra: Map::new() }
    }
}

/// `fileData`: a file by URI (Gemini fetches it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct FileData {
    /// The media type, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The URI.
    pub file_uri: String,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl FileData {
    /// The file at `uri`, of `mime_type` when known.
    pub fn new(uri: impl Into<String>, mime_type: Option<String>) -> Self {
        Self { mime_type, file_uri: uri.into(), extra: Map::new() }
    }
}

/// `functionCall`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FunctionCall {
    /// The call's id (Gemini 3 and Vertex AI set one; older models do not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The function's name.
    #[serde(default)]
    pub name: String,
    /// The arguments, as a JSON object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl FunctionCall {
    /// A call of `name` with `args`.
    pub fn new(name: impl Into<String>, args: Value) -> Self {
        Self { id: None, name: name.into(), args: Some(args), extra: Map::new() }
    }
}

/// `functionResponse`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FunctionResponse {
    /// The id of the call it answers (Gemini 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The function's name.
    pub name: String,
    /// The result, as a JSON object.
    pub response: Value,
    /// Every other field (`parts` of a multimodal result), as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl FunctionResponse {
    /// The result `response` of `name`.
    pub fn new(name: impl Into<String>, response: Value) -> Self {
        Self { id: None, name: name.into(), response, extra: Map::new() }
    }
}

/// A tool: function declarations, or a built-in tool (`googleSearch`, `codeExecution`) kept in
/// `extra`.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Tool {
    /// Functions the model may call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_declarations: Option<Vec<FunctionDeclaration>>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Tool {
    /// A tool of function declarations.
    pub fn functions(declarations: Vec<FunctionDeclaration>) -> Self {
        Self { function_declarations: Some(declarations), extra: Map::new() }
    }
}

/// One function the model may call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FunctionDeclaration {
    /// Its name.
    pub name: String,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its parameters: Gemini's schema (an OpenAPI subset, types in capitals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl FunctionDeclaration {
    /// A function `name`.
    pub fn new(name: impl Into<String>, description: Option<String>, parameters: Option<Value>) -> Self {
        Self { name: name.into(), description, parameters, extra: Map::new() }
    }
}

/// `toolConfig`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolConfig {
    /// How functions are called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_calling_config: Option<FunctionCallingConfig>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ToolConfig {
    /// Functions called in `mode` (`AUTO`, `ANY`, `NONE`), among `allowed` when given.
    pub fn mode(mode: impl Into<String>, allowed: Option<Vec<String>>) -> Self {
        let config =
            FunctionCallingConfig { mode: Some(mode.into()), allowed_function_names: allowed, extra: Map::new() };
        Self { function_calling_config: Some(config), extra: Map::new() }
    }
}

/// `toolConfig.functionCallingConfig`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct FunctionCallingConfig {
    /// `AUTO`, `ANY`, `NONE` (or `VALIDATED`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// With `ANY`: the functions the model may call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_function_names: Option<Vec<String>>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `generationConfig`.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GenerationConfig {
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<Number>,
    /// Nucleus sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<Number>,
    /// Top-k sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u64>,
    /// The limit on generated tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
    /// Stop sequences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// How many candidates to generate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate_count: Option<u32>,
    /// Presence penalty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<Number>,
    /// Frequency penalty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<Number>,
    /// Sampling seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// Whether to return the chosen tokens' log probabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_logprobs: Option<bool>,
    /// How many top log probabilities per token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<u32>,
    /// `application/json` for JSON mode, `text/plain`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_mime_type: Option<String>,
    /// The answer's JSON Schema (standard JSON Schema, Gemini 2.0 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_json_schema: Option<Value>,
    /// Thinking budget or level, and whether thoughts are returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_config: Option<ThinkingConfig>,
    /// Every other field (`responseSchema`, `responseModalities`, ...), as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `generationConfig.thinkingConfig`.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ThinkingConfig {
    /// Whether the answer includes thought summaries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_thoughts: Option<bool>,
    /// Tokens the model may spend thinking (`0` turns thinking off, `-1` lets the model decide).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_budget: Option<i64>,
    /// Gemini 3's level: `minimal`, `low`, `medium`, `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<String>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A whole answer, or one chunk of a streamed one.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GenerateContentResponse {
    /// The candidates (none when the prompt was blocked).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<Candidate>,
    /// Why the prompt was blocked, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_feedback: Option<PromptFeedback>,
    /// Token counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_metadata: Option<UsageMetadata>,
    /// The model version that answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_version: Option<String>,
    /// The answer's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One candidate answer.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Candidate {
    /// Its content (absent when a filter stopped it before any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Content>,
    /// `STOP`, `MAX_TOKENS`, `SAFETY`, `RECITATION`, ...; absent until the candidate ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// Its position among the candidates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    /// Log probabilities, when asked for (`chosenCandidates`, `topCandidates`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs_result: Option<Value>,
    /// Every other field (`safetyRatings`, `citationMetadata`, `groundingMetadata`, ...), as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `promptFeedback`.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PromptFeedback {
    /// `SAFETY`, `BLOCKLIST`, `PROHIBITED_CONTENT`, `OTHER`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_reason: Option<String>,
    /// Vertex AI's words for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_reason_message: Option<String>,
    /// Every other field (`safetyRatings`), as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `usageMetadata`.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UsageMetadata {
    /// Prompt tokens, cached ones included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_token_count: Option<u64>,
    /// Generated tokens, thoughts excluded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidates_token_count: Option<u64>,
    /// Thinking tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thoughts_token_count: Option<u64>,
    /// Prompt tokens read from the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_content_token_count: Option<u64>,
    /// Tokens of tool results (built-in tools) in the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_prompt_token_count: Option<u64>,
    /// Everything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_token_count: Option<u64>,
    /// Every other field (per-modality details), as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
